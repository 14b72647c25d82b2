# SPDX-License-Identifier: GPL-2.0
"""memhp-vm: run a command as root in a memory-hotplug-capable QEMU guest.

The guest boots a kernel of the suite (tools/kernels.tsv; default: its
first) over the host's root file system with virtme-ng, on a q35 machine
with PCI and ACPI (never microvm), this repository read-write at the same
path, DIMM slots and virtio-mem devices, and a QMP relay: inside the
guest, `memhp-qmp CMD key=value...` runs a QMP command on the guest's own
QEMU through a virtio-serial port. The machine, the accelerator and the
CPU model are memhp-vm's own choice, the same whatever virtme-ng would
pick for the accelerator (cmdline.build_qemu_opts()).

The runner exits with the command's status, 124 when --timeout expired and
125 when the guest failed by itself: it did not boot or finish, its kernel
log has a kernel problem report (a WARN splat, BUG, Oops, general
protection fault, lockdep or RCU report, bad page state, KASAN, KFENCE,
UBSAN or kmemleak report; guestlog.PROBLEM_PATTERNS), printed, or the QMP
relay could not hold the RAM a deleted memory backend freed (TCG).
Offlining's own page dumps (migration failure, isolation failed,
unmovable page) are counted, not failures. SIGTERM, SIGINT or SIGHUP kill
the guest with the runner, which then exits 130.
"""

import argparse
import asyncio
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import BUILD, MEMHP_VM, TOP, VENV
from .accel import CXL_TCG_WHY, decide_accel, kvm_probe_key, save_kvm_verdict
from .guestlog import (COMMAND_STARTED, PROBLEM_RE, boot_stall, kernel_started,
                       qemu_aborted_before_command, read_guest_rc, scan_logs,
                       stuck_report, timeout_context)
from .kernels import KernelError, resolve_kernel
from .cmdline import (COUNT_PLUGIN, CXL_FMW_ALIGN, VIRTIO_MEM_PROPS, build_vng_cmd, fmt_size,
                   parse_cpu_features, parse_size, parse_virtio_mem, save_counts,
                   shm_backend_path, vng_env)
from .relay import Relay


EXIT_TIMEOUT = 124
EXIT_GUEST = 125
EXIT_INTERRUPTED = 130


def reexec_in_venv():
    """Run under the repository's .venv, where virtme-ng and qemu.qmp live."""
    try:
        import qemu.qmp  # noqa: F401 (only whether it imports)
        return
    except ImportError:
        pass
    # The venv's python is a link to the system's: sys.prefix, not the
    # executable, says whether this is the venv. The entry point runs
    # again there.
    py = os.path.join(VENV, "bin", "python")
    if os.path.exists(py) and os.path.realpath(sys.prefix) != os.path.realpath(VENV):
        os.execv(py, [py, MEMHP_VM] + sys.argv[1:])
    sys.exit("memhp-vm: qemu.qmp is not installed: run `make setup` first")


async def pump(stream, sinks):
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        for sink in sinks:
            sink.write(chunk)
            sink.flush()


class StartWatch:
    """A console sink that sets started once COMMAND_STARTED went by (also
    when a read splits it)."""

    def __init__(self):
        self.started = asyncio.Event()
        self.tail = b""

    def write(self, chunk):
        if self.started.is_set():
            return
        text = self.tail + chunk
        if COMMAND_STARTED.encode() in text:
            self.started.set()
        self.tail = text[-len(COMMAND_STARTED):]

    def flush(self):
        pass


