#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 40
#
# MemTotal arithmetic of sparse_hotplug's section controls, on every
# kernel: a 256 MiB pc-dimm (two 128 MiB blocks of one 128 MiB section
# each) is added and onlined to ZONE_MOVABLE (MemTotal S = base + 256 MiB).
# One section then goes isolate -> offline -> online -> isolate -> offline
# and MemTotal must read S - 128, S - 128, S, S - 128, S - 128 MiB: an
# isolated section is already out of the managed pages, and offlining its
# block must neither subtract it twice (6.1's offline_pages() subtracts the
# whole range, the driver adds its pages back at MEM_GOING_OFFLINE) nor
# give it back (6.11+ skips refcount-0 PageOffline pages; adding them back
# there made it -128, 0, +128). A cancelled offline (a vetoed one, with
# an extra reference held) must leave MemTotal as it was. The DIMM's other
# block is offlined plainly, S - 256 = base, and device_del then removes
# the DIMM: MemTotal stays at base, the blocks and sections are gone.
# Last, the same isolate -> offline -> online on a boot-memory section.

. "$(dirname "$0")/lib.sh"

DIMM_SIZE=$((256 << 20))
SHP=/sys/kernel/sparse_hotplug
MIB_KB=1024

memhp_require_guest
ktap_print_header
ktap_set_plan 9

tmp=$(mktemp -d)
cleanup()
{
	rm -rf "$tmp"
}
trap cleanup EXIT

# delta_mib REF_KB: MemTotal now minus REF_KB, in MiB.
delta_mib()
{
	echo $((($(meminfo_kb MemTotal) - $1) / MIB_KB))
}

# set_state FILE WORD [SECONDS]: "ok" or the error, interrupted after
# SECONDS (120).
set_state()
{
	local r

	r=$(timeout -s INT "${3:-120}" bash -c "{ echo $2 > $1; } 2>&1 && echo ok")
	echo "${r##*: }"
}

# step NAME FILE WORD WANT_MIB: write WORD to FILE, then MemTotal must be
# REF + WANT_MIB MiB (REF: the start of the sequence).
step()
{
	local r got

	r=$(set_state "$2" "$3")
	got=$(delta_mib "$REF")
	ktap_print_msg "$1: $3 -> $r, MemTotal $(meminfo_kb MemTotal) kB, ${got} MiB from the start (want $4)"
	[ "$r" = ok ] && [ "$got" = "$4" ] && [ $(($(meminfo_kb MemTotal) - REF)) -eq $(($4 * MIB_KB)) ]
}

memhp_load sparse_hotplug || ktap_exit_fail_msg "cannot load sparse_hotplug"
set_auto_online offline
bs=$(block_size_bytes)
ss=$((0x$(cat $SHP/section_size_bytes)))
spb=$((bs / ss))
ktap_print_msg "kernel $(uname -r), block $((bs >> 20)) MiB, section $((ss >> 20)) MiB"
[ "$ss" = $((128 << 20)) ] && [ "$spb" = 1 ] ||
	ktap_exit_fail_msg "this test wants 128 MiB blocks of one section each"

base=$(meminfo_kb MemTotal)
memory_blocks > "$tmp/blocks0"

# 1: add and online the DIMM
ok=0
if dimm_add mt-dimm0 mt-mem0 $DIMM_SIZE &&
   wait_new_blocks "$tmp/blocks0" "$tmp/new" $((DIMM_SIZE / bs)); then
	ok=1
	for b in $(cat "$tmp/new"); do
		[ "$(set_state $MEMORY_SYSFS/memory$b/state online_movable)" = ok ] || ok=0
	done
fi
b0=$(head -n1 "$tmp/new")
b1=$(tail -n1 "$tmp/new")
REF=$(meminfo_kb MemTotal)
ktap_print_msg "DIMM blocks $b0 $b1; MemTotal base $base kB, after onlining $REF kB (+$(((REF - base) / MIB_KB)) MiB)"
ktap_test_result "256 MiB DIMM added and onlined: MemTotal +256 MiB" \
	eval '[ $ok = 1 ] && [ $((REF - base)) -eq $((DIMM_SIZE / 1024)) ]'

f=$SHP/sections/section$b0/state
blk=$MEMORY_SYSFS/memory$b0/state

# 2: isolate, offline, online: -128, -128, 0
ktap_test_result "DIMM section: isolate -> offline -> online: MemTotal -128, -128, 0 MiB" eval \
	'step "isolate section$b0" $f isolate -128 && [ "$(cat $f)" = isolated ] &&
	 step "offline block $b0" $blk offline -128 && [ "$(cat $f)" = offline ] &&
	 step "online block $b0" $blk online_movable 0 && [ "$(cat $f)" = online ]'

