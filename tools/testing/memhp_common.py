# SPDX-License-Identifier: GPL-2.0
"""Helpers shared by check.py, run.py and the experiments' host scripts.

check.py and run.py import this as `memhp_common` (their own directory is
on sys.path); a host script adds tools/testing to sys.path first.
"""

import os
import re
import subprocess

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def kernels():
    """The kernel releases the suite targets (make print-kvers)."""
    return subprocess.run(["make", "-s", "--no-print-directory", "print-kvers"], cwd=TOP,
                          capture_output=True, text=True).stdout.split()


def series(kver):
    """6.1.0-56-amd64 -> 6.1, 6.12.117+deb12-amd64 -> 6.12."""
    m = re.match(r"^(\d+\.\d+)", kver)
    return m.group(1) if m else kver


def ratio(base, value, style="cell"):
    """value / base, in one of the forms the reports print:

    "cell"  (run.py's side-by-side tables, base = the oldest kernel's figure)
            "1.23"; "-" if either is None; base 0: "=" if value is 0 too,
            else "-"
    "x"     "1.23x"; "-" if base is 0 or None
    "float" the number; nan if base is 0 or None
    """
    if style == "cell":
        if base is None or value is None:
            return "-"
        if base == 0:
            return "=" if value == 0 else "-"
        return f"{value / base:.2f}"
    if style == "x":
        return f"{value / base:.2f}x" if base else "-"
    if style == "float":
        return value / base if base else float("nan")
    raise ValueError(f"ratio: unknown style {style!r}")
