#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 310
#
# virtio_mem_shim in big-block mode (mode=bbm at every load: the guest's
# 2 MiB device block would select sub-block mode, which
# virtio_mem_shim_sbm.sh tests; helpers in virtio_mem_shim_lib.sh) drives
# the guest's virtio-mem device vm0 (1 GiB): the
# host's requested-size goes 0 -> 1 GiB -> 512 MiB -> 0 (qom-set), and after
# each step the guest's MemTotal and the host's query-memory-devices size
# agree with it; the guest-side target_size steers within the host request
# and a new host request wins; a guest target above the host request is
# NACKed by the device, and the shim re-reads the config, follows the host,
# says so (state, log) and does not retry; bad sysfs input is rejected with
# nothing changed; unload and reload midway (while plugging and with memory
# plugged) leave nothing behind (midway: rmmod began with the plug started
# and not complete, else retried and at last a failure;
# MEMHP_MIDWAY_FORCE_COMPLETE=1 makes it fail on purpose: midway_wait,
# lib.sh); onlining is the system's policy
# (auto_online_blocks), never the driver's; an unplug under memory pressure
# reports what could not go, and finishes once the pressure is gone.

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/virtio_mem_shim_lib.sh"

HOG_PID=

memhp_require_guest
ktap_print_header
ktap_set_plan 15

cleanup()
{
	[ -n "$HOG_PID" ] && kill "$HOG_PID" 2>/dev/null
	memhp-qmp qom-set path=vm0 property=requested-size value=0 >/dev/null 2>&1
	memhp_unload virtio_mem_shim 2>/dev/null
	set_auto_online offline 2>/dev/null
	rm -f /tmp/vms_hog.ready
}
trap cleanup EXIT

DEV=$(vmem_dev) || ktap_exit_fail_msg "no virtio-mem device in this guest"
request 0
set_auto_online online_movable
# Route 2 of the documentation: take the device from upstream virtio_mem.
if [ "$(basename "$(readlink "$DEV/driver" 2>/dev/null)")" = virtio_mem ]; then
	ktap_print_msg "unbinding upstream virtio_mem from $(basename "$DEV")"
	echo "$(basename "$DEV")" > /sys/bus/virtio/drivers/virtio_mem/unbind
fi
if load_shim mode=bbm; then
	ktap_test_pass "shim bound to $(basename "$DEV")"
else
	ktap_exit_fail_msg "virtio_mem_shim did not bind"
fi
wait_for 30 plugged_is 0
MEMTOTAL0=$(meminfo_kb MemTotal)
UNIT=$(cat "$DEV/unit_size")
ktap_print_msg "block_size $(cat "$DEV/block_size") unit_size $UNIT mode $(cat "$DEV/mode") region $(cat "$DEV/region")"
[ "$(cat "$DEV/mode")" = bbm ] || ktap_exit_fail_msg "mode=bbm asked, mode is $(cat "$DEV/mode")"

