# SPDX-License-Identifier: GPL-2.0
"""make check-debug's kernel lookup (build-kernel.sh --print-kernel): the
packaged kernel of the series it was asked for, also when make's own
command line (make check-debug KVER=7.3) is in the environment."""

import os
import re
import subprocess

import pytest

from conftest import TOP
from memhp_host.kernels import kernel_table, newest_release, installed_releases

BUILD_KERNEL = os.path.join(TOP, "tools", "testing", "debug", "build-kernel.sh")


def lookup(series, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    r = subprocess.run([BUILD_KERNEL, "--series", series, "--print-kernel"], env=env,
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout.splitlines(), r.stderr


@pytest.mark.parametrize("series", [s for s, _, _ in kernel_table()])
def test_the_series_kernel_whatever_make_was_told(series):
    want = newest_release(series, installed_releases())
    if not want:
        pytest.skip(f"no {series} kernel installed (make setup)")
    for extra in (None, {"KVER": series, "MAKEFLAGS": f" -- KVER={series}", "MAKELEVEL": "1"},
                  {"KDIR": "/nonexistent", "MAKEFLAGS": " -- KDIR=/nonexistent"}):
        rc, lines, err = lookup(series, extra)
        assert rc == 0, err
        release, kdir = lines[:2]
        assert release == want, extra
        assert kdir.endswith(f"/lib/modules/{want}/build") and \
            os.path.exists(os.path.join(kdir, ".config")), extra


def test_an_unknown_series_is_refused():
    rc, _, err = lookup("5.10")
    assert rc == 2 and re.search(r"--series '5\.10'", err)
