# SPDX-License-Identifier: GPL-2.0
"""tools/qemu/repro/decode-race.py without a guest: the QEMU command line it
runs and its verdict on a boot, with a fake QEMU for each outcome."""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

from conftest import TOP

HERE = os.path.join(TOP, "tools", "qemu", "repro")


@pytest.fixture(scope="module")
def race():
    sys.path.insert(0, HERE)
    spec = importlib.util.spec_from_file_location("decode_race",
                                                  os.path.join(HERE, "decode-race.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fake_qemu(tmp_path, body):
    path = tmp_path / "qemu"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return [str(path)]


def test_argv_two_vcpus_mttcg_and_devices(race):
    argv = race.qemu_argv("qemu", "/k", "/i", 77)
    assert argv[argv.index("-accel") + 1] == "tcg,thread=multi"
    assert argv[argv.index("-smp") + 1] == "2"
    assert argv[argv.index("-machine") + 1] == "q35"
    assert "decode_race.toggles=77" in argv[argv.index("-append") + 1]
    assert argv.count("-device") == race.DEVICES


def test_boot_abort_is_the_defect(race, tmp_path):
    argv = fake_qemu(tmp_path, 'echo "x decode-race: toggles 1000"; '
                     'echo "iotlb_to_section: Assertion failed." >&2; kill -ABRT $$')
    rc, msg = race.boot(argv, 30)
    assert rc == 1 and "signal 6" in msg and "iotlb_to_section" in msg
    assert "toggles 1000" in msg


def test_boot_done_is_a_pass(race, tmp_path):
    argv = fake_qemu(tmp_path, 'echo "decode-race: devices 8"; echo "decode-race: done 3"')
    assert race.boot(argv, 30)[0] == 0


def test_boot_without_done_or_with_an_error_could_not_run(race, tmp_path):
    assert race.boot(fake_qemu(tmp_path, 'echo "decode-race: devices 8"'), 30)[0] == 2
    rc, msg = race.boot(fake_qemu(tmp_path, 'echo "decode-race: error mount: EPERM"'), 30)
    assert rc == 2 and "mount" in msg
    rc, msg = race.boot(fake_qemu(tmp_path, 'echo "bad option" >&2; exit 1'), 30)
    assert rc == 2 and "exited 1" in msg and "bad option" in msg


def test_boot_timeout_is_not_a_crash(race, tmp_path):
    rc, msg = race.boot(fake_qemu(tmp_path, 'echo "decode-race: toggles 1000"; exec sleep 30'), 1)
    assert rc == 2 and "did not power off" in msg and "toggles 1000" in msg


@pytest.mark.skipif(not shutil.which("gcc"), reason="no gcc")
def test_guest_program_builds(tmp_path):
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-c", "-o", str(tmp_path / "d.o"),
                    os.path.join(HERE, "decode-race.c")], check=True)
