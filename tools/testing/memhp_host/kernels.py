# SPDX-License-Identifier: GPL-2.0
"""The kernel model: the series of tools/kernels.tsv, the releases
installed of each, the kernel trees a user built, their images, and the
--kernels filter that make check, make run and memhp-vm share.

tools/kernels.tsv is the one list of the suite's kernels: the Makefile
(KVERS, KSERIES), tools/setup.sh and this module read it.
"""

import os
import re

from . import TOP


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


def kernel_tree(path):
    """A kernel tree the user built (in-tree, or the O= directory):
    (release, bzImage) from its include/config/kernel.release, or None
    when path is no such tree."""
    try:
        with open(os.path.join(path, "include", "config", "kernel.release")) as f:
            release = f.read().strip()
    except OSError:
        return None
    return release, os.path.join(path, "arch", "x86", "boot", "bzImage")


def is_tree_spec(word):
    """A --kernels entry that names a directory (has a slash) is a tree."""
    return "/" in word


def select_kernels(spec, available):
    """--kernels: comma-separated releases, series or kernel trees (a path:
    a directory holding a built kernel, kept as its absolute path), in the
    order given (make run's ratios take the first as their base), each
    once; an empty spec is every available kernel. Raises ValueError
    naming what matched nothing."""
    want = [w for w in spec.split(",") if w.strip()]
    if not want:
        return list(available)
    out = []
    for w in (x.strip() for x in want):
        if is_tree_spec(w):
            tree = os.path.abspath(w)
            if not kernel_tree(tree):
                raise ValueError(f"--kernels {spec}: {w} is not a built kernel tree "
                                 "(no include/config/kernel.release)")
            if tree not in out:
                out.append(tree)
            continue
        hits = [k for k in available if k == w or series(k) == w or
                k.startswith(w + ".") or k.startswith(w + "-")]
        if not hits:
            raise ValueError(f"--kernels {spec}: {w} matches none of {' '.join(available)}")
        out += [k for k in hits if k not in out]
    return out


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


def release_of(kernel):
    """The release of a --kernels entry: its own, or a kernel tree's."""
    tree = kernel_tree(kernel) if is_tree_spec(kernel) else None
    return tree[0] if tree else kernel


def kernel_var(kernel):
    """The make variable that builds the modules for a --kernels entry."""
    return f"KDIR={kernel}" if is_tree_spec(kernel) else f"KVER={kernel}"


def series(kver):
    """6.1.0-56-amd64 -> 6.1, 6.12.117+deb12-amd64 -> 6.12 (a tree: its
    release's)."""
    m = re.match(r"^(\d+\.\d+)", release_of(kver))
    return m.group(1) if m else kver


def release_image(release):
    """An installed release's kernel: /boot/vmlinuz-RELEASE, or where
    Debian 7.x's linux-binary package puts it, /usr/lib/modules/RELEASE/vmlinuz."""
    for path in (os.path.join("/boot", "vmlinuz-" + release),
                 os.path.join("/usr/lib/modules", release, "vmlinuz")):
        if os.path.exists(path):
            return path
    return None


def image_releases():
    """The releases whose kernel image is installed."""
    rels = set()
    for d, prefix in (("/boot", "vmlinuz-"), ("/usr/lib/modules", "")):
        try:
            rels |= {f[len(prefix):] for f in os.listdir(d) if f.startswith(prefix)}
        except OSError:
            pass
    return {r for r in rels if release_image(r)}


class KernelError(ValueError):
    """A kernel a command names that is not there; the message says why."""


def newest_kernel(series):
    """The image of the newest installed release of series."""
    rel = newest_release(series, image_releases())
    if not rel:
        raise KernelError(f"no kernel image of the {series} series: run `make setup` first")
    return release_image(rel)


def resolve_kernel(spec):
    """--kernel: a bzImage path, a kernel tree, an installed release or a
    series of tools/kernels.tsv (its newest release); none: the table's
    first series. KernelError when spec names none of these."""
    names = [ser for ser, _, _ in kernel_table()]
    if not spec:
        return newest_kernel(names[0])
    if spec in names:
        return newest_kernel(spec)
    if os.path.isdir(spec):
        # A kernel tree: vng boots its bzImage with its own modules.
        if not kernel_tree(spec):
            raise KernelError(f"--kernel {spec}: a directory, but no built kernel tree "
                              "(include/config/kernel.release)")
        return os.path.abspath(spec)
    if os.path.exists(spec):
        return spec
    image = release_image(spec)
    if image:
        return image
    raise KernelError(f"--kernel {spec}: not a file, an installed release or one of "
                      f"{', '.join(names)}")
