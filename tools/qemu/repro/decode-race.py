#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""QEMU TCG aborts when one vCPU changes the memory map while another fills its TLB.

Boots a stock kernel under multi-threaded TCG with two vCPUs, DEVICES
virtio-rng-pci devices and an initramfs whose only program is decode-race
(decode-race.c, PID 1): vCPU 0 turns the PCI devices' decoding off and on
(each a memory transaction in QEMU), vCPU 1 faults pages in. Boots again,
up to --boots times, until QEMU dies.

Exit status: 1 QEMU died of a signal (an assertion's abort, a segfault)
while the guest ran; 0 every boot ran its toggles and powered off; 2 the run could not be
done. Python 3 standard library only; needs gcc and a static libc unless
--init names a built decode-race.

  tools/qemu/repro/decode-race.py [--qemu PATH] [--kernel PATH] [--boots N]
"""

import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from repro import Failure, parser, prepare  # noqa: E402

DEVICES = 4
APPEND = "console=ttyS0 panic=-1 rdinit=/init quiet"


def qemu_argv(qemu, kernel, initrd, toggles):
    argv = [qemu, "-machine", "q35", "-accel", "tcg,thread=multi", "-cpu", "max",
            "-smp", "2", "-m", "1G", "-nographic", "-no-reboot", "-serial", "stdio",
            "-display", "none", "-monitor", "none", "-kernel", kernel, "-initrd", initrd,
            "-append", f"{APPEND} decode_race.toggles={toggles}"]
    for i in range(DEVICES):
        argv += ["-device", f"virtio-rng-pci,id=rng{i}"]
    return argv


def boot(argv, timeout):
    """One guest: (status, message) as the exit status says."""
    start = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        timed_out = True
    secs = time.monotonic() - start
    err = err.decode(errors="replace").strip()
    console = [line.strip() for line in out.decode(errors="replace").splitlines() if line.strip()]
    lines = [line[line.index("decode-race:"):] for line in console if "decode-race:" in line]
    for line in lines:
        print(f"  guest| {line}", flush=True)
    last = lines[-1] if lines else "no decode-race line"
    if timed_out:
        return 2, f"the guest did not power off within {timeout:.0f} s (at \"{last}\")"
    if p.returncode < 0:
        return 1, (f"QEMU died (signal {-p.returncode}) after {secs:.0f} s, guest at "
                   f"\"{last}\": {err or '-'}")
    if p.returncode:
        return 2, f"QEMU exited {p.returncode}: {err or '-'}"
    if any(line.startswith("decode-race: error") for line in lines):
        return 2, "the guest could not run: " + next(
            line for line in lines if line.startswith("decode-race: error"))
    if not any(line.startswith("decode-race: done") for line in lines):
        return 2, ("the guest powered off without \"decode-race: done\"; console tail: " +
                   " | ".join(console[-6:]))
    return 0, f"ran every toggle in {secs:.0f} s"


def main():
    ap = parser(__doc__, "decode-race")
    ap.add_argument("--boots", type=int, default=5, help="boots at most (default 5)")
    ap.add_argument("--toggles", type=int, default=3000,
                    help="rounds over the devices per boot (default 3000)")
    ap.add_argument("--timeout", type=float, default=1200,
                    help="seconds per boot (default 1200)")
    args = ap.parse_args()
    if not args.kernel:
        print("decode-race: no /boot/vmlinuz-*: name a kernel with --kernel", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="decode-race.") as tmp:
        try:
            initrd = prepare(args, tmp, "decode-race")
            argv = qemu_argv(args.qemu, args.kernel, initrd, args.toggles)
            print(f"qemu: {shlex.join(argv)}", flush=True)
        except (Failure, OSError, subprocess.SubprocessError) as e:
            print(f"decode-race: could not run: {e}", file=sys.stderr)
            return 2
        for n in range(1, args.boots + 1):
            rc, msg = boot(argv, args.timeout)
            print(f"decode-race: boot {n}: {msg}", flush=True)
            if rc:
                return rc
        print(f"decode-race: QEMU survived {args.boots} boots")
        return 0


if __name__ == "__main__":
    sys.exit(main())
