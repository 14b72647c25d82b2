# SPDX-License-Identifier: GPL-2.0
"""tools/qemu/'s patches apply to the QEMU source make setup keeps
(Debian's qemu orig tarball of the installed version, in the cache), and
tools/qemu/dev/'s to any release make qemu-fixed QEMU_ORIG=... fetched:
git apply --check on the files they touch, extracted alone."""

import glob
import os
import re
import subprocess
import tarfile

import pytest

from conftest import TOP

pytestmark = pytest.mark.qemu

CACHE = os.environ.get("MEMHP_CACHE", "/var/cache/memhp-lab")
PATCHES = sorted(glob.glob(os.path.join(TOP, "tools", "qemu", "*.patch")))
DEV_PATCHES = sorted(glob.glob(os.path.join(TOP, "tools", "qemu", "dev", "*.patch")))


def installed_source():
    """The orig tarball of the installed qemu-system-x86, or None."""
    try:
        ver = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "qemu-system-x86"],
                             capture_output=True, text=True).stdout
    except OSError:
        return None
    ver = ver.split(":")[-1].rsplit("-", 1)[0]
    path = os.path.join(CACHE, "qemu", f"qemu_{ver}.orig.tar.xz")
    return path if ver and os.path.exists(path) else None


def check(patch, source, tmp_path):
    """git apply --check of patch on the files it touches, from source."""
    with open(patch) as f:
        files = sorted(set(re.findall(r"^\+\+\+ b/(\S+)", f.read(), re.M)))
    assert files, "the patch touches no file"
    with tarfile.open(source) as tar:
        top = tar.next().name.split("/")[0]
        for name in files:
            member = tar.getmember(f"{top}/{name}")
            member.name = name
            tar.extract(member, tmp_path)
    r = subprocess.run(["git", "apply", "--check", patch], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("patch", PATCHES, ids=os.path.basename)
def test_patch_applies_to_the_qemu_source(patch, tmp_path):
    source = installed_source()
    if not source:
        pytest.skip(f"no orig tarball of the installed QEMU in {CACHE}/qemu (make setup keeps it)")
    check(patch, source, tmp_path)


@pytest.mark.parametrize("source", sorted(glob.glob(os.path.join(CACHE, "qemu-fixed", "orig",
                                                                  "qemu_*.orig.tar.xz"))) or [None])
@pytest.mark.parametrize("patch", DEV_PATCHES, ids=os.path.basename)
def test_dev_patch_applies_to_fetched_releases(patch, source, tmp_path):
    if not source:
        pytest.skip("no release fetched by make qemu-fixed QEMU_ORIG=... "
                    f"({CACHE}/qemu-fixed/orig)")
    check(patch, source, tmp_path)
