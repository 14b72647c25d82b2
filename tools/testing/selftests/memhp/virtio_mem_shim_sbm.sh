#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-vm: --virtio-mem 2G:0
# memhp-budget: 180
#
# virtio_mem_shim in sub-block mode (QEMU's default 2 MiB device block,
# 128 MiB memory blocks): the mode is chosen as upstream chooses it and
# shown in sysfs; requests that are not multiples of a memory block
# (130 MiB, 1030 MiB, 2 MiB, 0) are met exactly: host plugged size =
# request = guest MemTotal delta; onlining a partially plugged block by
# user space gives only its plugged sub-blocks to the buddy (the online
# page callback), offlining and onlining it again keeps the count exact
# (the notifier's managed-count handling); unplug under a workload that
# checks every word of its memory loses nothing; a shortfall is reported
# to the byte; unload with partially plugged blocks, online and offline,
# leaves nothing behind; mode=bbm at load still works.

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/virtio_mem_shim_lib.sh"

HOG_PID=
PAT_PID=
tmp=$(mktemp -d)

memhp_require_guest
ktap_print_header
ktap_set_plan 15

cleanup()
{
	[ -n "$HOG_PID" ] && kill "$HOG_PID" 2>/dev/null
	[ -n "$PAT_PID" ] && kill "$PAT_PID" 2>/dev/null
	memhp-qmp qom-set path=vm0 property=requested-size value=0 >/dev/null 2>&1
	memhp_unload virtio_mem_shim 2>/dev/null
	set_auto_online offline 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

DEV=$(vmem_dev) || ktap_exit_fail_msg "no virtio-mem device in this guest"
request 0
set_auto_online online_movable
if [ "$(basename "$(readlink "$DEV/driver" 2>/dev/null)")" = virtio_mem ]; then
	echo "$(basename "$DEV")" > /sys/bus/virtio/drivers/virtio_mem/unbind
fi
load_shim || ktap_exit_fail_msg "virtio_mem_shim did not bind"
wait_for 30 plugged_is 0
MEMTOTAL0=$(meminfo_kb MemTotal)
ktap_print_msg "block_size $(cat "$DEV/block_size") unit_size $(cat "$DEV/unit_size") mode $(cat "$DEV/mode") region $(cat "$DEV/region")"
ok=0
[ "$(cat "$DEV/mode")" = sbm ] && [ "$(cat "$DEV/unit_size")" = $((2 * MIB)) ] &&
	[ "$(cat /sys/module/virtio_mem_shim/parameters/mode)" = auto ] && ok=1
ktap_test_result "sub-block mode chosen for a 2 MiB device block, 2 MiB unit" [ $ok = 1 ]

# 1. Requests that are not multiples of a memory block, met exactly.
step "130 MiB met exactly" $((130 * MIB))
step "1030 MiB met exactly" $((1030 * MIB))
step "2 MiB met exactly" $((2 * MIB))
step "0 met exactly" 0
blocks | grep -v '^#' | awk '$4 == "added"' | sed 's/^/# /' | head -n 3

# 2. The online page callback and the notifier: blocks added offline,
# onlined by user space (only the plugged sub-blocks reach the buddy),
# offlined and onlined again.
set_auto_online offline
request $((130 * MIB))
ok=0
if wait_for 120 plugged_is $((130 * MIB)) && sleep 1 && delta_is 0; then
	for b in $(blocks | awk '$4 == "added" && $5 == "offline" { print $2 }'); do
		echo online_movable > "$MEMORY_SYSFS/memory$b/state" || true
	done
	delta_is $((130 * MIB)) && ok=1
fi
ktap_print_msg "added offline, onlined by user space: $(state_line)"
ktap_test_result "onlining partially plugged blocks gives only plugged sub-blocks to the buddy" [ $ok = 1 ]
ok=0
part=$(blocks | awk '$4 == "added" && $NF != "64/64" { print $2; exit }')
if [ -n "$part" ] && echo offline > "$MEMORY_SYSFS/memory$part/state" &&
   delta_is $((128 * MIB)); then
	m1=$(($(meminfo_kb MemTotal) - MEMTOTAL0))
	echo online_movable > "$MEMORY_SYSFS/memory$part/state" && delta_is $((130 * MIB)) && ok=1
fi
ktap_print_msg "partial block memory$part offlined (MemTotal +${m1:-?} kB) and onlined: $(state_line)"
ktap_test_result "offline / online of a partially plugged block keeps MemTotal exact" [ $ok = 1 ]
set_auto_online online_movable
step "plug into the onlined partial block: 260 MiB" $((260 * MIB))

# 2b. Unload with partially plugged blocks, one online and one offline.
request $((130 * MIB))
wait_for 120 at_size $((130 * MIB))
part=$(blocks | awk '$4 == "added" && $NF != "64/64" { print $2; exit }')
[ -n "$part" ] && echo offline > "$MEMORY_SYSFS/memory$part/state"
blocks | grep -v '^#' | awk '$4 == "added"' | sed 's/^/# /'
ok=0
if rmmod virtio_mem_shim && [ "$(qmp_memdev_size vm0)" = 0 ] &&
   [ "$(meminfo_kb MemTotal)" -eq "$MEMTOTAL0" ]; then
	ok=1
fi
ktap_print_msg "after unload: MemTotal $(meminfo_kb MemTotal) kB (base $MEMTOTAL0), host size $(qmp_memdev_size vm0)"
ktap_test_result "unload with partially plugged blocks unplugs everything" [ $ok = 1 ]

# The host still asks 130 MiB: the reloaded driver follows it.
ok=0
load_shim && wait_for 120 at_size $((130 * MIB)) && ok=1
ktap_print_msg "after reload: $(state_line)"
ktap_test_result "reload follows the host request again" [ $ok = 1 ]

# 3. Unplug at sub-block granularity under a workload that checks every
# word of its memory (part of it in the plugged memory).
request $((1030 * MIB))
wait_for 120 at_size $((1030 * MIB))
read -r addr _ <<< "$(cat "$DEV/region")"
first_pfn=$((addr / 4096))
end_pfn=$(((addr + 2048 * MIB) / 4096))
"$(memhp_bin memhp_pattern)" 900 $first_pfn $end_pfn "$tmp/ready" > "$tmp/pattern.log" &
PAT_PID=$!
wait_for 120 test -s "$tmp/ready"
ktap_print_msg "workload (900 MiB): $(cat "$tmp/ready" 2>/dev/null) pages in the device region"
t0=$(date +%s%N)
request $((258 * MIB))
ok=0
wait_for 180 at_size $((258 * MIB)) && ok=1
ms=$((($(date +%s%N) - t0) / 1000000))
kill -USR1 "$PAT_PID"
wait "$PAT_PID"
rc=$?
PAT_PID=
tail -n 1 "$tmp/pattern.log" | sed 's/^# //;s/^/# /'
ktap_print_msg "unplug 1030 -> 258 MiB under the workload in $ms ms: $(state_line)"
[ $rc = 0 ] || ok=0
ktap_test_result "unplug under a checksumming workload: size exact, 0 bad words" [ $ok = 1 ]

# 4. A shortfall at sub-block granularity is reported exactly. Sub-blocks
# let the driver evacuate down to unplug_reserve_mb of free memory: keep
# 256 MiB free here, or the test's own tools (a Python QMP client) meet the
# OOM killer in a guest without swap.
request $((1030 * MIB))
wait_for 120 at_size $((1030 * MIB))
echo 256 > /sys/module/virtio_mem_shim/parameters/unplug_reserve_mb
hog_kb=$(($(meminfo_kb MemFree) - 384 * 1024))
rm -f "$tmp/hog.ready"
python3 -c '
import sys, time
b = bytearray(b"\x01") * (int(sys.argv[1]) * 1024)
open(sys.argv[2], "w").close()
time.sleep(3600)
' "$hog_kb" "$tmp/hog.ready" &
HOG_PID=$!
# Filling 2+ GB takes minutes under TCG on a busy host: the unplug must
# not race the hog's growth (that is an OOM, not a shortfall).
wait_for 900 test -e "$tmp/hog.ready" || ktap_print_msg "hog not ready after 900 s"
ktap_print_msg "hog holds $((hog_kb / 1024)) MiB; MemFree $(meminfo_kb MemFree) kB"
request $((66 * MIB))
ok=0
t0=$(date +%s)
# A first pass tries every plugged sub-block with the hog's memory to
# evacuate: minutes under TCG on a busy host.
if wait_for 300 shortfall_reported && wait_for 60 shortfall_settled $((66 * MIB)); then
	ktap_print_msg "under pressure, request 66 MiB: after $(($(date +%s) - t0)) s unplug_shortfall '$short', plugged $plugged, host $host"
	[ "$host" = "$plugged" ] &&
		[ "${short%% *}" = $((plugged - 66 * MIB)) ] &&
		[ "${short##* }" -lt 0 ] &&
		[ $((plugged % (2 * MIB))) = 0 ] && ok=1
fi
[ $ok = 1 ] || ktap_print_msg "no settled shortfall after $(($(date +%s) - t0)) s: unplug_shortfall '$(cat "$DEV/unplug_shortfall")', host $(qmp_memdev_size vm0), $(state_line)"
ktap_test_result "unplug_shortfall is exactly plugged - request" [ $ok = 1 ]
kill "$HOG_PID"
wait "$HOG_PID" 2>/dev/null
HOG_PID=
echo 64 > /sys/module/virtio_mem_shim/parameters/unplug_reserve_mb
ok=0
wait_for 120 at_size $((66 * MIB)) && [ "$(cat "$DEV/unplug_shortfall")" = "0 0" ] && ok=1
ktap_print_msg "pressure gone: $(state_line), shortfall '$(cat "$DEV/unplug_shortfall")'"
ktap_test_result "the rest goes once memory is free" [ $ok = 1 ]

# 6. mode=bbm at load: whole memory blocks again.
ok=0
request 0
wait_for 120 at_size 0
memhp_unload virtio_mem_shim
if load_shim mode=bbm && [ "$(cat "$DEV/mode")" = bbm ]; then
	request $((256 * MIB))
	wait_for 120 at_size $((256 * MIB)) && ok=1
fi
ktap_print_msg "mode=bbm: unit_size $(cat "$DEV/unit_size" 2>/dev/null), $(state_line)"
ktap_test_result "mode=bbm at load: big-block mode" [ $ok = 1 ]
ok=0
rmmod virtio_mem_shim && [ "$(qmp_memdev_size vm0)" = 0 ] && ok=1
if (insmod "$(memhp_module_path virtio_mem_shim)" mode=bogus) 2>/dev/null; then
	ok=0
	rmmod virtio_mem_shim
fi
# Written later, the mode applies at the next bind; bad input refused.
if load_shim; then
	for input in bogus $'\n' "sbm x" 1; do
		if (echo -n "$input" > /sys/module/virtio_mem_shim/parameters/mode) 2>/dev/null; then
			ktap_print_msg "mode accepted '$input'"
			ok=0
		fi
	done
	[ "$(cat /sys/module/virtio_mem_shim/parameters/mode)" = auto ] || ok=0
	echo bbm > /sys/module/virtio_mem_shim/parameters/mode
	echo "$(basename "$DEV")" > /sys/bus/virtio/drivers/virtio_mem_shim/unbind
	echo "$(basename "$DEV")" > /sys/bus/virtio/drivers/virtio_mem_shim/bind
	[ "$(cat "$DEV/mode")" = bbm ] || ok=0
	rmmod virtio_mem_shim || ok=0
else
	ok=0
fi
ktap_test_result "unload in bbm; bad mode refused at load and later; a written mode applies at bind" [ $ok = 1 ]
ktap_finished
