# SPDX-License-Identifier: GPL-2.0
"""The selftests' metadata, read here and nowhere else.

A selftest names in its first lines:
  memhp-vm: OPTIONS    the memhp-vm options of its guest (tests naming the
                       same options share a boot)
  memhp-budget: N      its wall time, in seconds, on an idle 2-core host
                       under TCG (Documentation/testing.rst, time budgets)
and the config fragment (tools/testing/selftests/memhp/config, printed by
make kconfig) says which options every test needs ("# must") and which
only some need ("# tests: T...").
"""

import functools
import os
import re
import subprocess

from . import SELFTESTS


@functools.lru_cache(maxsize=None)
def test_header(test):
    """The "key: value" lines a selftest names in its first lines.

    memhp-vm: the guest options it needs (tests with the same options
    share a boot); memhp-budget: its wall time, in seconds, on an idle
    2-core host under TCG (Documentation/testing.rst, time budgets).
    """
    src = os.path.join(SELFTESTS, test if test.endswith(".sh") else test + ".c")
    found = {}
    try:
        with open(src) as f:
            for _, line in zip(range(16), f):
                m = re.search(r"(memhp-vm|memhp-budget):\s*(.*?)\s*(\*/)?$", line)
                if m:
                    found.setdefault(m.group(1), m.group(2))
    except OSError:
        pass
    return found


def budget_of(test):
    """A test's budget in seconds (memhp-budget: 120), or None."""
    m = re.match(r"(\d+)\s*s?$", test_header(test).get("memhp-budget", ""))
    return int(m.group(1)) if m else None


def guest_groups(only):
    """Selftests grouped by the memhp-vm options they ask for."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", SELFTESTS, "list_tests"],
                         capture_output=True, text=True, check=True).stdout
    groups = {}
    for test in out.split():
        if only and test not in only:
            continue
        opts = test_header(test).get("memhp-vm", "")
        groups.setdefault(opts, []).append(test)
    return groups


# The selftests' config fragment (make kconfig): "# must" and
# "# tests: T..." sections of CONFIG_ lines.
KCONFIG_FRAGMENT = os.path.join(SELFTESTS, "config")


def fragment_sections(path=KCONFIG_FRAGMENT):
    """[(tests or None for "must", [(symbol, value)])] of the fragment."""
    sections = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line == "# must":
                sections.append((None, []))
            elif line.startswith("# tests:"):
                sections.append((line.split(":", 1)[1].split(), []))
            elif line.startswith("CONFIG_") and sections:
                sym, _, val = line.partition("=")
                sections[-1][1].append((sym, val))
    return sections


def config_gaps(config_text, sections):
    """(missing must-have lines, {test: [missing lines]}) of a .config
    against the fragment; =m is met by m or y, anything else exactly."""
    have = {}
    for line in config_text.splitlines():
        if line.startswith("CONFIG_"):
            sym, _, val = line.partition("=")
            have[sym] = val
    must, tests = [], {}
    for names, opts in sections:
        missing = [f"{sym}={val}" for sym, val in opts
                   if not (have.get(sym) == val or (val == "m" and have.get(sym) == "y"))]
        if not missing:
            continue
        if names is None:
            must += missing
        else:
            for t in names:
                tests.setdefault(t, []).extend(missing)
    return must, tests