# 1. Follow the host: 0 -> 1 GiB -> 512 MiB -> 0.
step "host requests 1 GiB" $((1024 * MIB))
movable=$(grep -c ' added online Movable ' /sys/kernel/debug/virtio_mem_shim/*/blocks)
ktap_print_msg "blocks online movable: $movable"
step "host requests 512 MiB" $((512 * MIB))
step "host requests 0" 0

# 2. Bad sysfs input: an errno each, nothing changes.
request $((512 * MIB))
wait_for 120 at_size $((512 * MIB))
before="$(cat "$DEV/target_size") $(cat "$DEV/plugged_size")"
bad=0
for input in abc -1 100 "$((UNIT + 4096))" 3G 16E "256M junk" 0x 256MM; do
	if (echo -n "$input" > "$DEV/target_size") 2>/dev/null; then
		ktap_print_msg "target_size accepted bad input '$input'"
		bad=1
	fi
done
for f in plugged_size requested_size block_size unit_size region unplug_shortfall state; do
	if (echo 0 > "$DEV/$f") 2>/dev/null; then
		ktap_print_msg "read-only $f accepted a write"
		bad=1
	fi
done
for p in plug_batch add_batch unplug_reserve_mb; do
	if (echo bogus > "/sys/module/virtio_mem_shim/parameters/$p") 2>/dev/null; then
		ktap_print_msg "parameter $p accepted 'bogus'"
		bad=1
	fi
done
if (echo 99999999 > /sys/module/virtio_mem_shim/parameters/unplug_reserve_mb) 2>/dev/null; then
	ktap_print_msg "unplug_reserve_mb accepted more than the RAM"
	bad=1
fi
sleep 1
after="$(cat "$DEV/target_size") $(cat "$DEV/plugged_size")"
[ "$before" = "$after" ] || { ktap_print_msg "state changed: '$before' -> '$after'"; bad=1; }
[ -e /sys/module/virtio_mem_shim/parameters/online_type ] && { ktap_print_msg "online_type still exists"; bad=1; }
[ "$(cat /sys/module/virtio_mem_shim/parameters/plug_batch)" = 0 ] || bad=1
[ "$(cat /sys/module/virtio_mem_shim/parameters/add_batch)" = 0 ] || bad=1
[ "$(cat /sys/module/virtio_mem_shim/parameters/unplug_reserve_mb)" = 64 ] || bad=1
ktap_test_result "bad sysfs input rejected, nothing changed" [ $bad = 0 ]

# 3. Guest-side target within the host request; a new host request wins.
echo 256M > "$DEV/target_size"
ok=0
if wait_for 120 at_size $((256 * MIB)) &&
   [ "$(cat "$DEV/target_size")" = "$((256 * MIB)) guest" ]; then
	echo $((512 * MIB)) > "$DEV/target_size"
	wait_for 120 at_size $((512 * MIB)) && ok=1
fi
ktap_print_msg "guest target: $(state_line)"
ktap_test_result "guest target_size plugs and unplugs within the host request" [ $ok = 1 ]
echo 256M > "$DEV/target_size"
wait_for 120 at_size $((256 * MIB))
request $((768 * MIB))
ok=0
wait_for 120 at_size $((768 * MIB)) && [ "$(cat "$DEV/target_size")" = "$((768 * MIB)) host" ] && ok=1
ktap_print_msg "new host request: $(state_line), target $(cat "$DEV/target_size")"
ktap_test_result "a new host request wins over the guest target" [ $ok = 1 ]

# 3b. A guest target above the host request: QEMU NACKs the PLUG
# (hw/virtio/virtio-mem.c: plugging beyond requested-size). The shim
# re-reads the config at once, stays at the host's size, shows "nacked" in
# state and logs it, and sends no further PLUG: one request, one NACK.
stat()
{
	awk -v k="$1" '$1 == k { print $2 }' /sys/kernel/debug/virtio_mem_shim/*/stats
}
state_is()
{
	[ "$(cat "$DEV/state")" = "$1" ]
}
request $((256 * MIB))
wait_for 120 at_size $((256 * MIB))
nack0=$(stat nack)
plug0=$(stat plug_requests)
ok=0
t0=$(date +%s%N)
if echo 512M > "$DEV/target_size" && wait_for 30 state_is nacked; then
	ms=$((($(date +%s%N) - t0) / 1000000))
	sleep 3
	nacks=$(($(stat nack) - nack0))
	plugs=$(($(stat plug_requests) - plug0))
	ktap_print_msg "guest target 512 MiB, host 256 MiB: state $(cat "$DEV/state") after $ms ms;" \
		"$plugs PLUG requests, $nacks NACKs in 3 s more; $(state_line)"
	dmesg | grep 'NACK' | tail -n 1 | sed 's/^/# /'
	[ "$nacks" = 1 ] && [ "$plugs" = 1 ] && at_size $((256 * MIB)) &&
		dmesg | grep -q 'refused a request (NACK)' && ok=1
fi
# Following the host again ends it.
echo host > "$DEV/target_size"
wait_for 10 state_is ready || ok=0
ktap_print_msg "after 'host': state $(cat "$DEV/state"), target $(cat "$DEV/target_size")"
ktap_test_result "a NACKed guest target: config re-read, host size kept, reported, not retried" [ $ok = 1 ]

# 4. Unload with memory plugged, and unload midway through plugging.
request $((1024 * MIB))
wait_for 120 at_size $((1024 * MIB))
ok=0
if rmmod virtio_mem_shim && [ "$(qmp_memdev_size vm0)" = 0 ] &&
   [ "$(meminfo_kb MemTotal)" -eq "$MEMTOTAL0" ]; then
	ok=1
fi
ktap_print_msg "after unload: MemTotal $(meminfo_kb MemTotal) kB (base $MEMTOTAL0), host size $(qmp_memdev_size vm0)"
# Midway: loaded, then 1 GiB requested; the unload begins once the plug has
# started and before it is complete (midway_wait, lib.sh). An attempt that
# finds it complete is retried (one unit per request), a case never midway
# fails.
try=0
while [ $ok = 1 ]; do
	try=$((try + 1))
	ok=0
	request 0
	load_shim mode=bbm && midway_slow $try || break
	request $((1024 * MIB)) &
	midway_wait "$DEV" "$MEMTOTAL0" 0 $((1024 * MIB)) 120
	mid=$?
	rmmod virtio_mem_shim
	rc=$?
	wait $!
	[ $rc = 0 ] && [ "$(qmp_memdev_size vm0)" = 0 ] &&
		[ "$(meminfo_kb MemTotal)" -eq "$MEMTOTAL0" ] && ok=1
	ktap_print_msg "attempt $try: rmmod began at $mid_seen; after it: MemTotal $(meminfo_kb MemTotal) kB, host size $(qmp_memdev_size vm0)"
	if [ $ok = 1 ] && [ $mid = 0 ]; then
		ok=2
		break
	fi
	[ $ok = 1 ] && midway_retry $try "the plug of 1 GiB" || break
