# SPDX-License-Identifier: GPL-2.0
"""The kernel table (tools/kernels.tsv) and its readers: one list of
kernels, one --kernels filter."""

import os
import subprocess

import pytest

from memhp_host import kernels as mc

NAMES = {"6.1.0-56-amd64", "6.1.0-9-amd64", "6.12.117+deb12-amd64",
         "6.12.95+deb12.1-amd64", "7.3.4+deb13-amd64", "7.3.10+deb13-amd64",
         "6.10.0-1-amd64", "7.30.1+deb13-amd64", "6.1.0-56-rt-amd64"}


def test_table_rows():
    rows = mc.kernel_table()
    assert [r[0] for r in rows] == ["6.1", "6.12", "7.3"]
    assert {r[2] for r in rows} <= {"apt", "trixie-root"}


def test_table_refuses_a_bad_row(tmp_path):
    bad = tmp_path / "k.tsv"
    bad.write_text("# c\n6.1 6\\.1\\.0-[0-9]+-amd64 apt\n")
    with pytest.raises(ValueError, match="separated by tabs"):
        mc.kernel_table(str(bad))


def test_newest_release_per_series_numerically():
    assert mc.kernels(NAMES) == ["6.1.0-56-amd64", "6.12.117+deb12-amd64",
                                 "7.3.10+deb13-amd64"]


def test_select_keeps_the_given_order_and_refuses_unknown():
    avail = mc.kernels(NAMES)
    assert mc.select_kernels("", avail) == avail
    assert mc.select_kernels("7.3,6.1", avail) == ["7.3.10+deb13-amd64", "6.1.0-56-amd64"]
    assert mc.select_kernels("6.12.117+deb12-amd64,6.12", avail) == ["6.12.117+deb12-amd64"]
    with pytest.raises(ValueError, match="5.10 matches none"):
        mc.select_kernels("6.1,5.10", avail)


def test_makefile_reads_the_same_table():
    top = mc.TOP
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", top, "print-kvers"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.split() == mc.kernels()
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", top, "print-kver"],
                       capture_output=True, text=True, check=True)
    first = mc.kernels()[:1]
    if first and mc.series(first[0]) == mc.kernel_table()[0][0]:
        assert r.stdout.split() == first


def test_no_other_copy_of_the_release_patterns():
    """The release patterns live in the table alone."""
    top = mc.TOP
    files = subprocess.run(["git", "-C", top, "ls-files", "-co", "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        if f in ("tools/kernels.tsv", "tools/testing/tests/test_kernels.py") or \
                f.startswith(("Documentation/", "build/")):
            continue
        path = os.path.join(top, f)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, errors="replace") as fh:
            text = fh.read()
        assert "\\+deb[0-9]+" not in text and "\\+deb\\d+" not in text, f
