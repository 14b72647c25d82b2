#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 100
#
# sparse_hotplug's why-offline-fails report against real offline attempts.
# A 512 MiB pc-dimm is added; its first block is onlined to ZONE_NORMAL
# and one of its pages pinned (io_uring fixed buffer: FOLL_PIN|LONGTERM,
# as for DMA), its second block to ZONE_MOVABLE and filled with user data.
# The report must say "blocked: ... dma_pinned" for the first and
# "offlinable" for the second, and a real offline must then fail and
# succeed respectively (the data surviving). Finally every boot block's
# verdict is checked against an offline attempt: blocked ones must fail,
# and up to two offlinable ones must go offline (and come back).
# Failing offlines dump the blocking page: those dumps are expected and
# bracketed for memhp-vm with memhp-expect lines.
# The DIMM stays plugged, its first block online in ZONE_NORMAL (kernel
# memory may be there by the end): the tests after this one in the same
# guest run with it.

. "$(dirname "$0")/lib.sh"

DIMM_SIZE=$((512 << 20))
SHP=/sys/kernel/sparse_hotplug
TABLE=/sys/kernel/debug/sparse_hotplug/sections

memhp_require_guest
ktap_print_header
ktap_set_plan 10

tmp=$(mktemp -d)
cleanup()
{
	[ -n "$pin" ] && kill "$pin" 2>/dev/null
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	[ -n "$splicer" ] && kill "$splicer" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT


verdict()
{
	sed -n 's/^verdict //p' "$SHP/sections/section$1/offline_report"
}

# offline_attempt BLOCK: offline through the core with a 20 s limit
# (a pinned page makes offline_pages() retry until a signal); prints ok
# or the error. Page dumps of a failure are announced to memhp-vm.
offline_attempt()
{
	local r

	echo "memhp-expect: begin page dumped because: " > /dev/kmsg
	r=$(timeout -s INT 20 bash -c \
		"{ echo offline > $MEMORY_SYSFS/memory$1/state; } 2>&1 && echo ok")
	echo "memhp-expect: end" > /dev/kmsg
	echo "${r##*: }"
}

memhp_load sparse_hotplug || ktap_exit_fail_msg "cannot load sparse_hotplug"
set_auto_online offline
mount -t debugfs none /sys/kernel/debug 2>/dev/null
memory_blocks > "$tmp/blocks0"
bs=$(block_size_bytes)
spb=$((bs / 0x$(cat $SHP/section_size_bytes)))

dimm_add rep-dimm0 rep-mem0 $DIMM_SIZE || ktap_exit_fail_msg "device_add failed"
wait_new_blocks "$tmp/blocks0" "$tmp/new" $((DIMM_SIZE / bs)) ||
	ktap_exit_fail_msg "the DIMM's blocks did not appear"
a=$(sed -n 1p "$tmp/new")
b=$(sed -n 2p "$tmp/new")
sa=$((a * spb))
sb=$((b * spb))

# 1: an offline section reports "offline"
ktap_test_result "offline section: verdict offline, no pages counted" eval \
	'[ "$(verdict $sa)" = offline ] && [ "$(awk "!/verdict/ {s += \$2} END {print s}" $SHP/sections/section$sa/offline_report)" = 0 ]'

# 2: block A in ZONE_NORMAL with a pinned page
echo online_kernel > $SHP/sections/section$sa/state
"$(memhp_bin memhp_pin)" 600 $((a * bs / 4096)) $(((a + 1) * bs / 4096)) "$tmp/pinned" > "$tmp/pin.log" &
pin=$!
wait_for 120 test -s "$tmp/pinned"
cat "$tmp/pin.log"
pfn=$(cat "$tmp/pinned" 2>/dev/null)
ktap_test_result "a page of block $a (ZONE_NORMAL) pinned: ${pfn:-none}" [ -n "$pfn" ]

# 3: the report names the pin
cat $SHP/sections/section$sa/offline_report | sed 's/^/# /'
v=$(verdict $sa)
ktap_test_result "report: dma_pinned counted, verdict blocked" eval \
	'! grep -qx "dma_pinned 0" $SHP/sections/section$sa/offline_report && [ "${v#blocked: }" != "$v" ]'

# 4: and the core agrees
r=$(offline_attempt $a)
ktap_print_msg "offline block $a: $r"
ktap_test_result "real offline of the blocked block fails, block stays online" eval \
	'[ "$r" != ok ] && [ "$(block_state $a)" = online ]'

# 5: block B in ZONE_MOVABLE holding only movable (user) pages
echo online_movable > $SHP/sections/section$sb/state
"$(memhp_bin memhp_pattern)" 300 $((b * bs / 4096)) $(((b + 1) * bs / 4096)) "$tmp/ready" > "$tmp/pattern.log" &
holder=$!
wait_for 120 test -s "$tmp/ready"
cat "$tmp/pattern.log"
grep -E "^(free|lru_anon|verdict) " $SHP/sections/section$sb/offline_report | sed 's/^/# /'
ktap_test_result "report: block $b with user data is offlinable" eval \
	'[ "$(cat $tmp/ready 2>/dev/null || echo 0)" -gt 0 ] && [ "$(verdict $sb)" = offlinable ] &&
	 ! grep -qx "lru_anon 0" $SHP/sections/section$sb/offline_report'

# 6: and the core agrees, the data migrating out intact
r=$(offline_attempt $b)
kill -USR1 "$holder"
wait "$holder"
rc=$?
holder=
tail -n1 "$tmp/pattern.log"
ktap_test_result "real offline of the offlinable block succeeds, data intact" eval \
	'[ "$r" = ok ] && [ "$(block_state $b)" = offline ] && [ $rc = 0 ]'

# 7: the debugfs table says the same
row=$(awk -v s=$sa '$1 == s' $TABLE)
ktap_print_msg "table: $row"
ktap_test_result "debugfs table row of section $sa blocked, $sb offline" eval \
	'echo "$row" | grep -q "blocked: " && awk -v s=$sb "\$1 == s" $TABLE | grep -q " offline$"'

# 8: a section write while the device hotplug lock is held elsewhere. A
# third block, in ZONE_MOVABLE, gets a page held by vmsplice() (a plain
# reference, not a pin; the report calls it gup_held): its offline retries
# the migration until a signal, holding the lock for 20 s. A write to block B's section meanwhile meets
# -ERESTARTNOINTR in the core, returns restart_syscall() and is restarted
# until the lock is free, then succeeds; nothing deadlocks.
c=$(sed -n 3p "$tmp/new")
sc=$((c * spb))
echo online_movable > $SHP/sections/section$sc/state
"$(memhp_bin memhp_pin)" --vmsplice 300 $((c * bs / 4096)) $(((c + 1) * bs / 4096)) "$tmp/held" > "$tmp/held.log" &
splicer=$!
wait_for 120 test -s "$tmp/held"
cat "$tmp/held.log"
vc=$(verdict $sc)
ktap_print_msg "block $c: $vc"
restarts0=$(cat /sys/kernel/debug/sparse_hotplug/restarts)
offline_attempt $c > "$tmp/offline_c" &
offliner=$!
sleep 3
t0=$(date +%s)
r=$( { echo online_movable > $SHP/sections/section$sb/state; } 2>&1 && echo ok)
t1=$(date +%s)
wait $offliner
kill -USR1 $splicer
wait $splicer
restarts=$(($(cat /sys/kernel/debug/sparse_hotplug/restarts) - restarts0))
ktap_print_msg "online_movable of section$sb during block $c's offline: $r after $((t1 - t0)) s, $restarts restarts; block $c offline: '$(cat "$tmp/offline_c")'"
ktap_test_result "vmsplice-held page: verdict gup_held; its offline fails; a section write meanwhile is restarted, then succeeds" eval \
	'[ "$r" = ok ] && [ "$(block_state $b)" = online ] && [ $((t1 - t0)) -ge 5 ] &&
	 [ "$restarts" -gt 0 ] && [ "$(block_state $c)" = online ] && [ "${vc#blocked: pfn * gup_held}" != "$vc" ]'

# 9: unpinned, the verdict and a real offline agree again
kill -USR1 "$pin"
wait "$pin"
pin=
sleep 1
v=$(verdict $sa)
r=$(offline_attempt $a)
ktap_print_msg "after unpin: verdict '$v', offline: $r"
ktap_test_result "after unpin: verdict and real offline agree" eval \
	'{ [ "$v" = offlinable ] && [ "$r" = ok ]; } || { [ "$v" != offlinable ] && [ "$r" != ok ]; }'

# 10: every boot block: blocked ones fail, two offlinable ones succeed
ok=1
tried=0
for blk in $(cat "$tmp/blocks0"); do
	[ "$(block_state "$blk")" = online ] || continue
	v=$(verdict $((blk * spb)))
	if [ "${v#blocked}" != "$v" ]; then
		r=$(offline_attempt "$blk")
		if [ "$r" = ok ]; then
			ktap_print_msg "block $blk: '$v' but offline succeeded"
			ok=0
			echo online > "$MEMORY_SYSFS/memory$blk/state"
		fi
	elif [ "$v" = offlinable ] && [ $tried -lt 2 ] && [ "$blk" -gt 8 ]; then
		tried=$((tried + 1))
		r=$(offline_attempt "$blk")
		[ "$r" = ok ] || { ktap_print_msg "block $blk: offlinable but offline: $r"; ok=0; }
		echo online > "$MEMORY_SYSFS/memory$blk/state" 2>/dev/null
	fi
done
awk 'NR == 1 || $3 != "offline"' $TABLE | cut -d' ' -f1-3,17- | sed 's/^/# /'
ktap_test_result "boot blocks: verdicts agree with offline attempts ($tried offlinable tried)" [ $ok = 1 ]

memhp_unload sparse_hotplug
ktap_finished
