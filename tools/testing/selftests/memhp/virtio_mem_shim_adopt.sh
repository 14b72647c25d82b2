#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-vm: --virtio-mem 2G:0
# memhp-budget: 50
#
# virtio_mem_shim's startup scan, on memory another driver plugged and
# added: upstream virtio_mem (sub-block mode) plugs 642 MiB, five whole
# memory blocks and 2 MiB of a sixth, and is unbound with all of it added
# (its remove leaves added memory in place). The shim binds and adopts
# the five fully plugged blocks; the sixth, present but partly plugged,
# is left alone (FOREIGN: which of it is plugged is not known). An
# adopted block offlines and onlines again through the shim's notifier
# and callback with MemTotal exact; a request of 0 unplugs the adopted
# blocks only; rmmod leaves the foreign block as it found it.

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/virtio_mem_shim_lib.sh"

memhp_require_guest
ktap_print_header
ktap_set_plan 6

cleanup()
{
	memhp-qmp qom-set path=vm0 property=requested-size value=0 >/dev/null 2>&1
	memhp_unload virtio_mem_shim 2>/dev/null
	set_auto_online offline 2>/dev/null
}
trap cleanup EXIT

# The debugfs table: "unit memory_block phys_start unit_state ...".
unit_states()
{
	blocks | grep -v '^#' | awk '{ print $4 }' |
		head -n 6 | tr '\n' ' '
}

units_are()
{
	[ "$(unit_states)" = "$1" ]
}

# The phys_start of the one foreign unit (none: empty).
foreign_at()
{
	blocks | grep -v '^#' |
		awk '$4 == "foreign" { print $3 }'
}

DEV=$(vmem_dev) || ktap_exit_fail_msg "no virtio-mem device in this guest"
# A test before this one in the same guest (virtio_mem_shim_sbm.sh) may
# have taken the device from upstream and left it without a driver when
# it unloaded the shim: hand it back (route 2 of the admin guide).
if [ ! -e "$DEV/driver" ]; then
	request 0
	ktap_print_msg "binding upstream virtio_mem to $(basename "$DEV")"
	echo "$(basename "$DEV")" > /sys/bus/virtio/drivers/virtio_mem/bind
fi
[ "$(basename "$(readlink "$DEV/driver" 2>/dev/null)")" = virtio_mem ] ||
	ktap_exit_fail_msg "upstream virtio_mem is not bound to $(basename "$DEV")"
MEMTOTAL0=$(meminfo_kb MemTotal)
set_auto_online online_movable

# 1. Upstream plugs 642 MiB and goes away with it added.
request $((642 * MIB))
ok=0
wait_for 180 host_is $((642 * MIB)) &&
	wait_for 60 delta_is $((642 * MIB)) && ok=1
ktap_print_msg "upstream: host size $(qmp_memdev_size vm0), MemTotal +$(($(meminfo_kb MemTotal) - MEMTOTAL0)) kB"
echo "$(basename "$DEV")" > /sys/bus/virtio/drivers/virtio_mem/unbind || ok=0
grep -q 'System RAM (virtio_mem)' /proc/iomem && delta_is $((642 * MIB)) || ok=0
ktap_test_result "upstream virtio_mem plugged 642 MiB and was unbound with it added" [ $ok = 1 ]

# 2. The shim adopts the five whole blocks and leaves the sixth alone.
ok=0
if load_shim; then
	# The scan runs in the worker: wait for its result, not the
	# device's size (at 642 MiB before the shim bound).
	wait_for 30 units_are "added added added added added foreign "
	states=$(unit_states)
	FOREIGN=$(foreign_at)
	ktap_print_msg "shim: units $states; foreign at $FOREIGN; plugged $(cat "$DEV/plugged_size"), $(state_line)"
	dmesg | grep -E 'virtio_mem_shim .*(adopted|left alone)' | sed 's/^/# /'
	[ "$states" = "added added added added added foreign " ] &&
		[ "$(dmesg | grep -c 'virtio_mem_shim .*adopted plugged memory')" -ge 5 ] &&
		dmesg | grep -q 'virtio_mem_shim .*not fully plugged: left alone' &&
		host_is $((642 * MIB)) && delta_is $((642 * MIB)) && ok=1
fi
ktap_test_result "shim adopts the 5 fully plugged blocks, leaves the partly plugged one alone" [ $ok = 1 ]

# 3. An adopted block offlines and onlines through the shim (every
# sub-block plugged: all of it back to the buddy); the foreign block
# may not be onlined by the shim's notifier, which it is not asked to.
ok=0
blk=$(blocks | grep -v '^#' | awk 'NR == 1 { print $2 }')
if echo offline > "$MEMORY_SYSFS/memory$blk/state" && delta_is $((514 * MIB)) &&
   echo online_movable > "$MEMORY_SYSFS/memory$blk/state" && delta_is $((642 * MIB)); then
	ok=1
fi
ktap_print_msg "memory$blk offline/online: $(state_line)"
ktap_test_result "an adopted block offlines and onlines again, MemTotal exact" [ $ok = 1 ]

# 4. Request 0: the adopted blocks go, the foreign block's 2 MiB stay.
request 0
ok=0
wait_for 180 plugged_is $((2 * MIB)) && wait_for 30 host_is $((2 * MIB)) &&
	wait_for 30 delta_is $((2 * MIB)) && ok=1
ktap_print_msg "request 0: units $(unit_states); $(state_line)"
ktap_test_result "request 0 unplugs the adopted blocks, the foreign block stays" [ $ok = 1 ]

# 5. Unload: the foreign block stays as it was, System RAM (virtio_mem).
ok=0
memhp_unload virtio_mem_shim && grep -q 'System RAM (virtio_mem)' /proc/iomem &&
	delta_is $((2 * MIB)) && host_is $((2 * MIB)) && ok=1
grep -E 'virtio|System RAM \(' /proc/iomem | grep -v pci | sed 's/^/# /'
ktap_test_result "rmmod leaves the foreign block as it found it" [ $ok = 1 ]

# 6. Bound again, the shim finds the foreign block as before.
ok=0
if load_shim; then
	wait_for 30 eval '[ "$(foreign_at)" = "$FOREIGN" ]'
	[ -n "$FOREIGN" ] && [ "$(foreign_at)" = "$FOREIGN" ] && plugged_is $((2 * MIB)) && ok=1
	ktap_print_msg "bound again: units $(unit_states); $(state_line)"
	memhp_unload virtio_mem_shim || ok=0
fi
ktap_test_result "bound again: the foreign block is found and left alone again" [ $ok = 1 ]
ktap_finished
