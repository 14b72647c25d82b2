# SPDX-License-Identifier: GPL-2.0
"""The QMP relay: the guest's memhp-qmp requests, over a virtio-serial
port, to its own QEMU, and under TCG the hold of the RAM offsets a
deleted memory backend freed."""

import asyncio
import json
import os
import re
import sys
import time

from .cmdline import shm_backend_path


RAMBLOCK_ROW_RE = re.compile(r"^\s*(.*?)\s*\b(\d+ [KMG]iB)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+"
                             r"(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+\w+\s*$")


def parse_ramblocks(text):
    """info ramblock's table -> [(name, offset, total length, host address)].

    A backend's block is named after its id once a device has registered
    it (a DIMM: the backend's id; virtio-mem: ".../ID"); a backend no device
    uses has a block with an empty name, as the holds have."""
    out = []
    for row in text.splitlines():
        m = RAMBLOCK_ROW_RE.match(row)
        if m:
            out.append((m.group(1), int(m.group(3), 16), int(m.group(5), 16),
                        int(m.group(6), 16)))
    return out


def covers(ranges, want):
    """Whether the (offset, length) ranges together cover want."""
    start, end = want[0], want[0] + want[1]
    for off, n in sorted(ranges):
        if off <= start < off + n:
            start = off + n
    return start >= end


def fmt_range(r):
    return f"{r[0]:#x}+{r[1]:#x}"


