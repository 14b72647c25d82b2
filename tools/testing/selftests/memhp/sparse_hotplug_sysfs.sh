#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 60
#
# sparse_hotplug's view of the boot memory agrees with the core's:
# sizes, one directory per present section, each section's block, state,
# zone and node matching /sys/devices/system/memory; read-only files refuse
# writes and the writable state refuses bad input, each keeping its value.
# (The hot-add path is checked by acpi_dimm.sh, the state controls by
# sparse_hotplug_controls.sh.)

. "$(dirname "$0")/lib.sh"

SHP=/sys/kernel/sparse_hotplug

memhp_require_guest
ktap_print_header
ktap_set_plan 7

memhp_load sparse_hotplug || ktap_exit_fail_msg "cannot load sparse_hotplug"

ktap_test_result "block_size_bytes equals the core's" \
	[ "$(cat $SHP/block_size_bytes)" = "$(cat $MEMORY_SYSFS/block_size_bytes)" ]
ktap_test_result "section_size_bytes is 128 MiB (x86-64)" \
	[ "$((0x$(cat $SHP/section_size_bytes)))" = $((128 << 20)) ]

bs=$(block_size_bytes)
spb=$((bs / 0x$(cat $SHP/section_size_bytes)))
nblocks=$(memory_blocks | wc -l)
nsections=$(ls $SHP/sections | wc -l)
ktap_print_msg "$nblocks blocks, $nsections sections, $spb per block"
ktap_test_result "one directory per section of every memory block" \
	[ "$nsections" -eq $((nblocks * spb)) ]

bad=0
for d in $SHP/sections/section*; do
	s=${d##*section}
	b=$(cat "$d/block")
	[ "$b" -eq $((s / spb)) ] || { ktap_print_msg "section$s: block $b"; bad=1; }
	[ "$(cat "$d/state")" = "$(block_state "$b")" ] ||
		{ ktap_print_msg "section$s: state $(cat "$d/state") vs block $(block_state "$b")"; bad=1; }
	[ "$(($(cat "$d/start_pfn")))" = $((s * (1 << 15))) ] ||
		{ ktap_print_msg "section$s: start_pfn $(cat "$d/start_pfn")"; bad=1; }
done
ktap_test_result "block, state and start_pfn of every section agree with the core" [ $bad = 0 ]

bad=0
for d in $SHP/sections/section*; do
	b=$(cat "$d/block")
	node=$(basename "$(readlink -f "$MEMORY_SYSFS/memory$b"/node*)" 2>/dev/null)
	[ "node$(cat "$d/nid")" = "$node" ] || { ktap_print_msg "${d##*/}: nid $(cat "$d/nid") vs $node"; bad=1; }
	if [ "$(cat "$d/state")" = online ]; then
		vz=$(cat "$MEMORY_SYSFS/memory$b/valid_zones")
		z=$(cat "$d/zone")
		# A block spanning zones says "none"; its sections name theirs.
		[ "$vz" = none ] || [ "$z" = "$vz" ] ||
			{ ktap_print_msg "${d##*/}: zone $z vs valid_zones $vz"; bad=1; }
	fi
done
ktap_test_result "node and zone of every section agree with the core" [ $bad = 0 ]

ktap_print_msg "section0 zone: $(cat $SHP/sections/section0/zone), nr_pages $(cat $SHP/sections/section0/nr_pages)"
ktap_test_result "nr_pages is 32768 for a full section" \
	[ "$(cat $SHP/sections/section1/nr_pages)" = 32768 ]

# state is writable (sparse_hotplug_controls.sh) but "0" is no command.
bad=0
for f in $SHP/block_size_bytes $SHP/sections/section1/state $SHP/sections/section1/start_pfn; do
	before=$(cat "$f")
	if (echo 0 > "$f") 2>/dev/null; then
		ktap_print_msg "$f accepted a write"
		bad=1
	fi
	[ "$(cat "$f")" = "$before" ] || bad=1
done
ktap_test_result "read-only files and state refuse bad writes and keep their value" [ $bad = 0 ]

memhp_unload sparse_hotplug
ktap_finished
