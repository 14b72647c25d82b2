# SPDX-License-Identifier: GPL-2.0
"""memhp-vm's kernel-problem filter: what fails a guest run, and what not.

Kernel problem reports must match, in each kernel's format; boot notices
that only contain "WARNING:" after a subsystem's prefix, as a guest on
-cpu host prints on some hosts, must not.
"""

import re

import pytest
from memhp_host import guestlog


def ids(lines):
    """Short test ids: each line's first words, time stamp removed."""
    return [re.sub(r"\W+", "-", re.sub(r"^\[[\s\d.]+\]\s*", "", x))[:48].strip("-")
            for x in lines]

# Real console lines of the suite's guests, time stamps kept: the WARN
# that tools/testing/vm/selftest.sh's case 4 provokes through
# sparse_hotplug's debugfs file, on 6.1 and on 7.3 (kernel/panic.c
# __warn() changed its form in between).
OWN_LOGS = [
    "[  253.875557] WARNING: CPU: 1 PID: 254 at /work/main/build/modules/6.1.0-56-amd64/mm/"
    "sparse_hotplug_sections.c:620 sparse_hp_provoke_warning_write+0x6a/0x80 [sparse_hotplug]",
    "[  272.402864] WARNING: mm/sparse_hotplug_sections.c:620 at "
    "sparse_hp_provoke_warning_write+0x65/0x80 [sparse_hotplug], CPU#0: bash/188",
]

# The other reports' headers in the kernels' formats: the Oops and BUG
# headers of the stale-code faults (Documentation/known-issues.rst),
# lockdep.c's, panic.c's 7.x form without a file, KASAN, KFENCE, RCU,
# hung tasks, ...
REPORTS = [
    "BUG: kernel NULL pointer dereference, address: 0000000000000008",
    "Oops: 0000 [#1] PREEMPT SMP NOPTI",
    "Oops: general protection fault, probably for non-canonical address "
    "0xdffffc0000000001: 0000 [#1] PREEMPT SMP NOPTI",
    "BUG: unable to handle page fault for address: ffffffffc0a1d000",
    "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI",
    "WARNING: at mm/page_alloc.c:4424 __alloc_pages+0x2a1/0x330, CPU#1: kworker/1:2/80",
    "WARNING: CPU: 0 PID: 1 at kernel/locking/lockdep.c:232 hlock_class+0x3c/0x70",
    "WARNING: possible circular locking dependency detected",
    "WARNING: possible recursive locking detected",
    "WARNING: inconsistent lock state",
    "WARNING: suspicious RCU usage",
    "WARNING: bad unlock balance detected!",
    "WARNING: HARDIRQ-safe -> HARDIRQ-unsafe lock order detected",
    "WARNING: bash/312 still has locks held!",
    "WARNING: lock held when returning to user space!",
    "DEBUG_LOCKS_WARN_ON(1)",
    "INFO: trying to register non-static key.",
    "BUG: KASAN: slab-use-after-free in mtest_release+0x44/0x90 [migrate_test]",
    "BUG: KFENCE: out-of-bounds read in sparse_hp_show+0x1f/0x40 [sparse_hotplug]",
    "watchdog: BUG: soft lockup - CPU#1 stuck for 104s! [bash:230]",
    "kernel BUG at mm/memory_hotplug.c:1234!",
    "invalid opcode: 0000 [#1] PREEMPT SMP NOPTI",
    "Kernel panic - not syncing: Fatal exception",
    "Bad page state in process bash  pfn:12345",
    "BUG: Bad page map in process a.out  pte:8000000012345067 pmd:12345067",
    "INFO: task kworker/0:1:12 blocked for more than 600 seconds.",
    "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    "rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: { 1-... }",
    "UBSAN: array-index-out-of-bounds in mm/sparse_hotplug_sections.c:88:9",
    "kmemleak: 3 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
    "unreferenced object 0xffff888003a1c000 (size 64):",
    "page dumped because: nonzero mapcount",
]

