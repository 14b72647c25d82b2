# SPDX-License-Identifier: GPL-2.0
"""Small helpers for experiments' host scripts: statistics and markdown."""

import csv
import os
import statistics


def accel(out):
    """The accelerator the experiment's guest ran under, "KVM" or "TCG"
    (record_accel in lib.sh writes OUT/accel from memhp-vm's choice)."""
    try:
        with open(os.path.join(out, "accel")) as f:
            return f.read().strip().upper()
    except OSError:
        return "an unrecorded accelerator"


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def stats(values):
    """n, min, median, p90, max of a list of numbers."""
    v = sorted(values)
    if not v:
        return {"n": 0, "min": 0, "median": 0, "p90": 0, "max": 0}
    return {"n": len(v), "min": v[0], "median": statistics.median(v),
            "p90": v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))], "max": v[-1]}


def md_table(headers, rows):
    """A markdown table; numbers are printed with up to 3 significant decimals."""
    def cell(x):
        if isinstance(x, float):
            return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"
        return str(x)
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---:" if i else "---" for i in range(len(headers))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(cell(x) for x in r) + " |")
    return "\n".join(out) + "\n"
