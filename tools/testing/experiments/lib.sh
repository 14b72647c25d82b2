#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers shared by the experiments' guest parts (sourced after the
# selftests' lib.sh; not an experiment itself: run.py takes directories).

# The wall clock in microseconds, without forking.
now_us()
{
	local t=${EPOCHREALTIME/./}

	echo "$t"
}

# ms_since T0: milliseconds (one decimal) since now_us gave T0.
ms_since()
{
	local t0=$1 t1

	t1=$(now_us)
	echo "$(( (t1 - t0) / 1000 )).$(( (t1 - t0) % 1000 / 100 ))"
}

# marked_write PHASE FILE VALUE: write VALUE to FILE. In a guest counting
# instructions (memhp-vm --count; make run under TCG) the write is a phase of
# that name (memhp-mark write: opened first, then begin, write, end), so its
# kernel instructions are counted exactly; otherwise a plain write.
# With a fourth argument SECS, the write is killed after SECS seconds (an
# offline retries until a signal).
marked_write()
{
	local t=()

	[ -z "${4:-}" ] || t=(timeout "$4")
	if [ -n "${MEMHP_COUNT_SYMS:-}" ]; then
		"${t[@]}" memhp-mark write "$1" "$2" "$3"
	elif [ -n "${4:-}" ]; then
		"${t[@]}" sh -c 'echo "$1" > "$2"' sh "$3" "$2"
	else
		echo "$3" > "$2"
	fi
}

# count_per PATTERN AMOUNT UNIT: the phases whose names match the shell
# pattern PATTERN each handle AMOUNT UNITs (MiB, page, lookup); make run's
# instruction table then gives their all-vCPU median per UNIT too. A phase
# takes the first line that matches it.
count_per()
{
	echo "$1 $2 $3" >> "$MEMHP_OUT/count-units"
}

# shared_backend ID SIZE: add the memory backend ID that every DIMM of this
# guest is plugged on (device_add ... memdev=ID); delete it (object-del)
# only when the guest ends. In QEMU, a backend added after one was deleted
# can take its ram_addr_t range, whose TCG then runs translations of the
# old DIMM's code for the new DIMM's (Documentation/known-issues.rst, "A
# re-plugged DIMM runs code the old DIMM held"). memhp-vm's relay prevents
# that with a backend that holds the freed range; one backend per guest
# needs no hold and keeps object-add out of every cycle's plug.
shared_backend()
{
	memhp-qmp object-add qom-type=memory-backend-ram id="$1" size="$2" > /dev/null
}

# Memory blocks not in $MEMHP_OUT/.blocks0 (the ones there at the start).
new_blocks()
{
	memory_blocks | comm -13 <(sort "$MEMHP_OUT/.blocks0") <(sort -) | sort -n
}

have_n_new_blocks()
{
	[ "$(new_blocks | wc -l)" -eq "$1" ]
}

# The bytes of the "System RAM" ranges of /proc/iomem, at any level
# (root only), into $RAM, without forking: a removal ends when its
# resource goes, after the block devices and arch_remove_memory().
system_ram()
{
	local range rest lo hi

	RAM=0
	while read -r range rest; do
		case $rest in
		": System RAM"*)
			lo=${range%-*}
			hi=${range#*-}
			RAM=$((RAM + 0x$hi - 0x$lo + 1))
			;;
		esac
	done < /proc/iomem
}

# Record the accelerator in $MEMHP_OUT/accel: memhp-vm's own choice
# (MEMHP_ACCEL, set by guest-run), which host scripts print.
record_accel()
{
	case "$MEMHP_ACCEL" in
	kvm|tcg) echo "$MEMHP_ACCEL" > "$MEMHP_OUT/accel" ;;
	*) echo "record_accel: MEMHP_ACCEL '$MEMHP_ACCEL' is neither kvm nor tcg" >&2
	   return 1 ;;
	esac
}

# --- virtio-mem vm0 between drivers (70-virtio-mem, 80-scale) -----------

# The virtio device name of vm0 (virtioN); DEV is what the helpers use.
vmem_dev()
{
	local d

	for d in /sys/bus/virtio/devices/virtio*; do
		[ "$(cat "$d/device")" = 0x0018 ] && { basename "$d"; return 0; }
	done
	return 1
}

driver_of()
{
	basename "$(readlink "/sys/bus/virtio/devices/$DEV/driver" 2>/dev/null)" 2>/dev/null
}

# use_shim MODE: hand vm0 (nothing plugged) to virtio_mem_shim in MODE.
use_shim()
{
	local cur

	cur=$(driver_of)
	if [ "$cur" = virtio_mem_shim ] &&
	   [ "$(cat "/sys/bus/virtio/devices/$DEV/mode")" = "$1" ]; then
		return 0
	fi
	[ -n "$cur" ] && echo "$DEV" > "/sys/bus/virtio/drivers/$cur/unbind"
	echo "$1" > /sys/module/virtio_mem_shim/parameters/mode
	use_driver virtio_mem_shim || return 1
	[ "$(cat "/sys/bus/virtio/devices/$DEV/mode")" = "$1" ]
}

# use_driver NAME: hand vm0 (nothing plugged) to virtio_mem or virtio_mem_shim.
use_driver()
{
	local cur

	cur=$(driver_of)
	[ "$cur" = "$1" ] && return 0
	[ -n "$cur" ] && echo "$DEV" > "/sys/bus/virtio/drivers/$cur/unbind"
	echo "$DEV" > "/sys/bus/virtio/drivers/$1/bind"
	[ "$(driver_of)" = "$1" ] || return 1
	settle
}

# Every measurement starts from the same quiet state: udev done with the
# events of the last step (a driver bind, a removed DIMM), then 1 s.
settle()
{
	udevadm settle --timeout=60 2>/dev/null
	sleep 1
}

# qmp_json CMD KEY=VALUE...: the QMP request as one JSON object, numbers
# as numbers and the rest as strings (what memhp-qmp makes of them).
qmp_json()
{
	local cmd=$1 a v args=

	shift
	for a in "$@"; do
		[[ "${a#*=}" =~ ^[0-9]+$ ]] && v=${a#*=} || v="\"${a#*=}\""
		args+="${args:+, }\"${a%%=*}\": $v"
	done
	echo "{\"execute\": \"$cmd\", \"arguments\": {$args}}"
}