done
ktap_test_result "unload unplugs everything, also midway" [ $ok = 2 ]
ok=0
load_shim mode=bbm && wait_for 120 at_size $((1024 * MIB)) && ok=1
ktap_print_msg "after reload: $(state_line)"
ktap_test_result "reload follows the host request again" [ $ok = 1 ]

# 5. Onlining is the system's policy, never the driver's: with
# auto_online_blocks=offline the blocks stay offline (for udev / user
# space); user space onlines one of them; offline and online units unplug.
zone_count()
{
	grep -c " added $1" /sys/kernel/debug/virtio_mem_shim/*/blocks
}
request 0
wait_for 120 at_size 0
set_auto_online offline
request $((256 * MIB))
ok=0
if wait_for 120 plugged_is $((256 * MIB)) && wait_for 120 host_is $((256 * MIB)); then
	sleep 2
	[ "$(zone_count 'offline')" = 2 ] && ok=1
fi
ktap_print_msg "auto_online_blocks=offline: $(zone_count 'offline') blocks offline, $(zone_count 'online') online"
ktap_test_result "auto_online_blocks=offline: the driver leaves the blocks offline" [ $ok = 1 ]
ok=0
blk=$(awk '$4 == "added" && $5 == "offline" { print $2; exit }' /sys/kernel/debug/virtio_mem_shim/*/blocks)
if [ -n "$blk" ] && echo online_movable > "$MEMORY_SYSFS/memory$blk/state" &&
   [ "$(zone_count 'online Movable')" = 1 ]; then
	request 0
	wait_for 120 at_size 0 && ok=1
fi
ktap_print_msg "memory$blk onlined by user space; after request 0: plugged $(cat "$DEV/plugged_size"), host size $(qmp_memdev_size vm0), MemTotal +$(($(meminfo_kb MemTotal) - MEMTOTAL0)) kB"
ktap_test_result "user space onlines a block; offline and online units unplug" [ $ok = 1 ]
set_auto_online online_movable

# 6. Unplug under memory pressure: fill memory (the movable units first),
# then ask for 0. What cannot go is reported; it goes once memory is free.
request $((1024 * MIB))
wait_for 120 at_size $((1024 * MIB))
# The hog takes free memory only (not the page cache: the guest's binaries
# live there), leaving less than 1 GiB free; the driver's unplug_reserve_mb
# keeps it from evacuating into the last 64 MiB.
hog_kb=$(($(meminfo_kb MemFree) - 384 * 1024))
rm -f /tmp/vms_hog.ready
python3 -c '
import sys, time
b = bytearray(b"\x01") * (int(sys.argv[1]) * 1024)
open("/tmp/vms_hog.ready", "w").close()
time.sleep(3600)
' "$hog_kb" &
HOG_PID=$!
wait_for 120 test -e /tmp/vms_hog.ready
ktap_print_msg "hog holds $((hog_kb / 1024)) MiB; MemFree $(meminfo_kb MemFree) kB"
request 0
ok=0
if wait_for 300 shortfall_reported && wait_for 60 shortfall_settled 0; then
	ktap_print_msg "under pressure: unplug_shortfall '$short', plugged $plugged, host $host"
	dmesg | grep 'could not unplug' | tail -n 2 | sed 's/^/# /'
	[ "$plugged" -gt 0 ] && [ "$host" = "$plugged" ] &&
		[ "${short%% *}" = "$plugged" ] && dmesg | grep -q 'could not unplug' && ok=1
fi
ktap_test_result "unplug under memory pressure reports what could not go" [ $ok = 1 ]
kill "$HOG_PID"
wait "$HOG_PID" 2>/dev/null
HOG_PID=
ok=0
wait_for 120 at_size 0 && [ "$(cat "$DEV/unplug_shortfall")" = "0 0" ] && ok=1
ktap_print_msg "pressure gone: $(state_line), shortfall '$(cat "$DEV/unplug_shortfall")'"
ktap_test_result "the rest is unplugged once memory is free" [ $ok = 1 ]

# 7. Clean unload at the end.
ok=0
rmmod virtio_mem_shim && [ "$(qmp_memdev_size vm0)" = 0 ] && ok=1
ktap_test_result "final unload" [ $ok = 1 ]
ktap_finished
