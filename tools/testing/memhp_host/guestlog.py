# SPDX-License-Identifier: GPL-2.0
"""What a guest's logs say: the kernel's problem reports that fail a
run, offlining's page dumps that do not, a boot that stalled, a QEMU
that aborted, and memhp-vm's own messages in a run's output."""

import os
import re
import time

from . import TOP


# Kernel log lines that fail a run, whatever the command returned: the
# kernel's own problem reports, each matched by the header the kernel
# prints for it. A line is matched after its printk time stamp (and caller
# id) are removed (log_text()). Boot notices that merely contain
# "WARNING:" after a subsystem prefix ("RETBleed: WARNING: Spectre v2
# mitigation leaves CPU vulnerable ...", "Speculative Return Stack
# Overflow: WARNING: ...", printed under -cpu host on some hosts) are
# none of these: only a line that starts with the report's header counts.
PROBLEM_PATTERNS = [
    # WARN*(): kernel/panic.c __warn(), the 6.x and the 7.x forms.
    r"^WARNING: CPU: \d+ PID: \d+ at ",
    r"^WARNING: (\S+:\d+ )?at .+, CPU#\d+: ",
    # lockdep and RCU-lockdep (kernel/locking/lockdep.c), every header.
    r"^WARNING: (possible circular locking dependency detected|\S+-safe -> \S+-unsafe lock "
    r"order detected|possible recursive locking detected|chain_key collision|inconsistent "
    r"lock state|possible irq lock inversion dependency detected|Nested lock was not taken|"
    r"bad unlock balance detected!|bad contention detected!|held lock freed!|\S+/\d+ still "
    r"has locks held!|lock held when returning to user space!|suspicious RCU usage)",
    r"^DEBUG_LOCKS_WARN_ON",
    r"^INFO: trying to register non-static key",
    r"\bBUG: ",                   # BUG: KASAN, KFENCE, soft lockup, bad spinlock, NULL ...
    r"^kernel BUG at ",           # BUG()/BUG_ON(): "kernel BUG at file:line!"
    r"^invalid opcode: ",         # the die() header that follows it
    r"\bOops\b",
    r"general protection fault",
    r"^Kernel panic",
    r"^Bad page state",
    r"^Bad page map",
    r"^INFO: task .* blocked for more than",
    r"^rcu: INFO: .* detected( expedited)? stalls",
    r"^UBSAN: ",
    r"^kmemleak: \d+ new suspected memory leaks",
    r"^unreferenced object 0x",
    r"^page dumped because",
]


PROBLEM_RE = re.compile("|".join(PROBLEM_PATTERNS))


# The kernel's own report of why offlining is retrying or failed, rate
# limited (mm/memory_hotplug.c do_migrate_range(), mm/page_isolation.c): a
# page with a transient reference (in a pagevec, under writeback, pinned by
# a test on purpose) or an unmovable page in the range. It is information,
# not a bug, and can come from offlining the kernel does by itself (ACPI
# eject, virtio-mem unplug), so it is counted and shown, never a failure.
OFFLINE_DUMP_RE = re.compile(r"^page dumped because: (migration failure|isolation failed|"
                             r"unmovable page)$")


# A test that provokes a failure on purpose brackets it in the kernel log:
#   echo 'memhp-expect: begin page dumped because: ' > /dev/kmsg
#   ... the failing operation ...
#   echo 'memhp-expect: end' > /dev/kmsg
# In between, problem lines starting with the announced text are not
# problems. Only page dumps can be expected: BUG/WARNING/Oops never.
EXPECT_RE = re.compile(r"memhp-expect: (begin|end) ?(.*)$")


EXPECTABLE_RE = re.compile(r"^page dumped because: ")


def log_text(line):
    """A kernel log line without its printk time stamp and caller id."""
    return re.sub(r"^\[\s*\d+\.\d+\]\s*(\[\s*[CT]\d+\]\s*)?", "", line.rstrip())


def scan_logs(rundir, notes=None):
    """Problem lines of the guest kernel log (console, else the dmesg dump).

    Each comes with the line before it, which holds the message of a WARN()
    or the cause of a BUG. Offlining's page dumps are counted by reason in
    notes (a dict) instead.
    """
    seen = []
    dumps = {}
    for name in ("console.log", "guest-dmesg.txt"):
        prev = ""
        expected = None
        try:
            with open(os.path.join(rundir, name), errors="replace") as f:
                for line in f:
                    text = log_text(line)
                    m = EXPECT_RE.search(text)
                    if m:
                        expected = m.group(2) if m.group(1) == "begin" else None
                        continue
                    m = OFFLINE_DUMP_RE.match(text)
                    if m:
                        dumps.setdefault(name, {}).setdefault(m.group(1), 0)
                        dumps[name][m.group(1)] += 1
                        continue
                    if expected and text.startswith(expected) and EXPECTABLE_RE.search(text):
                        continue
                    if PROBLEM_RE.search(text) and text not in seen:
                        if prev and prev not in seen and not PROBLEM_RE.search(prev):
                            seen.append(prev)
                        seen.append(text)
                    prev = text
        except OSError:
            pass
    if notes is not None:
        # The console has every line; the dmesg dump is the fallback.
        notes.update(dumps.get("console.log") or dumps.get("guest-dmesg.txt") or {})
    return seen


