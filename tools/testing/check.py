#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make check: every test of the suite, one KTAP report.

Stages, in order:
  unit     user-space unit tests of the portable cores (make unit-c) and
           of the host side (make unit-py: pytest, no guest)
  static   for each kernel: modules build with -Werror, sparse, DKMS build
           of dkms.conf in a scratch tree; once: selftests build,
           checkpatch (each kernel's checkpatch.pl)
  guest    the selftests of tools/testing/selftests/memhp inside QEMU
           guests, once per kernel (tools/kernels.tsv: `make
           print-kvers`), a KTAP node per kernel ("guest 6.12.117+deb12-amd64");
           tests naming the same `memhp-vm:` options share one boot
  runner   the VM runner's own tests (tools/testing/vm/selftest.sh): it must
           fail a guest that logged a WARNING and pass exit codes through

A test that applies to one kernel only reports SKIP on the other, with the
reason, and is not counted as a pass there.

Progress lines are KTAP diagnostics ("# ..."); each stage then reports its
results as a nested KTAP subtest. The end is a "# Totals:" line over every
leaf test and a plain "check: N passed, N failed, N skipped" line. Before
them, the figures the guest tests reported ("figures: ..." diagnostics:
inputs tried, cycles, operations, bytes verified) are gathered, one line
per test program, so a run ends with what it exercised. Exit 0
only when nothing failed; a skip is reported with its reason, never counted
as a pass.
"""

import argparse
import functools
import json
import os
import re
import shlex
import subprocess
import sys
import time

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SELFTESTS = os.path.join(TOP, "tools", "testing", "selftests", "memhp")
MEMHP_VM = os.path.join(TOP, "tools", "testing", "vm", "memhp-vm")
# The guests' CPU: QEMU's TCG -cpu max without the CPUID bits that make
# the guest kernel and glibc use string instructions TCG emulates one
# element per step (ERMS, FSRM: clear_page_erms, copy_mc_enhanced_fast_
# string, memcpy's rep movsb) and without 5-level paging (LA57: one more
# level in every emulated page walk). No test is about either, and the
# same tests run faster without them: Documentation/testing.rst ("Time and
# budgets") gives the two commands that compare. make run keeps the full
# model (its figures are the cost of the kernel's own choices).
CHECK_CPU_FEATURES = "erms=off,fsrm=off,la57=off"
# KTAP: "ok|not ok N description # directive diagnostic"; a description
# cannot contain "#", and text after it that is not a directive (kselftest's
# runner.sh writes "# exit=1") is a diagnostic.
RESULT_RE = re.compile(r"^(not ok|ok) (\d+)\s*([^#]*?)\s*(?:#\s*(.*))?$")
DIRECTIVE_RE = re.compile(r"(SKIP|TODO|XFAIL|XPASS|TIMEOUT|ERROR)\b\s*(.*)", re.IGNORECASE)


class Leaf:
    def __init__(self, name, status, reason=""):
        self.name = name
        self.status = status  # pass | fail | skip | xfail | xpass | error
        self.reason = reason


def log(msg):
    print(f"# {msg}", flush=True)


def run_streamed(cmd, prefix, env=None, stamps=None):
    """Runs cmd, echoing its output as diagnostics; returns (rc, output).

    With stamps (a list), each output line is appended to it with the
    time.monotonic() at which it arrived: the guest's output is streamed,
    so these are the host's times of the guest's progress.
    """
    proc = subprocess.Popen(cmd, cwd=TOP, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, text=True, errors="replace")
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if stamps is not None:
            stamps.append((time.monotonic(), line))
        print(f"# {prefix}{line.rstrip()}", flush=True)
    rc = proc.wait()
    return rc, "".join(lines)


def strip_diag(line):
    """(depth, text): the "# " prefixes runner.sh nests output in, removed."""
    depth = 0
    while line.startswith("# "):
        line = line[2:]
        depth += 1
    return depth, line


def parse_runner_tap(output):
    """Leaves from kselftest runner.sh output (or one plain KTAP document).

    runner.sh prints "ok N selftests: DIR: prog" per program with the
    program's own KTAP prefixed by "# ". The leaves are each program's own
    results; a program that failed or was skipped as a whole without such
    results (crash, bail out, timeout, missing prerequisite) is a leaf of
    its own, so nothing that went wrong disappears from the totals.
    """
    leaves = []
    current = []
    for raw in output.splitlines():
        depth, line = strip_diag(raw.rstrip())
        m = RESULT_RE.match(line)
        if not m:
            continue
        status = "fail" if m.group(1) == "not ok" else "pass"
        comment = m.group(4) or ""
        d = DIRECTIVE_RE.match(comment)
        directive, why = (d.group(1).upper(), d.group(2)) if d else (None, comment)
        if directive == "SKIP":
            status = "skip"
        elif directive == "XFAIL":
            status = "xfail"
        elif directive == "XPASS":
            # kselftest's ksft_test_result_xpass(): passed where a failure
            # was expected; counted apart, and not as a failure.
            status = "xpass"
        elif directive == "ERROR":
            # ksft_test_result_error(): the test could not decide; fails.
            status = "error"
        elif directive == "TIMEOUT":
            status = "fail"
        name = m.group(3).strip() or f"test {m.group(2)}"
        if depth == 1:
            current.append(Leaf(name, status, why))
        elif depth == 0:
            prog = name.split(": ")[-1]
            sub = current
            current = []
            for leaf in sub:
                leaf.name = f"{prog}: {leaf.name}"
            leaves.extend(sub)
            if status == "fail" and not any(x.status in ("fail", "error") for x in sub):
                leaves.append(Leaf(f"{prog}: exits successfully", "fail", why or directive or ""))
            elif status == "skip" and not sub:
                leaves.append(Leaf(prog, "skip", why))
            elif not sub:
                leaves.append(Leaf(prog, status, why))
    # A plain KTAP document (no runner.sh around it): its results are depth 0.
    if current:
        leaves.extend(current)
    return leaves


PROG_RE = re.compile(r"^selftests: [^:]+: (\S+)$")


def collect_figures(output, where, rec):
    """Keeps the "figures: ..." diagnostics of a guest run in rec, by program."""
    prog = where
    for raw in output.splitlines():
        _, line = strip_diag(raw.rstrip())
        m = PROG_RE.match(line)
        if m:
            prog = m.group(1)
        elif line.startswith("figures: "):
            rec.figures.append((prog, line[len("figures: "):]))


def stage_unit(args, rec):
    ts = time.monotonic()
    rc, out = run_streamed(["make", "--no-print-directory", "unit-c"], "unit: ")
    rec.steps.append(("unit", "make unit-c", time.monotonic() - ts))
    leaves = parse_runner_tap(out)
    if rc != 0 and not any(x.status in ("fail", "error") for x in leaves):
        leaves.append(Leaf("unit tests build and run", "fail", f"make unit-c exited {rc}"))
    if not leaves:
        leaves.append(Leaf("unit tests", "fail", "no unit test ran"))
    ts = time.monotonic()
    xml = os.path.join(TOP, "build", "unit-py.xml")
    if os.path.exists(xml):
        os.remove(xml)
    rc, out = run_streamed(["make", "--no-print-directory", "unit-py",
                            f"PYTEST_ARGS=--junitxml={xml}"], "unit: ")
    rec.steps.append(("unit", "make unit-py", time.monotonic() - ts))
    py = parse_junit(xml)
    if rc != 0 and not any(x.status == "fail" for x in py):
        py.append(Leaf("pytest: host-side unit tests run", "fail", f"make unit-py exited {rc}"))
    if not py:
        py.append(Leaf("pytest: host-side unit tests", "fail", "no test ran"))
    return leaves + py


def parse_junit(path):
    """Leaves from pytest's JUnit XML: one per test, "pytest: FILE::TEST"."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    leaves = []
    for case in root.iter("testcase"):
        mod = case.get("classname", "").split(".")[-1]
        name = f"pytest: {mod}.py::{case.get('name')}"
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        skip = case.find("skipped")
        if bad is not None:
            msg = " ".join((bad.get("message") or "").split())
            leaves.append(Leaf(name, "fail", msg[:300]))
        elif skip is not None:
            leaves.append(Leaf(name, "skip", skip.get("message") or ""))
        else:
            leaves.append(Leaf(name, "pass"))
    return leaves


from memhp_common import (kernel_tree, kernel_var, kernels,  # noqa: E402
                           release_of, select_kernels, series)


def stage_static(args, rec):
    leaves = []
    steps = []
    for k in args.kernels:
        # Kbuild compiles the modules' files in parallel, one job per CPU.
        name = release_of(k)
        mk = ["make", "--no-print-directory", f"-j{os.cpu_count() or 1}", kernel_var(k)]
        steps += [(f"{name}: modules build with -Werror", mk + ["modules"]),
                  (f"{name}: sparse C=2 clean", mk + ["sparse"])]
        if kernel_tree(k):
            # DKMS builds for installed kernels (/lib/modules/R/build).
            leaves.append(Leaf(f"{name}: dkms.conf: DKMS builds every module", "skip",
                               f"{k} is a kernel tree, not an installed kernel"))
        else:
            steps.append((f"{name}: dkms.conf: DKMS builds every module", mk + ["dkms-check"]))
    steps += [("selftests build", ["make", "--no-print-directory", "selftests"]),
              ("memhp-count plugin and memhp-mark build with -Werror",
               ["make", "--no-print-directory", "count"]),
              ("checkpatch --strict clean (6.1, 6.12 and 7.3 checkpatch.pl)",
               ["make", "--no-print-directory", "checkpatch"])]
    for name, cmd in steps:
        ts = time.monotonic()
        rc, out = run_streamed(cmd, "static: ")
        rec.steps.append(("static", name, time.monotonic() - ts))
        log(f"time: static {name}: {rec.steps[-1][2]:.1f}s")
        leaves.append(Leaf(name, "pass" if rc == 0 else "fail", "" if rc == 0 else f"exit {rc}"))
    return leaves


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


def check_tree_config(tree):
    """Before a tree's guests boot: its .config against the fragment. The
    tests a missing option makes skip or fail are listed; a missing
    must-have option is a failed leaf (and no boot)."""
    try:
        with open(os.path.join(tree, ".config")) as f:
            text = f.read()
    except OSError as e:
        return Leaf("kernel config has every option the suite needs", "fail",
                    f"cannot read {tree}/.config: {e.strerror}")
    must, tests = config_gaps(text, fragment_sections())
    for t, missing in sorted(tests.items()):
        log(f"config: {t} will skip or fail: {tree}/.config lacks {' '.join(missing)}")
    if must:
        return Leaf("kernel config has every option the suite needs", "fail",
                    f"{tree}/.config lacks {' '.join(must)} (make kconfig prints the fragment)")
    return Leaf("kernel config has every option the suite needs", "pass", "")


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


class Record:
    """What the stages measured and said, beside their results: returned
    with them to main(), which reports it."""

    def __init__(self):
        # Per-test wall times of the guest stage: (kernel, test, s, budget).
        self.times = []
        # Per-boot times: (kernel, group label, boot s, whole group s).
        self.boots = []
        # Other timed steps (unit, static): (stage, step, seconds).
        self.steps = []
        # Per-case wall times, from one result line to the next: (test, case, s).
        self.cases = []
        # "figures: ..." diagnostics of the guests: (program, text).
        self.figures = []
        # What memhp-vm said of a failed guest: (label, lines).
        self.vm_failures = []

HDR_RE = re.compile(r"^selftests: [^:]+: (\S+)$")


def guest_times(stamps, t0):
    """(boot s, {test: s}, [(test, case, s)]) from a group's stamped output.

    The kselftest runner prints "# selftests: memhp: T" before it starts T
    and "ok N selftests: memhp: T" when T ends; the boot is everything
    before the first test starts (QEMU, the kernel, the guest's make).
    """
    boot = None
    start = {}
    took = {}
    cases = []
    prog = None
    last = None
    for t, raw in stamps:
        depth, line = strip_diag(raw.rstrip())
        m = HDR_RE.match(line)
        if m and depth == 1:
            prog = m.group(1)
            start[prog] = last = t
            if boot is None:
                boot = t - t0
            continue
        m = RESULT_RE.match(line)
        if m and depth == 0:
            name = m.group(3).strip().split(": ")[-1]
            if name in start:
                took[name] = t - start[name]
            prog = None
        elif m and depth == 1 and prog:
            # A case's time: since the previous case of its program ended.
            cases.append((prog, m.group(3).strip(), t - last))
            last = t
    return boot, took, cases




def vm_messages(output):
    """memhp-vm's own messages in a guest run's output (why it failed).

    Its closing "exit N after S" line is left out; the problem lines of
    the kernel log it lists come first, without their context lines.
    """
    msgs = []
    for raw in output.splitlines():
        line = raw.rstrip()
        if line.startswith("memhp-vm:") and not re.match(r"memhp-vm: exit \d+ after", line):
            msgs.append(line[len("memhp-vm:"):].strip())
    return msgs


# A group's guest is killed after the boot allowance (memhp-vm's
# --boot-timeout) plus GROUP_SLACK times its tests' budgets, at most
# GROUP_TIMEOUT_MAX seconds: a hang fails its group in minutes, not in the
# half hour a whole default group may take. A test without a budget counts
# NO_BUDGET seconds.
BOOT_ALLOWANCE = 300
GROUP_SLACK = 2
GROUP_TIMEOUT_MAX = 1800
NO_BUDGET = 120


def group_timeout(args, tests):
    """Seconds before the guest of a group running tests is killed."""
    if args.guest_timeout:
        return args.guest_timeout
    budgets = sum(budget_of(t) or NO_BUDGET for t in tests)
    return min(GROUP_TIMEOUT_MAX, BOOT_ALLOWANCE + GROUP_SLACK * budgets)


def guest_kernels(spec, kernels):
    """--guest-kernels: of the kernels selected (--kernels), those whose
    guest stage runs (all when spec is empty). A kernel tree outside
    them is refused (ValueError) as a release is: the static stage would
    not have built for it."""
    if not spec:
        return list(kernels)
    chosen = select_kernels(spec, kernels)
    extra = [k for k in chosen if k not in kernels]
    if extra:
        raise ValueError(f"--guest-kernels {spec}: {' '.join(extra)} is not in --kernels")
    return chosen


def group_cmd(args, kernel, opts, tests, memhp_vm_opts=()):
    """The memhp-vm command of one guest group: the tests naming the
    memhp-vm options opts, booted from kernel (memhp_vm_opts go before the
    group's own: --print-cmd for the unit tests)."""
    cmd = [MEMHP_VM, "--quiet", "--timeout", str(group_timeout(args, tests)),
           "--boot-timeout", str(BOOT_ALLOWANCE), "--kernel", kernel]
    cmd += list(memhp_vm_opts)
    if getattr(args, "qemu", ""):
        cmd += ["--qemu", args.qemu]
    if getattr(args, "reuse_freed_ram", False):
        cmd.append("--reuse-freed-ram")
    if args.cpu_features:
        cmd.append(f"--tcg-cpu-features={args.cpu_features}")
    cmd += shlex.split(opts)
    env = " ".join(shlex.quote(f"{k}={v}") for k, v in args.env.items())
    return cmd + ["--", (f"env {env} " if env else "") +
                  "make --no-print-directory -C tools/testing/selftests/memhp "
                  f"OUTPUT={TOP}/build/selftests run_tests T={shlex.quote(' '.join(tests))}"]


def stage_guest(args, kver, kernel, rec):
    """Every selftest group in guests booted from kernel (memhp-vm --kernel:
    an installed release or a bzImage).

    The kernels' guests run one after the other: under TCG a guest's two
    vCPUs are two host threads, and two guests on a 2-core host over-commit
    it (a vCPU spinning on a lock whose holder's thread is not running burns
    the CPU the holder needs), so that each runs far slower than alone.
    """
    leaves = []
    if kernel_tree(kernel):
        leaf = check_tree_config(kernel)
        leaves.append(leaf)
        if leaf.status == "fail":
            return leaves
    if not args.kernel:
        # The modules for this kernel (static built them already, unless
        # --only guest) and the selftests, before any guest boots.
        for cmd in (["make", "-s", "--no-print-directory", kernel_var(kernel), "modules"],
                    ["make", "-s", "--no-print-directory", kernel_var(kernel), "selftests"]):
            rc, _ = run_streamed(cmd, f"guest {kver}: ")
            if rc:
                return [Leaf(f"build for {kver}", "fail", f"{' '.join(cmd[4:])} exit {rc}")]
    tag = series(kver)
    groups = guest_groups(args.tests)
    r = subprocess.run([MEMHP_VM, "--print-accel", "--kernel", kernel], cwd=TOP,
                       capture_output=True, text=True)
    log(f"guest {kver}: accelerator {r.stdout.strip() or '?'}: "
        f"{r.stderr.strip().removeprefix('memhp-vm: ')}")
    for opts, tests in groups.items():
        label = f"{opts or 'default guest'}"
        log(f"guest {kver} [{label}]: {' '.join(tests)}")
        cmd = group_cmd(args, kernel, opts, tests)
        t0 = time.monotonic()
        stamps = []
        rc, out = run_streamed(cmd, f"guest {tag}: ", stamps=stamps)
        group_leaves = parse_runner_tap(out)
        boot, took, cases = guest_times(stamps, t0)
        rec.cases.extend((f"{kver} {p}", c, sec) for p, c, sec in cases)
        total = time.monotonic() - t0
        rec.boots.append((kver, label, boot, total))
        if boot is not None:
            log(f"time: guest {kver} [{label}]: boot {boot:.1f}s")
        for t in tests:
            if t in took:
                budget = budget_of(t)
                rec.times.append((kver, t, took[t], budget))
                over = f", over its budget of {budget}s" if budget and took[t] > budget else ""
                log(f"time: {kver} {t}: {took[t]:.1f}s{over}")
        collect_figures(out, label, rec)
        leaves.extend(group_leaves)
        why = vm_messages(out)
        reason = {0: "", 124: "guest timed out", 125: "guest failed"}.get(rc, f"memhp-vm exit {rc}")
        if rc and why:
            # The cause goes into the result line itself, in full into the
            # failure list at the end: a log cut to its KTAP part keeps it.
            reason += ": " + "; ".join(w.rstrip(":") for w in why[:4])[:400]
            rec.vm_failures.append((f"{kver} [{label}]", why))
        leaves.append(Leaf(f"guest [{label}] boots, runs and keeps a clean kernel log",
                           "pass" if rc == 0 else "fail", reason))
        log(f"guest {kver} [{label}]: {total:.0f}s")
        ran = {leaf.name.split(":")[0] for leaf in group_leaves}
        for t in tests:
            if t not in ran:
                leaves.append(Leaf(t, "fail", "did not report"))
    return leaves


def stage_runner(args, _rec=None):
    # The same QEMU as the guest stage's. Not --reuse-freed-ram: the
    # runner's own tests include the hold it turns off.
    opts = ["--qemu", args.qemu] if getattr(args, "qemu", "") else []
    rc, out = run_streamed([os.path.join(TOP, "tools", "testing", "vm", "selftest.sh")] + opts,
                           "runner: ")
    leaves = parse_runner_tap(out)
    if rc not in (0, 1) or not leaves:
        leaves.append(Leaf("runner self-test completes", "fail", f"exit {rc}"))
    return leaves


def report_times(stage_totals, total, rec):
    """The ten slowest tests, the boots and the budgets; build/check-times.json."""
    if rec.boots:
        log("guest boots (boot to first test, whole group):")
        for kver, label, boot, whole in rec.boots:
            b = f"{boot:.0f}s" if boot is not None else "-"
            log(f"  {kver} [{label}]: boot {b}, group {whole:.0f}s")
    if rec.times:
        log("slowest tests (wall seconds in the guest; budget):")
        for kver, test, secs, budget in sorted(rec.times, key=lambda x: -x[2])[:10]:
            log(f"  {secs:7.1f}s  {kver} {test}" + (f" ({budget}s)" if budget else ""))
        log("slowest test cases (from the previous result line of the same test):")
        for test, case, secs in sorted(rec.cases, key=lambda x: -x[2])[:10]:
            log(f"  {secs:7.1f}s  {test}: {case[:90]}")
        over = [x for x in rec.times if x[3] and x[2] > x[3]]
        for kver, test, secs, budget in over:
            log(f"warning: {kver} {test} took {secs:.0f}s, over its budget of {budget}s "
                "(memhp-budget: in the test; Documentation/testing.rst)")
    path = os.path.join(TOP, "build", "check-times.json")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"total_s": round(total, 1),
                       "load_avg": os.getloadavg(),
                       "stages": [{"stage": n, "pass": p, "fail": fl, "skip": sk,
                                   "seconds": round(sec, 1)}
                                  for n, p, fl, sk, sec in stage_totals],
                       "steps": [{"stage": st, "step": n, "seconds": round(sec, 1)}
                                 for st, n, sec in rec.steps],
                       "boots": [{"kernel": k, "group": g,
                                  "boot_s": None if b is None else round(b, 1),
                                  "group_s": round(w, 1)} for k, g, b, w in rec.boots],
                       "tests": [{"kernel": k, "test": t, "seconds": round(sec, 1),
                                  "budget_s": bud} for k, t, sec, bud in rec.times],
                       "cases": [{"test": t, "case": c, "seconds": round(sec, 1)}
                                 for t, c, sec in rec.cases]},
                      f, indent=1)
            f.write("\n")
        log(f"times: {os.path.relpath(path, TOP)}")
    except OSError as e:
        log(f"times: could not write {path}: {e}")


