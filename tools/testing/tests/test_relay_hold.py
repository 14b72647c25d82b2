# SPDX-License-Identifier: GPL-2.0
"""The QMP relay's RAM hold (memhp-vm Relay) against a fake QEMU.

FakeQemu keeps RAM blocks as QEMU does: a new block goes to the start of
the smallest gap after an existing block's end that fits it
(find_ram_offset(), gaps aligned to 64 pages), and object-del frees the
block only after `rcu_polls` further `info ramblock` queries, as QEMU's
RCU-deferred free does.
"""

import asyncio

import pytest
from memhp_host import relay as relay_mod

MiB = 1 << 20
ALIGN = 64 * 4096


class QmpError(Exception):
    pass


class FakeQemu:
    """blocks: {object id or ram name: (offset, length)}. A backend's block
    is named after it only while a device has it (device_add .. device_del),
    as QEMU's vmstate_register_ram() names it; others (a hold, a backend no
    device uses, one whose device is gone) have no name."""

    def __init__(self, blocks, rcu_polls=2, refuse_add=False):
        self.objs = {}   # object id -> block key
        self.blocks = {}  # block key -> [name, offset, length, hva]
        self.devs = {}   # device id -> object id
        self.hva = 0x7f0000000000
        for key, (off, ln) in blocks.items():
            obj = key if key != "pc.ram" else None
            self._add(key, "" if obj else key, off, ln)
            if obj:
                self.objs[obj] = key
        self.pending = {}  # block key -> polls left before it is freed
        self.rcu_polls = rcu_polls
        self.refuse_add = refuse_add

    def _add(self, key, name, off, ln):
        self.hva += 1 << 32
        self.blocks[key] = [name, off, ln, self.hva]

    def find_ram_offset(self, size):
        best, gap = None, None
        spans = [(b[1], b[2]) for b in self.blocks.values()]
        for off, ln in spans:
            cand = -(-(off + ln) // ALIGN) * ALIGN
            nxt = min([o for o, _ in spans if o >= cand], default=1 << 62)
            if nxt - cand >= size and (gap is None or nxt - cand < gap):
                best, gap = cand, nxt - cand
        return best if best is not None else 0

    def table(self):
        for key in list(self.pending):
            self.pending[key] -= 1
            if self.pending[key] < 0:
                del self.pending[key]
                del self.blocks[key]
        rows = ["              Block Name    PSize              Offset               Used"
                "              Total                HVA  RO"]
        for name, off, ln, hva in sorted(self.blocks.values(), key=lambda b: b[1]):
            rows.append(f"{name:>24}    4 KiB  {off:#018x} {ln:#018x} {ln:#018x} "
                        f"{hva:#018x}  rw")
        return "\r\n".join(rows) + "\r\n"

    async def execute(self, cmd, args=None):
        args = args or {}
        if cmd == "human-monitor-command":
            return self.table()
        if cmd == "qom-get":
            obj = args["path"].split("/")[-1]
            if obj not in self.objs:
                raise QmpError(f"no object {obj}")
            return ("memory-backend-ram" if args["property"] == "type"
                    else self.blocks[self.objs[obj]][2])
        if cmd == "object-del":
            obj = args["id"]
            if obj not in self.objs:
                raise QmpError(f"no object {obj}")
            self.pending[self.objs.pop(obj)] = self.rcu_polls
            return {}
        if cmd == "device_add":
            self.devs[args["id"]] = args["memdev"]
            self.blocks[self.objs[args["memdev"]]][0] = args["memdev"]
            return {}
        if cmd == "device_del":
            self.blocks[self.objs[self.devs.pop(args["id"])]][0] = ""
            return {}
        if cmd == "object-add":
            if self.refuse_add:
                raise QmpError("object-add refused")
            obj, size = args["id"], args["size"]
            self._add(obj, "", self.find_ram_offset(size), size)
            self.objs[obj] = obj
            return {}
        raise QmpError(f"unexpected {cmd}")


def relay(qemu, inject=False):
    lines = []
    r = relay_mod.Relay("/nonexistent", lines.append, hold_freed_ram=True,
                       inject_failure=inject, qmp=qemu)
    r.lines = lines
    return r


def delete(r, obj, plugged=True):
    """The guest's sequence: the DIMM plugged and ejected, then object-del."""
    if plugged:
        asyncio.run(r._execute("device_add", {"driver": "pc-dimm", "id": "d-" + obj,
                                              "memdev": obj}))
        asyncio.run(r._execute("device_del", {"id": "d-" + obj}))
    return asyncio.run(r._execute("object-del", {"id": obj}))


BOOT = {"pc.ram": (0, 2048 * MiB)}


def held_ranges(qemu):
    return [(b[1], b[2]) for k, b in qemu.blocks.items() if k.startswith("memhp-hold-")]


def test_freed_range_is_held():
    q = FakeQemu({**BOOT, "m1": (2048 * MiB, 128 * MiB),
                  "m2": (2176 * MiB, 128 * MiB)})
    r = relay(q)
    delete(r, "m1")
    assert r.failures == []
    assert held_ranges(q) == [(2048 * MiB, 128 * MiB)]
    assert any("m1 freed RAM 0x80000000+0x8000000; memhp-hold-1 holds 0x80000000+0x8000000"
               in x for x in r.lines)


def test_highest_block_held_past_a_smaller_gap():
    # A 128 MiB gap below, the freed block the highest: its gap is
    # unbounded, so the first hold fills the smaller gap, the second the
    # freed range.
    q = FakeQemu({**BOOT, "a": (2048 * MiB, 128 * MiB),
                  "b": (2304 * MiB, 128 * MiB)})
    r = relay(q)
    delete(r, "b")
    assert r.failures == []
    assert (2304 * MiB, 128 * MiB) in held_ranges(q)
    assert len(held_ranges(q)) == 2


def test_other_block_freed_at_once_is_not_taken_for_it():
    # An earlier delete's block leaves the list in the same RCU pass: the
    # relay must wait for its own block by name.
    q = FakeQemu({**BOOT, "m1": (2048 * MiB, 128 * MiB),
                  "m2": (2176 * MiB, 256 * MiB),
                  "other": (2432 * MiB, 64 * MiB)}, rcu_polls=4)
    q.pending[q.objs.pop("other")] = 0
    r = relay(q)
    delete(r, "m2")
    assert r.failures == []
    assert (2176 * MiB, 256 * MiB) in held_ranges(q)
    assert all(ln == 256 * MiB for _, ln in held_ranges(q))


def test_block_never_freed_fails():
    q = FakeQemu({**BOOT, "m1": (2048 * MiB, 128 * MiB)}, rcu_polls=10 ** 9)
    r = relay(q)
    r.HOLD_WAIT = 0.3
    delete(r, "m1")
    assert len(r.failures) == 1 and "was not freed within" in r.failures[0]
    assert held_ranges(q) == []


def test_refused_object_add_fails():
    q = FakeQemu({**BOOT, "m1": (2048 * MiB, 128 * MiB)}, refuse_add=True)
    r = relay(q)
    delete(r, "m1")
    assert len(r.failures) == 1 and "object-add refused" in r.failures[0]


def test_hold_elsewhere_and_no_retry_left_fails():
    q = FakeQemu({**BOOT, "a": (2048 * MiB, 128 * MiB),
                  "b": (2304 * MiB, 128 * MiB)})
    r = relay(q)
    r.HOLD_MAX = 1
    delete(r, "b")
    assert len(r.failures) == 1 and "is not held" in r.failures[0]
    assert held_ranges(q) == [(2176 * MiB, 128 * MiB)]


def test_injected_failure_adds_no_hold_and_fails():
    q = FakeQemu({**BOOT, "m1": (2048 * MiB, 128 * MiB)})
    r = relay(q, inject=True)
    delete(r, "m1")
    assert held_ranges(q) == []
    assert len(r.failures) == 1 and "MEMHP_VM_INJECT_HOLD_FAILURE" in r.failures[0]


def test_backend_no_device_used_needs_no_hold():
    q = FakeQemu({**BOOT, "m1": (2048 * MiB, 128 * MiB)})
    r = relay(q)
    delete(r, "m1", plugged=False)
    assert r.failures == [] and held_ranges(q) == []
    assert any("m1 was no device's memory" in x for x in r.lines)


def test_no_hold_for_other_objects_or_when_off():
    q = FakeQemu({**BOOT, "m1": (2048 * MiB, 128 * MiB)})
    r = relay_mod.Relay("/nonexistent", lambda m: None, hold_freed_ram=False, qmp=q)
    delete(r, "m1")
    assert held_ranges(q) == [] and r.failures == []
    with pytest.raises(QmpError):
        delete(relay(q), "nosuch", plugged=False)


def test_covers():
    m = relay_mod
    assert m.covers([(0, 10), (10, 10)], (5, 10))
    assert not m.covers([(0, 10), (12, 10)], (5, 10))
    assert m.covers([(20, 5), (0, 30)], (5, 10))
    assert not m.covers([], (0, 1))


# info ramblock of QEMU 10.0.2 (q35, 1 GiB): tbm1 plugged as a pc-dimm,
# tbm2 a backend no device uses.
INFO_RAMBLOCK = (
    "              Block Name    PSize              Offset               Used"
    "              Total                HVA  RO\r\n"
    "                  pc.ram    4 KiB  0x0000000000000000 0x0000000040000000 "
    "0x0000000040000000 0x00007f5c4be00000  rw\r\n"
    "                    tbm1    4 KiB  0x0000000040300000 0x0000000008000000 "
    "0x0000000008000000 0x00007f5c3be00000  rw\r\n"
    "                            4 KiB  0x0000000048300000 0x0000000008000000 "
    "0x0000000008000000 0x00007f5c33c00000  rw\r\n"
    "    /rom@etc/acpi/tables    4 KiB  0x0000000040080000 0x0000000000020000 "
    "0x0000000000200000 0x00007f5c92a00000  ro\r\n")


def test_parse_info_ramblock():
    assert relay_mod.parse_ramblocks(INFO_RAMBLOCK) == [
        ("pc.ram", 0, 0x40000000, 0x7f5c4be00000),
        ("tbm1", 0x40300000, 0x8000000, 0x7f5c3be00000),
        ("", 0x48300000, 0x8000000, 0x7f5c33c00000),
        ("/rom@etc/acpi/tables", 0x40080000, 0x200000, 0x7f5c92a00000)]


def test_device_add_whose_block_has_no_name_fails():
    q = FakeQemu({**BOOT, "m1": (2048 * MiB, 128 * MiB)})

    async def unnamed_add(cmd, args=None):
        if cmd == "device_add":
            return {}
        return await FakeQemu.execute(q, cmd, args)
    q.execute = unnamed_add
    r = relay(q)
    asyncio.run(r._execute("device_add", {"driver": "pc-dimm", "id": "d1", "memdev": "m1"}))
    assert len(r.failures) == 1 and "cannot be held later" in r.failures[0]
