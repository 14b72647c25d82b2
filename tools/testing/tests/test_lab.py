# SPDX-License-Identifier: GPL-2.0
"""tools/lab/lab.sh without a root: the prerequisites check and the
Makefile's LAB=root forwarding."""

import os
import re
import shutil
import subprocess

from conftest import TOP
from memhp_host import accel

LAB = os.path.join(TOP, "tools", "lab", "lab.sh")
# What lab.sh itself runs to check the host.
TOOLS = ("bash", "sh", "awk", "id", "sed", "cat", "readlink", "true", "dirname")


def fake_path(tmp_path, present):
    """A PATH with the shell tools and fake programs named in present."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
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
    assert "command not found" not in r.stderr, r.stderr
    # Passed, or failed for what is not a program: the keyring, a normal
    # user's subordinate ids or user namespaces.
    assert r.returncode == 0 or any(w in r.stderr for w in (
        "missing on this host:", "subordinate", "user namespaces")), r.stderr
    for line in r.stderr.splitlines():
        if "missing on this host:" in line:
            # At most the archive keyring, a file.
            assert line.split(": ", 2)[2].split() == [
                "/usr/share/keyrings/debian-archive-keyring.gpg"], r.stderr
    for line in r.stderr.splitlines():
        if "sudo apt install" in line:
            # At most the archive keyring, which is a file, not a program.
            assert line.split("install ")[1].split() == ["debian-archive-keyring"]


def test_readme_gives_the_install_lines_lab_sh_prints(tmp_path):
    r = subprocess.run(["bash", LAB, "check", "--all"], capture_output=True, text=True,
                       timeout=30, check=True,
                       env={"PATH": fake_path(tmp_path, []), "HOME": str(tmp_path)})
    readme = open(os.path.join(TOP, "README.md"), encoding="utf-8").read()
    lines = [l.split(":", 2)[2].strip() for l in r.stderr.splitlines() if l.startswith("lab:")]
    assert len(lines) == 3, r.stderr
    for line in lines:
        assert f"`{line}`" in readme, f"README.md lacks the install line {line!r}"


def test_mmdebstrap_is_not_asked_for_where_apt_can_fetch_it(tmp_path):
    # apt-get, dpkg-deb and perl (the fake's exit 0 stands for the Perl
    # modules mmdebstrap uses): lab.sh fetches it into the cache.
    r = check(tmp_path, ["git", "make", "unshare", "newuidmap", "newgidmap",
                         "apt-get", "dpkg-deb", "perl"])
    assert "command not found" not in r.stderr, r.stderr
    assert "mmdebstrap" not in r.stderr, r.stderr
    # Without apt it is asked for.
    r = check(tmp_path / "noapt", ["git", "make", "unshare", "newuidmap", "newgidmap"])
    assert "missing on this host: mmdebstrap" in r.stderr, r.stderr


def test_default_is_the_lab_root(monkeypatch):
    # Read from make's database: outside the root, make -n would still
    # enter it (lab-enter is a + recipe).
    monkeypatch.delenv("LAB", raising=False)
    r = make_n("-p", "MEMHP_IN_LAB=1", "print-kver")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^LAB = root$", r.stdout, re.M), "LAB's default is not root"


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


def tmp_is_a_place(monkeypatch):
    """tmp_path is under /tmp, which lab.sh mounts whole and lab_binds
    therefore leaves out: here it stands for a place of the user's."""
    import memhp_host
    monkeypatch.setattr(memhp_host, "SYSTEM_DIRS",
                        tuple(d for d in memhp_host.SYSTEM_DIRS if d != "/tmp"))


def test_entry_points_enter_the_root_only_from_outside(monkeypatch, tmp_path):
    import memhp_host
    calls = []
    monkeypatch.setattr(memhp_host.os, "execv", lambda path, argv: calls.append(argv))
    monkeypatch.delenv("MEMHP_IN_LAB", raising=False)
    monkeypatch.delenv("LAB", raising=False)
    monkeypatch.setenv("MEMHP_LAB_BINDS", "")
    monkeypatch.chdir(TOP)
    tmp_is_a_place(monkeypatch)
    tree = tmp_path / "linux"
    tree.mkdir()
    memhp_host.enter_lab("/x/memhp-vm", ["memhp-vm", f"--kernel={tree}", "--", "true"])
    assert len(calls) == 1
    assert calls[0][:2] == [memhp_host.LAB_SH, "enter"]
    assert calls[0][3:] == ["/x/memhp-vm", f"--kernel={tree}", "--", "true"]
    # The tree outside the clone is mounted in the root.
    assert os.environ["MEMHP_LAB_BINDS"].split() == [str(tree)]
    for env in ({"LAB": "host"}, {"MEMHP_IN_LAB": "1"}):
        calls.clear()
        monkeypatch.delenv("LAB", raising=False)
        monkeypatch.delenv("MEMHP_IN_LAB", raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        memhp_host.enter_lab("/x/memhp-vm", ["memhp-vm"])
        assert calls == [], env


def test_entry_points_are_run_by_an_interpreter_in_the_root(monkeypatch):
    # check.py and run.py are not executable: lab.sh enter runs python.
    import memhp_host
    calls = []
    monkeypatch.setattr(memhp_host.os, "execv", lambda path, argv: calls.append(argv))
    monkeypatch.delenv("MEMHP_IN_LAB", raising=False)
    monkeypatch.delenv("LAB", raising=False)
    memhp_host.enter_lab(os.path.join(TOP, "tools", "testing", "check.py"), ["check.py"])
    assert os.path.basename(calls[0][2]).startswith("python")


def test_only_path_options_outside_the_clone_are_mounted(tmp_path, monkeypatch):
    from memhp_host import lab_binds
    monkeypatch.chdir(TOP)
    tmp_is_a_place(monkeypatch)
    tree = tmp_path / "linux"
    tree.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    # The guest's command, release names and the root's own directories:
    # nothing.
    assert lab_binds(["--", "ls", "/", str(tree)]) == []
    assert lab_binds(["--kernel", "6.12", "--qemu=/usr/bin/env"]) == []
    assert lab_binds(["--kernel", TOP]) == []
    # A tree, a --count file's directory, a --kernels list.
    assert lab_binds([f"--kernel={tree}"]) == [str(tree)]
    assert lab_binds(["--count", str(out / "c.json")]) == [str(out)]
    assert lab_binds([f"--kernels=6.1,{tree}"]) == [str(tree)]
    # The working directory, for relative paths.
    monkeypatch.chdir(tree)
    assert lab_binds(["--kernel", "."]) == [str(tree)]
