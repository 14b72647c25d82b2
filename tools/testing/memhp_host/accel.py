# SPDX-License-Identifier: GPL-2.0
"""KVM or TCG: whether this user can open /dev/kvm, and whether a probe
guest boots to a shell under KVM (the verdict cached per host boot, QEMU,
/dev/kvm and kernel image)."""

import argparse
import grp
import json
import os
import shutil
import signal
import subprocess
import tempfile

from . import BUILD, TOP
from .guestlog import read_guest_rc
from .kernels import kernel_tree
from .cmdline import build_vng_cmd, vng_env


KVM_PROBE_CACHE = os.path.join(BUILD, "vm", "kvm-probe.json")


def overflow_gid():
    """The gid a user namespace shows for a group it does not map."""
    try:
        with open("/proc/sys/kernel/overflowgid", encoding="ascii") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 65534


def kvm_access():
    """None when this user can open /dev/kvm, else why not (with the fix)."""
    path = "/dev/kvm"
    try:
        st = os.stat(path)
    except OSError:
        return ("no /dev/kvm: the kvm_intel or kvm_amd module is not loaded, or this "
                "machine offers no hardware virtualisation")
    if os.access(path, os.R_OK | os.W_OK):
        return None
    if os.environ.get("MEMHP_IN_LAB") == "1" and st.st_gid == overflow_gid():
        # tools/lab/lab.sh's user namespace maps only the user and its
        # subordinate ids; the host's groups still decide access.
        return ("/dev/kvm is not readable and writable by this user, and its group is "
                "not mapped in the lab's user namespace: on the host, add the user to the "
                "group that owns /dev/kvm (`sudo usermod -aG kvm $USER` on most "
                "distributions, then log in again)")
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return (f"/dev/kvm is not readable and writable by this user (mode "
            f"{st.st_mode & 0o777:o}, group {group}): add the user to it "
            f"(`sudo usermod -aG {group} $USER`, then log in again) or grant access "
            "with a udev rule")


def kvm_probe_key(kernel, qemu=None):
    """What decides the probe's verdict, as a string: this host boot, the
    QEMU binary (path, size, time), /dev/kvm (device, inode) and the probed
    kernel image. A cached verdict holds only while all are the same."""
    def ident(path):
        try:
            st = os.stat(path)
            return f"{path}:{st.st_rdev or st.st_size}:{st.st_ino}:{st.st_mtime_ns}"
        except (OSError, TypeError):
            return f"{path}:missing"
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()
    except OSError:
        boot_id = "unknown"
    qemu = qemu or shutil.which("qemu-system-x86_64")
    tree = kernel_tree(kernel) if os.path.isdir(kernel) else None
    image = tree[1] if tree else kernel
    return f"boot {boot_id}; qemu {ident(qemu)}; kvm {ident('/dev/kvm')}; kernel {ident(image)}"


def kvm_probe(args, kernel, seconds):
    """(ok, why): boot kernel under KVM, as a guest of this runner with no
    memory devices, to a shell that runs `true`. Only a guest that ran its
    command is a yes: a KVM that stops in firmware, in the kernel's setup
    or before user space is a no, with the reason."""
    probe = argparse.Namespace(**vars(args))
    probe.virtio_mem, probe.cxl, probe.numa, probe.append = [], [], 0, []
    probe.mem, probe.maxmem, probe.slots = 1 << 30, 2 << 30, 1
    probe.count, probe.tcg_threads = None, None
    os.makedirs(os.path.join(BUILD, "vm"), exist_ok=True)
    rundir = tempfile.mkdtemp(prefix="kvm-probe-", dir=os.path.join(BUILD, "vm"))
    sockdir = tempfile.mkdtemp(prefix="memhp-vm-")
    with open(os.path.join(rundir, "command"), "w") as f:
        f.write("true\n")
    cmd = build_vng_cmd(probe, kernel, True, sockdir, rundir)
    env = vng_env(cmd[0])
    with open(os.path.join(rundir, "console.log"), "wb") as console:
        proc = subprocess.Popen(cmd, cwd=TOP, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=console,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    shutil.rmtree(sockdir, ignore_errors=True)
    ran = read_guest_rc(rundir) == 0
    with open(os.path.join(rundir, "console.log"), errors="replace") as f:
        lines = [x.strip() for x in f if x.strip()]
    last = lines[-1][:160] if lines else "no output"
    if ran:
        shutil.rmtree(rundir, ignore_errors=True)
        return True, f"a KVM guest booted to a shell within {seconds} s"
    where = f"console: {os.path.relpath(rundir, TOP)}/console.log"
    if rc is None:
        return False, (f"the KVM probe guest did not reach a shell within {seconds} s "
                       f"(last console line: {last}; {where})")
    return False, f"the KVM probe guest failed (exit {rc}; last line: {last}; {where})"


def kvm_verdict(args, kernel):
    """(ok, why) for --accel auto: /dev/kvm usable, and the probe's verdict,
    cached in build/vm/kvm-probe.json under kvm_probe_key()."""
    why = kvm_access()
    if why:
        return False, why
    key = kvm_probe_key(kernel, args.qemu)
    if not args.kvm_reprobe:
        try:
            with open(KVM_PROBE_CACHE) as f:
                cached = json.load(f)
            if cached["key"] == key:
                return cached["ok"], cached["why"] + " (cached; --kvm-reprobe probes again)"
        except (OSError, ValueError, KeyError, TypeError):
            pass
    ok, why = kvm_probe(args, kernel, args.kvm_probe_seconds)
    save_kvm_verdict(key, ok, why)
    return ok, why


def save_kvm_verdict(key, ok, why):
    os.makedirs(os.path.dirname(KVM_PROBE_CACHE), exist_ok=True)
    with open(KVM_PROBE_CACHE + ".tmp", "w") as f:
        json.dump({"key": key, "ok": ok, "why": why}, f)
    os.replace(KVM_PROBE_CACHE + ".tmp", KVM_PROBE_CACHE)


# CXL type-3 memory is emulated: QEMU's cxl-type3 device serves the
# memory behind a CXL window through MMIO callbacks, not as guest RAM.
# Under KVM every access to it exits to QEMU, and an instruction KVM's
# emulator does not handle (vector moves, string instructions of a user
# process bound to that node) becomes a KVM internal error or SIGILL in
# the guest. Under TCG each access is emulated like any other, so CXL
# guests always run under TCG.
CXL_TCG_WHY = ("CXL memory is QEMU MMIO, which KVM can only emulate instruction by "
               "instruction: CXL guests run under TCG")


def decide_accel(args, kernel, kvm_works=None):
    """(use_kvm, why): the accelerator a guest of these options gets.

    kvm_works (--print-cmd) stands for the probe: True or False as on a
    host where KVM does or does not work; None probes (--accel auto)."""
    if args.accel == "tcg":
        return False, "--accel tcg"
    if args.cxl:
        return False, CXL_TCG_WHY
    if args.accel == "kvm":
        return True, "--accel kvm"
    if kvm_works is not None:
        return kvm_works, "--print-cmd " + ("kvm" if kvm_works else "tcg")
    return kvm_verdict(args, kernel)
