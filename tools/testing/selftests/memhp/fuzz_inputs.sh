#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 40
#
# Hostile input on every interface of the memhp-lab modules (memhp_fuzz):
# every file under /sys/kernel/sparse_hotplug, /sys/module/<ours>/parameters,
# the virtio_mem_shim device's own attributes, buddy_split's misc device
# attributes and our debugfs directories gets malformed and random values;
# every character device of ours gets malformed ioctls. Each write and ioctl
# must fail with an errno (valid values are never written: they change
# state), files must read back unchanged, and memory block states, MemTotal
# and sparse_hotplug's event log must be the same afterwards. The guest log
# must stay clean (memhp-vm checks it).
#
# Excluded on purpose: debugfs sparse_hotplug/provoke_warning (it WARN()s on
# a true value by design; it exists only with selftest_warn=1, which this
# test does not set), and the generic files of the driver core (uevent,
# power/*, driver_override, bind/unbind), which are not ours.
#
# FUZZ_SEED (default: time) and FUZZ_RANDOM (random inputs per file,
# default 200) repeat or widen a run.

. "$(dirname "$0")/lib.sh"

DEBUGFS=/sys/kernel/debug
SHIM_ATTRS="plugged_size requested_size block_size unit_size region target_size unplug_shortfall state"
SHIM_DEV=

memhp_require_guest
ktap_print_header

cleanup()
{
	local m

	for m in virtio_mem_shim pfn_lookup buddy_split migrate_test sparse_hotplug; do
		memhp_unload "$m" 2>/dev/null
	done
	# Give the device back to upstream virtio_mem, as other tests expect.
	if [ -n "$SHIM_DEV" ] && [ ! -e "$SHIM_DEV/driver" ] &&
	   [ -d /sys/bus/virtio/drivers/virtio_mem ]; then
		basename "$SHIM_DEV" > /sys/bus/virtio/drivers/virtio_mem/bind 2>/dev/null
	fi
}
trap cleanup EXIT

mountpoint -q "$DEBUGFS" || mount -t debugfs none "$DEBUGFS"

# A fresh instance of every module, sparse_hotplug without ranges= (so no
# value written to probe/remove can succeed), a small buddy_split arena.
for m in virtio_mem_shim pfn_lookup buddy_split migrate_test sparse_hotplug; do
	memhp_unload "$m" 2>/dev/null
done
load_ok=1
memhp_load sparse_hotplug || load_ok=0
memhp_load migrate_test || load_ok=0
memhp_load buddy_split nr_sections=6 section_mb=4 pinned_sections=2 || load_ok=0
memhp_load pfn_lookup || load_ok=0
for d in /sys/bus/virtio/devices/virtio*; do
	[ "$(cat "$d/device" 2>/dev/null)" = 0x0018 ] && SHIM_DEV=$d && break
done
if [ -n "$SHIM_DEV" ]; then
	if [ "$(basename "$(readlink "$SHIM_DEV/driver" 2>/dev/null)")" = virtio_mem ]; then
		basename "$SHIM_DEV" > /sys/bus/virtio/drivers/virtio_mem/unbind
	fi
	memhp_load virtio_mem_shim || load_ok=0
	wait_for 10 test -e "$SHIM_DEV/target_size" || load_ok=0
fi
[ "$load_ok" = 1 ] || ktap_exit_fail_msg "could not load every module"

files=()
while IFS= read -r f; do
	files+=("$f")
done < <(
	find /sys/kernel/sparse_hotplug -type f
	for m in $(memhp_all_modules); do
		[ -d "/sys/module/$m/parameters" ] && find "/sys/module/$m/parameters" -type f
	done
	for a in policy mode kreclaim_home geometry; do
		echo "/sys/class/misc/buddy_split/$a"
	done
	if [ -n "$SHIM_DEV" ]; then
		for a in $SHIM_ATTRS; do
			echo "$(readlink -f "$SHIM_DEV")/$a"
		done
	fi
	for d in sparse_hotplug buddy_split pfn_lookup virtio_mem_shim migrate_test; do
		[ -d "$DEBUGFS/$d" ] && find "$DEBUGFS/$d" -type f ! -name provoke_warning
	done
)

devs=()
for m in $(memhp_all_modules) migrate_test buddy_split; do
	[ -c "/dev/$m" ] && devs+=("/dev/$m")
done
mapfile -t devs < <(printf '%s\n' "${devs[@]}" | sort -u)

ktap_set_plan $((${#files[@]} + ${#devs[@]} + 3))

block_states()
{
	local b

	for b in $(memory_blocks); do
		echo "$b $(block_state "$b")"
	done
}

states0=$(block_states)
memtotal0=$(meminfo_kb MemTotal)
events0=$(grep -vc '^#' "$DEBUGFS/sparse_hotplug/events")
ktap_print_msg "${#files[@]} files, ${#devs[@]} devices: ${devs[*]}"

args=(-n "${FUZZ_RANDOM:-200}")
[ -n "$FUZZ_SEED" ] && args+=(-s "$FUZZ_SEED")
for f in "${files[@]}"; do
	args+=(-f "$f")
done
for d in "${devs[@]}"; do
	args+=(-d "$d")
done

t0=$(date +%s)
out=$("$(memhp_bin memhp_fuzz)" "${args[@]}")
rc=$?
# memhp_fuzz's results, renumbered into this script's plan, in order.
while IFS= read -r line; do
	case "$line" in
	"ok "*) ktap_test_pass "${line#ok [0-9]* }" ;;
	"not ok "*) ktap_test_fail "${line#not ok [0-9]* }" ;;
	"# Totals"*) ;;
	"#"*) echo "$line" ;;
	esac
done <<< "$out"
ktap_print_msg "memhp_fuzz exited $rc after $(($(date +%s) - t0)) s"

states1=$(block_states)
ktap_test_result "memory block states unchanged" [ "$states0" = "$states1" ]
memtotal1=$(meminfo_kb MemTotal)
ktap_print_msg "MemTotal $memtotal0 kB -> $memtotal1 kB"
events1=$(grep -vc '^#' "$DEBUGFS/sparse_hotplug/events")
same_memory() { [ "$memtotal0" = "$memtotal1" ] && [ "$events0" = "$events1" ]; }
ktap_test_result "MemTotal unchanged, no block transition in the event log ($events0 -> $events1)" \
	same_memory

unload_ok=1
for m in virtio_mem_shim pfn_lookup buddy_split migrate_test sparse_hotplug; do
	memhp_unload "$m" || { ktap_print_msg "rmmod $m failed"; unload_ok=0; }
done
ktap_test_result "every module unloads after the fuzzing" [ "$unload_ok" = 1 ]
ktap_finished
