#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers shared by virtio_mem_shim.sh (big-block mode) and
# virtio_mem_shim_sbm.sh (sub-block mode): both drive the guest's
# virtio-mem device vm0 with virtio_mem_shim. Sourced after lib.sh; the
# caller sets DEV (vmem_dev) and MEMTOTAL0 (MemTotal with nothing plugged).

MIB=$((1 << 20))

# The sysfs directory of the virtio-mem device (virtio device id 24).
vmem_dev()
{
	local d

	for d in /sys/bus/virtio/devices/virtio*; do
		[ "$(cat "$d/device")" = 0x0018 ] && { echo "$d"; return 0; }
	done
	return 1
}

shim_bound()
{
	[ "$(basename "$(readlink "$DEV/driver" 2>/dev/null)")" = virtio_mem_shim ]
}

request()
{
	memhp-qmp qom-set path=vm0 property=requested-size value="$1" >/dev/null
}

# Guest and host agree on BYTES of plugged memory.
at_size()
{
	local want=$1

	[ "$(cat "$DEV/plugged_size" 2>/dev/null)" = "$want" ] &&
		[ "$(qmp_memdev_size vm0)" = "$want" ] &&
		[ $(($(meminfo_kb MemTotal) - MEMTOTAL0)) -eq $((want / 1024)) ]
}

# The host's size of vm0 is BYTES.
host_is()
{
	[ "$(qmp_memdev_size vm0)" = "$1" ]
}

# MemTotal is BYTES above MEMTOTAL0.
delta_is()
{
	[ $(($(meminfo_kb MemTotal) - MEMTOTAL0)) -eq $(($1 / 1024)) ]
}

# The shim's debugfs table of units.
blocks()
{
	cat /sys/kernel/debug/virtio_mem_shim/*/blocks
}

plugged_is()
{
	[ "$(cat "$DEV/plugged_size")" = "$1" ]
}

state_line()
{
	echo "MemTotal +$(($(meminfo_kb MemTotal) - MEMTOTAL0)) kB," \
	     "guest plugged $(cat "$DEV/plugged_size" 2>/dev/null)," \
	     "host size $(qmp_memdev_size vm0)"
}

# step NAME BYTES: request BYTES from the host and check agreement.
step()
{
	request "$2"
	if wait_for 120 at_size "$2"; then
		ktap_print_msg "$1: $(state_line)"
		ktap_test_pass "$1"
	else
		ktap_print_msg "$1: $(state_line)"
		ktap_test_fail "$1"
	fi
}

# An unplug short of the goal is reported: "BYTES ERRNO", BYTES > 0.
shortfall_reported()
{
	local s

	s=$(cat "$DEV/unplug_shortfall")
	[ "${s%% *}" -gt 0 ] && [ "${s##* }" -lt 0 ]
}

# shortfall_settled REQUEST: the shortfall is written at the end of each
# pass, and a retry pass may unplug more meanwhile. True once plugged_size
# and unplug_shortfall agree between two reads a second apart, the host's
# size equals plugged_size and the shortfall is plugged - REQUEST. Leaves
# that snapshot in $plugged, $short and $host: a later retry pass may
# unplug more (memory frees up under the hog too), so callers check the
# snapshot, not fresh reads.
shortfall_settled()
{
	local p1 s1

	p1=$(cat "$DEV/plugged_size")
	s1=$(cat "$DEV/unplug_shortfall")
	host=$(qmp_memdev_size vm0)
	sleep 1
	plugged=$(cat "$DEV/plugged_size")
	short=$(cat "$DEV/unplug_shortfall")
	[ "$p1" = "$plugged" ] && [ "$s1" = "$short" ] && [ "$host" = "$plugged" ] &&
		[ "${short%% *}" = $((plugged - $1)) ]
}

# load_shim [PARAM=VALUE...]: load the shim and have it bound to DEV.
load_shim()
{
	memhp_load virtio_mem_shim "$@" || return 1
	shim_bound || basename "$DEV" > /sys/bus/virtio/drivers/virtio_mem_shim/bind 2>/dev/null
	wait_for 10 shim_bound
}