# 3: a vetoed offline of an isolated section changes nothing
memhp_unload sparse_hotplug
memhp_load sparse_hotplug selftest_refs=1 ||
	ktap_exit_fail_msg "cannot load sparse_hotplug selftest_refs=1"
HOLD=/sys/kernel/debug/sparse_hotplug/hold_ref
r=$(set_state $f isolate)
m1=$(delta_mib "$REF")
h=$(try_write $HOLD "$b0")
echo "memhp-expect: begin page dumped because: " > /dev/kmsg
r2=$(set_state $blk offline 10)
echo "memhp-expect: end" > /dev/kmsg
m2=$(delta_mib "$REF")
st=$(cat $f)
ktap_print_msg "isolate: $r ($m1 MiB), hold_ref: $h, offline: $r2 ($m2 MiB), state $st"
ktap_test_result "offline vetoed by an extra reference: MemTotal stays at -128 MiB" eval \
	'[ "$r" = ok ] && [ "$m1" = -128 ] && [ "$h" = ok ] && [ "$r2" != ok ] &&
	 [ "$m2" = -128 ] && [ "$st" = isolated ]'

# 4: release (which drops hold_ref) gives it back
r=$(set_state $f release)
ktap_print_msg "release: $r, $(delta_mib "$REF") MiB"
ktap_test_result "release after the vetoed offline: MemTotal back to 0" eval \
	'[ "$r" = ok ] && [ "$(meminfo_kb MemTotal)" = "$REF" ] && [ "$(cat $f)" = online ]'

# 5: isolate and offline again: -128, -128
ktap_test_result "isolate -> offline again: MemTotal -128, -128 MiB" eval \
	'step "isolate section$b0 again" $f isolate -128 &&
	 step "offline block $b0 again" $blk offline -128'

# 6: the other block offline plainly: -256 = base
ktap_test_result "plain offline of block $b1: MemTotal -256 MiB, the base" eval \
	'step "offline block $b1" $MEMORY_SYSFS/memory$b1/state offline -256 &&
	 [ "$(meminfo_kb MemTotal)" = "$base" ]'

# 7: device_del removes the DIMM; MemTotal stays at the base
ok=0
if memhp-qmp device_del id=mt-dimm0 >/dev/null &&
   memhp-qmp x-memhp-wait-event event=DEVICE_DELETED 'match={"device":"mt-dimm0"}' timeout=60 >/dev/null &&
   wait_for 30 memhp_blocks_gone $(cat "$tmp/new") && memhp-qmp object-del id=mt-mem0 >/dev/null; then
	ok=1
fi
after=$(meminfo_kb MemTotal)
ktap_print_msg "after device_del: MemTotal $after kB (base $base kB, $(((after - base) / MIB_KB)) MiB)"
ktap_test_result "device_del: DIMM removed, MemTotal at the base, blocks and sections gone" eval \
	'[ $ok = 1 ] && [ "$after" = "$base" ] && memory_blocks | cmp -s - "$tmp/blocks0" &&
	 [ ! -e $SHP/sections/section$b0 ] && [ ! -e $SHP/sections/section$b1 ]'

# 8: the same on a boot-memory section whose block is offlinable (a DMA32
# block of one section; the guest's boot memory has no ZONE_MOVABLE)
free=
for d in $SHP/sections/section*; do
	s=${d##*section}
	[ "$(cat $d/zone)" = DMA32 ] && grep -qx "verdict offlinable" $d/offline_report && free=$s
done
ktap_print_msg "boot section: ${free:-none offlinable}"
if [ -n "$free" ]; then
	REF=$(meminfo_kb MemTotal)
	f=$SHP/sections/section$free/state
	blk=$MEMORY_SYSFS/memory$((free / spb))/state
	ktap_test_result "boot section$free: isolate -> offline -> online: MemTotal -128, -128, 0 MiB" eval \
		'step "isolate section$free" $f isolate -128 &&
		 step "offline block $((free / spb))" $blk offline -128 &&
		 step "online block $((free / spb))" $blk online 0'
else
	ktap_test_fail "boot section: isolate -> offline -> online: no offlinable DMA32 section"
fi

# 9: unload leaves MemTotal at the base
memhp_unload sparse_hotplug
ktap_print_msg "after rmmod: MemTotal $(meminfo_kb MemTotal) kB (base $base kB)"
ktap_test_result "rmmod: MemTotal at the base" \
	eval '! memhp_module_loaded sparse_hotplug && [ "$(meminfo_kb MemTotal)" = "$base" ]'

ktap_finished
