#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""QEMU TCG runs code that a re-plugged DIMM no longer holds: the host side.

Boots a stock kernel under TCG with an initramfs whose only program is
tb-stale (tb-stale.c, PID 1), and drives it over the serial console and
QMP:

  guest "ready 1"  ->  object-add m1, device_add d1 (128 MiB pc-dimm)
  guest steps 1-2: code written into d1's pages and run; block offlined
  guest "ready 2"  ->  device_del d1, DEVICE_DELETED, ACPI_DEVICE_OST
                       (the guest's eject done), object-del m1,
                       object-add m2, device_add d2 (same size: m2 gets
                       m1's ram_addr offset)
  guest steps 3-4: code written into d2's pages, run, rewritten, run

`info ramblock` is printed before the device_del and after d2 is added;
after the object-del it is repeated until m1's block is gone, as the
block is freed only when the backend is finalized (which can wait for an
RCU grace period; an object-add before that gets a new range). With
--same-backend, d2 goes on m1 (kept): the control.

Exit status: 1 stale code ran in d2, 0 it did not, 2 the run could not be
done (a failed wait says what it waited for). Python 3 standard library
only; needs gcc and a static libc unless --init names a built tb-stale.

  tools/qemu/repro/repro.py [--qemu PATH] [--kernel PATH] [--same-backend]
"""

import argparse
import glob
import json
import os
import queue
import re
import shlex
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DIMM_MIB = 128          # tb-stale.c's DIMM_SIZE
APPEND = "console=ttyS0 memhp_default_state=offline panic=-1 rdinit=/init quiet"
GCC = ["gcc", "-static", "-O2", "-Wall", "-Werror"]


class Failure(Exception):
    """The run could not be done (exit 2)."""


# --- initramfs ----------------------------------------------------------------

def cpio_newc(entries):
    """A newc ("070701") cpio archive of entries (name, mode, data[, rdev]),
    rdev a (major, minor) pair for device nodes, ended by TRAILER!!!."""
    out = bytearray()

    def pad4():
        out.extend(b"\0" * (-len(out) % 4))

    for ino, entry in enumerate(list(entries) + [("TRAILER!!!", 0, b"")], 1):
        name, mode, data = entry[:3]
        rmaj, rmin = entry[3] if len(entry) > 3 else (0, 0)
        bname = name.encode() + b"\0"
        nlink = 2 if stat.S_ISDIR(mode) else 1
        fields = (ino if mode else 0, mode, 0, 0, nlink if mode else 0, 0,
                  len(data), 0, 0, rmaj, rmin, len(bname), 0)
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields))
        out.extend(bname)
        pad4()
        out.extend(data)
        pad4()
    return bytes(out)


def initramfs(init):
    """The guest's initramfs: /init (the static tb-stale) and the mount
    points it uses; /dev/console so the kernel gives init a console even
    before init mounts devtmpfs over /dev."""
    return cpio_newc([
        ("dev", stat.S_IFDIR | 0o755, b""),
        ("dev/console", stat.S_IFCHR | 0o600, b"", (5, 1)),
        ("proc", stat.S_IFDIR | 0o555, b""),
        ("sys", stat.S_IFDIR | 0o555, b""),
        ("init", stat.S_IFREG | 0o755, init),
    ])


# --- what the host does -------------------------------------------------------

def qmp_sequence(same_backend=False):
    """The QMP messages of a run, by phase: phase 0 when QMP connects, phase
    N when the guest says "ready N". An item is a command ({"execute",
    "arguments"}; "label": an `info ramblock` to print and keep;
    "until_freed": an `info ramblock` to repeat until the block that the
    "before" listing shows under that name is gone) or an event to wait
    for ({"event", "data"}: the event's data must include data)."""
    def cmd(name, **args):
        item = {"execute": name}
        if args:
            item["arguments"] = args
        return item

    def backend(bid):
        return cmd("object-add", **{"qom-type": "memory-backend-ram", "id": bid,
                                    "size": DIMM_MIB << 20})

    def ramblock(**extra):
        return dict(cmd("human-monitor-command", **{"command-line": "info ramblock"}),
                    **extra)

    # The guest ends an eject with _OST(eject request, success). A DIMM
    # added to the slot before that is lost ("Eject incomplete").
    replug = [ramblock(label="before"),
              cmd("device_del", id="d1"),
              {"event": "DEVICE_DELETED", "data": {"device": "d1"}},
              {"event": "ACPI_DEVICE_OST",
               "data": {"info": {"slot-type": "DIMM", "source": 3, "status": 0}}}]
    if same_backend:
        replug += [cmd("device_add", driver="pc-dimm", id="d2", memdev="m1")]
    else:
        # The block is freed when the backend is finalized, which may wait
        # for an RCU grace period: an object-add before that gets a new range.
        replug += [cmd("object-del", id="m1"), ramblock(until_freed="m1"),
                   backend("m2"),
                   cmd("device_add", driver="pc-dimm", id="d2", memdev="m2")]
    replug += [ramblock(label="after")]
    return [
        [cmd("qmp_capabilities")],
        [backend("m1"), cmd("device_add", driver="pc-dimm", id="d1", memdev="m1")],
        replug,
    ]


def ramblocks(text):
    """[(name, offset, used length)] of an `info ramblock` output; a block
    no device has registered has no name ("")."""
    blocks = []
    for line in text.splitlines():
        m = re.match(r"\s*(\S*)\s+\d+ [KMG]iB\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s", line)
        if m:
            blocks.append((m.group(1), int(m.group(2), 16), int(m.group(3), 16)))
    return blocks


def offset_of(text, name):
    """The ram_addr_t offset of backend name's block in an `info ramblock`
    (named by the backend's id, or by its QOM path on older machine types)."""
    return next((off for n, off, _ in ramblocks(text) if n in (name, f"/objects/{name}")),
                None)


STEP_RE = re.compile(r"tb-stale: step (\d) .*?returned another value: (\d+)"
                     r"(?:.*; rewritten: .*returned another value: (\d+))?")


def verdict(lines):
    """Exit status and message from the guest's lines."""
    other = {}
    for line in lines:
        m = STEP_RE.match(line)
        if m:
            other[int(m.group(1))] = int(m.group(2)) + int(m.group(3) or 0)
    if sorted(other) != [1, 2, 3, 4]:
        return 2, f"the guest printed steps {sorted(other)}, not 1-4"
    if other[1] or other[2]:
        return 2, "the control (steps 1-2, the first DIMM) ran stale code"
    stale = other[3] + other[4]
    if stale:
        return 1, f"stale code ran in the new DIMM: {stale} calls (steps 3-4)"
    return 0, "no stale code in the new DIMM"


# --- QMP over a Unix socket ---------------------------------------------------

def includes(data, want):
    """Whether an event's data has every key of want, with its value
    (compared the same way where both are objects)."""
    if isinstance(want, dict):
        return isinstance(data, dict) and all(k in data and includes(data[k], v)
                                              for k, v in want.items())
    return data == want


class QMP:
    def __init__(self, path, deadline):
        self.buf = b""
        self.events = []
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise Failure(f"timed out waiting for QEMU's QMP socket {path}")
                time.sleep(0.1)
        greeting = self.recv(deadline, "the QMP greeting")
        if "QMP" not in greeting:
            raise Failure(f"no QMP greeting: {greeting}")

    def recv(self, deadline, what):
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure(f"timed out waiting for {what}")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise Failure(f"timed out waiting for {what}") from None
            if not data:
                raise Failure(f"QMP closed while waiting for {what}")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, item, deadline, quiet=False):
        msg = {k: item[k] for k in ("execute", "arguments") if k in item}
        if not quiet:
            print(f"qmp> {json.dumps(msg)}", flush=True)
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self.recv(deadline, f"the reply to {item['execute']}")
            if "event" in reply:
                print(f"qmp< {json.dumps(reply)}", flush=True)
                self.events.append(reply)
                continue
            if "error" in reply:
                raise Failure(f"{item['execute']} failed: {reply['error']}")
            return reply["return"]

    def wait_event(self, item, deadline):
        what = f"event {item['event']} {json.dumps(item['data'])}"
        print(f"qmp: waiting for {what}", flush=True)
        while True:
            for ev in self.events:
                if ev["event"] == item["event"] and includes(ev.get("data"), item["data"]):
                    self.events.remove(ev)
                    return ev
            ev = self.recv(deadline, what)
            print(f"qmp< {json.dumps(ev)}", flush=True)
            self.events.append(ev)


# --- the guest's console -------------------------------------------------------

class Console:
    """QEMU's stdout (the guest's ttyS0) as lines, read by a thread."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = queue.Queue()
        self.seen = []
        self.start = time.monotonic()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = b""
        for chunk in iter(lambda: self.proc.stdout.read1(4096), b""):
            buf += chunk
            *done, buf = re.split(rb"\r?\n|\r", buf)
            for line in done:
                self.lines.put(line.decode(errors="replace"))
        if buf:
            self.lines.put(buf.decode(errors="replace"))
        self.lines.put(None)

    def wait_for(self, prefix, deadline, what):
        """Print the guest's lines until one starts with prefix; fail on an
        error line, on QEMU's exit, or at deadline."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure(f"timed out waiting for {what}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                raise Failure(f"timed out waiting for {what}") from None
            if line is None:
                raise Failure(f"QEMU exited while waiting for {what}")
            print(f"guest {time.monotonic() - self.start:5.1f}s| {line}", flush=True)
            # The firmware's escape sequences may precede the first line.
            if "tb-stale:" in line:
                line = line[line.index("tb-stale:"):].rstrip()
                self.seen.append(line)
            if line.startswith("tb-stale: error"):
                raise Failure(f"the guest failed while waiting for {what}")
            if line.startswith(prefix):
                return line

    def answer(self):
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()


# --- the run ------------------------------------------------------------------

def version_key(path):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path)]