async def run_guest(args, vng_cmd, sockdir, rundir, use_kvm=False):
    console = open(os.path.join(rundir, "console.log"), "wb")
    outlog = open(os.path.join(rundir, "output.log"), "wb")
    qmplog = open(os.path.join(rundir, "qmp.log"), "w")

    def log(msg):
        qmplog.write(f"{time.monotonic():.3f} {msg}\n")
        qmplog.flush()

    env = vng_env(vng_cmd[0])
    proc = await asyncio.create_subprocess_exec(
        *vng_cmd, cwd=TOP, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True)
    relay = Relay(sockdir, log, hold_freed_ram=not use_kvm and not args.reuse_freed_ram,
                  inject_failure=os.environ.get("MEMHP_VM_INJECT_HOLD_FAILURE") == "1")
    out_sinks = [sys.stdout.buffer, outlog]
    watch = StartWatch()
    con_sinks = [console, watch] + ([sys.stderr.buffer] if args.console else [])
    tasks = [asyncio.ensure_future(pump(proc.stdout, out_sinks)),
             asyncio.ensure_future(pump(proc.stderr, con_sinks))]
    relay_task = asyncio.ensure_future(relay.run(proc))
    # The guest runs in its own session: a signal to us must not orphan it.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    waiter = asyncio.ensure_future(proc.wait())
    stopper = asyncio.ensure_future(stop.wait())
    starter = asyncio.ensure_future(watch.started.wait())
    # Two deadlines: the command must start within --boot-timeout (a boot
    # takes well under a minute), and the whole run end within --timeout.
    t0 = time.monotonic()
    boot_wait = min(args.boot_timeout, args.timeout)
    done, _ = await asyncio.wait({waiter, stopper, starter}, timeout=boot_wait,
                                 return_when=asyncio.FIRST_COMPLETED)
    timed_out = False
    if not done:
        timed_out = "boot"
    elif starter in done and waiter not in done and not stop.is_set():
        done, _ = await asyncio.wait({waiter, stopper},
                                     timeout=max(0, args.timeout - (time.monotonic() - t0)),
                                     return_when=asyncio.FIRST_COMPLETED)
        if not done:
            timed_out = "command"
    stopper.cancel()
    starter.cancel()
    if timed_out:
        args.timeout_context = timeout_context(rundir)
        # What the guest is stuck on, into console.log (the timeout message
        # quotes it): blocked tasks, then what each CPU runs.
        for key in ("w", "l") if relay.connected.is_set() else ():
            await relay.sysrq(key)
            await asyncio.sleep(5)
    if waiter not in done:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        await proc.wait()
    args.interrupted = stop.is_set()
    await asyncio.gather(*tasks, return_exceptions=True)
    relay_task.cancel()
    await relay.close()
    for f in (console, outlog, qmplog):
        f.close()
    return proc.returncode, timed_out, relay.failures


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="memhp-vm", description=__doc__.split("\n\n")[0],
        epilog="Example: memhp-vm --virtio-mem 2G:512M -- 'grep MemTotal /proc/meminfo'. "
               "Inside the guest: memhp-qmp query-memory-devices. Exit: the command's "
               "status; 124 timeout; 125 guest failure (no boot, kernel log problems, or "
               "a RAM hold of the QMP relay failed). Environment: "
               "MEMHP_VM_INJECT_HOLD_FAILURE=1 makes the relay add no hold after a "
               "memory backend's object-del, so that the run fails as a failed hold "
               "makes it (the runner's own tests).")
    p.add_argument("--kernel", help="bzImage to boot, a kernel tree you built (a directory: "
                   "its bzImage with its own modules, as vng runs a tree), an installed "
                   "release (/boot/vmlinuz-RELEASE or /usr/lib/modules/RELEASE/vmlinuz) or a "
                   "series of tools/kernels.tsv (its newest release); default: the table's "
                   "first series")
    p.add_argument("--mem", type=parse_size, default=parse_size("2G"), help="boot memory (2G)")
    p.add_argument("--maxmem", type=parse_size, default=parse_size("8G"),
                   help="maximum memory incl. hotplug (8G)")
    p.add_argument("--slots", type=int, default=4, help="DIMM slots (4)")
    p.add_argument("--virtio-mem", type=parse_virtio_mem, action="append",
                   metavar="SIZE[:REQUESTED[:PROP=VALUE,...]]",
                   help="a virtio-mem-pci device, ids vm0, vm1, ... (default: one 1G:0); PROPs "
                   "are QEMU device properties (" +
                   ", ".join(k for k in VIRTIO_MEM_PROPS if k != "backend") +
                   ") and backend=shm (memory in a /dev/shm file; memhp-qmp "
                   "x-memhp-backend-usage id=vmemN gives its allocated bytes), e.g. "
                   "2G:0:unplugged-inaccessible=on,dynamic-memslots=on")
    p.add_argument("--no-virtio-mem", action="store_true", help="no virtio-mem device")
    p.add_argument("--cxl", type=parse_size, action="append", default=[], metavar="SIZE",
                   help="a CXL type-3 memory expander with SIZE of volatile memory (repeatable; "
                   "a multiple of 256M): q35 with cxl=on, a pxb-cxl host bridge cxl.N, root "
                   "port, cxl-type3 device and a fixed memory window per device; implies "
                   "--numa 1 (the guest gives each window a CPU-less node) and TCG (CXL "
                   "memory is QEMU MMIO). In the guest: memhp-cxl add|remove")
    p.add_argument("--numa", type=int, default=0, metavar="N", help="N NUMA nodes sharing --mem")
    p.add_argument("--cpus", type=int, default=2, help="vCPUs (2)")
    p.add_argument("--cpu-features", type=parse_cpu_features, default=[], metavar="F=on|off,...",
                   help="CPU features to change in the guest's model (QEMU -cpu properties), "
                   "under any accelerator")
    p.add_argument("--tcg-cpu-features", type=parse_cpu_features, default=[],
                   metavar="F=on|off,...",
                   help="as --cpu-features, but only when the guest runs under TCG, e.g. "
                   "erms=off,fsrm=off,la57=off: what make check's guests use, see "
                   "Documentation/testing.rst")
    p.add_argument("--append", action="append", default=[], metavar="ARGS",
                   help="extra kernel command line (repeatable)")
    p.add_argument("--root-cache", choices=["loose"], default=None,
                   help="mount the guest's root (the host's /, read-only, over 9p) with this "
                   "cache mode: file attributes and pages stay in the guest instead of a "
                   "round trip to QEMU per lookup; for debug kernels, whose udev coldplug "
                   "outlasts virtme-ng-init's 300 s settle without it (Documentation/"
                   "known-issues.rst); a kernel booted through an initramfs mounts the "
                   "root with the initramfs's options instead")
    p.add_argument("--accel", choices=["auto", "kvm", "tcg"], default="auto",
                   help="auto: KVM when /dev/kvm is usable and a probe guest boots to a shell "
                   "under it (cached in build/vm/kvm-probe.json), else TCG, saying why")
    p.add_argument("--kvm-probe-seconds", type=int, default=60,
                   help="how long the KVM probe guest may take to reach its shell (60)")
    p.add_argument("--kvm-reprobe", action="store_true",
                   help="probe KVM again instead of using the cached verdict")
    p.add_argument("--print-accel", action="store_true",
                   help="print the accelerator a guest of these options would get (kvm or "
                   "tcg; auto probes KVM as a guest would; the reason on stderr) and exit, "
                   "booting nothing")
    p.add_argument("--print-cmd", choices=["kvm", "tcg"], default=None,
                   help="print the exact QEMU command line a guest of these options gets on a "
                   "host where KVM works (kvm) or does not (tcg), and exit, booting nothing")
    p.add_argument("--tcg-threads", choices=["multi", "single"], default=None,
                   help="TCG only: one host thread per vCPU (multi, QEMU's default) or one "
                   "thread for all vCPUs (single; -accel tcg,thread=single)")
    p.add_argument("--qemu", metavar="PATH",
                   help="the QEMU system emulator to run (default: qemu-system-x86_64 on "
                   "PATH), e.g. make qemu-fixed's build")
    p.add_argument("--reuse-freed-ram", action="store_true",
                   help="TCG only: let a memory backend added after an object-del take the "
                   "deleted one's RAM offset, as QEMU does; by default the QMP relay holds "
                   "that offset with unused backends (memhp-hold-N), since TCG keeps "
                   "translations of the freed pages (Documentation/known-issues.rst)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds before the guest is killed")
    p.add_argument("--boot-timeout", type=int, default=300,
                   help="seconds for the guest to start the command (virtme-ng-init's "
                   "\"starting script\"); a boot that stalls is killed, reported with "
                   "its console tail, and made again once")
    p.add_argument("--console", action="store_true", help="also show the guest console on stderr")
    p.add_argument("--count", metavar="FILE",
                   help="count guest instructions with the memhp-count TCG plugin (make count; "
                   "TCG only): FILE gets the counts (JSON), FILE.kallsyms the guest's "
                   "/proc/kallsyms at the command's end, FILE.syms the module symbols and "
                   "/proc/modules at each phase's end and the command's end; phases are marked in the guest with memhp-mark; "
                   "tools/testing/count/memhp-count-report FILE prints them")
    p.add_argument("--keep", action="store_true", help="keep the run directory (logs)")
    p.add_argument("--quiet", action="store_true", help="no runner messages unless failing")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND... (run by bash)")
    args = p.parse_args(argv)
    check_args(p, args)
    return args


