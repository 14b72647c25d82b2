#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 60
#
# The upstream virtio_mem driver follows the host: requested-size of the
# guest's virtio-mem device vm0 (1 GiB, memhp-vm's default) is set with
# qom-set 512 MiB -> 1 GiB -> 256 MiB -> 0, and after each step the guest's
# MemTotal and the host's view (query-memory-devices size) agree with the
# request. Hot-added memory is onlined to ZONE_MOVABLE by the auto-online
# policy, set explicitly: Debian leaves hot-added memory offline.

. "$(dirname "$0")/lib.sh"

STEPS="512 1024 256 0"

memhp_require_guest
ktap_print_header
ktap_set_plan 5

modprobe virtio_mem
bound()
{
	ls /sys/bus/virtio/drivers/virtio_mem/ 2>/dev/null | grep -q '^virtio'
}
if ! wait_for 10 bound; then
	ktap_print_msg "virtio_mem did not bind to vm0 (is the shim bound instead?)"
	ktap_exit_fail_msg "upstream virtio_mem not bound"
fi
ktap_test_pass "upstream virtio_mem bound to vm0"

set_auto_online online_movable
memtotal0=$(meminfo_kb MemTotal)

grown_to()
{
	local want_kb=$1 now

	now=$(meminfo_kb MemTotal)
	[ $((now - memtotal0)) -eq "$want_kb" ] &&
		[ "$(qmp_memdev_size vm0)" = $((want_kb * 1024)) ]
}

for mib in $STEPS; do
	memhp-qmp qom-set path=vm0 property=requested-size value=$((mib << 20)) >/dev/null
	if wait_for 180 grown_to $((mib * 1024)); then
		ktap_print_msg "requested ${mib} MiB: MemTotal +$(($(meminfo_kb MemTotal) - memtotal0)) kB, host size $(qmp_memdev_size vm0)"
		ktap_test_pass "requested-size ${mib} MiB: guest and host agree"
	else
		ktap_print_msg "requested ${mib} MiB: MemTotal +$(($(meminfo_kb MemTotal) - memtotal0)) kB, host size $(qmp_memdev_size vm0)"
		ktap_test_fail "requested-size ${mib} MiB: guest and host agree"
	fi
done

set_auto_online offline
ktap_finished
