# SPDX-License-Identifier: GPL-2.0
"""tools/qemu/'s patches apply to the QEMU source make setup keeps
(Debian's qemu orig tarball in the cache): git apply --check on the
files they touch, extracted alone."""

import glob
import os
import re
import subprocess
import tarfile

import pytest

from conftest import TOP

PATCHES = sorted(glob.glob(os.path.join(TOP, "tools", "qemu", "*.patch")))
SOURCES = sorted(glob.glob("/var/cache/memhp-lab/qemu/qemu_*.orig.tar.xz"))


@pytest.mark.parametrize("patch", PATCHES, ids=os.path.basename)
def test_patch_applies_to_the_qemu_source(patch, tmp_path):
    if not SOURCES:
        pytest.skip("no QEMU orig tarball in /var/cache/memhp-lab/qemu (make setup keeps it)")
    with open(patch) as f:
        files = sorted(set(re.findall(r"^\+\+\+ b/(\S+)", f.read(), re.M)))
    assert files, "the patch touches no file"
    with tarfile.open(SOURCES[-1]) as tar:
        top = tar.next().name.split("/")[0]
        for name in files:
            member = tar.getmember(f"{top}/{name}")
            member.name = name
            tar.extract(member, tmp_path)
    r = subprocess.run(["git", "apply", "--check", patch], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