class Relay:
    """Carries QMP commands from the guest's virtio-serial port to QEMU.

    Requests are JSON lines {"execute": ..., "arguments": ..., "id": ...};
    the answer is the QMP reply line ({"return": ...} or {"error": ...}).
    The pseudo-command x-memhp-wait-event {"event", "match", "timeout"}
    returns the first event of that name (since boot, not yet returned)
    whose data contains `match`.

    With hold_freed_ram (TCG), an object-del of a memory backend is
    followed, once QEMU has freed its RAM block, by object-adds of backends
    of the same size that nothing uses, memhp-hold-N, until they cover the
    RAM offsets (ram_addr_t) the deleted block had. QEMU places a new block
    at the start of the smallest gap it fits (find_ram_offset()), so the
    first hold takes the freed range unless a smaller gap elsewhere fits
    too, or the freed block was the highest (its gap is then unbounded);
    each further hold takes the next such gap, and at most HOLD_MAX are
    added. QEMU's TCG keeps the translations made from a freed RAM block's
    pages, and a later block at that offset would run them
    (Documentation/known-issues.rst, "A re-plugged DIMM runs code the old
    DIMM held"). A backend's block is recorded when the guest's device_add
    gives it to a device (the block is then named after the backend) and
    followed by its offset, length and host address until QEMU frees it,
    never by which block left the list, so another object freed at the
    same time is not taken for it; a hold's block is the one block its
    object-add added. A backend no device the guest added used needs no
    hold: the guest never saw its memory. A hold that fails (the block not freed
    within HOLD_WAIT seconds, an object-add refused, the range left
    uncovered) is a failure of the run: it is in self.failures, qmp.log and
    on stderr, and memhp-vm exits 125. inject_failure (the runner's own
    tests: MEMHP_VM_INJECT_HOLD_FAILURE=1) adds no hold, so that failure is
    seen as a real one would be.
    """

    HOLD_WAIT = 30
    HOLD_MAX = 16

    def __init__(self, sockdir, log, hold_freed_ram=False, inject_failure=False, qmp=None):
        from qemu.qmp import QMPClient
        self.sockdir = sockdir
        self.log = log
        self.hold_freed_ram = hold_freed_ram
        self.inject_failure = inject_failure
        self.holds = 0
        self.failures = []
        self.plugged = {}  # backend id -> its RAM block, while a device has it
        self.qmp = qmp or QMPClient("memhp-vm")
        self.events = []
        self.cond = asyncio.Condition()
        self.connected = asyncio.Event()

    async def _connect_qmp(self, proc):
        path = os.path.join(self.sockdir, "qmp.sock")
        while proc.returncode is None:
            if os.path.exists(path):
                try:
                    await self.qmp.connect(path)
                    self.connected.set()
                    return True
                except Exception:  # QEMU not listening yet
                    pass
            await asyncio.sleep(0.1)
        return False

    async def _pump_events(self):
        from qemu.qmp import EventListener
        listener = EventListener()
        self.qmp.register_listener(listener)
        async for event in listener:
            self.log(f"qmp event: {json.dumps(dict(event))}")
            async with self.cond:
                self.events.append(dict(event))
                self.cond.notify_all()

    async def _wait_event(self, arguments):
        name = arguments.get("event")
        match = arguments.get("match") or {}
        timeout = float(arguments.get("timeout", 60))

        def find():
            for i, ev in enumerate(self.events):
                data = ev.get("data") or {}
                if ev.get("event") == name and all(data.get(k) == v for k, v in match.items()):
                    return self.events.pop(i)
            return None

        try:
            async with self.cond:
                ev = await asyncio.wait_for(self.cond.wait_for(find), timeout)
            return {"return": ev}
        except asyncio.TimeoutError:
            return {"error": {"class": "GenericError",
                              "desc": f"no {name} event matching {json.dumps(match)} within {timeout}s"}}

    def _backend_usage(self, arguments):
        """The allocated bytes of a backend=shm device's file (id vmemN)."""
        m = re.fullmatch(r"vmem(\d+)", str(arguments.get("id", "")))
        path = shm_backend_path(self.sockdir, int(m.group(1))) if m else None
        try:
            st = os.stat(path)
        except (OSError, TypeError):
            return {"error": {"class": "GenericError",
                              "desc": f"no backend=shm file for id {arguments.get('id')}"}}
        return {"return": {"allocated": st.st_blocks * 512, "size": st.st_size}}

    async def _ramblocks(self):
        """QEMU's RAM blocks: [(name, offset, total length, host address)]."""
        text = await self.qmp.execute("human-monitor-command",
                                      {"command-line": "info ramblock"})
        return parse_ramblocks(text)

    async def _backend_size(self, obj_id):
        """The size of memory backend obj_id, or None if it is none."""
        try:
            path = f"/objects/{obj_id}"
            typ = await self.qmp.execute("qom-get", {"path": path, "property": "type"})
            if not str(typ).startswith("memory-backend"):
                return None
            return int(await self.qmp.execute("qom-get", {"path": path, "property": "size"}))
        except Exception:  # no such object: object-del will say so
            return None

    def _fail(self, msg):
        """A hold that failed: in qmp.log and on stderr, and it fails the run."""
        self.failures.append(msg)
        self.log(f"relay: hold failed: {msg}")
        print(f"memhp-vm: relay: hold failed: {msg}", file=sys.stderr, flush=True)

    async def _execute(self, cmd, arguments):
        """A QMP command for the guest; object-del of a backend gets holds."""
        if self.hold_freed_ram and cmd == "device_add" and arguments.get("memdev"):
            return await self._device_add(arguments)
        obj_id = arguments.get("id") if cmd == "object-del" else None
        size = await self._backend_size(obj_id) if self.hold_freed_ram and obj_id else None
        if size is None:
            return await self.qmp.execute(cmd, arguments or None)
        ret = await self.qmp.execute(cmd, arguments)
        block = self.plugged.pop(obj_id, None)
        if block is None:
            # No device the guest added used it: the guest never saw its
            # memory, so no translation was made from it.
            self.log(f"relay: {obj_id} was no device's memory: nothing to hold")
            return ret
        try:
            await self._hold(obj_id, block)
        except Exception as e:  # the guest's object-del succeeded all the same
            self._fail(f"{obj_id}: {e}")
        return ret

    async def _device_add(self, arguments):
        """device_add of a memory device: remembers its backend's RAM block.

        A block is named after its backend's id only while a device has it
        registered (a DIMM: the id; virtio-mem: ".../ID"); once the guest
        has ejected the device, at object-del, it has no name. Its offset,
        length and host address stay, and identify it then."""
        ret = await self.qmp.execute("device_add", arguments)
        memdev = arguments["memdev"]
        try:
            mine = [b for b in await self._ramblocks()
                    if b[0] == memdev or b[0].endswith("/" + memdev)]
        except Exception as e:
            self._fail(f"{memdev}: info ramblock after device_add: {e}")
            return ret
        if len(mine) != 1:
            self._fail(f"{memdev}: {len(mine)} RAM blocks named after it once "
                       f"{arguments.get('id')} was added: its RAM cannot be held later")
        else:
            self.plugged[memdev] = mine[0]
        return ret

    async def _hold(self, obj_id, block):
        """Holds the RAM range the deleted block (name, offset, length,
        host address) had. Blocks are told apart by their host address
        and offset: a hold's block has no name."""
        freed = (block[1], block[2])
        # QEMU frees the RAMBlock when the last reference to the backend
        # goes, which an RCU callback may drop after object-del's reply.
        deadline = time.monotonic() + self.HOLD_WAIT
        blocks = await self._ramblocks()
        while block[1:] in [b[1:] for b in blocks]:
            if time.monotonic() > deadline:
                self._fail(f"{obj_id}'s RAM block {fmt_range(freed)} was not freed within "
                           f"{self.HOLD_WAIT} s: no hold")
                return
            await asyncio.sleep(0.1)
            blocks = await self._ramblocks()
        held = []
        for _ in range(0 if self.inject_failure else self.HOLD_MAX):
            self.holds += 1
            hold = f"memhp-hold-{self.holds}"
            # The relay runs one request at a time: nothing but this
            # object-add changes the blocks since the last listing.
            known = set(blocks)
            # reserve=false: nothing ever touches a hold's memory, and it
            # must not count against the host's commit limit.
            await self.qmp.execute("object-add", {"qom-type": "memory-backend-ram",
                                                  "id": hold, "size": freed[1],
                                                  "reserve": False})
            blocks = await self._ramblocks()
            new = [b for b in blocks if b not in known]
            if len(new) != 1 or new[0][2] != freed[1]:
                raise RuntimeError(f"{hold}: expected one new RAM block of {freed[1]:#x} "
                                   f"bytes, found {new}")
            held.append((hold, (new[0][1], new[0][2])))
            if covers([r for _, r in held], freed):
                break
        desc = ", ".join(f"{h} holds {fmt_range(r)}" for h, r in held) or "no hold added"
        self.log(f"relay: {obj_id} freed RAM {fmt_range(freed)}; {desc}")
        if not covers([r for _, r in held], freed):
            why = " (injected: MEMHP_VM_INJECT_HOLD_FAILURE)" if self.inject_failure else ""
            self._fail(f"the RAM {obj_id} freed, {fmt_range(freed)}, is not held "
                       f"({desc}){why}")

    async def _handle(self, line):
        from qemu.qmp import ExecuteError
        try:
            req = json.loads(line)
            cmd = req["execute"]
            arguments = req.get("arguments") or {}
        except (ValueError, KeyError, TypeError) as e:
            return {"error": {"class": "GenericError", "desc": f"bad request: {e}"}}
        self.log(f"qmp request: {line.strip()}")
        if cmd == "x-memhp-wait-event":
            reply = await self._wait_event(arguments)
        elif cmd == "x-memhp-backend-usage":
            reply = self._backend_usage(arguments)
        else:
            await self.connected.wait()
            try:
                reply = {"return": await self._execute(cmd, arguments)}
            except ExecuteError as e:
                reply = {"error": dict(e.received.get("error", {}))}
            except Exception as e:  # disconnected, protocol error
                reply = {"error": {"class": "GenericError", "desc": f"relay: {e}"}}
        if "id" in req:
            reply["id"] = req["id"]
        self.log(f"qmp reply: {json.dumps(reply)}")
        return reply

    async def run(self, proc):
        if not await self._connect_qmp(proc):
            return
        asyncio.get_running_loop().create_task(self._pump_events())
        path = os.path.join(self.sockdir, "relay.sock")
        reader = writer = None
        while proc.returncode is None and writer is None:
            try:
                reader, writer = await asyncio.open_unix_connection(path)
            except OSError:
                await asyncio.sleep(0.1)
        if writer is None:
            return
        while True:
            line = await reader.readline()
            if not line:
                return
            if not line.strip():
                continue
            reply = await self._handle(line.decode(errors="replace"))
            writer.write((json.dumps(reply) + "\n").encode())
            await writer.drain()

    async def sysrq(self, key):
        """Press alt-sysrq-KEY on the guest's PS/2 keyboard (best effort)."""
        if not self.connected.is_set():
            return
        keys = [{"type": "qcode", "data": k} for k in ("alt", "sysrq", key)]
        try:
            await asyncio.wait_for(self.qmp.execute("send-key", {"keys": keys}), 5)
            self.log(f"sysrq {key} sent")
        except Exception as e:  # disconnected, or QEMU wedged
            self.log(f"sysrq {key}: {e}")

    async def close(self):
        try:
            await self.qmp.disconnect()
        except Exception:
            pass
