#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Does a module run another module's code when module memory comes from
# a re-plugged DIMM? In a guest (memhp-vm, TCG; the modules and
# selftests built for its kernel):
#
#   tools/testing/vm/memhp-vm --timeout 300 --reuse-freed-ram -- \
#	tools/testing/stale-code/module-replug.sh
#
# (an Oops in a cycle may leave the guest hanging: --timeout ends it;
# with memhp-vm's hold of freed RAM, its default, every cycle runs, so
# give it room: --timeout 900).
#
# 1. Hot-add a 128 MiB pc-dimm, online it movable, and have tb-replug run
#    a function in every page of it that it gets (the emulator translates
#    code from nearly every page). Offline it, device_del the DIMM,
#    object-del its backend.
# 2. Add a new backend and DIMM of the same size (same guest-physical
#    range; same RAM offset unless memhp-vm holds the freed one) and
#    online it to ZONE_NORMAL. The guest's 2 GiB of boot memory are all
#    ZONE_DMA32, so the DIMM is its only ZONE_NORMAL: kernel allocations,
#    module memory included, come from it first.
# 3. CYCLES (default 100) cycles: load migrate_test, buddy_split,
#    pfn_lookup and sparse_hotplug, a migration and a buddy workload
#    (memhp_loadgen), unload them all; unload_under_load.sh's cycle
#    without its every-10th extras. One such cycle runs before step 1,
#    so that the programs' code is in boot memory.
#
# Prints ZONE_NORMAL's free pages before and with the first cycle's
# modules loaded (what they and their work took from the DIMM), and how
# many cycles ran; exits 1 when a cycle failed (the kernel log
# then says how; memhp-vm exits 125 for an Oops), 0 when all ran, 2 when
# it could not set up.

NAME=module-replug
ID=mr
. "$(dirname "$0")/lib.sh"

CYCLES=${CYCLES:-100}
MODS="migrate_test buddy_split pfn_lookup sparse_hotplug"
LOADGEN=$(memhp_bin memhp_loadgen)
[ -x "$LOADGEN" ] || die "no memhp_loadgen (make selftests)"

# normal_pages: ZONE_NORMAL's present and free pages, or none.
normal_pages()
{
	awk '/zone +Normal/ {z = 1} z && $1 == "present" {p = $2} z && $1 == "nr_free_pages" {
		print p " present, " $2 " free"; f = 1; exit } END { if (!f) print "none" }' /proc/zoneinfo
}

# cycle N: load, work, unload; the first says what ZONE_NORMAL gave.
cycle()
{
	local m free0

	[ "$1" = 1 ] && free0=$(normal_pages)
	memhp_load migrate_test && memhp_load buddy_split nr_sections=4 section_mb=4 pinned_sections=1 &&
		memhp_load pfn_lookup && memhp_load sparse_hotplug || return 1
	[ "$1" = 1 ] && echo "cycle 1: ZONE_NORMAL pages: $free0; modules loaded: $(normal_pages)"
	"$LOADGEN" once-migrate 2 > /dev/null || return 1
	"$LOADGEN" once-buddy > /dev/null || return 1
	for m in $MODS; do
		memhp_unload "$m" || return 1
	done
}

# A cycle before DIMM 2 is there: the programs it runs (insmod, rmmod,
# find, memhp_loadgen...) have their code in the page cache of boot
# memory from then on, so that in step 3 only module memory is new.
cycle 0 || die "a cycle without the DIMM failed"
echo "ZONE_NORMAL pages before the DIMMs: $(normal_pages)"
seq 1 > /dev/null	# the loop's program, also read before the DIMMs

plug 1 online_movable
out=$(run 1) || exit 2
echo "DIMM 1: block $block, pfns $lo-$((hi - 1)): $out"
unplug 1 mrm1
first=$block
plug 2 online_kernel
[ "$block" = "$first" ] || die "the new DIMM is at block $block, not $first"
echo "DIMM 2: block $block; ZONE_NORMAL pages: $(normal_pages)"

done_cycles=0
for i in $(seq "$CYCLES"); do
	cycle "$i" || { echo "module-replug: cycle $i failed"; break; }
	done_cycles=$i
done
echo "module-replug: $done_cycles of $CYCLES cycles ran"
[ "$done_cycles" = "$CYCLES" ]
