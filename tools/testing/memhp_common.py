# SPDX-License-Identifier: GPL-2.0
"""Helpers shared by check.py, run.py and the experiments' host scripts.

check.py and run.py import this as `memhp_common` (their own directory is
on sys.path); a host script adds tools/testing to sys.path first.
"""

import os
import re

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
KERNELS_TABLE = os.path.join(TOP, "tools", "kernels.tsv")
# Where release directories are looked for: the host's modules, and the
# build root that holds the headers of a kernel the host cannot build for
# (the Makefile's BUILD_ROOT, same default and override).
BUILD_ROOT = os.environ.get("BUILD_ROOT", "/var/cache/memhp-lab/trixie-root")
MODULE_DIRS = ("/lib/modules", os.path.join(BUILD_ROOT, "usr", "lib", "modules"))


def kernel_table(path=KERNELS_TABLE):
    """[(series, release pattern, source)] of tools/kernels.tsv, in order."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 3 or not all(cols):
                raise ValueError(f"{path}:{n}: want series, release pattern and source, "
                                 "separated by tabs")
            rows.append(tuple(cols))
    return rows


def release_key(release):
    """Sort key of a release name, number by number (as sort -V)."""
    return [int(x) for x in re.findall(r"\d+", release)]


def newest_release(ser, names, table=None):
    """The newest release of series ser among names, or None."""
    pats = [p for s, p, _ in table or kernel_table() if s == ser]
    if not pats:
        raise KeyError(f"no kernel series {ser!r} in {KERNELS_TABLE}")
    cands = [n for n in names if re.fullmatch(pats[0], n)]
    return max(cands, key=release_key) if cands else None


def installed_releases(dirs=MODULE_DIRS):
    names = set()
    for d in dirs:
        try:
            names.update(os.listdir(d))
        except OSError:
            pass
    return names


def kernels(names=None, table=None):
    """The kernel releases the suite targets: the newest installed release
    of each series of tools/kernels.tsv, in the table's order (make
    print-kvers says the same)."""
    table = table or kernel_table()
    names = installed_releases() if names is None else names
    found = (newest_release(s, names, table) for s, _, _ in table)
    return [k for k in found if k]


def select_kernels(spec, available):
    """--kernels: comma-separated releases or series, in the order given
    (make run's ratios take the first as their base), each once; an empty
    spec is every available kernel. Raises ValueError naming what matched
    nothing."""
    want = [w for w in spec.split(",") if w.strip()]
    if not want:
        return list(available)
    out = []
    for w in (x.strip() for x in want):
        hits = [k for k in available if k == w or series(k) == w or
                k.startswith(w + ".") or k.startswith(w + "-")]
        if not hits:
            raise ValueError(f"--kernels {spec}: {w} matches none of {' '.join(available)}")
        out += [k for k in hits if k not in out]
    return out


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