def check_args(p, args):
    """Refuses what QEMU or the guest would refuse, before anything boots."""
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.command and not args.print_accel and not args.print_cmd:
        p.error("no command: memhp-vm [options] -- COMMAND...")
    if args.qemu:
        if not (os.path.isfile(args.qemu) and os.access(args.qemu, os.X_OK)):
            p.error(f"--qemu {args.qemu}: not an executable file")
        args.qemu = os.path.abspath(args.qemu)
    if args.no_virtio_mem:
        args.virtio_mem = []
    elif not args.virtio_mem:
        args.virtio_mem = [(1 << 30, 0, [])]
    hotplug = sum(s for s, _, _ in args.virtio_mem)
    if args.maxmem < args.mem + hotplug:
        p.error(f"--maxmem {fmt_size(args.maxmem)} is below boot memory plus virtio-mem "
                f"({fmt_size(args.mem + hotplug)}): QEMU needs room for every memory device")
    for _, _, props in args.virtio_mem:
        d = dict(props)
        if d.get("dynamic-memslots") == "on" and d.get("unplugged-inaccessible", "on") != "on":
            p.error("virtio-mem dynamic-memslots=on needs unplugged-inaccessible=on (QEMU refuses it)")
    for size in args.cxl:
        if size <= 0 or size % CXL_FMW_ALIGN:
            p.error(f"--cxl {fmt_size(size)}: a CXL device's size must be a positive multiple "
                    f"of 256M (a region's granule and QEMU's window granule)")
    if args.cxl and not args.numa:
        # With an SRAT, the guest kernel adds a node per CXL window
        # (acpi_numa_init() parses the CEDT's CFMWS after the SRAT).
        args.numa = 1
    if args.cxl and args.accel == "kvm":
        p.error(f"--cxl with --accel kvm: {CXL_TCG_WHY}")
    if args.slots < 1:
        p.error("--slots must be at least 1: QEMU refuses memory devices without slots/maxmem")
    for opt, what in ((args.count, "--count"), (args.tcg_threads, "--tcg-threads")):
        if opt and args.accel == "kvm":
            p.error(f"{what} needs TCG" + (": a TCG plugin sees no instruction KVM runs"
                                           if what == "--count" else ""))
        if opt:
            args.accel = "tcg"
    if args.count:
        if not os.path.exists(COUNT_PLUGIN):
            p.error(f"--count: no plugin at {os.path.relpath(COUNT_PLUGIN, TOP)}: run `make count`")
        if not os.path.isdir(os.path.dirname(os.path.abspath(args.count))):
            p.error(f"--count {args.count}: no such directory")


