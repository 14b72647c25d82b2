# SPDX-License-Identifier: GPL-2.0
"""tools/lab/lab.sh without a root: the prerequisites check and the
Makefile's LAB=root forwarding."""

import os
import shutil
import subprocess

from conftest import TOP
from memhp_host import accel

LAB = os.path.join(TOP, "tools", "lab", "lab.sh")
# What lab.sh itself runs to check the host.
TOOLS = ("bash", "sh", "awk", "id", "sed", "cat", "readlink", "true")


def fake_path(tmp_path, present):
    """A PATH with the shell tools and fake programs named in present."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        os.symlink(shutil.which(tool), bin_dir / tool)
    for name in present:
        prog = bin_dir / name
        prog.write_text("#!/bin/sh\nexit 0\n")
        prog.chmod(0o755)
    return str(bin_dir)


def check(tmp_path, present):
    env = {"PATH": fake_path(tmp_path, present), "HOME": str(tmp_path),
           "MEMHP_CACHE": str(tmp_path / "cache")}
    return subprocess.run(["bash", LAB, "check"], env=env, capture_output=True,
                          text=True, timeout=30, check=False)


def test_missing_program_gets_an_install_line_per_distribution(tmp_path):
    r = check(tmp_path, ["git", "make", "unshare", "newuidmap", "newgidmap"])
    assert r.returncode != 0
    assert "missing on this host: mmdebstrap" in r.stderr
    for line in ("Debian/Ubuntu: sudo apt install", "Fedora:        sudo dnf install",
                 "Arch:          sudo pacman -S --needed"):
        assert any(line in l and "mmdebstrap" in l for l in r.stderr.splitlines()), r.stderr


def test_present_programs_are_not_asked_for(tmp_path):
    r = check(tmp_path, ["git", "make", "unshare", "mmdebstrap", "newuidmap", "newgidmap"])
    for line in r.stderr.splitlines():
        if "sudo apt install" in line:
            # At most the archive keyring, which is a file, not a program.
            assert line.split("install ")[1].split() == ["debian-archive-keyring"]


def make_n(*args):
    env = dict(os.environ)
    env.pop("MAKEFLAGS", None)
    return subprocess.run(["make", "-n", "--no-print-directory", "-C", TOP] + list(args),
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def test_inside_the_root_the_target_runs_itself():
    r = make_n("LAB=root", "MEMHP_IN_LAB=1", "print-kver")
    assert r.returncode == 0, r.stderr
    assert "lab.sh enter" not in r.stdout


def test_host_goals_do_not_enter_the_root():
    r = make_n("LAB=root", "lab-check")
    assert r.returncode == 0, r.stderr
    assert "lab.sh check" in r.stdout
    assert "lab.sh enter" not in r.stdout


def test_kvm_advice_in_the_lab_names_the_host_group(monkeypatch):
    # /dev/kvm as the lab's user namespace shows it: group not mapped.
    st = os.stat_result((0o20660, 1, 5, 1, 65534, 65534, 0, 0, 0, 0))
    monkeypatch.setattr(accel.os, "stat", lambda path: st)
    monkeypatch.setattr(accel.os, "access", lambda path, mode: False)
    monkeypatch.setattr(accel, "overflow_gid", lambda: 65534)
    monkeypatch.setenv("MEMHP_IN_LAB", "1")
    why = accel.kvm_access()
    assert "not mapped in the lab's user namespace" in why
    assert "usermod -aG kvm" in why
    monkeypatch.delenv("MEMHP_IN_LAB")
    assert "not mapped" not in accel.kvm_access()
