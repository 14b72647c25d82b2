# SPDX-License-Identifier: GPL-2.0
"""memhp-vm --root-cache: the guest's 9p root mounted with a cache mode
(make check-debug's guests), and nothing changed without it."""

import glob
import os

import pytest

from conftest import TOP
from memhp_host import check, cmdline, vm


def vng_cmd(tmp_path, *opts):
    args = vm.parse_args(["--kernel", "/boot/vmlinuz-x", *opts, "--", "true"])
    return cmdline.build_vng_cmd(args, "/boot/vmlinuz-x", False, str(tmp_path), str(tmp_path))


def test_root_cache_overrides_vngs_rootflags_on_a_9p_root(tmp_path):
    cmd = vng_cmd(tmp_path, "--root-cache", "loose", "--append", "quiet")
    flags = f"--append=rootflags={cmdline.VNG_ROOTFLAGS},cache=loose"
    assert "--force-9p" in cmd
    assert cmd.count(flags) == 1
    # The kernel takes the last rootflags=; vng puts its own before every
    # --append, and the user's --append still comes after ours.
    assert cmd.index(flags) < cmd.index("--append=quiet")


def test_no_root_cache_keeps_vngs_mount(tmp_path):
    cmd = vng_cmd(tmp_path)
    assert "--force-9p" not in cmd
    assert not [a for a in cmd if "rootflags=" in a]


def test_root_cache_refuses_unknown_modes(capsys):
    with pytest.raises(SystemExit):
        vm.parse_args(["--root-cache", "fscache", "--", "true"])
    assert "invalid choice" in capsys.readouterr().err


def test_vng_rootflags_are_the_installed_virtme_ngs():
    runs = glob.glob(os.path.join(TOP, ".venv", "lib", "python3*", "site-packages", "virtme",
                                  "commands", "run.py"))
    if not runs:
        pytest.skip("virtme-ng is not installed in .venv (make setup)")
    with open(runs[0]) as f:
        assert f'"rootflags={cmdline.VNG_ROOTFLAGS}"' in f.read()


def test_check_passes_root_cache_to_every_group():
    args = check.parse_args(["--only", "guest", "--root-cache", "loose"])
    cmd = check.group_cmd(args, "/boot/vmlinuz-x", "--mem 3G", ["load_unload.sh"])
    assert "--root-cache=loose" in cmd
    args = check.parse_args(["--only", "guest"])
    assert not [a for a in check.group_cmd(args, "/boot/vmlinuz-x", "", ["x.sh"])
                if a.startswith("--root-cache")]
