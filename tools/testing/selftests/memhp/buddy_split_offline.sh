#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 30
#
# buddy_split holds its arena's frames until it is unloaded, and takes them
# from ZONE_MOVABLE first. offline_pages() does not look for unmovable
# pages in ZONE_MOVABLE: it isolates the block and retries migrating until
# a signal, and the frames never move. buddy_split's memory notifier must
# make such an offline fail with EBUSY at once instead. A 256 MiB pc-dimm
# is onlined movable, buddy_split is loaded and takes its arena there:
#   1 the arena lies in the DIMM, in ZONE_MOVABLE
#   2 offlining the block that holds it fails with EBUSY within 20 s,
#     without a signal, and the block stays online
#   3 the kernel log names the held slot
#   4 after rmmod the same block goes offline
#   5 the DIMM goes away (device_del) and MemTotal is back

. "$(dirname "$0")/lib.sh"

DIMM_SIZE=$((256 << 20))

memhp_require_guest
ktap_print_header
ktap_set_plan 5

tmp=$(mktemp -d)
cleanup()
{
	memhp_unload buddy_split 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
memhp_unload buddy_split 2>/dev/null
set_auto_online offline
memtotal0=$(meminfo_kb MemTotal)
memory_blocks > "$tmp/blocks0"
bs=$(block_size_bytes)

dimm_add bso0 bsom0 $DIMM_SIZE || ktap_exit_fail_msg "device_add pc-dimm failed"
wait_new_blocks "$tmp/blocks0" "$tmp/new" $((DIMM_SIZE / bs)) ||
	ktap_exit_fail_msg "the DIMM's $((DIMM_SIZE / bs)) blocks did not appear"
for b in $(cat "$tmp/new"); do
	echo online_movable > "$MEMORY_SYSFS/memory$b/state" ||
		ktap_exit_fail_msg "memory$b: online_movable failed"
done
first_pfn=$(($(head -n1 "$tmp/new") * bs / 4096))
end_pfn=$((($(tail -n1 "$tmp/new") + 1) * bs / 4096))

# 1: two 4 MiB slots, both taken from the DIMM (the only ZONE_MOVABLE).
memhp_load buddy_split nr_sections=2 section_mb=4 pinned_sections=1 ||
	ktap_exit_fail_msg "cannot load buddy_split"
pfn=$(awk '!/^#/ && $1 == 0 { print $2 }' /sys/kernel/debug/buddy_split/sections)
in_dimm() { [ -n "$pfn" ] && [ $((pfn)) -ge $first_pfn ] && [ $((pfn)) -lt $end_pfn ]; }
ktap_test_result "arena slot 0 at pfn ${pfn:-?}, in the DIMM's ZONE_MOVABLE blocks" in_dimm
block=$((pfn * 4096 / bs))

# 2: offlining that block fails at once (a hang here is the bug).
t0=$(date +%s)
out=$(timeout 120 bash -c "echo offline > $MEMORY_SYSFS/memory$block/state" 2>&1)
rc=$?
secs=$(($(date +%s) - t0))
ktap_print_msg "offline memory$block: exit $rc after $secs s: ${out##*: }"
ktap_test_result "offline of memory$block fails with EBUSY within 20 s, block still online" \
	eval '[ $rc = 1 ] && [ "${out##*: }" = "Device or resource busy" ] && [ $secs -le 20 ] &&
	      [ "$(block_state $block)" = online ]'

# 3: and the kernel says why.
ktap_test_result "kernel log: buddy_split names the held slot" \
	eval 'dmesg | grep -q "buddy_split: pfns .* cannot go offline: slot 0 "'

# 4: without buddy_split the block goes offline.
memhp_unload buddy_split
out=$(timeout 120 bash -c "echo offline > $MEMORY_SYSFS/memory$block/state" 2>&1)
ktap_test_result "after rmmod buddy_split, memory$block goes offline" [ "$(block_state $block)" = offline ]

# 5: clean up the DIMM; MemTotal back.
for b in $(cat "$tmp/new"); do
	[ "$(block_state "$b")" = online ] &&
		timeout 120 bash -c "echo offline > $MEMORY_SYSFS/memory$b/state"
done
memhp-qmp device_del id=bso0 >/dev/null &&
	memhp-qmp x-memhp-wait-event event=DEVICE_DELETED 'match={"device":"bso0"}' timeout=60 >/dev/null &&
	memhp-qmp object-del id=bsom0 >/dev/null
ktap_test_result "DIMM removed, MemTotal back at $memtotal0 kB" \
	eval 'wait_for 30 memhp_blocks_gone $(cat "$tmp/new") && [ "$(meminfo_kb MemTotal)" = "$memtotal0" ]'
ktap_finished