# Boot notices (arch/x86/kernel/cpu/bugs.c, with its pr_fmt prefixes) and
# other lines that are no kernel problem.
NOTICES = [
    "[    0.081079] RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to "
    "RETBleed attacks, data leaks possible!",
    "[    0.081042] Speculative Return Stack Overflow: WARNING: See "
    "https://kernel.org/doc/html/latest/admin-guide/hw-vuln/srso.html for mitigation options.",
    "[    0.081042] Spectre V2 : WARNING: Unprivileged eBPF is enabled with eIBRS on, data "
    "leaks possible via Spectre v2 BHB attacks!",
    "[    0.081042] Speculative Store Bypass: Vulnerable",
    "[    0.088937] Spectre V1 : Mitigation: usercopy/swapgs barriers and __user pointer "
    "sanitization",
    "[  272.407596] Modules linked in: sparse_hotplug(OE) sr_mod cdrom sg",
    "[    1.000000] ACPI: _OSC evaluation for CPUs failed, trying _PDC",
    "[    3.000000] workqueue: blk_mq_run_work_fn hogged CPU for >10000us 4 times",
]


@pytest.mark.parametrize("line", OWN_LOGS + REPORTS, ids=ids(OWN_LOGS + REPORTS))
def test_kernel_problem_matches(line):
    assert guestlog.PROBLEM_RE.search(guestlog.log_text(line)), line


@pytest.mark.parametrize("line", NOTICES, ids=ids(NOTICES))
def test_boot_notice_does_not_match(line):
    assert not guestlog.PROBLEM_RE.search(guestlog.log_text(line)), line


def test_log_text_strips_stamp_and_caller():
    assert guestlog.log_text("[   12.000001] [    T1] WARNING: suspicious RCU usage\n") == \
        "WARNING: suspicious RCU usage"
    assert guestlog.log_text("[    0.5] RETBleed: WARNING: x") == "RETBleed: WARNING: x"


def test_scan_logs_reports_splat_not_notice(tmp_path):
    (tmp_path / "console.log").write_text("\n".join(NOTICES + [
        "[  253.875000] sparse_hotplug: warning provoked on request through debugfs",
        OWN_LOGS[0]]) + "\n")
    problems = guestlog.scan_logs(str(tmp_path))
    assert problems == ["sparse_hotplug: warning provoked on request through debugfs",
                        guestlog.log_text(OWN_LOGS[0])]


def test_qemu_boot_abort_before_the_command_only(tmp_path):
    abort = ("qemu-system-x86_64: system/physmem.c:2678: iotlb_to_section: Assertion "
             "`section_index < d->map.sections_nb' failed.")
    (tmp_path / "console.log").write_text(
        "[    3.63] pci 0000:00:07.0: BAR 1 [mem 0xfebfb000-0xfebfbfff]\n" + abort + "\n")
    assert guestlog.qemu_aborted_before_command(str(tmp_path)) == "iotlb_to_section: Assertion"
    (tmp_path / "console.log").write_text(
        "[   43.45] virtme-ng-init: starting script\n" + abort + "\n")
    assert guestlog.qemu_aborted_before_command(str(tmp_path)) is None
    (tmp_path / "console.log").write_text("[    3.63] Kernel panic - not syncing\n")
    assert guestlog.qemu_aborted_before_command(str(tmp_path)) is None


def test_qemu_boot_abort_in_ramblock_ptr(tmp_path):
    (tmp_path / "console.log").write_text(
        "[    2.00] pci 0000:00:0a.0: BAR 4 [mem 0xfebe0000-0xfebe3fff 64bit pref]\n"
        "qemu-system-x86_64: include/exec/ram_addr.h:91: ramblock_ptr: Assertion "
        "`offset_in_ramblock(block, offset)' failed.\n")
    assert guestlog.qemu_aborted_before_command(str(tmp_path)) == "ramblock_ptr: Assertion"
    (tmp_path / "console.log").write_text(
        "qemu-system-x86_64: hw/mem/pc-dimm.c:1: foo: Assertion `x' failed.\n")
    assert guestlog.qemu_aborted_before_command(str(tmp_path)) is None