STAGES = ["unit", "static", "guest", "runner"]


def main():
    p = argparse.ArgumentParser(prog="make check", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--only", default="", help="comma-separated stages (default: all)")
    p.add_argument("--tests", default="", help="comma-separated selftests for the guest stage")
    p.add_argument("--guest-timeout", type=int, default=0,
                   help="seconds before a group's guest is killed (default: from its "
                   "tests' budgets, group_timeout())")
    p.add_argument("--kernel", default="",
                   help="one bzImage for the guests (make check-debug); modules built with "
                   "KDIR, named by --kernel-release")
    p.add_argument("--kernel-release", default="", help="the release of --kernel")
    p.add_argument("--kernels", default="",
                   help="comma-separated releases or series (tools/kernels.tsv) to test, "
                   "in that order; default: all (make print-kvers)")
    p.add_argument("--guest-kernels", default="",
                   help="of --kernels, the ones whose guest stage runs (same syntax; "
                   "default: all of them): the static stage still builds for every kernel")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set in every guest test's environment (repeatable), e.g. "
                   "SOAK_OPS=1000, FUZZ_RANDOM=5000: the long forms "
                   "(make check-long)")
    p.add_argument("--cpu-features", default=CHECK_CPU_FEATURES, metavar="F=on|off,...",
                   help="memhp-vm --tcg-cpu-features for every guest: applied under TCG only "
                   f"(default: {CHECK_CPU_FEATURES}; \"\" for QEMU's full -cpu max)")
    p.add_argument("--qemu", default="", metavar="PATH",
                   help="memhp-vm --qemu for every guest, the runner stage's too: another "
                   "QEMU system emulator, e.g. make qemu-fixed's build")
    p.add_argument("--reuse-freed-ram", action="store_true",
                   help="memhp-vm --reuse-freed-ram for every guest of the guest stage: no "
                   "hold of freed RAM offsets (for a QEMU that drops stale translations "
                   "itself); the runner stage tests the hold itself")
    args = p.parse_args()
    if args.qemu:
        if not (os.path.isfile(args.qemu) and os.access(args.qemu, os.X_OK)):
            p.error(f"--qemu {args.qemu}: not an executable file")
        args.qemu = os.path.abspath(args.qemu)
        log(f"guest QEMU: {args.qemu}")
    if args.reuse_freed_ram:
        log("guests reuse freed RAM offsets: no hold (memhp-vm --reuse-freed-ram)")
    try:
        args.env = dict(e.split("=", 1) for e in args.env)
    except ValueError:
        p.error("--env takes NAME=VALUE")
    bad = [k for k in args.env if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)]
    if bad:
        p.error(f"--env: not a variable name: {' '.join(bad)}")
    if args.env:
        log("guest environment: " + " ".join(f"{k}={v}" for k, v in args.env.items()))
    args.tests = [t for t in args.tests.split(",") if t]
    only = [s for s in args.only.split(",") if s]
    unknown = [s for s in only if s not in STAGES]
    if unknown:
        p.error(f"stages are: {', '.join(STAGES)}")
    try:
        args.kernels = select_kernels(args.kernels, kernels())
        args.guest_kernels = guest_kernels(args.guest_kernels, args.kernels)
    except ValueError as e:
        p.error(str(e))
    stages = []
    for n in STAGES:
        if only and n not in only:
            continue
        if n == "unit":
            stages.append((n, stage_unit))
        elif n == "static":
            stages.append((n, stage_static))
        elif n == "runner":
            stages.append((n, stage_runner))
        elif args.kernel:
            rel = args.kernel_release or os.path.basename(args.kernel)
            stages.append((f"guest {rel}",
                           lambda a, rec, r=rel: stage_guest(a, r, a.kernel, rec)))
        else:
            for k in args.guest_kernels:
                stages.append((f"guest {release_of(k)}",
                               lambda a, rec, k=k: stage_guest(a, release_of(k), k, rec)))

    t0 = time.monotonic()
    rec = Record()
    print("KTAP version 1")
    print(f"1..{len(stages)}", flush=True)
    totals = {"pass": 0, "fail": 0, "skip": 0, "xfail": 0, "xpass": 0, "error": 0}
    failed_leaves = []
    stage_totals = []
    xfail_leaves = []
    for i, (name, fn) in enumerate(stages, 1):
        log(f"stage {name} ...")
        ts = time.monotonic()
        leaves = fn(args, rec)
        secs = time.monotonic() - ts
        print("  KTAP version 1")
        print(f"  1..{len(leaves)}")
        for j, leaf in enumerate(leaves, 1):
            word = "not ok" if leaf.status in ("fail", "error") else "ok"
            desc = leaf.name.replace("#", "")
            extra = {"skip": f" # SKIP {leaf.reason}", "xfail": f" # XFAIL {leaf.reason}",
                     "xpass": f" # XPASS {leaf.reason}",
                     "error": f" # ERROR {leaf.reason}"}.get(
                leaf.status, f" # {leaf.reason}" if leaf.status == "fail" and leaf.reason else "")
            print(f"  {word} {j} {desc}{extra}")
            totals[leaf.status] += 1
            if leaf.status in ("fail", "error"):
                failed_leaves.append(f"{name}: {leaf.name}")
            elif leaf.status == "xfail":
                xfail_leaves.append(f"{name}: {leaf.name} ({leaf.reason})")
        stage_totals.append((name, sum(x.status == "pass" for x in leaves),
                             sum(x.status in ("fail", "error") for x in leaves),
                             sum(x.status == "skip" for x in leaves), secs))
        ok = not any(x.status in ("fail", "error") for x in leaves)
        print(f"{'ok' if ok else 'not ok'} {i} {name} # {secs:.0f}s", flush=True)

    if failed_leaves:
        log("failed:")
        for f in failed_leaves:
            log(f"  {f}")
    for label, why in rec.vm_failures:
        log(f"guest [{label}]: memhp-vm said:")
        for line in why[:45]:
            log(f"  {line}")
    if xfail_leaves:
        log("known failures (XFAIL, documented, not counted as passed):")
        for f in xfail_leaves:
            log(f"  {f}")
    if rec.figures:
        log("figures reported by the tests:")
        for prog, fig in rec.figures:
            log(f"  {prog}: {fig}")
    log("per stage (pass/fail/skip, seconds):")
    for name, np, nf, ns, secs in stage_totals:
        log(f"  {name}: {np}/{nf}/{ns}, {secs:.0f}s")
    report_times(stage_totals, time.monotonic() - t0, rec)
    log(f"make check took {time.monotonic() - t0:.0f}s")
    print(f"# Totals: pass:{totals['pass']} fail:{totals['fail']} xfail:{totals['xfail']} "
          f"xpass:{totals['xpass']} skip:{totals['skip']} error:{totals['error']}")
    # The plain line counts an error as a failure: both fail the run.
    print(f"check: {totals['pass']} passed, {totals['fail'] + totals['error']} failed, "
          f"{totals['skip']} skipped", flush=True)
    sys.exit(1 if totals["fail"] or totals["error"] else 0)


if __name__ == "__main__":
    main()