def print_qemu_cmd(args, kernel, use_kvm):
    """The QEMU command line vng would run (vng --dry-run), on stdout."""
    sockdir = tempfile.mkdtemp(prefix="memhp-vm-")
    try:
        cmd = build_vng_cmd(args, kernel, use_kvm, sockdir, "RUNDIR")
        cmd.insert(cmd.index("--run") + 2, "--dry-run")
        env = vng_env(cmd[0])
        r = subprocess.run(cmd, cwd=TOP, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)
    def is_qemu_line(x):
        # vng prints the line with shlex quoting: a path with ~ is quoted.
        if args.qemu:
            try:
                return bool(x.strip()) and shlex.split(x)[0] == args.qemu
            except ValueError:
                return False
        return re.match(r"\S*qemu-system-\S+ ", x)
    line = [x for x in (r.stdout + r.stderr).splitlines() if is_qemu_line(x)]
    if r.returncode or not line:
        sys.exit(f"memhp-vm: vng --dry-run failed (exit {r.returncode}): "
                 f"{(r.stderr or r.stdout).strip()[-400:]}")
    print(line[-1])
    return 0


def banner(args, kernel, use_kvm, why, rundir):
    threads = f" thread={args.tcg_threads}" if args.tcg_threads else ""
    vmem = ", ".join(fmt_size(s) + ":" + fmt_size(r) + "".join(f",{k}={v}" for k, v in pr)
                     for s, r, pr in args.virtio_mem) or "none"
    print(f"memhp-vm: {os.path.basename(kernel)}, {'KVM' if use_kvm else 'TCG'}{threads} "
          f"({why}), {fmt_size(args.mem)} + {args.slots} slots up to {fmt_size(args.maxmem)}, "
          f"virtio-mem {vmem}{', numa ' + str(args.numa) if args.numa else ''}"
          f"{', cxl ' + ', '.join(fmt_size(c) for c in args.cxl) if args.cxl else ''}"
          f"{', qemu ' + args.qemu if args.qemu else ''}; "
          f"logs in {os.path.relpath(rundir, TOP)}", file=sys.stderr, flush=True)


