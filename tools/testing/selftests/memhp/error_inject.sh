#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 80
#
# Error injection. The kernel's memory-notifier-error-inject fails
# MEM_GOING_ONLINE / MEM_GOING_OFFLINE of a 256 MiB hot-added DIMM's first
# block, once with the injector's notifier before sparse_hotplug's
# (sparse_hotplug loaded with notifier_priority 100 below the injector's:
# it sees only the MEM_CANCEL_*) and once after it (100 above: it sees
# MEM_GOING_* and then MEM_CANCEL_*). The injector's own priority is the
# one it was loaded with (0 here) or, built in (a debug kernel), booted
# with (memory_notifier_error_inject.priority=, 0 by default), which no
# reload changes: sparse_hotplug is the one that moves. Each time:
# the write to sections/sectionN/state fails with the injected errno; the
# block, the section state and MemTotal are unchanged; the event log gains
# exactly one "cancelled" entry for that block; an isolated section stays
# isolated (its pages taken back after the cancelled offline) and is
# released afterwards with MemTotal restored; without the injection the
# same command succeeds and is logged "ok".
#
# Then migrate_test's own fault knob: 16 MiB of driver pages are migrated
# into that block, 16 of them with their references held (INJECT_HOLD_REF):
# offlining the block cannot complete (interrupted after 8 s; the kernel
# notices the signal between migration passes); after INJECT_CLEAR it
# completes, the kernel having moved every page out through the driver's
# callbacks, with every byte intact. The DIMM is removed at the end.

. "$(dirname "$0")/lib.sh"

SHP=/sys/kernel/sparse_hotplug
INJ=/sys/kernel/debug/notifier-error-inject/memory/actions
DIMM_SIZE=$((256 << 20))
TMP=$(mktemp -d)
HOLDER=
INJ_BUILTIN=
TR=/sys/kernel/tracing

memhp_require_guest
ktap_print_header

