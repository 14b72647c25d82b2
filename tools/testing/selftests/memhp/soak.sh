#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-vm: --mem 3G --append mem=2G
# memhp-budget: 240
#
# Hotplug churn soak: SOAK_OPS (default 50; `make soak`: 1000) random
# operations, SOAK_SEED to repeat a run, while memhp_churn rewrites and
# verifies SOAK_CHURN_MIB (default 256) MiB of anonymous memory and a
# migrate_test mapping holds a pattern:
#   dimm-add / dimm-remove   256 MiB pc-dimm, device_add/device_del (QMP),
#                            onlined movable / offlined first
#   vmem-resize              virtio-mem vm0 requested-size 0..1 GiB
#                            (virtio_mem_shim follows it meanwhile; the
#                            last request must be met at the end)
#   probe / remove           sparse_hotplug, the 1 GiB hidden by mem=2G
#   offline / online         a hot-added or boot block, via sparse_hotplug
#   isolate / release        a section, via sparse_hotplug
#   migrate                  migrate_test: 4 MiB forced migration, verified
#   buddy                    buddy_split: a 10000-step workload, CHECK
# An operation that fails for a legitimate reason (EBUSY offlining a block
# in use, no free slot, ...) is counted by cause, not a test failure. At
# the end (everything isolated released, every block onlined) MemTotal must
# equal boot memory plus the hot-added memory online, no byte of the
# workloads may have changed, and after removing everything MemTotal must
# be back at boot memory. Prints ops/s and failures by cause.
#
# Every sysfs write is bounded (SOAK_WRITE_TIMEOUT, default 120 s): an
# offline that cannot finish retries until a signal (offline_pages()), and
# a write that needed the signal is a failed case here, with
# sparse_hotplug's offline_report of the section it was stuck on.

. "$(dirname "$0")/lib.sh"