def boot(args, kernel, use_kvm):
    """One guest run: (rundir, vng rc, timed out, relay failures)."""
    os.makedirs(os.path.join(BUILD, "vm"), exist_ok=True)
    rundir = tempfile.mkdtemp(prefix="run-", dir=os.path.join(BUILD, "vm"))
    sockdir = tempfile.mkdtemp(prefix="memhp-vm-")
    command = args.command
    with open(os.path.join(rundir, "command"), "w") as f:
        f.write(command[0] + "\n" if len(command) == 1 else shlex.join(command) + "\n")
    # guest-run exports it as MEMHP_ACCEL: what the guest runs under.
    with open(os.path.join(rundir, "accel"), "w") as f:
        f.write("kvm\n" if use_kvm else "tcg\n")
    if args.count:
        # guest-run sees this file: memhp-mark saves module symbols at each
        # phase's end, and the guest's kallsyms is saved at the command's end.
        open(os.path.join(rundir, "count"), "w").close()
    vng_cmd = build_vng_cmd(args, kernel, use_kvm, sockdir, rundir)
    with open(os.path.join(rundir, "vng-cmd"), "w") as f:
        f.write(shlex.join(vng_cmd) + "\n")
    if not args.quiet:
        banner(args, kernel, use_kvm, args.accel_why, rundir)
    rc, timed_out, hold_failures = asyncio.run(run_guest(args, vng_cmd, sockdir, rundir,
                                                         use_kvm))
    shutil.rmtree(sockdir, ignore_errors=True)
    for i in range(len(args.virtio_mem)):
        try:
            os.unlink(shm_backend_path(sockdir, i))
        except OSError:
            pass
    return rundir, rc, timed_out, hold_failures


def qemu_peak_rss_mib():
    """The peak resident set of the largest process this run waited for, in
    MiB: its QEMU (vng waits for QEMU and we for vng; the probes and the
    other helpers are far smaller). Guest RAM QEMU never touched is not
    resident, so this is what the host gave the guest."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024


def verdict(args, rundir, rc, timed_out, hold_failures, elapsed):
    """The runner's exit status from a finished run, its messages printed."""
    count_missing = args.count and not save_counts(args.count, rundir)
    guest_rc = read_guest_rc(rundir)
    offline_dumps = {}
    problems = scan_logs(rundir, offline_dumps)
    status = guest_rc if guest_rc is not None else rc
    failed_guest = False
    if args.interrupted:
        print("memhp-vm: interrupted: guest killed", file=sys.stderr)
        return EXIT_INTERRUPTED
    if timed_out == "boot":
        print(f"memhp-vm: {boot_stall(args, rundir, 6)}", file=sys.stderr)
        for line in stuck_report(rundir):
            print(f"memhp-vm:   {line}", file=sys.stderr)
        status = EXIT_TIMEOUT
    elif timed_out:
        print(f"memhp-vm: timeout: guest killed after {args.timeout}s", file=sys.stderr)
        for line in getattr(args, "timeout_context", []):
            print(f"memhp-vm:   {line}", file=sys.stderr)
        for line in stuck_report(rundir):
            print(f"memhp-vm:   {line}", file=sys.stderr)
        status = EXIT_TIMEOUT
    elif guest_rc is None:
        print(f"memhp-vm: the guest did not finish the command (vng exit {rc}); "
              f"console tail ({os.path.relpath(rundir, TOP)}/console.log):", file=sys.stderr)
        with open(os.path.join(rundir, "console.log"), errors="replace") as f:
            sys.stderr.write("".join(f.readlines()[-30:]))
        failed_guest = True
    if offline_dumps and not args.quiet:
        print("memhp-vm: note: offlining reported pages it could not move (information, "
              "not a failure): " + ", ".join(f"{k} {v}" for k, v in sorted(offline_dumps.items())),
              file=sys.stderr)
    if problems:
        count = sum(1 for line in problems if PROBLEM_RE.search(line))
        print(f"memhp-vm: the guest kernel log has {count} problem line(s), with context:",
              file=sys.stderr)
        for line in problems[:40]:
            print(f"memhp-vm:   {line}", file=sys.stderr)
        failed_guest = True
    if hold_failures:
        # Each was printed when it happened ("memhp-vm: relay: hold
        # failed: ...", which check.py reads as the reason).
        print(f"memhp-vm: {len(hold_failures)} RAM hold(s) of the QMP relay failed: a later "
              "memory backend may take a freed RAM offset (Documentation/known-issues.rst)",
              file=sys.stderr)
        failed_guest = True
    if count_missing and not timed_out and not failed_guest:
        print(f"memhp-vm: --count: the plugin wrote no counts ({os.path.relpath(rundir, TOP)}"
              "/count.json missing)", file=sys.stderr)
        failed_guest = True
    if failed_guest and not timed_out:
        status = EXIT_GUEST
    if status and args.quiet:
        print(f"memhp-vm: logs kept in {os.path.relpath(rundir, TOP)}", file=sys.stderr)
    if not args.quiet or status:
        print(f"memhp-vm: exit {status} after {elapsed:.0f}s, QEMU peak RSS "
              f"{qemu_peak_rss_mib()} MiB", file=sys.stderr)
    if not args.keep and status == 0:
        shutil.rmtree(rundir, ignore_errors=True)
    return status