cleanup()
{
	[ -n "$HOLDER" ] && kill -9 "$HOLDER" 2>/dev/null
	if [ -d "$INJ" ]; then
		echo 0 > "$INJ/MEM_GOING_ONLINE/error"
		echo 0 > "$INJ/MEM_GOING_OFFLINE/error"
	fi
	modprobe -r memory-notifier-error-inject 2>/dev/null
	for b in $(cat "$TMP/new" 2>/dev/null); do
		[ "$(block_state "$b")" = online ] &&
			echo offline > "$MEMORY_SYSFS/memory$b/state" 2>/dev/null
	done
	memhp-qmp device_del id=eidimm0 >/dev/null 2>&1
	sleep 1
	memhp-qmp object-del id=eimem0 >/dev/null 2>&1
	memhp_unload migrate_test 2>/dev/null
	memhp_unload sparse_hotplug 2>/dev/null
	set_auto_online offline 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
# Built in (debug kernel) or a module (Debian: lib/memory-notifier-error-inject.ko).
# Built in, its debugfs directory is there without a loaded module (whose
# /sys/module entry has an initstate), and its priority parameter, not
# readable in sysfs, is the boot command line's. Sets INJ_PRIO.
injector_load()
{
	local arg args

	if [ -d "$INJ" ] && [ ! -e /sys/module/memory_notifier_error_inject/initstate ]; then
		INJ_BUILTIN=1
		INJ_PRIO=0
		read -ra args < /proc/cmdline
		for arg in "${args[@]}"; do
			case $arg in
			--) break ;;
			memory[-_]notifier[-_]error[-_]inject.priority=*)
				INJ_PRIO=${arg#*=}
				INJ_PRIO=${INJ_PRIO//\"/} ;;
			esac
		done
		# At most 9 digits: 100 either side stays an int.
		[[ $INJ_PRIO =~ ^-?[0-9]{1,9}$ ]] ||
			ktap_exit_fail_msg "injector priority '$INJ_PRIO' on the command line: not an integer"
		return 0
	fi
	INJ_PRIO=0
	modprobe -r memory-notifier-error-inject 2>/dev/null
	modprobe memory-notifier-error-inject priority=$INJ_PRIO && [ -d "$INJ" ]
}
if ! injector_load; then
	ktap_set_plan 1
	ktap_test_skip "error injection" "memory-notifier-error-inject not available (CONFIG_MEMORY_NOTIFIER_ERROR_INJECT)"
	ktap_finished
fi
ktap_set_plan 13

memhp_unload sparse_hotplug 2>/dev/null
memhp_load sparse_hotplug || ktap_exit_fail_msg "cannot load sparse_hotplug"
memhp_load migrate_test || ktap_exit_fail_msg "cannot load migrate_test"
set_auto_online offline
memory_blocks > "$TMP/blocks0"
dimm_add eidimm0 eimem0 $DIMM_SIZE || ktap_exit_fail_msg "device_add failed"
bs=$(block_size_bytes)
wait_new_blocks "$TMP/blocks0" "$TMP/new" $((DIMM_SIZE / bs)) ||
	ktap_exit_fail_msg "the DIMM's blocks did not appear"
B=$(head -n1 "$TMP/new")
spb=$((bs / 0x$(cat $SHP/section_size_bytes)))
S=$((B * spb))
ST=$SHP/sections/section$S/state
ktap_print_msg "DIMM blocks $(tr '\n' ' ' < "$TMP/new"); block $B, section $S"

nr_events() { grep -vc '^#' /sys/kernel/debug/sparse_hotplug/events; }
last_event() { grep -v '^#' /sys/kernel/debug/sparse_hotplug/events | tail -n1; }

# Whether sparse_hotplug's notifier saw the MEM_GOING_* of block $B: its
# block_going tracepoint, on between going_trace on and going_trace off
# (which prints how often it fired for $B).
going_trace()
{
	if [ "$1" = on ]; then
		echo 0 > "$TR/tracing_on"
		echo > "$TR/trace"
		echo 1 > "$TR/events/sparse_hotplug/block_going/enable"
		echo 1 > "$TR/tracing_on"
	else
		echo 0 > "$TR/events/sparse_hotplug/block_going/enable"
		grep -c "block_going: block=$B " "$TR/trace"
	fi
}

# try CMD ERRTEXT: write CMD to the section's state; ERRTEXT "" means success.
try()
{
	local out

	out=$( (echo "$1" > "$ST") 2>&1)
	if [ -z "$2" ]; then
		[ -z "$out" ] || { ktap_print_msg "$1: $out"; return 1; }
	else
		echo "$out" | grep -q "$2" || { ktap_print_msg "$1: '$out', wanted '$2'"; return 1; }
	fi
}

# event_is BEFORE TO RESULT: exactly one new event, for block $B, to TO, RESULT.
event_is()
{
	local n ev

	n=$(nr_events)
	ev=$(last_event)
	# seq time block from to zone result duration
	read -r _ _ eb _ eto _ eres _ <<< "$ev"
	[ "$n" -eq $(($1 + 1)) ] && [ "$eb" = "$B" ] && [ "$eto" = "$2" ] && [ "$eres" = "$3" ] ||
		{ ktap_print_msg "events $1 -> $n, last: $ev"; return 1; }
}

ktap_print_msg "injector $([ -n "$INJ_BUILTIN" ] && echo built in || echo loaded), priority $INJ_PRIO"
for where in before after; do
	# A notifier of higher priority runs first.
	if [ "$where" = before ]; then
		prio=$((INJ_PRIO - 100))
	else
		prio=$((INJ_PRIO + 100))
	fi
	memhp_unload sparse_hotplug && memhp_load sparse_hotplug notifier_priority=$prio ||
		ktap_exit_fail_msg "cannot load sparse_hotplug with notifier_priority $prio"
	[ "$(cat /sys/module/sparse_hotplug/parameters/notifier_priority)" = "$prio" ] ||
		ktap_exit_fail_msg "sparse_hotplug's notifier_priority is not $prio"

	# Online fails with ENOMEM: nothing changes, one cancelled event; and
	# the order is the one named: sparse_hotplug's notifier saw the
	# MEM_GOING_ONLINE only when it runs before the injector.
	n=$(nr_events)
	m0=$(meminfo_kb MemTotal)
	echo -12 > "$INJ/MEM_GOING_ONLINE/error"
	going_trace on
	ok=0
	try online_movable "Cannot allocate memory" && [ "$(block_state "$B")" = offline ] &&
		[ "$(cat "$ST")" = offline ] && [ "$(meminfo_kb MemTotal)" = "$m0" ] &&
		event_is "$n" online cancelled && ok=1
	going=$(going_trace off)
	if [ "$going" != "$([ "$where" = before ] && echo 0 || echo 1)" ]; then
		ktap_print_msg "sparse_hotplug saw $going MEM_GOING_ONLINE of block $B with the injector $where it"
		ok=0
	fi
	echo 0 > "$INJ/MEM_GOING_ONLINE/error"
	n=$(nr_events)
	try online_movable "" && [ "$(block_state "$B")" = online ] &&
		event_is "$n" online ok || ok=0
	ktap_test_result "injector $where sparse_hotplug: failed online changes nothing, logged cancelled; then online ok" \
		[ "$ok" = 1 ]

	# Offline fails with EBUSY.
	n=$(nr_events)
	m0=$(meminfo_kb MemTotal)
	echo -16 > "$INJ/MEM_GOING_OFFLINE/error"
	ok=0
	try offline "Device or resource busy" && [ "$(block_state "$B")" = online ] &&
		[ "$(cat "$ST")" = online ] && [ "$(meminfo_kb MemTotal)" = "$m0" ] &&
		event_is "$n" offline cancelled && ok=1
	ktap_test_result "injector $where sparse_hotplug: failed offline changes nothing, logged cancelled" \
		[ "$ok" = 1 ]

	# An isolated section survives a cancelled offline, then is released.
	ok=0
	if try isolate ""; then
		m1=$(meminfo_kb MemTotal)
		n=$(nr_events)
		try offline "Device or resource busy" && [ "$(cat "$ST")" = isolated ] &&
			[ "$(meminfo_kb MemTotal)" = "$m1" ] && event_is "$n" offline cancelled &&
			try release "" && [ "$(meminfo_kb MemTotal)" = "$m0" ] && ok=1
		ktap_print_msg "MemTotal $m0 -> $m1 (isolated) -> $(meminfo_kb MemTotal) kB (released)"
	fi
	echo 0 > "$INJ/MEM_GOING_OFFLINE/error"
	ktap_test_result "injector $where sparse_hotplug: isolated section kept across a cancelled offline, released" \
		[ "$ok" = 1 ]

	# Without the injection, offline succeeds.
	n=$(nr_events)
	ok=0
	try offline "" && [ "$(block_state "$B")" = offline ] && event_is "$n" offline ok && ok=1
	ktap_test_result "injector $where sparse_hotplug: offline without injection ok" [ "$ok" = 1 ]
done
if [ -z "$INJ_BUILTIN" ]; then
	modprobe -r memory-notifier-error-inject
fi
ktap_test_result "sparse_hotplug section state matches the core after injections" \
	[ "$(cat "$ST")" = "$(block_state "$B")" ]

# --- migrate_test's HOLD_REF injection against offlining ---------------------
echo online_movable > "$MEMORY_SYSFS/memory$B/state"
start_pfn=$((B * bs / 4096))
end_pfn=$(((B + 1) * bs / 4096))
"$(memhp_bin memhp_loadgen)" inject-hold 16 $start_pfn $end_pfn "$TMP/ready" > "$TMP/holder.out" &
HOLDER=$!
if ! wait_for 60 test -e "$TMP/ready"; then
	cat "$TMP/holder.out"
	ktap_exit_fail_msg "the holder did not start"
fi
cat "$TMP/holder.out"
echo 'memhp-expect: begin page dumped because: migration failure' > /dev/kmsg
t0=$(date +%s)
timeout -s INT 8 bash -c "echo offline > $MEMORY_SYSFS/memory$B/state" 2>/dev/null
rc=$?
echo 'memhp-expect: end' > /dev/kmsg
ktap_print_msg "offline with held references: exit $rc after $(($(date +%s) - t0)) s, block $(block_state "$B")"
held_blocks() { [ "$rc" != 0 ] && [ "$(block_state "$B")" = online ]; }
ktap_test_result "migrate_test HOLD_REF: offlining the block cannot complete, block stays online" \
	held_blocks
kill -USR1 $HOLDER
wait_for 10 test -e "$TMP/ready.cleared"
ok=0
echo offline > "$MEMORY_SYSFS/memory$B/state" && [ "$(block_state "$B")" = offline ] && ok=1
ktap_test_result "migrate_test INJECT_CLEAR: the block offlines, the kernel moving the pages out" \
	[ "$ok" = 1 ]
kill -TERM $HOLDER
wait $HOLDER
rc=$?
HOLDER=
cat "$TMP/holder.out" | tail -n +3
holder_ok() { [ "$rc" = 0 ] && grep -q ' 0 pages still in the range' "$TMP/holder.out"; }
ktap_test_result "migrate_test: every byte intact, no page left in the offlined block" holder_ok

# The DIMM goes away again.
for b in $(cat "$TMP/new"); do
	[ "$(block_state "$b")" = online ] && echo offline > "$MEMORY_SYSFS/memory$b/state"
done
memhp-qmp device_del id=eidimm0 >/dev/null
gone() { ! memhp-qmp query-memory-devices | grep -q eidimm0; }
wait_for 30 gone
memhp-qmp object-del id=eimem0 >/dev/null
ktap_test_result "the DIMM is removed (device_del)" gone
ktap_finished
