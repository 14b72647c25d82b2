# SPDX-License-Identifier: GPL-2.0
"""A guest's QEMU and virtme-ng command lines: memory, devices, the
machine, the accelerator and the CPU model, which memhp-vm names itself
whatever virtme-ng would pick for the accelerator."""

import argparse
import os
import re
import shlex
import shutil
import sys

from . import BUILD, GUEST, TOP, VENV


# The instruction-counting TCG plugin (tools/testing/count, `make count`).
COUNT_PLUGIN = os.path.join(BUILD, "count", "memhp-count.so")


QMP_PORT_NAME = "org.memhp.qmp"


# Stall detectors scaled to TCG's speed (build_vng_cmd()): soft lockup after
# 2 x watchdog_thresh = 100 s (default 20 s), RCU stalls after 100 s (21 s).
TCG_WATCHDOGS = ["watchdog_thresh=50", "rcupdate.rcu_cpu_stall_timeout=100"]


# The hung-task detector on every accelerator: 600 s (default 120 s), above
# the longest wait a test bounds (offlining a block holding data, a CXL
# region's removal: 120 s each), so that a task a test waits for within
# its bound is not reported as hung, under KVM as under TCG.
HUNG_TASK = "sysctl.kernel.hung_task_timeout_secs=600"

# The mount options virtme-ng gives the guest's 9p root (the host's /,
# read-only), as the version tools/testing/vm/requirements.txt pins
# passes them; --root-cache repeats them with a cache mode added, and a
# later rootflags= replaces an earlier one.
VNG_ROOTFLAGS = "version=9p2000.L,trans=virtio,access=any,msize=524288"


def parse_size(text):
    """'2G', '512M', '1073741824' -> bytes."""
    m = re.fullmatch(r"(\d+)([KMGT]?)(i?B)?", text.strip(), re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size '{text}' (use e.g. 512M, 2G)")
    shift = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2).upper()]
    return int(m.group(1)) << shift


