#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-vm: --no-virtio-mem --cxl 512M
#
# CXL type-3 memory as the third hotplug path, end to end: a 512 MiB CXL
# memory expander (memhp-vm --cxl 512M: pxb-cxl, cxl-rp, cxl-type3 with a
# volatile backend, a fixed memory window) becomes System RAM through a CXL
# RAM region, its dax device and kmem (memhp-cxl add), and goes away again
# (memhp-cxl remove). Checked: MemTotal and the node's MemTotal grow by
# exactly the size, the node has no CPUs and sits in a lower memory tier
# than DRAM, sparse_hotplug lists the new sections, data on the CXL node
# migrates out intact when it is removed, a removal that a pinned page
# blocks fails and changes nothing, and three add/remove cycles leave
# MemTotal, the block list and the CXL objects as they were.
#
# Linux 6.1 has no CXL RAM regions (create_ram_region came in 6.3): there
# the whole test is a SKIP, not a pass.

. "$(dirname "$0")/lib.sh"

CXL_SIZE=$((512 << 20))
SHP=/sys/kernel/sparse_hotplug
TIERS=/sys/devices/virtual/memory_tiering

memhp_require_guest

tmp=$(mktemp -d)
cleanup()
{
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	[ -n "$pin" ] && kill "$pin" 2>/dev/null
	wait 2>/dev/null
	memhp-cxl remove >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

# Not applicable (memhp-cxl check exit 4: no CXL memdev, or a kernel
# without RAM regions) is a SKIP with memhp-cxl's reason.
memhp-cxl check > "$tmp/check" 2>&1
rc=$?
if [ $rc != 0 ]; then
	ktap_print_header; ktap_set_plan 1
	why=$(sed -n 's/^memhp-cxl: //p' "$tmp/check" | tail -n1)
	if [ $rc = 4 ]; then
		ktap_test_skip "cxl_memory" "not applicable: ${why:-memhp-cxl check exit 4}"
		ktap_finished
	fi
	ktap_exit_fail_msg "memhp-cxl check failed (exit $rc): $why"
fi

ktap_print_header
ktap_set_plan 16

memhp_load sparse_hotplug || ktap_exit_fail_msg "cannot load sparse_hotplug"
spb=$(($(block_size_bytes) / 0x$(cat $SHP/section_size_bytes)))
memtotal0=$(meminfo_kb MemTotal)
memory_blocks > "$tmp/blocks0"

# cxl_add [ARGS]: memhp-cxl add, its key=value lines in $tmp/add (and
# the variables region, dax, node, blocks, zone, resource).
cxl_add()
{
	memhp-cxl add "$@" > "$tmp/add" 2> "$tmp/add.err"
	local rc=$?

	sed 's/^/# /' "$tmp/add.err"
	region=$(sed -n 's/^region=//p' "$tmp/add")
	dax=$(sed -n 's/^dax=//p' "$tmp/add")
	node=$(sed -n 's/^node=//p' "$tmp/add")
	blocks=$(sed -n 's/^blocks=//p' "$tmp/add")
	zone=$(sed -n 's/^zone=//p' "$tmp/add")
	resource=$(sed -n 's/^resource=//p' "$tmp/add")
	return $rc
}

# cxl_remove: memhp-cxl remove, its messages shown and kept in $tmp/rm.err;
# page dumps of an offlining it cannot finish are announced to memhp-vm.
cxl_remove()
{
	local rc

	echo "memhp-expect: begin page dumped because: " > /dev/kmsg
	memhp-cxl remove "$@" 2> "$tmp/rm.err"
	rc=$?
	echo "memhp-expect: end" > /dev/kmsg
	sed 's/^/# /' "$tmp/rm.err"
	return $rc
}

# Every section of $blocks has a sparse_hotplug directory with state $1.
sections_state_is()
{
	local b s

	for b in $blocks; do
		for s in $(seq $((b * spb)) $((b * spb + spb - 1))); do
			[ "$(cat "$SHP/sections/section$s/state" 2>/dev/null)" = "$1" ] || return 1
			[ "$(cat "$SHP/sections/section$s/block")" = "$b" ] || return 1
		done
	done
}

sections_gone()
{
	local b

	for b in $blocks; do
		[ -e "$SHP/sections/section$((b * spb))" ] && return 1
	done
	return 0
}

# in_nodelist NODE LIST: NODE is in a kernel node list such as 0-1,3.
in_nodelist()
{
	local r

	for r in ${2//,/ }; do
		if [ "${r%-*}" != "$r" ]; then
			[ "$1" -ge "${r%-*}" ] && [ "$1" -le "${r#*-}" ] && return 0
		else
			[ "$1" = "$r" ] && return 0
		fi
	done
	return 1
}

# The memory tier (N of memory_tierN) holding node $1.
tier_of()
{
	local t

	for t in "$TIERS"/memory_tier*; do
		in_nodelist "$1" "$(cat "$t/nodelist" 2>/dev/null)" && { echo "${t##*memory_tier}"; return; }
	done
}

# Every CXL object back to where it started: no region, the endpoint
# decoder's DPA free, no kmem resource left in /proc/iomem.
cxl_clean()
{
	! ls -d /sys/bus/cxl/devices/region* >/dev/null 2>&1 &&
	! grep -qv '^0x0*$' /sys/bus/cxl/devices/decoder*/dpa_size &&
	! grep -qE "dax|kmem|region" /proc/iomem
}

# 1: add
if cxl_add; then
	ktap_print_msg "$(tr '\n' ' ' < "$tmp/add")"
	ktap_test_pass "memhp-cxl add: RAM region, dax, kmem, blocks online"
else
	ktap_exit_fail_msg "memhp-cxl add failed"
fi

# 2: MemTotal +512 MiB exactly
memtotal1=$(meminfo_kb MemTotal)
ktap_print_msg "MemTotal $memtotal0 kB -> $memtotal1 kB (+$((memtotal1 - memtotal0)) kB)"
ktap_test_result "MemTotal grew by exactly $((CXL_SIZE >> 10)) kB" \
	[ $((memtotal1 - memtotal0)) -eq $((CXL_SIZE >> 10)) ]

# 3: on a node of its own, with that memory and no CPUs
nodemem=$(awk '/MemTotal/ {print $4}' /sys/devices/system/node/node$node/meminfo 2>/dev/null)
cpus=$(cat /sys/devices/system/node/node$node/cpulist 2>/dev/null)
ktap_print_msg "node $node: MemTotal ${nodemem:-?} kB, cpus '${cpus}'"
ktap_test_result "node $node: MemTotal $((CXL_SIZE >> 10)) kB, no CPUs, not node 0" \
	eval '[ -n "$node" ] && [ "$node" != 0 ] && [ "$nodemem" = $((CXL_SIZE >> 10)) ] &&
	 [ -z "$cpus" ] && in_nodelist "$node" "$(cat /sys/devices/system/node/has_memory)"'

# 4: a lower memory tier than DRAM (a higher tier id)
t0=$(tier_of 0)
tn=$(tier_of "$node")
ktap_print_msg "memory tiers: DRAM node 0 in memory_tier${t0:-?}, CXL node $node in memory_tier${tn:-?}"
ktap_test_result "CXL node in a lower memory tier than DRAM" \
	eval '[ -n "$t0" ] && [ -n "$tn" ] && [ "$tn" -gt "$t0" ]'

# 5: blocks online movable, sections listed by sparse_hotplug
ktap_test_result "blocks $blocks online in ZONE_MOVABLE; sparse_hotplug sections online" \
	eval '[ "$zone" = Movable ] && [ "$(echo $blocks | wc -w)" = $((CXL_SIZE / $(block_size_bytes))) ] &&
	 sections_state_is online'

# 6+7: data bound to the CXL node survives the removal (it migrates).
# Small: QEMU emulates every access to CXL memory through its MMIO path,
# so under TCG filling it is slow beyond DRAM (16 MiB took over 300 s:
# the kernel's page clearing alone is a store per byte there).
first_pfn=$((resource / 4096))
end_pfn=$(((resource + CXL_SIZE) / 4096))
t0=$(date +%s)
numactl --membind="$node" "$(memhp_bin memhp_pattern)" 2 $first_pfn $end_pfn "$tmp/ready" \
	> "$tmp/pattern.log" &
holder=$!
wait_for 600 test -s "$tmp/ready"
cat "$tmp/pattern.log"
in_range=$(cat "$tmp/ready" 2>/dev/null || echo 0)
fill_s=$(($(date +%s) - t0))
ktap_test_result "pattern written on the CXL node ($in_range pages in its range)" \
	[ "${in_range:-0}" -gt 0 ]

if cxl_remove; then rm_rc=0; else rm_rc=$?; fi
kill -USR1 "$holder" 2>/dev/null
wait "$holder"
prc=$?
holder=
tail -n1 "$tmp/pattern.log"
memtotal2=$(meminfo_kb MemTotal)
ktap_print_msg "MemTotal after remove $memtotal2 kB"
ktap_test_result "memhp-cxl remove with data on the node: ok, data intact (migrated)" \
	eval '[ $rm_rc = 0 ] && [ $prc = 0 ]'

# 8: everything back
ktap_test_result "MemTotal, block list, sections and CXL objects back" \
	eval '[ "$memtotal2" = "$memtotal0" ] && memory_blocks | cmp -s - "$tmp/blocks0" &&
	 sections_gone && cxl_clean'

# 9-12: busy: a page pinned (FOLL_LONGTERM) in the CXL memory onlined to
# ZONE_NORMAL; removal must fail, say why, and change nothing.
cxl_add --zone normal
add_rc=$?
ktap_test_result "memhp-cxl add --zone normal" eval '[ $add_rc = 0 ] && [ "$zone" = Normal ]'
numactl --membind="$node" "$(memhp_bin memhp_pin)" 8 $first_pfn $end_pfn "$tmp/pinned" \
	> "$tmp/pin.log" 2>&1 &
pin=$!
wait_for 300 test -s "$tmp/pinned"
sed 's/^/# /' "$tmp/pin.log"
pfn=$(cat "$tmp/pinned" 2>/dev/null)
ktap_test_result "a page of the CXL memory pinned: ${pfn:-none}" [ -n "$pfn" ]

memtotal3=$(meminfo_kb MemTotal)
memhp-cxl status > "$tmp/status.before" 2>&1
if cxl_remove --timeout 30; then rm_rc=0; else rm_rc=$?; fi
memhp-cxl status > "$tmp/status.after" 2>&1
ktap_test_result "remove while pinned fails (exit $rm_rc) with a clear error" \
	eval '[ $rm_rc = 1 ] && grep -q "cannot go offline" "$tmp/rm.err" &&
	 grep -q "left as it was" "$tmp/rm.err"'
sed 's/^/# after: /' "$tmp/status.after"
ktap_test_result "nothing changed: MemTotal, region, dax (kmem), every block online Normal" \
	eval '[ "$(meminfo_kb MemTotal)" = "$memtotal3" ] && cmp -s "$tmp/status.before" "$tmp/status.after" &&
	 ! grep -q offline "$tmp/status.after" && grep -q "(kmem)" "$tmp/status.after"'

# 13: once the pin is gone, the removal goes through
kill "$pin" 2>/dev/null
wait "$pin" 2>/dev/null
pin=
cxl_remove
rm_rc=$?
ktap_test_result "remove after the pin is released: ok, MemTotal back" \
	eval '[ $rm_rc = 0 ] && [ "$(meminfo_kb MemTotal)" = "$memtotal0" ] && cxl_clean'

# 14-16: three add/remove cycles, nothing left behind
free0=$(meminfo_kb MemFree)
for c in 1 2 3; do
	ok=1
	t0=$(date +%s.%N)
	cxl_add > /dev/null || ok=0
	t1=$(date +%s.%N)
	[ $(($(meminfo_kb MemTotal) - memtotal0)) -eq $((CXL_SIZE >> 10)) ] || ok=0
	sections_state_is online || ok=0
	t2=$(date +%s.%N)
	cxl_remove > /dev/null || ok=0
	t3=$(date +%s.%N)
	times="$times $(echo "$t1 - $t0" | bc | xargs printf %.1f)/$(echo "$t3 - $t2" | bc | xargs printf %.1f)"
	[ "$(meminfo_kb MemTotal)" = "$memtotal0" ] || ok=0
	memory_blocks | cmp -s - "$tmp/blocks0" || ok=0
	sections_gone || ok=0
	cxl_clean || ok=0
	ktap_print_msg "cycle $c: MemTotal $(meminfo_kb MemTotal) kB, MemFree $(meminfo_kb MemFree) kB" \
		"(at start of cycles $free0 kB)"
	ktap_test_result "cycle $c: add +$((CXL_SIZE >> 10)) kB, remove back, nothing left" [ $ok = 1 ]
done

ktap_print_msg "figures: CXL 512 MiB add/remove s:$times; 2 MiB written on the CXL node in" \
	"${fill_s} s (TCG: QEMU's MMIO path)"
memhp_unload sparse_hotplug
ktap_finished