# 50 in make check, the long forms (make soak, make check-long) 1000. The
# first draws are the table's nine kinds once each, in a random order
# (each creator before its remover: dimm_add before dimm_remove, probe
# before remove), so every kind runs in a soak of any length from nine
# on; the rest are weighted draws from the table's 14 entries, where a
# kind of weight 1/14 comes 41/14, about 2.9, more times on average. The
# seed changes per run and is printed, so a run can be replayed.
OPS=${SOAK_OPS:-50}
# A new seed each run (a fresh guest's PIDs repeat), printed to replay it.
SEED=${SOAK_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
CHURN_MIB=${SOAK_CHURN_MIB:-256}
WRITE_TIMEOUT=${SOAK_WRITE_TIMEOUT:-120}
SHP=/sys/kernel/sparse_hotplug
HIDDEN=$((4 << 30))
HIDDEN_END=$((5 << 30))
DIMM_SIZE=$((256 << 20))
SLOTS=4
TMP=$(mktemp -d)
CHURN=
MIGHOLD=
VMDEV=

memhp_require_guest
ktap_print_header
ktap_set_plan 6

cleanup()
{
	[ -n "$CHURN" ] && kill -9 "$CHURN" 2>/dev/null
	[ -n "$MIGHOLD" ] && kill -9 "$MIGHOLD" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
	set_auto_online offline 2>/dev/null
}
trap cleanup EXIT

grep -q "mem=2G" /proc/cmdline || ktap_exit_fail_msg "guest not booted with mem=2G (memhp-vm --mem 3G --append mem=2G)"
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
# Hot-added memory arrives online movable: the shim leaves onlining to this
# policy (as upstream virtio_mem does); DIMM and probe blocks are onlined
# movable by hand only if they are still offline.
set_auto_online online_movable
BS=$(block_size_bytes)
for m in virtio_mem_shim buddy_split migrate_test sparse_hotplug; do
	memhp_unload "$m" 2>/dev/null
done
memhp_load sparse_hotplug ranges=$(printf '%#x-%#x' $HIDDEN $HIDDEN_END) ||
	ktap_exit_fail_msg "cannot load sparse_hotplug"
memhp_load migrate_test || ktap_exit_fail_msg "cannot load migrate_test"
memhp_load buddy_split nr_sections=8 section_mb=4 pinned_sections=2 ||
	ktap_exit_fail_msg "cannot load buddy_split"
SPB=$((BS / 0x$(cat $SHP/section_size_bytes)))
for d in /sys/bus/virtio/devices/virtio*; do
	[ "$(cat "$d/device" 2>/dev/null)" = 0x0018 ] && VMDEV=$d && break
done
if [ -n "$VMDEV" ]; then
	[ "$(basename "$(readlink "$VMDEV/driver" 2>/dev/null)")" = virtio_mem ] &&
		basename "$VMDEV" > /sys/bus/virtio/drivers/virtio_mem/unbind
	memhp_load virtio_mem_shim || ktap_exit_fail_msg "cannot load virtio_mem_shim"
	wait_for 10 test -e "$VMDEV/target_size"
fi

BOOT_KB=$(meminfo_kb MemTotal)
BOOT_BLOCKS=$(memory_blocks | tr '\n' ' ')
ktap_print_msg "seed $SEED, $OPS operations, boot MemTotal $BOOT_KB kB, blocks of $((BS >> 20)) MiB"

# The workloads: churn (anonymous), a migrate_test pattern that soak's
# migrate operations move around.
"$(memhp_bin memhp_churn)" "$CHURN_MIB" 0 0 "$TMP/churn.ready" > "$TMP/churn.out" &
CHURN=$!
wait_for 120 test -s "$TMP/churn.ready" || ktap_exit_fail_msg "memhp_churn did not start"
LOADGEN_PAUSE_MS=200 "$(memhp_bin memhp_loadgen)" migrate 4 "$TMP/mig.ready" > "$TMP/mig.out" &
MIGHOLD=$!
wait_for 60 test -e "$TMP/mig.ready" || ktap_exit_fail_msg "memhp_loadgen did not start"

declare -A nops fails
RANDOM=$SEED

rnd() { echo $((RANDOM % $1)); }
pick() { local a=("$@"); [ ${#a[@]} -gt 0 ] && echo "${a[RANDOM % ${#a[@]}]}"; }

# fail OP CAUSE: count one failure of OP by cause.
fail()
{
	local k="$1: $2"

	fails[$k]=$((${fails[$k]:-0} + 1))
}

# write FILE VALUE: "" on success, else the error text. A write still
# running after WRITE_TIMEOUT s gets SIGTERM (offlining stops with EINTR)
# and is recorded in $TMP/hung with the offline_report of its section.
wr()
{
	local out rc s

	out=$(timeout "$WRITE_TIMEOUT" bash -c 'echo "$2" > "$1"' wr "$1" "$2" 2>&1) && return 0
	rc=$?
	if [ "$rc" = 124 ]; then
		case "$1" in
		"$SHP"/sections/section*) s=${1#"$SHP"/sections/section}; s=${s%%/*} ;;
		"$MEMORY_SYSFS"/memory*) s=${1#"$MEMORY_SYSFS"/memory}; s=$((${s%%/*} * SPB)) ;;
		*) s= ;;
		esac
		{
			echo "$2 > $1: still running after $WRITE_TIMEOUT s, stopped by a signal"
			[ -n "$s" ] && sed 's/^/  /' "$SHP/sections/section$s/offline_report" 2>/dev/null
		} >> "$TMP/hung"
		echo "timed out"
		return 1
	fi
	echo "${out##*: }"
	return 1
}

# DIMMs: slot i is dimm id sk$i, backend skm$i.
dimm_blocks()
{
	memhp-qmp query-memory-devices | python3 -c '
import json, sys
for d in json.load(sys.stdin):
    if d["data"].get("id") == sys.argv[1]:
        bs = int(sys.argv[2])
        a, s = d["data"]["addr"], d["data"]["size"]
        print(" ".join(str(b) for b in range(a // bs, (a + s) // bs)))
' "sk$1" "$BS"
}
declare -A DIMM	# slot -> "blocks"

op_dimm_add()
{
	local i b blocks

	for i in $(seq 0 $((SLOTS - 1))); do
		[ -z "${DIMM[$i]}" ] && break
	done
	[ -z "${DIMM[$i]}" ] || { fail dimm-add "no free slot"; return; }
	memhp-qmp object-add qom-type=memory-backend-ram id=skm$i size=$DIMM_SIZE >/dev/null 2>&1 ||
		{ fail dimm-add "object-add"; return; }
	if ! memhp-qmp device_add driver=pc-dimm id=sk$i memdev=skm$i >/dev/null 2>&1; then
		memhp-qmp object-del id=skm$i >/dev/null 2>&1
		fail dimm-add "device_add"
		return
	fi
	blocks=$(dimm_blocks $i)
	for b in $blocks; do
		wait_for 30 test -e "$MEMORY_SYSFS/memory$b/state" || { fail dimm-add "block $b missing"; continue; }
		[ "$(block_state "$b")" = offline ] &&
			! wr "$MEMORY_SYSFS/memory$b/state" online_movable >/dev/null && fail dimm-add "online"
	done
	DIMM[$i]=$blocks
}

op_dimm_remove()
{
	local i b err slots=()

	for i in "${!DIMM[@]}"; do
		[ -n "${DIMM[$i]}" ] && slots+=("$i")
	done
	i=$(pick "${slots[@]}") || { fail dimm-remove "no DIMM"; return; }
	# Release isolated sections of it, offline its blocks.
	for b in ${DIMM[$i]}; do
		for s in $(seq $((b * SPB)) $((b * SPB + SPB - 1))); do
			[ "$(cat "$SHP/sections/section$s/state" 2>/dev/null)" = isolated ] &&
				wr "$SHP/sections/section$s/state" release >/dev/null
		done
		if [ "$(block_state "$b")" = online ]; then
			if ! err=$(wr "$MEMORY_SYSFS/memory$b/state" offline); then
				fail dimm-remove "offline: $err"
				for b in ${DIMM[$i]}; do
					[ "$(block_state "$b")" = offline ] &&
						wr "$MEMORY_SYSFS/memory$b/state" online_movable >/dev/null
				done
				return
			fi
		fi
	done
	memhp-qmp device_del id=sk$i >/dev/null 2>&1 || { fail dimm-remove "device_del"; return; }
	if ! memhp-qmp x-memhp-wait-event event=DEVICE_DELETED "match={\"device\":\"sk$i\"}" \
		timeout=60 >/dev/null 2>&1; then
		fail dimm-remove "DEVICE_DELETED timeout"
		return
	fi
	memhp-qmp object-del id=skm$i >/dev/null 2>&1 || fail dimm-remove "object-del"
	DIMM[$i]=
}

# A new request while the shim still follows the last one is part of the
# game: the resize is not waited for here, only at the end.
op_vmem_resize()
{
	local size

	[ -n "$VMDEV" ] || { fail vmem-resize "no device"; return; }
	size=$(( $(rnd 9) * (128 << 20) ))
	memhp-qmp qom-set path=vm0 property=requested-size value=$size >/dev/null 2>&1 ||
		fail vmem-resize "qom-set"
}

probed() { cat "$SHP/probed"; }

op_probe()
{
	local addrs=() a err

	for a in $(seq $HIDDEN "$BS" $((HIDDEN_END - 1))); do
		probed | grep -qx "$(printf %#x "$a")" || addrs+=("$a")
	done
	a=$(pick "${addrs[@]}") || { fail probe "all probed"; return; }
	err=$(wr $SHP/probe "$a") || { fail probe "$err"; return; }
	[ "$(block_state $((a / BS)))" = offline ] || return
	err=$(wr "$SHP/sections/section$((a / BS * SPB))/state" online_movable) ||
		fail probe "online: $err"
}

op_remove()
{
	local a err

	a=$(pick $(probed)) || { fail remove "nothing probed"; return; }
	for s in $(seq $((a / BS * SPB)) $((a / BS * SPB + SPB - 1))); do
		[ "$(cat "$SHP/sections/section$s/state" 2>/dev/null)" = isolated ] &&
			wr "$SHP/sections/section$s/state" release >/dev/null
	done
	err=$(wr $SHP/remove "$a") || fail remove "$err"
}

# Blocks soak may offline: hot-added ones (DIMM, probe) and the last four
# boot blocks (at most 512 MiB of boot memory away: no OOM); never
# virtio-mem blocks (the shim owns them).
own_blocks()
{
	local a

	echo "${DIMM[@]}"
	for a in $(probed); do
		echo $((a / BS))
	done
	echo "$BOOT_BLOCKS" | tr ' ' '\n' | grep . | tail -n 4
}

op_offline_online()
{
	local b err s

	b=$(pick $(own_blocks)) || { fail offline "no block"; return; }
	s=$((b * SPB))
	[ -e "$SHP/sections/section$s" ] || { fail offline "block gone"; return; }
	if [ "$(block_state "$b")" = offline ]; then
		nops[online]=$((${nops[online]:-0} + 1))
		err=$(wr "$SHP/sections/section$s/state" online_movable) ||
			err=$(wr "$SHP/sections/section$s/state" online) || fail online "$err"
	else
		nops[offline]=$((${nops[offline]:-0} + 1))
		err=$(wr "$SHP/sections/section$s/state" offline) || fail offline "$err"
	fi
}

op_isolate_release()
{
	local isolated=() online=() b s err

	for b in $(own_blocks); do
		for s in $(seq $((b * SPB)) $((b * SPB + SPB - 1))); do
			case "$(cat "$SHP/sections/section$s/state" 2>/dev/null)" in
			isolated) isolated+=("$s") ;;
			online) online+=("$s") ;;
			esac
		done
	done
	if [ ${#isolated[@]} -gt 0 ] && [ "$(rnd 2)" = 0 ]; then
		nops[release]=$((${nops[release]:-0} + 1))
		s=$(pick "${isolated[@]}")
		err=$(wr "$SHP/sections/section$s/state" release) || fail release "$err"
	else
		nops[isolate]=$((${nops[isolate]:-0} + 1))
		s=$(pick "${online[@]}") || { fail isolate "no online section"; return; }
		err=$(wr "$SHP/sections/section$s/state" isolate) || fail isolate "$err"
	fi
}

op_migrate()
{
	"$(memhp_bin memhp_loadgen)" once-migrate 4 > "$TMP/once.out" ||
		{ fail migrate "$(tail -n1 "$TMP/once.out")"; LOST=1; }
}

op_buddy()
{
	"$(memhp_bin memhp_loadgen)" once-buddy > "$TMP/once.out" ||
		{ fail buddy "$(tail -n1 "$TMP/once.out")"; LOST=1; }
}

# Weighted operation table.
OPTABLE=(dimm_add dimm_remove vmem_resize probe remove offline_online offline_online
	 offline_online isolate_release isolate_release migrate migrate buddy buddy)
LOST=0
# Offlining and isolating memory under a running workload legitimately
# dumps pages the core cannot move ("isolation failed", "unmovable page",
# "migration failure"): announced to memhp-vm, which still fails the run
# on any BUG, WARNING or Bad page state.
echo 'memhp-expect: begin page dumped because:' > /dev/kmsg
# Every kind once, in a random order, creators first where it matters.
KINDS=($(printf '%s\n' "${OPTABLE[@]}" | awk '!seen[$0]++'))
keyed=()
for k in "${KINDS[@]}"; do
	keyed+=("$RANDOM $k")
done
order=($(printf '%s\n' "${keyed[@]}" | sort -n | cut -d' ' -f2))
before()
{
	local i a=-1 b=-1

	for i in "${!order[@]}"; do
		[ "${order[$i]}" = "$1" ] && a=$i
		[ "${order[$i]}" = "$2" ] && b=$i
	done
	[ "$a" -gt "$b" ] && { order[$a]=$2; order[$b]=$1; }
	return 0
}
before dimm_add dimm_remove
before probe remove
declare -A drawn
t0=$(date +%s%N)
for i in $(seq "$OPS"); do
	if [ "$i" -le ${#order[@]} ]; then
		op=${order[$((i - 1))]}
	else
		op=$(pick "${OPTABLE[@]}")
	fi
	drawn[$op]=1
	case "$op" in
	offline_online|isolate_release) ;;
	*) nops[$op]=$((${nops[$op]:-0} + 1)) ;;
	esac
	"op_$op"
	[ $((i % 50)) = 0 ] && ktap_print_msg "$i operations, $((($(date +%s%N) - t0) / 1000000000)) s"
done
ms=$((($(date +%s%N) - t0) / 1000000))

# Settle: release every isolated section, online every offline block of ours.
for d in "$SHP"/sections/section*; do
	[ "$(cat "$d/state" 2>/dev/null)" = isolated ] && wr "$d/state" release >/dev/null
done
for b in $(own_blocks); do
	[ "$(block_state "$b")" = offline ] && ! wr "$MEMORY_SYSFS/memory$b/state" online_movable >/dev/null &&
		wr "$MEMORY_SYSFS/memory$b/state" online >/dev/null
done
vm_plugged=0
if [ -n "$VMDEV" ]; then
	vm_requested=$(cat "$VMDEV/requested_size")
	vm_converged() { [ "$(cat "$VMDEV/plugged_size")" = "$vm_requested" ]; }
	wait_for 300 vm_converged ||
		fail vmem-resize "plugged $(($(cat "$VMDEV/plugged_size") >> 20)) of $((vm_requested >> 20)) MiB 300 s after the last request"
	vm_plugged=$(cat "$VMDEV/plugged_size")
fi
added_blocks=0
for b in $(own_blocks); do
	echo " $BOOT_BLOCKS " | grep -q " $b " && continue
	[ "$(block_state "$b")" = online ] && added_blocks=$((added_blocks + 1))
done
offline_boot=0
for b in $BOOT_BLOCKS; do
	[ "$(block_state "$b")" = online ] || offline_boot=$((offline_boot + 1))
done
want=$((BOOT_KB + (added_blocks - offline_boot) * (BS >> 10) + (vm_plugged >> 10)))
got=$(meminfo_kb MemTotal)

secs=$(awk -v ms="$ms" 'BEGIN { printf "%.1f", ms / 1000 }')
ktap_print_msg "$OPS operations in $secs s:" \
	"$(awk -v n="$OPS" -v ms="$ms" 'BEGIN { printf "%.2f", n * 1000 / (ms ? ms : 1) }') ops/s"
for k in $(echo "${!nops[@]}" | tr ' ' '\n' | sort); do
	ktap_print_msg "  $k: ${nops[$k]}"
done
nfail=0
for k in "${!fails[@]}"; do
	nfail=$((nfail + fails[$k]))
done
ktap_print_msg "failed operations by cause ($nfail):"
for k in "${!fails[@]}"; do
	echo "#   ${fails[$k]} x $k"
done | sort -t: -k1,1
ktap_print_msg "end state: $added_blocks hot-added blocks online, $offline_boot boot blocks offline, virtio-mem $((vm_plugged >> 20)) MiB"
ktap_print_msg "MemTotal $got kB, expected $want kB (boot $BOOT_KB kB)"
ktap_print_msg "kinds run: ${#drawn[@]} of ${#KINDS[@]} (first ${#order[@]}: ${order[*]})"
if [ "$OPS" -ge ${#KINDS[@]} ]; then
	ktap_test_result "$OPS random hotplug operations ran, each of the ${#KINDS[@]} kinds at least once" \
		[ "${#drawn[@]}" = ${#KINDS[@]} ]
else
	ktap_test_skip "$OPS random hotplug operations ran, each of the ${#KINDS[@]} kinds at least once" \
		"SOAK_OPS=$OPS is fewer than the ${#KINDS[@]} kinds"
fi
ktap_test_result "MemTotal = boot memory + hot-added memory online + virtio-mem plugged" [ "$got" = "$want" ]

# The workloads: not a byte lost.
kill -USR1 $CHURN
wait $CHURN
rc_churn=$?
CHURN=
cat "$TMP/churn.out"
kill -TERM $MIGHOLD
wait $MIGHOLD
rc_mig=$?
MIGHOLD=
cat "$TMP/mig.out"
passes=$(sed -n 's/.* \([0-9]*\) passes.*/\1/p' "$TMP/churn.out" | tail -n1)
verified=$(( ${passes:-0} * CHURN_MIB ))
ktap_print_msg "bytes verified: ${passes:-?} passes x $CHURN_MIB MiB of churn = $verified MiB, plus the migrate_test pattern"
ktap_print_msg "figures: $OPS operations in $secs s, $nfail failed (by cause above);" \
	"$verified MiB verified by memhp_churn"
ktap_test_result "memhp_churn: every pass verified ($CHURN_MIB MiB)" [ "$rc_churn" = 0 ]
mig_ok() { [ "$rc_mig" = 0 ] && [ "$LOST" = 0 ]; }
ktap_test_result "migrate_test pattern and the migrate/buddy operations intact" mig_ok

# Remove everything: back to boot memory.
for i in $(seq 0 $((SLOTS - 1))); do
	[ -n "${DIMM[$i]}" ] || continue
	for b in ${DIMM[$i]}; do
		[ "$(block_state "$b")" = online ] && wr "$MEMORY_SYSFS/memory$b/state" offline >/dev/null
	done
	memhp-qmp device_del id=sk$i >/dev/null 2>&1 &&
		memhp-qmp x-memhp-wait-event event=DEVICE_DELETED "match={\"device\":\"sk$i\"}" timeout=60 >/dev/null 2>&1 &&
		memhp-qmp object-del id=skm$i >/dev/null 2>&1
done
for a in $(probed); do
	wr $SHP/remove "$a" >/dev/null
done
if [ -n "$VMDEV" ]; then
	memhp-qmp qom-set path=vm0 property=requested-size value=0 >/dev/null 2>&1
	vm_unplugged() { [ "$(cat "$VMDEV/plugged_size")" = 0 ]; }
	wait_for 60 vm_unplugged
fi
for b in $BOOT_BLOCKS; do
	[ "$(block_state "$b")" = online ] || wr "$MEMORY_SYSFS/memory$b/state" online >/dev/null
done
echo 'memhp-expect: end' > /dev/kmsg
ktap_print_msg "after removing everything: MemTotal $(meminfo_kb MemTotal) kB, boot $BOOT_KB kB"
ktap_test_result "everything removed: MemTotal back at boot memory" [ "$(meminfo_kb MemTotal)" = "$BOOT_KB" ]
[ -s "$TMP/hung" ] && sed 's/^/# /' "$TMP/hung"
ktap_test_result "no write hung (each ended within $WRITE_TIMEOUT s without a signal)" [ ! -s "$TMP/hung" ]
for m in virtio_mem_shim buddy_split migrate_test sparse_hotplug; do
	memhp_unload "$m" 2>/dev/null
done
set_auto_online offline
ktap_finished