def fmt_size(n):
    for unit, shift in (("T", 40), ("G", 30), ("M", 20), ("K", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


# virtio-mem-pci properties --virtio-mem may set (QEMU 10: `qemu-system-x86_64
# -device virtio-mem-pci,help`). dynamic-memslots=on needs
# unplugged-inaccessible=on (hw/virtio/virtio-mem.c refuses it otherwise).
# backend=shm is ours, not QEMU's: the device's memory is a shared file in
# /dev/shm instead of anonymous RAM. A shmem page is allocated by any
# access, a read too (anonymous memory would map the shared zero page), so
# the file's allocated size, which the guest asks for with
# `memhp-qmp x-memhp-backend-usage id=vmemN`, counts every page the guest
# ever touched and QEMU did not discard: with unplugged-inaccessible=on it
# must never exceed the plugged size.
VIRTIO_MEM_PROPS = {"unplugged-inaccessible": ("on", "off", "auto"),
                    "dynamic-memslots": ("on", "off"), "prealloc": ("on", "off"),
                    "block-size": None, "node": None, "backend": ("ram", "shm")}


def parse_virtio_mem(text):
    """SIZE[:REQUESTED[:PROP=VALUE,...]] -> (size, requested, props)."""
    size, _, rest = text.partition(":")
    req, _, props = rest.partition(":")
    pairs = []
    for item in filter(None, props.split(",")):
        key, sep, value = item.partition("=")
        if not sep or key not in VIRTIO_MEM_PROPS:
            raise argparse.ArgumentTypeError(
                f"bad virtio-mem property '{item}' (one of {', '.join(VIRTIO_MEM_PROPS)}, "
                f"as key=value)")
        if VIRTIO_MEM_PROPS[key] and value not in VIRTIO_MEM_PROPS[key]:
            raise argparse.ArgumentTypeError(
                f"virtio-mem {key}={value}: one of {'/'.join(VIRTIO_MEM_PROPS[key])}")
        if key == "block-size":
            value = str(parse_size(value))
        pairs.append((key, value))
    return parse_size(size), parse_size(req) if req else 0, pairs


def build_qemu_opts(args, sockdir, use_kvm):
    """QEMU options of a guest: memory, devices, QMP, and the machine, the
    accelerator and the CPU, which memhp-vm always names itself.

    virtme-ng picks the machine and the CPU by accelerator (1.42,
    virtme/architectures.py and virtme/commands/run.py): with KVM it adds
    `-machine accel=kvm:tcg -cpu host,topoext=on` and leaves QEMU's default
    machine, i440fx, whose memory layout (3 GiB below 4 GiB) and lack of a
    PCIe root (no pxb-cxl) the tests do not expect; without KVM it adds
    `-machine q35 -cpu max`; and it may choose microvm only where it can use
    KVM. build_vng_cmd() passes --disable-kvm and --disable-microvm, so vng
    always takes the same path, and these options decide instead: q35, the
    accelerator (-accel, never a silent fallback to the other) and the CPU
    model (the last -cpu wins).
    """
    opts = ["-m", f"{fmt_size(args.mem)},slots={args.slots},maxmem={fmt_size(args.maxmem)}"]
    if args.numa > 1:
        # One socket per node where the vCPUs allow it: cores of one package
        # on different nodes make the guest kernel WARN (topology_sane()).
        sockets = min(args.numa, args.cpus)
        while args.cpus % sockets:
            sockets -= 1
        opts += ["-smp", f"{args.cpus},sockets={sockets},cores={args.cpus // sockets},threads=1"]
    for i, (size, req, props) in enumerate(args.virtio_mem):
        extra = "".join(f",{k}={v}" for k, v in props if k != "backend")
        backend = f"memory-backend-ram,id=vmem{i},size={size}"
        if dict(props).get("backend") == "shm":
            backend = (f"memory-backend-file,id=vmem{i},size={size},share=on,"
                       f"mem-path={shm_backend_path(sockdir, i)}")
        opts += ["-object", backend,
                 "-device", f"virtio-mem-pci,id=vm{i},memdev=vmem{i},requested-size={req}{extra}"]
    opts += ["-qmp", f"unix:{sockdir}/qmp.sock,server=on,wait=off",
             "-chardev", f"socket,id=memhpqmp,path={sockdir}/relay.sock,server=on,wait=off",
             "-device", "virtio-serial-pci,id=memhpser",
             "-device", f"virtserialport,chardev=memhpqmp,name={QMP_PORT_NAME}"]
    opts += ["-machine", "q35"]
    if use_kvm:
        opts += ["-accel", "kvm"]
    else:
        opts += ["-accel", "tcg" + (f",thread={args.tcg_threads}" if args.tcg_threads else "")]
    features = list(args.cpu_features) + ([] if use_kvm else list(args.tcg_cpu_features))
    # Last: QEMU plugs a device that names no bus into the newest PCI bus,
    # which would be a CXL host bridge's, and pxb-cxl takes only ports.
    if args.cxl:
        return opts + cxl_qemu_opts(args.cxl, use_kvm, features)
    return opts + ["-cpu", cpu_model(use_kvm, *features)]


def cpu_model(use_kvm, *extra):
    """The guest CPU (the last -cpu option wins over vng's).

    KVM: the host's CPU, as vng would give it (host,topoext=on). TCG: -cpu
    max without SVM and VMX: with them, udev loads kvm and kvm_amd in every
    guest, which sets up nested virtualisation and costs some 12 s of
    emulated boot; no test runs a guest of its own. The rest of -cpu max
    stays (its ISA extensions are what the guest kernel patches in, as on a
    real host) unless --cpu-features or --tcg-cpu-features turn some off.
    """
    model = ["host", "topoext=on"] if use_kvm else ["max", "svm=off", "vmx=off"]
    return ",".join(model + list(extra))


def parse_cpu_features(text):
    """--cpu-features: comma-separated FEATURE=on|off, QEMU's -cpu syntax."""
    feats = [f for f in text.split(",") if f]
    for f in feats:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*=(on|off)", f):
            raise argparse.ArgumentTypeError(f"{f!r} is not FEATURE=on or FEATURE=off")
    return feats


# CXL type-3 memory expanders (--cxl SIZE, repeatable), QEMU 10's syntax
# (docs/system/devices/cxl.rst): the machine gets cxl=on (vng starts q35;
# -M options merge into its -machine), and device i its own CXL host bridge
# (pxb-cxl cxl.N, PCI buses from CXL_BUS_NR + 8 * i), root port, type-3
# device with a volatile (RAM) backend, and fixed memory window
# cxl-fmw.i routed to that host bridge. A window must be a multiple of
# 256 MiB (QEMU refuses anything else), so it is the device's size rounded
# up. The window is what the guest's cxl_acpi sees in the CEDT (and the
# guest kernel makes it a NUMA node of its own); the device's memory is
# reached only once the guest programs an HDM decoder path over it (a RAM
# region: memhp-cxl add). Ids: backend cxlmemN, bridge cxl.N, root port
# cxlrpN, device cxlmN.
CXL_BUS_NR = 12


CXL_FMW_ALIGN = 256 << 20


def cxl_qemu_opts(sizes, use_kvm, features=()):
    if not sizes:
        return []
    # The CPU without CPUID's hypervisor bit: committing a CXL region makes
    # the guest kernel write back and invalidate CPU caches over it
    # (drivers/cxl/core/region.c cxl_region_invalidate_memregion()), and
    # x86 offers that only on bare metal (cpu_cache_has_invalidate_memregion()
    # is false under a hypervisor): the commit fails with ENXIO and a
    # WARNING ("Failed to synchronize CPU cache state") unless the kernel
    # has CONFIG_CXL_REGION_INVALIDATION_TEST, which Debian's kernels have
    # not. With hypervisor=off the kernel sees no hypervisor and does a
    # WBINVD on every CPU, which TCG treats as a no-op. CXL guests run only
    # under TCG (CXL_TCG_WHY), so no KVM guest loses its paravirtual clock
    # to this.
    opts = ["-cpu", cpu_model(use_kvm, *features, "hypervisor=off"), "-machine", "cxl=on"]
    fmw = []
    for i, size in enumerate(sizes):
        opts += ["-object", f"memory-backend-ram,id=cxlmem{i},size={size}",
                 "-device", f"pxb-cxl,id=cxl.{i},bus=pcie.0,bus_nr={CXL_BUS_NR + 8 * i}",
                 "-device", f"cxl-rp,id=cxlrp{i},bus=cxl.{i},port=0,chassis={i},slot={i}",
                 "-device", f"cxl-type3,id=cxlm{i},bus=cxlrp{i},volatile-memdev=cxlmem{i},"
                 f"sn={0x6d656d68700 + i}"]
        window = -(-size // CXL_FMW_ALIGN) * CXL_FMW_ALIGN
        fmw += [f"cxl-fmw.{i}.targets.0=cxl.{i}", f"cxl-fmw.{i}.size={window}"]
    return opts + ["-machine", ",".join(fmw)]


def shm_backend_path(sockdir, i):
    """The /dev/shm file backing virtio-mem device i (backend=shm)."""
    return os.path.join("/dev/shm", f"memhp-{os.path.basename(sockdir)}-vmem{i}")


def save_counts(dest, rundir):
    """Copy the plugin's counts and the guest's symbols to dest, dest.kallsyms, dest.syms."""
    ok = True
    for name, suffix in (("count.json", ""), ("kallsyms", ".kallsyms"), ("count-syms", ".syms")):
        src = os.path.join(rundir, name)
        if os.path.exists(src):
            shutil.copyfile(src, dest + suffix)
            continue
        if name == "count.json":
            ok = False
        # No stale file of an earlier run stays beside this run's.
        if os.path.exists(dest + suffix):
            os.unlink(dest + suffix)
    return ok


def vng_env(vng):
    """The environment vng runs in: its own directory first on PATH, where
    it finds virtme-run."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(vng) + os.pathsep + env.get("PATH", "")
    return env


def build_vng_cmd(args, kernel, use_kvm, sockdir, rundir):
    vng = os.path.join(VENV, "bin", "vng")
    if not os.path.exists(vng):
        sys.exit("memhp-vm: virtme-ng is not installed: run `make setup` first")
    # --disable-kvm and --disable-microvm always: vng then makes no choice
    # of its own by accelerator; build_qemu_opts() names the machine, the
    # accelerator and the CPU.
    cmd = [vng, "--run", kernel, "--user", "root", "--disable-microvm", "--disable-kvm",
           "--verbose", "--cpus", str(args.cpus), "--memory", fmt_size(args.mem),
           f"--rwdir={TOP}", f"--cwd={TOP}", "--name", "memhp-vm"]
    if os.path.isdir(kernel):
        # A kernel tree: vng links /lib/modules/$(uname -r) to the tree's
        # modules (.virtme_mods), which the guest sees only where the
        # host's root shows through; virtme-ng-init puts tmpfs over
        # /var/cache, /var/tmp, /tmp and others, so the tree is exported
        # at its own path.
        cmd.append(f"--rodir={kernel}")
    if args.qemu:
        cmd += ["--qemu", args.qemu]
    # Hot-added memory starts offline on every kernel, as on 6.1's Debian
    # config; 6.12's sets MEMORY_HOTPLUG_DEFAULT_ONLINE=y (auto_online_blocks
    # "online"). Tests that want another policy write auto_online_blocks,
    # and an --append of their own comes later and wins.
    cmd.append("--append=memhp_default_state=offline")
    # Every magic SysRq key: on --timeout, memhp-vm presses alt-sysrq-w and
    # alt-sysrq-l (blocked tasks, CPU backtraces) before killing the guest.
    cmd.append("--append=sysctl.kernel.sysrq=1")
    cmd.append("--append=" + HUNG_TASK)
    if not use_kvm:
        # The kernel's stall detectors assume a real CPU. Under TCG a vCPU
        # runs some 10-30 times slower and stops outright when the host
        # schedules QEMU's threads away, so a default 20 s soft-lockup or
        # 21 s RCU-stall window measures the host, not the guest.
        # Scaled by 5: a real lockup is still reported, later.
        cmd.append("--append=" + " ".join(TCG_WATCHDOGS))
    if args.numa:
        per_node = args.mem // args.numa
        if per_node * args.numa != args.mem or per_node % (1 << 20):
            sys.exit("memhp-vm: --mem must split into whole MiB per NUMA node")
        for n in range(args.numa):
            spec = f"{per_node >> 20}M"
            if n < args.cpus:
                spec += f",cpus={n}" if args.numa >= args.cpus else \
                    f",cpus={n * args.cpus // args.numa}-{(n + 1) * args.cpus // args.numa - 1}"
            cmd.append(f"--numa={spec}")
    if getattr(args, "root_cache", None):
        # Before every --append of the caller's; --force-9p, since vng
        # would take virtio-fs for the root where virtiofsd exists.
        cmd += ["--force-9p", f"--append=rootflags={VNG_ROOTFLAGS},cache={args.root_cache}"]
    for a in args.append:
        cmd.append(f"--append={a}")
    qemu_opts = build_qemu_opts(args, sockdir, use_kvm)
    if args.count:
        qemu_opts += ["-plugin", f"{COUNT_PLUGIN},out={os.path.join(rundir, 'count.json')}"]
    cmd.append("--qemu-opts=" + " ".join(shlex.quote(o) for o in qemu_opts))
    cmd += ["--", os.path.join(GUEST, "guest-run") + " " + shlex.quote(rundir)]
    return cmd
