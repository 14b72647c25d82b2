#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 80
#
# ACPI memory hotplug end to end, driven from inside the guest over QMP:
# a 1 GiB pc-dimm is added (device_add), its memory blocks appear and are
# onlined to ZONE_MOVABLE through /sys/devices/system/memory, data is written
# into the new memory and verified, the blocks are offlined with that data
# still mapped (it must migrate out intact), the DIMM is removed (device_del)
# and MemTotal and the block list are back where they started.
# sparse_hotplug's section directories are checked at every step.

. "$(dirname "$0")/lib.sh"

DIMM_SIZE=$((1 << 30))
SHP=/sys/kernel/sparse_hotplug

memhp_require_guest
ktap_print_header
ktap_set_plan 12

tmp=$(mktemp -d)
cleanup()
{
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

memhp_load sparse_hotplug || ktap_exit_fail_msg "cannot load sparse_hotplug"
set_auto_online offline

memtotal0=$(meminfo_kb MemTotal)
memory_blocks > "$tmp/blocks0"
bs=$(block_size_bytes)
spb=$((bs / 0x$(cat $SHP/section_size_bytes)))

# 1: device_add
if dimm_add dimm0 dimm-mem0 $DIMM_SIZE; then
	ktap_test_pass "device_add pc-dimm 1 GiB"
else
	ktap_exit_fail_msg "device_add failed"
fi

# 2: the DIMM's blocks appear, offline (policy offline)
if wait_new_blocks "$tmp/blocks0" "$tmp/new" $((DIMM_SIZE / bs)); then
	ktap_print_msg "new blocks: $(tr '\n' ' ' < "$tmp/new")"
	ok=1
	for b in $(cat "$tmp/new"); do
		[ "$(block_state "$b")" = offline ] || ok=0
	done
	ktap_test_result "$((DIMM_SIZE / bs)) new memory blocks, all offline" [ $ok = 1 ]
else
	ktap_exit_fail_msg "expected $((DIMM_SIZE / bs)) new blocks, got $(wc -l < "$tmp/new")"
fi
first_block=$(head -n1 "$tmp/new")
last_block=$(tail -n1 "$tmp/new")
first_pfn=$((first_block * bs / 4096))
end_pfn=$(((last_block + 1) * bs / 4096))

# Every section of the new blocks has a directory whose state is $1.
sections_state_is()
{
	local b s

	for b in $(cat "$tmp/new"); do
		for s in $(seq $((b * spb)) $((b * spb + spb - 1))); do
			[ "$(cat "$SHP/sections/section$s/state" 2>/dev/null)" = "$1" ] || return 1
			[ "$(cat "$SHP/sections/section$s/block")" = "$b" ] || return 1
		done
	done
}

# 3: sparse_hotplug saw the hot-add
ktap_test_result "sparse_hotplug: sections of the new blocks present and offline" \
	sections_state_is offline

# 4: online_movable through the core's sysfs
ok=1
for b in $(cat "$tmp/new"); do
	echo online_movable > "$MEMORY_SYSFS/memory$b/state" || ok=0
	[ "$(block_state "$b")" = online ] || ok=0
done
ktap_test_result "online_movable every new block" [ $ok = 1 ]

# 5: MemTotal grew by the DIMM
memtotal1=$(meminfo_kb MemTotal)
ktap_print_msg "MemTotal $memtotal0 kB -> $memtotal1 kB"
ktap_test_result "MemTotal grew by 1 GiB" [ $((memtotal1 - memtotal0)) -eq $((DIMM_SIZE / 1024)) ]

# 6: sparse_hotplug shows them online in ZONE_MOVABLE
zone_movable()
{
	local b=$first_block

	[ "$(cat "$SHP/sections/section$((b * spb))/zone")" = Movable ]
}
ktap_test_result "sparse_hotplug: sections online, zone Movable" \
	eval 'sections_state_is online && zone_movable'

# 7: data written into the new memory reads back
"$(memhp_bin memhp_pattern)" 256 $first_pfn $end_pfn "$tmp/ready" > "$tmp/pattern.log" &
holder=$!
wait_for 120 test -s "$tmp/ready"
in_range=$(cat "$tmp/ready" 2>/dev/null || echo 0)
cat "$tmp/pattern.log"
ktap_test_result "pattern written and verified in the new memory ($in_range pages there)" \
	[ "${in_range:-0}" -gt 0 ]

# 8: offline every block while the data is still mapped: it must migrate
ok=1
for b in $(cat "$tmp/new"); do
	timeout 120 sh -c "echo offline > $MEMORY_SYSFS/memory$b/state" || ok=0
	[ "$(block_state "$b")" = offline ] || ok=0
done
ktap_test_result "offline every new block with data in it" [ $ok = 1 ]

# 9: the data survived the migration
kill -USR1 "$holder"
wait "$holder"
rc=$?
holder=
tail -n1 "$tmp/pattern.log"
ktap_test_result "data intact after offlining (migrated out)" [ $rc = 0 ]

# 10: sparse_hotplug shows the sections offline again
ktap_test_result "sparse_hotplug: sections offline, zone none" \
	eval 'sections_state_is offline && [ "$(cat $SHP/sections/section$((first_block * spb))/zone)" = none ]'

# 11: device_del: the guest ejects the DIMM, QEMU reports it deleted
if memhp-qmp device_del id=dimm0 >/dev/null &&
   memhp-qmp x-memhp-wait-event event=DEVICE_DELETED 'match={"device":"dimm0"}' timeout=60 >/dev/null &&
   wait_for 30 memhp_blocks_gone $(cat "$tmp/new") && memhp-qmp object-del id=dimm-mem0 >/dev/null; then
	ktap_test_pass "device_del: blocks gone, DEVICE_DELETED"
else
	ktap_test_fail "device_del: blocks gone, DEVICE_DELETED"
fi

# 12: everything back where it started
section_dirs_gone()
{
	local b=$first_block

	[ ! -e "$SHP/sections/section$((b * spb))" ]
}
memtotal2=$(meminfo_kb MemTotal)
ktap_print_msg "MemTotal after removal $memtotal2 kB"
ktap_test_result "MemTotal, block list and section directories restored" \
	eval '[ "$memtotal2" = "$memtotal0" ] && memory_blocks | cmp -s - "$tmp/blocks0" && section_dirs_gone'

memhp_unload sparse_hotplug
ktap_finished