def build_init(tmp, name="tb-stale"):
    """name.c of this directory, built static into tmp: the guest's init."""
    out = os.path.join(tmp, name)
    argv = GCC + ["-o", out, os.path.join(HERE, f"{name}.c")]
    print(f"build: {shlex.join(argv)}", flush=True)
    if subprocess.run(argv).returncode:
        raise Failure(f"building {name} failed")
    return out


def prepare(args, tmp, name):
    """The initramfs of args.init (built from name.c when not given) in
    tmp, with QEMU's version printed: its path."""
    init = args.init or build_init(tmp, name)
    initrd = os.path.join(tmp, "initramfs.cpio")
    with open(init, "rb") as f, open(initrd, "wb") as out:
        out.write(initramfs(f.read()))
    version = subprocess.run([args.qemu, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.splitlines()
    print(f"qemu: {version[0] if version else '(no --version output)'}", flush=True)
    return initrd


def parser(doc, name):
    """The options both reproducers take: --qemu, --kernel, --init (name)."""
    kernels = sorted(glob.glob("/boot/vmlinuz-*"), key=version_key)
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--qemu", default="qemu-system-x86_64",
                    help="qemu-system-x86_64 to run (default: on PATH)")
    ap.add_argument("--kernel", default=kernels[-1] if kernels else None,
                    help="the guest's kernel (default: the newest /boot/vmlinuz-*)")
    ap.add_argument("--init", help=f"a built {name} (default: build {name}.c)")
    return ap


def qemu_argv(qemu, kernel, initrd, sock, append=""):
    return [qemu, "-machine", "q35", "-accel", "tcg", "-cpu", "max", "-smp", "1",
            "-m", "1G,slots=2,maxmem=4G", "-nographic", "-no-reboot",
            "-serial", "stdio", "-display", "none", "-monitor", "none",
            "-qmp", f"unix:{sock},server=on,wait=off",
            "-kernel", kernel, "-initrd", initrd, "-append", f"{APPEND} {append}".strip()]


def wait_freed(qmp, item, listings, deadline):
    """Repeat `info ramblock` until the block named item["until_freed"] in
    the "before" listing no longer appears at its offset (bounded)."""
    name = item["until_freed"]
    off = offset_of(listings.get("before", ""), name)
    if off is None:
        raise Failure(f"no block {name} in the first info ramblock")
    print(f"qmp: repeating info ramblock until {name}'s block (0x{off:x}) is freed",
          flush=True)
    limit = min(deadline, time.monotonic() + 30)
    for polls in range(1, 1 << 30):
        text = qmp.execute(item, deadline, quiet=True)
        if all(o != off for _, o, _ in ramblocks(text)):
            print(f"qmp: {name}'s block freed (info ramblock {polls} times)", flush=True)
            return
        if time.monotonic() > limit:
            raise Failure(f"timed out waiting for {name}'s RAMBlock to be freed")
        time.sleep(0.1)


def run(args, tmp):
    start = time.monotonic()
    deadline = start + args.timeout
    initrd = prepare(args, tmp, "tb-stale")
    sock = os.path.join(tmp, "qmp.sock")
    argv = qemu_argv(args.qemu, args.kernel, initrd, sock, args.append)
    print(f"qemu: {shlex.join(argv)}", flush=True)

    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    threading.Thread(target=lambda: [print(f"qemu stderr: {l.decode(errors='replace')}",
                                           end="", flush=True) for l in proc.stderr],
                     daemon=True).start()
    console = Console(proc)
    listings = {}
    try:
        qmp = QMP(sock, min(deadline, time.monotonic() + 30))
        for phase, items in enumerate(qmp_sequence(args.same_backend)):
            if phase:
                console.wait_for(f"tb-stale: ready {phase}", deadline,
                                 f'the guest\'s "tb-stale: ready {phase}"')
            for item in items:
                if "event" in item:
                    qmp.wait_event(item, deadline)
                    continue
                if "until_freed" in item:
                    wait_freed(qmp, item, listings, deadline)
                    continue
                ret = qmp.execute(item, deadline)
                if "label" in item:
                    listings[item["label"]] = ret
                    print(f"info ramblock ({item['label']}):\n{ret.rstrip()}", flush=True)
            if phase:
                console.answer()
        console.wait_for("tb-stale: result", deadline, 'the guest\'s "tb-stale: result"')
        try:
            proc.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise Failure("timed out waiting for the guest to power off") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # What the console still holds (power-off lines, or a panic).
        try:
            while (line := console.lines.get(timeout=5)) is not None:
                print(f"guest {time.monotonic() - console.start:5.1f}s| {line}", flush=True)
        except queue.Empty:
            pass

    old = offset_of(listings.get("before", ""), "m1")
    new = offset_of(listings.get("after", ""), "m1" if args.same_backend else "m2")
    if old is not None and new is not None:
        print(f"ram_addr_t: d1's block at 0x{old:x}, d2's at 0x{new:x}"
              f"{' (the same)' if old == new else ''}")
    rc, msg = verdict(console.seen)
    if rc == 0 and (old is None or old != new):
        rc, msg = 2, "d2's block is not at d1's offset: the run tested nothing"
    print(f"repro: {msg} ({time.monotonic() - start:.0f} s)")
    return rc


def main():
    ap = parser(__doc__, "tb-stale")
    ap.add_argument("--same-backend", action="store_true",
                    help="the control: add the second DIMM on the first one's backend")
    ap.add_argument("--append", default="",
                    help="more kernel parameters (loglevel=7: the kernel's messages)")
    ap.add_argument("--timeout", type=float, default=240,
                    help="seconds for the whole run (default 240)")
    args = ap.parse_args()
    if not args.kernel:
        print("repro: no /boot/vmlinuz-*: name a kernel with --kernel", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="tb-stale.") as tmp:
        try:
            return run(args, tmp)
        except (Failure, OSError, subprocess.SubprocessError) as e:
            print(f"repro: could not run: {e}", file=sys.stderr)
            return 2
        except Exception as e:  # noqa: BLE001 - any other fault is "could not run", never "stale"
            print(f"repro: could not run: {type(e).__name__}: {e}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