def stuck_report(rundir, limit=60):
    """After a timeout: the guest's last output line, hung-task reports and
    the SysRq dumps of console.log, stack lines of tasks and CPUs only."""
    out = []
    try:
        with open(os.path.join(rundir, "output.log"), errors="replace") as f:
            last = [ln.rstrip() for ln in f if ln.strip()][-1:]
        out += [f"last output: {ln}" for ln in last]
    except OSError:
        pass
    try:
        with open(os.path.join(rundir, "console.log"), errors="replace") as f:
            lines = [log_text(ln) for ln in f]
    except OSError:
        return out
    keep = False
    for text in lines:
        if re.search(r"blocked for more than|sysrq: Show|NMI backtrace for cpu", text):
            keep = True
        if not keep:
            continue
        if re.match(r"(INFO: task|task:|sysrq: |NMI backtrace|RIP: 0010:|"
                    r"[a-z_][\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+)", text):
            out.append(text)
    return out[:limit]


def timeout_context(rundir):
    """At a timeout, what tells a slow guest from a stuck one: how long the
    command had been silent (output.log is flushed on every write), and how
    loaded the host was. A guest that wrote seconds ago on a host loaded
    past its CPUs ran out of time; one silent for minutes is stuck."""
    out = []
    try:
        quiet = time.time() - os.path.getmtime(os.path.join(rundir, "output.log"))
        out.append(f"the command's last output came {quiet:.0f}s before the timeout")
    except OSError:
        pass
    load = os.getloadavg()
    out.append(f"host load average {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f} "
               f"(1, 5, 15 min) on {os.cpu_count()} CPUs")
    return out


# QEMU 10's multi-threaded TCG can abort while the guest kernel programs
# PCI BARs: a vCPU looks a guest-physical address up in an address-space
# dispatch that a memory transaction has replaced, and one of these
# assertions fails (Documentation/known-issues.rst, "QEMU aborts in
# iotlb_to_section() while a guest boots"). Before virtme-ng's init starts
# the command nothing of it has run, so that boot is made again, once.
QEMU_BOOT_ABORTS = ("iotlb_to_section: Assertion", "ramblock_ptr: Assertion")


COMMAND_STARTED = "virtme-ng-init: starting script"


def console_has(rundir, text):
    try:
        with open(os.path.join(rundir, "console.log"), errors="replace") as f:
            return any(text in line for line in f)
    except OSError:
        return False


def kernel_started(rundir):
    return console_has(rundir, "Linux version")


def console_tail(rundir, n):
    """The last n non-empty console lines before any SysRq dump."""
    try:
        with open(os.path.join(rundir, "console.log"), errors="replace") as f:
            lines = [log_text(ln) for ln in f if ln.strip()]
    except OSError:
        return []
    for i, text in enumerate(lines):
        if text.startswith("sysrq: "):
            lines = lines[:i]
            break
    return lines[-n:]


def boot_stall(args, rundir, n):
    """What a boot that did not start its command says: the deadline, the
    console and its last n lines."""
    return (f"boot stalled: the command did not start within {args.boot_timeout}s "
            f"(console: {os.path.relpath(rundir, TOP)}/console.log); console tail: "
            + " | ".join(console_tail(rundir, n)))


def qemu_aborted_before_command(rundir):
    """The assertion of QEMU_BOOT_ABORTS that ended the boot before the
    command started, or None."""
    if console_has(rundir, COMMAND_STARTED):
        return None
    return next((a for a in QEMU_BOOT_ABORTS if console_has(rundir, a)), None)


def read_guest_rc(rundir):
    try:
        with open(os.path.join(rundir, "guest-rc")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def vm_messages(output):
    """memhp-vm's own messages in a guest run's output (why it failed).

    Its closing "exit N after S" line is left out; the problem lines of
    the kernel log it lists come first, without their context lines.
    """
    msgs = []
    for raw in output.splitlines():
        line = raw.rstrip()
        if line.startswith("memhp-vm:") and not re.match(r"memhp-vm: exit \d+ after", line):
            msgs.append(line[len("memhp-vm:"):].strip())
    return msgs
