# SPDX-License-Identifier: GPL-2.0
"""memhp-vm's two deadlines (run_guest): the command must start within
--boot-timeout, the whole run end within --timeout. A fake vng writes a
console (its stderr) and never opens QMP, as a guest that stalls in boot."""

import argparse
import asyncio
import time
from memhp_host import guestlog, vm


def args_for(boot_timeout, timeout):
    return argparse.Namespace(boot_timeout=boot_timeout, timeout=timeout, quiet=True,
                              console=False, reuse_freed_ram=True)


def run(tmp_path, script, boot_timeout=2, timeout=30):
    sockdir = tmp_path / "sock"
    rundir = tmp_path / "run"
    sockdir.mkdir()
    rundir.mkdir()
    t0 = time.monotonic()
    rc, timed_out, _ = asyncio.run(vm.run_guest(
        args_for(boot_timeout, timeout), ["/bin/bash", "-c", script], str(sockdir),
        str(rundir)))
    return timed_out, time.monotonic() - t0, rundir


def test_stall_before_the_command_is_a_boot_timeout(tmp_path):
    timed_out, took, rundir = run(
        tmp_path, "echo '[    1.0] virtme-ng-init: udev is done' >&2; sleep 60")
    assert timed_out == "boot"
    assert took < 20
    assert guestlog.console_tail(str(rundir), 3) == ["virtme-ng-init: udev is done"]
    said = guestlog.boot_stall(args_for(2, 30), str(rundir), 3)
    assert said.startswith("boot stalled: the command did not start within 2s")
    assert said.endswith("console tail: virtme-ng-init: udev is done")


def test_started_command_gets_the_whole_timeout(tmp_path):
    # The marker split over two writes still counts; the command then runs
    # past the boot deadline and ends by itself.
    timed_out, took, _ = run(
        tmp_path,
        "printf 'virtme-ng-init: start' >&2; sleep 0.3; printf 'ing script\\n' >&2; sleep 4",
        boot_timeout=2, timeout=30)
    assert timed_out is False
    assert took >= 4


def test_command_past_its_timeout(tmp_path):
    timed_out, took, _ = run(
        tmp_path, "echo 'virtme-ng-init: starting script' >&2; sleep 60",
        boot_timeout=30, timeout=3)
    assert timed_out == "command"
    assert took < 25


def quiet_seconds(args):
    line = args.timeout_context[0]
    assert line.startswith("the command's last output came ")
    return int(line.split()[5].rstrip("s"))


def run_with_args(tmp_path, script, timeout):
    args = args_for(30, timeout)
    for d in ("sock", "run"):
        (tmp_path / d).mkdir()
    _, timed_out, _ = asyncio.run(vm.run_guest(
        args, ["/bin/bash", "-c", script], str(tmp_path / "sock"), str(tmp_path / "run")))
    assert timed_out == "command"
    return args


def test_timeout_of_a_silent_command_says_how_long_it_was_silent(tmp_path):
    args = run_with_args(tmp_path,
                         "echo 'virtme-ng-init: starting script' >&2; echo begun; sleep 60",
                         timeout=4)
    assert quiet_seconds(args) >= 3
    assert args.timeout_context[1].startswith("host load average ")


def test_timeout_of_a_command_still_writing_says_it_was_not_silent(tmp_path):
    args = run_with_args(tmp_path,
                         "echo 'virtme-ng-init: starting script' >&2; "
                         "while :; do echo step; sleep 0.2; done", timeout=4)
    assert quiet_seconds(args) <= 1