def main(argv=None):
    """memhp-vm: the exit status (the command's, or EXIT_*)."""
    reexec_in_venv()
    args = parse_args(argv)
    try:
        kernel = resolve_kernel(args.kernel)
    except KernelError as e:
        sys.exit(f"memhp-vm: {e}")
    kvm_works = None if args.print_cmd is None else args.print_cmd == "kvm"
    use_kvm, args.accel_why = decide_accel(args, kernel, kvm_works)
    if args.print_cmd:
        return print_qemu_cmd(args, kernel, use_kvm)
    if args.print_accel:
        print("kvm" if use_kvm else "tcg")
        if not args.quiet or not use_kvm:
            print(f"memhp-vm: {'KVM' if use_kvm else 'TCG'}: {args.accel_why}", file=sys.stderr)
        return 0
    t0 = time.monotonic()
    rundir, rc, timed_out, hold_failures = boot(args, kernel, use_kvm)
    if (use_kvm and args.accel == "auto" and not args.interrupted and
            read_guest_rc(rundir) is None and
            (timed_out == "boot" or not timed_out and not kernel_started(rundir))):
        # A cached yes whose KVM no longer starts a guest or the command:
        # none of it ran, so it runs again under TCG, with TCG's CPU model,
        # and the verdict is replaced.
        why = (f"the KVM guest did not start {'its command' if timed_out else 'the kernel'} "
               f"(console: {os.path.relpath(rundir, TOP)}/console.log)")
        save_kvm_verdict(kvm_probe_key(kernel, args.qemu), False, why)
        print(f"memhp-vm: {why}; running under TCG with -cpu max", file=sys.stderr)
        use_kvm, args.accel_why = False, why
        rundir, rc, timed_out, hold_failures = boot(args, kernel, use_kvm)
    aborted = (not timed_out and not args.interrupted and read_guest_rc(rundir) is None and
               qemu_aborted_before_command(rundir))
    if aborted:
        print(f"memhp-vm: QEMU aborted before the command started ({aborted} "
              f"failed; console: {os.path.relpath(rundir, TOP)}/console.log, kept): a "
              "known QEMU defect (Documentation/known-issues.rst); booting again",
              file=sys.stderr, flush=True)
        rundir, rc, timed_out, hold_failures = boot(args, kernel, use_kvm)
    elif timed_out == "boot" and not args.interrupted:
        # Nothing of the command has run: the stall is reported and the
        # boot made once more (Documentation/known-issues.rst, "A guest
        # boot can stall before its command starts").
        print(f"memhp-vm: {boot_stall(args, rundir, 3)} (console kept); booting again",
              file=sys.stderr, flush=True)
        rundir, rc, timed_out, hold_failures = boot(args, kernel, use_kvm)
    return verdict(args, rundir, rc, timed_out, hold_failures, time.monotonic() - t0)
