# SPDX-License-Identifier: GPL-2.0
"""tools/qemu/repro/repro.py without a guest: its initramfs writer and the
QMP sequence it sends, for a run and for the --same-backend control."""

import importlib.util
import os
import shutil
import stat
import subprocess

import pytest

from conftest import TOP

REPRO = os.path.join(TOP, "tools", "qemu", "repro", "repro.py")


@pytest.fixture(scope="module")
def repro():
    spec = importlib.util.spec_from_file_location("qemu_repro", REPRO)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_newc(data):
    """{name: (mode, body, (rdevmajor, rdevminor))} of a newc archive, up to
    its trailer; fails on a malformed header."""
    entries, pos = {}, 0
    while True:
        assert data[pos:pos + 6] == b"070701", f"no newc magic at {pos}"
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, rmaj, rmin, namesize = (fields[1], fields[6], fields[9], fields[10],
                                            fields[11])
        pos += 110
        name = data[pos:pos + namesize - 1].decode()
        assert data[pos + namesize - 1] == 0
        pos = (pos + namesize + 3) & ~3
        body = data[pos:pos + size]
        pos = (pos + size + 3) & ~3
        if name == "TRAILER!!!":
            assert pos == len(data)
            return entries
        entries[name] = (mode, body, (rmaj, rmin))


def test_initramfs_holds_init(repro):
    init = b"\x7fELF" + bytes(range(256)) * 3 + b"odd"  # a size not a multiple of 4
    entries = parse_newc(repro.initramfs(init))
    assert set(entries) == {"dev", "dev/console", "proc", "sys", "init"}
    mode, body, _ = entries["init"]
    assert stat.S_ISREG(mode) and mode & 0o777 == 0o755 and body == init
    mode, _, rdev = entries["dev/console"]
    assert stat.S_ISCHR(mode) and rdev == (5, 1)
    assert all(stat.S_ISDIR(entries[d][0]) for d in ("dev", "proc", "sys"))


@pytest.mark.skipif(not shutil.which("cpio"), reason="no cpio")
def test_cpio_lists_init(repro, tmp_path):
    path = tmp_path / "initramfs.cpio"
    path.write_bytes(repro.initramfs(b"#!/bin/false\n"))
    out = subprocess.run(["cpio", "-t", "--quiet", "-F", str(path)], capture_output=True,
                         text=True, timeout=10, check=True).stdout.split()
    assert sorted(out) == ["dev", "dev/console", "init", "proc", "sys"]


def commands(phase):
    return [(i["execute"], i.get("arguments"), i.get("label"), i.get("until_freed"))
            if "execute" in i else ("event", i["event"], i["data"])
            for i in phase]


def test_qmp_sequence_new_backend(repro):
    size = 128 << 20
    ramblock = {"command-line": "info ramblock"}
    connect, plug, replug = repro.qmp_sequence()
    assert commands(connect) == [("qmp_capabilities", None, None, None)]
    assert commands(plug) == [
        ("object-add", {"qom-type": "memory-backend-ram", "id": "m1", "size": size},
         None, None),
        ("device_add", {"driver": "pc-dimm", "id": "d1", "memdev": "m1"}, None, None)]
    assert commands(replug) == [
        ("human-monitor-command", ramblock, "before", None),
        ("device_del", {"id": "d1"}, None, None),
        ("event", "DEVICE_DELETED", {"device": "d1"}),
        ("event", "ACPI_DEVICE_OST",
         {"info": {"slot-type": "DIMM", "source": 3, "status": 0}}),
        ("object-del", {"id": "m1"}, None, None),
        ("human-monitor-command", ramblock, None, "m1"),
        ("object-add", {"qom-type": "memory-backend-ram", "id": "m2", "size": size},
         None, None),
        ("device_add", {"driver": "pc-dimm", "id": "d2", "memdev": "m2"}, None, None),
        ("human-monitor-command", ramblock, "after", None)]


def test_qmp_sequence_same_backend(repro):
    normal = repro.qmp_sequence()
    connect, plug, replug = repro.qmp_sequence(same_backend=True)
    assert (connect, plug) == (normal[0], normal[1])
    names = [c[0] if c[0] != "event" else c[1] for c in commands(replug)]
    assert names == ["human-monitor-command", "device_del", "DEVICE_DELETED",
                     "ACPI_DEVICE_OST", "device_add", "human-monitor-command"]
    assert replug[4]["arguments"] == {"driver": "pc-dimm", "id": "d2", "memdev": "m1"}
    assert not any(i.get("execute") in ("object-del", "object-add") for i in replug)


def test_ramblock_offsets_and_verdict(repro):
    text = """\
              Block Name    PSize              Offset               Used              Total                HVA  RO
                  pc.ram    4 KiB  0x0000000000000000 0x0000000040000000 0x0000000040000000 0x00007f9d1be00000  rw
                      m2    4 KiB  0x0000000041380000 0x0000000008000000 0x0000000008000000 0x00007f9d11e00000  rw
                            4 KiB  0x0000000049380000 0x0000000008000000 0x0000000008000000 0x00007f047bc00000  rw
"""
    assert repro.ramblocks(text)[1:] == [("m2", 0x41380000, 0x8000000),
                                         ("", 0x49380000, 0x8000000)]
    assert repro.offset_of(text, "m2") == 0x41380000
    assert repro.offset_of(text.replace(" m2", "/objects/m2"), "m2") == 0x41380000
    assert repro.offset_of(text, "m1") is None

    def line(step, other, rewritten=None):
        s = (f"tb-stale: step {step} (d), offset 0x100: pages in range 9, returned 1: "
             f"{9 - other}, returned another value: {other}")
        if rewritten is not None:
            s += f"; rewritten: returned 2: {9 - rewritten}, returned another value: {rewritten}"
        return s

    assert repro.verdict([line(1, 0), line(2, 0, 0), line(3, 0), line(4, 0, 0)])[0] == 0
    assert repro.verdict([line(1, 0), line(2, 0, 0), line(3, 0), line(4, 0, 7)])[0] == 1
    assert repro.verdict([line(1, 0), line(2, 0, 1), line(3, 0), line(4, 0, 0)])[0] == 2
    assert repro.verdict([line(1, 0), line(2, 0, 0), line(3, 5)])[0] == 2
