#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 340
#
# Hostile use: the objects that outlive a module's work or the
# module itself (iomem resources, memory blocks, sysfs/debugfs nodes,
# tracepoints). Each module is unloaded in every state that applies, and
# after each unload every reader runs:
#
#   module          states
#   migrate_test    idle; mid-work (MIGRATE loop: rmmod refused, EBUSY,
#                   then unloads once the loop ends)
#   buddy_split     idle; mid-work (WORKLOAD loop: EBUSY, then unloads);
#                   8192 pages held by KERNEL_HOLD (unload gives them back)
#   pfn_lookup      idle; mid-work (a long run: EBUSY; killed, unloads)
#   sparse_hotplug  idle; mid-work (isolate/release and offline/online
#                   loops: unload completes); a section left isolated
#                   (unload releases it); its tracepoints enabled
#   virtio_mem_shim idle (bound, nothing plugged); 512 MiB plugged
#                   online_movable (all unplugged); mid-work (unload midway
#                   through plugging 1 GiB); kernel memory in it:
#                   512 MiB plugged with auto_online_blocks=online_kernel,
#                   a tmpfs with 20,000 files and 300 MB, rmmod: what
#                   cannot be unplugged stays as System RAM;
#                   sub-block mode: 130 MiB plugged (a partially plugged
#                   block, offlined by user space); unload midway through
#                   unplugging 1000 MiB to 2 MiB (partial blocks, sub-blocks
#                   fake-offline)
#
#   readers (after each unload)
#     /proc/iomem               cat, and grep "System RAM"
#     /sys/devices/system/memory  cat of every file under it
#     trace buffer              cat /sys/kernel/tracing/trace
#     nodes gone                /sys/module/<m>, the module's debugfs and
#                               sysfs directories absent; ls debugfs
#
# The two midway unloads assert that rmmod began with the plug (unplug)
# started and not complete; an attempt that finds it complete is retried,
# up to 3 attempts, and a case never midway fails. MEMHP_MIDWAY_FORCE_COMPLETE=1
# waits for completion before rmmod, without retry: both fail on purpose
# (midway_wait, lib.sh).
#
# HOSTILE_USE_ONLY=ERE runs only the cases whose "module state" matches
# (e.g. HOSTILE_USE_ONLY=online_kernel); the others are skipped.
#
# Bounds: rmmod 120 s (the shim's unplug under TCG), each reader 60 s,
# state set-up as stated at each step. A command still running at its
# bound is killed (SIGKILL) and the case fails ("did not return"); a
# reader killed by the kernel (an Oops in it kills the task: exit 137)
# fails. The runner fails the guest on any Oops, BUG or WARNING.

. "$(dirname "$0")/lib.sh"

MIB=$((1 << 20))
TMP=$(mktemp -d)
PIDS=()
SHIM_DEV=
TRACE=/sys/kernel/tracing
DEBUG=/sys/kernel/debug
MODS="migrate_test buddy_split pfn_lookup sparse_hotplug virtio_mem_shim"
READERS=4
STATES=16
PAIRS_RAN=0
UNLOAD_BOUND=120
READ_BOUND=60

T0=$(date +%s)
memhp_require_guest
ktap_print_header
ktap_set_plan $((STATES * (READERS + 1)))

cleanup()
{
	local p m

	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	mountpoint -q "$TMP/fill" && umount "$TMP/fill"
	memhp-qmp qom-set path=vm0 property=requested-size value=0 >/dev/null 2>&1
	for m in $MODS; do
		memhp_unload "$m" 2>/dev/null
	done
	set_auto_online offline 2>/dev/null
	echo 'memhp-expect: end' > /dev/kmsg
	rm -rf "$TMP"
}
trap cleanup EXIT

mountpoint -q $DEBUG || mount -t debugfs none $DEBUG
mountpoint -q $TRACE || mount -t tracefs none $TRACE
LOADGEN=$(memhp_bin memhp_loadgen)
for m in $MODS; do
	memhp_unload "$m" 2>/dev/null
done

# bounded SECS CMD...: run CMD; its exit status, or 124 if it had not
# returned after SECS (it is then killed with SIGKILL and left behind).
bounded()
{
	local secs=$1 pid ticks=0 rc out="$TMP/bounded.out"

	shift
	# Into a file, and without the kselftest runner's descriptors (3, 4:
	# a reopened /dev/stdout): a command stuck for good must hold neither
	# the runner's output pipe nor its log (a console port opens once).
	"$@" > "$out" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	pid=$!
	while ! pid_gone "$pid"; do
		if [ $ticks -ge $((secs * 10)) ]; then
			kill -9 "$pid" 2>/dev/null
			cat "$out"
			mv "$out" "$TMP/bounded.$pid.stuck"
			ktap_print_msg "'$*' did not return within $secs s"
			return 124
		fi
		sleep 0.1
		ticks=$((ticks + 1))
	done
	wait "$pid"
	rc=$?
	cat "$out"
	rm -f "$out"
	return $rc
}

# The debugfs and sysfs directories of a module.
module_nodes()
{
	case $1 in
	sparse_hotplug)	echo "$DEBUG/sparse_hotplug /sys/kernel/sparse_hotplug $TRACE/events/sparse_hotplug" ;;
	buddy_split)	echo "$DEBUG/buddy_split /dev/buddy_split" ;;
	pfn_lookup)	echo "$DEBUG/pfn_lookup" ;;
	migrate_test)	echo "/dev/migrate_test" ;;
	virtio_mem_shim) echo "$DEBUG/virtio_mem_shim /sys/bus/virtio/drivers/virtio_mem_shim" ;;
	esac
}

read_iomem()
{
	cat /proc/iomem > /dev/null && { grep "System RAM" /proc/iomem > /dev/null; [ $? -le 1 ]; }
}

read_memory_sysfs()
{
	find "$MEMORY_SYSFS" -type f -perm -u+r -exec cat {} + > /dev/null 2>&1
	# cat's own read errors (1) are fine; being killed is not.
	[ $? -le 1 ]
}

read_trace()
{
	cat $TRACE/trace > /dev/null
}

nodes_gone()
{
	local n

	for n in /sys/module/$1 $(module_nodes "$1"); do
		[ -e "$n" ] && { ktap_print_msg "$n still there"; return 1; }
	done
	ls $DEBUG > /dev/null
}

# readers MODULE STATE: every reader once, bounded, one result each.
readers()
{
	local m=$1 st=$2 rc name

	for name in iomem memory_sysfs trace nodes_gone; do
		PAIRS_RAN=$((PAIRS_RAN + 1))
		case $name in
		iomem)		bounded $READ_BOUND read_iomem ;;
		memory_sysfs)	bounded $READ_BOUND read_memory_sysfs ;;
		trace)		bounded $READ_BOUND read_trace ;;
		nodes_gone)	bounded $READ_BOUND nodes_gone "$m" ;;
		esac
		rc=$?
		[ $rc = 0 ] || ktap_print_msg "$m $st: reader $name exit $rc"
		ktap_test_result "$m $st: after unload, read $name" [ $rc = 0 ]
	done
}

# skip_state MODULE STATE REASON: the unload and its readers skipped.
skip_state()
{
	local name

	ktap_test_skip "$1 $2: unload" "$3"
	for name in iomem memory_sysfs trace nodes_gone; do
		ktap_test_skip "$1 $2: after unload, read $name" "$3"
	done
}

# want MODULE STATE: the case is selected: HOSTILE_USE_ONLY, an extended
# regular expression matched against "MODULE STATE" (default: every case).
want()
{
	[ -z "$HOSTILE_USE_ONLY" ] || echo "$1 $2" | grep -Eq -- "$HOSTILE_USE_ONLY"
}

# rmmod must be refused with EBUSY ("in use") and the module stay loaded.
rmmod_refused()
{
	local out

	out=$(bounded $UNLOAD_BOUND rmmod "$1" 2>&1) && { ktap_print_msg "rmmod $1 succeeded"; return 1; }
	ktap_print_msg "rmmod $1: $out"
	echo "$out" | grep -q 'in use' && memhp_module_loaded "$1"
}

unload()
{
	PAIRS_RAN=$((PAIRS_RAN + 1))
	bounded $UNLOAD_BOUND rmmod "$1"
}

# unload_case MODULE STATE OK: report the unload (OK is 1 when the state's
# own checks passed), then run the readers.
unload_case()
{
	local m=$1 st=$2 ok=$3

	memhp_module_loaded "$m" && ok=0
	ktap_test_result "$m $st: unload" [ "$ok" = 1 ]
	readers "$m" "$st"
}

# wait_pid SECS PID: PID's exit status, or 124 if it is still running
# after SECS.
wait_pid()
{
	wait_for "$1" pid_gone "$2" || return 124
	wait "$2"
}

pid_gone()
{
	[ ! -e "/proc/$1" ] || [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = Z ]
}

stop_pids()
{
	local p

	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	PIDS=()
}

# --- migrate_test -------------------------------------------------------------
if want migrate_test idle; then
	memhp_load migrate_test
	ok=0; unload migrate_test && ok=1
	unload_case migrate_test idle $ok
else
	skip_state migrate_test idle "not selected (HOSTILE_USE_ONLY)"
fi

st="mid-work (MIGRATE loop, EBUSY first)"
if want migrate_test "$st"; then
	memhp_load migrate_test
	"$LOADGEN" migrate 8 "$TMP/mig.ready" > "$TMP/mig.out" &
	PIDS+=($!)
	ok=0
	if wait_for 60 test -e "$TMP/mig.ready" && rmmod_refused migrate_test; then
		kill -TERM "${PIDS[-1]}"
		wait_pid 60 "${PIDS[-1]}" && ok=1
		cat "$TMP/mig.out"
	fi
	stop_pids
	unload migrate_test || ok=0
	unload_case migrate_test "$st" $ok
else
	skip_state migrate_test "$st" "not selected (HOSTILE_USE_ONLY)"
fi

# --- buddy_split --------------------------------------------------------------
BS_PARAMS="nr_sections=8 section_mb=4 pinned_sections=2"
if want buddy_split idle; then
	memhp_load buddy_split $BS_PARAMS
	ok=0; unload buddy_split && ok=1
	unload_case buddy_split idle $ok
else
	skip_state buddy_split idle "not selected (HOSTILE_USE_ONLY)"
fi

st="mid-work (WORKLOAD loop, EBUSY first)"
if want buddy_split "$st"; then
	memhp_load buddy_split $BS_PARAMS
	"$LOADGEN" buddy "$TMP/bs.ready" > "$TMP/bs.out" &
	PIDS+=($!)
	ok=0
	if wait_for 60 test -e "$TMP/bs.ready" && rmmod_refused buddy_split; then
		kill -TERM "${PIDS[-1]}"
		wait_pid 60 "${PIDS[-1]}" && ok=1
		cat "$TMP/bs.out"
	fi
	stop_pids
	unload buddy_split || ok=0
	unload_case buddy_split "$st" $ok
else
	skip_state buddy_split "$st" "not selected (HOSTILE_USE_ONLY)"
fi

st="with 8192 pages held (KERNEL_HOLD)"
if want buddy_split "$st"; then
	memhp_load buddy_split $BS_PARAMS
	ok=0
	bounded 60 "$LOADGEN" hold 8192 && unload buddy_split && ok=1
	unload_case buddy_split "$st" $ok
else
	skip_state buddy_split "$st" "not selected (HOSTILE_USE_ONLY)"
fi

# --- pfn_lookup ---------------------------------------------------------------
if want pfn_lookup idle; then
	memhp_load pfn_lookup
	ok=0; unload pfn_lookup && ok=1
	unload_case pfn_lookup idle $ok
else
	skip_state pfn_lookup idle "not selected (HOSTILE_USE_ONLY)"
fi

st="mid-work (a run, EBUSY first, then killed)"
if want pfn_lookup "$st"; then
	memhp_load pfn_lookup
	(echo "100000000 31" > $DEBUG/pfn_lookup/run) > /dev/null 2>&1 &
	PIDS+=($!)
	sleep 2
	ok=0
	rmmod_refused pfn_lookup && ok=1
	stop_pids
	wait_for 30 rmmod pfn_lookup 2>/dev/null || ok=0
	PAIRS_RAN=$((PAIRS_RAN + 1))
	unload_case pfn_lookup "$st" $ok
else
	skip_state pfn_lookup "$st" "not selected (HOSTILE_USE_ONLY)"
fi

# --- sparse_hotplug -----------------------------------------------------------
SHP=/sys/kernel/sparse_hotplug/sections
sparse_hp_load()
{
	memhp_load sparse_hotplug || return 1
	echo 1 > $TRACE/events/sparse_hotplug/enable
}
states_now()
{
	local b

	for b in $(memory_blocks); do
		echo "$b $(block_state "$b")"
	done
}
# Blocks the loops may leave offline: the user's doing, not the module's.
reonline()
{
	local b

	for b in $(memory_blocks); do
		[ "$(block_state "$b")" = offline ] && echo "$1" | grep -qx "$b online" &&
			echo online > "$MEMORY_SYSFS/memory$b/state"
	done
}
# The highest section that can be isolated now (released again), or none.
isolatable()
{
	local s

	for s in $(ls "$SHP" | sed 's/section//' | sort -rn); do
		[ "$s" = "$1" ] && continue
		if echo isolate > "$SHP/section$s/state" 2>/dev/null; then
			echo release > "$SHP/section$s/state"
			echo "$s"
			return 0
		fi
	done
	return 1
}

states0=$(states_now)
memtotal0=$(meminfo_kb MemTotal)
st="idle, tracepoints on"
if want sparse_hotplug "$st"; then
	sparse_hp_load
	ok=0; unload sparse_hotplug && ok=1
	unload_case sparse_hotplug "$st" $ok
	echo 0 > $TRACE/events/enable 2>/dev/null
else
	skip_state sparse_hotplug "$st" "not selected (HOSTILE_USE_ONLY)"
fi

# Offlining boot memory may dump a page it cannot move: announced.
echo 'memhp-expect: begin page dumped because:' > /dev/kmsg
st="mid-work (isolate and offline loops), tracepoints on"
if want sparse_hotplug "$st"; then
	sparse_hp_load
	iso=$(isolatable)
	cyc=
	for s in $(ls "$SHP" | sed 's/section//' | sort -rn); do
		[ "$s" = "$iso" ] && continue
		b=$(cat "$SHP/section$s/block")
		if echo offline > "$SHP/section$s/state" 2>/dev/null; then
			echo online > "$MEMORY_SYSFS/memory$b/state"
			cyc=$s
			break
		fi
	done
	ktap_print_msg "isolate/release loop on section ${iso:-none}, offline/online loop on section ${cyc:-none}"
	if [ -n "$iso" ]; then
		(while :; do
			echo isolate > "$SHP/section$iso/state"
			echo release > "$SHP/section$iso/state"
		done) > /dev/null 2>&1 &
		PIDS+=($!)
	fi
	if [ -n "$cyc" ]; then
		(while :; do
			echo offline > "$SHP/section$cyc/state"
			echo online > "$SHP/section$cyc/state"
		done) > /dev/null 2>&1 &
		PIDS+=($!)
	fi
	sleep 3
	ok=0; unload sparse_hotplug && ok=1
	stop_pids
	reonline "$states0"
	unload_case sparse_hotplug "$st" $ok
	echo 0 > $TRACE/events/enable 2>/dev/null
else
	skip_state sparse_hotplug "$st" "not selected (HOSTILE_USE_ONLY)"
fi

st="with a section isolated, tracepoints on"
if want sparse_hotplug "$st"; then
	sparse_hp_load
	iso=$(isolatable)
	ok=0
	if [ -n "$iso" ] && echo isolate > "$SHP/section$iso/state"; then
		ktap_print_msg "section $iso isolated; MemTotal $(meminfo_kb MemTotal) kB"
		unload sparse_hotplug && ok=1
		reonline "$states0"
		sync; echo 3 > /proc/sys/vm/drop_caches
		ktap_print_msg "after unload: MemTotal $memtotal0 -> $(meminfo_kb MemTotal) kB"
		[ "$(meminfo_kb MemTotal)" = "$memtotal0" ] || ok=0
		unload_case sparse_hotplug "$st" $ok
	else
		unload sparse_hotplug
		skip_state sparse_hotplug "$st" "no section could be isolated"
	fi
	echo 0 > $TRACE/events/enable 2>/dev/null
else
	skip_state sparse_hotplug "$st" "not selected (HOSTILE_USE_ONLY)"
fi
echo 'memhp-expect: end' > /dev/kmsg
[ "$(states_now)" = "$states0" ] || ktap_print_msg "block states differ from the start"

# --- virtio_mem_shim ----------------------------------------------------------
for d in /sys/bus/virtio/devices/virtio*; do
	[ "$(cat "$d/device" 2>/dev/null)" = 0x0018 ] && SHIM_DEV=$d && break
done
SHIM_KO=$(memhp_module_path virtio_mem_shim)

request()
{
	memhp-qmp qom-set path=vm0 property=requested-size value="$1" >/dev/null
}
plugged_is()
{
	[ "$(cat "$SHIM_DEV/plugged_size" 2>/dev/null)" = "$1" ]
}
memtotal_is()
{
	[ "$(meminfo_kb MemTotal)" = "$1" ]
}
shim_bound()
{
	[ "$(basename "$(readlink "$SHIM_DEV/driver" 2>/dev/null)")" = virtio_mem_shim ]
}
# shim_load ZONE: onlining by auto_online_blocks=online_ZONE (and, for a
# shim that still has its own online_type parameter, that too).
shim_load()
{
	local params=

	set_auto_online "online_$1"
	modinfo -F parm "$SHIM_KO" 2>/dev/null | grep -q '^online_type:' &&
		params="online_type=$1"
	memhp_load virtio_mem_shim $params || return 1
	shim_bound || basename "$SHIM_DEV" > /sys/bus/virtio/drivers/virtio_mem_shim/bind 2>/dev/null
	wait_for 10 shim_bound
}

ST_IDLE="idle (bound, nothing plugged)"
ST_MID="mid-work (unload while plugging 1 GiB)"
ST_PLUGGED="512 MiB plugged online_movable"
ST_REPRO1="reproduction 1 (512 MiB online_kernel, tmpfs 20000 files 300 MB)"
ST_PARTIAL="sbm: 130 MiB plugged, partial block offlined by user space"
ST_SBM_MID="sbm: unload while unplugging 1000 MiB to 2 MiB"
NS="not selected (HOSTILE_USE_ONLY)"
if [ -z "$SHIM_DEV" ] || [ -z "$SHIM_KO" ]; then
	for st in "$ST_IDLE" "$ST_MID" "$ST_PLUGGED" "$ST_REPRO1" "$ST_PARTIAL" "$ST_SBM_MID"; do
		skip_state virtio_mem_shim "$st" "no virtio-mem device or no virtio_mem_shim.ko"
	done
else
	request 0
	[ "$(basename "$(readlink "$SHIM_DEV/driver" 2>/dev/null)")" = virtio_mem ] &&
		basename "$SHIM_DEV" > /sys/bus/virtio/drivers/virtio_mem/unbind
	memtotal0=$(meminfo_kb MemTotal)

	if want virtio_mem_shim "$ST_IDLE"; then
		ok=0
		shim_load movable && wait_for 30 plugged_is 0 && unload virtio_mem_shim && ok=1
		unload_case virtio_mem_shim "$ST_IDLE" $ok
	else
		skip_state virtio_mem_shim "$ST_IDLE" "$NS"
	fi

	# All of it unplugged: the state of unload_under_load.sh.
	if want virtio_mem_shim "$ST_PLUGGED"; then
		ok=0
		if shim_load movable; then
			request $((512 * MIB))
			if wait_for 120 plugged_is $((512 * MIB)); then
				unload virtio_mem_shim && [ "$(qmp_memdev_size vm0)" = 0 ] &&
					[ "$(meminfo_kb MemTotal)" = "$memtotal0" ] && ok=1
			fi
			request 0
		fi
		ktap_print_msg "MemTotal $memtotal0 -> $(meminfo_kb MemTotal) kB"
		unload_case virtio_mem_shim "$ST_PLUGGED" $ok
	else
		skip_state virtio_mem_shim "$ST_PLUGGED" "$NS"
	fi

	# Midway (midway_wait, lib.sh): rmmod begins with the plug started
	# and not complete; an attempt that finds it complete is retried, a
	# case never midway fails.
	if want virtio_mem_shim "$ST_MID"; then
		try=0
		ok=1
		while [ $ok = 1 ]; do
			try=$((try + 1))
			ok=0
			mid=1
			shim_load movable && midway_slow $try || break
			request $((1024 * MIB)) &
			req=$!
			midway_wait "$SHIM_DEV" "$memtotal0" 0 $((1024 * MIB)) 120
			mid=$?
			unload virtio_mem_shim
			rc=$?
			wait $req
			[ $rc = 0 ] && [ "$(qmp_memdev_size vm0)" = 0 ] && ok=1
			request 0
			ktap_print_msg "attempt $try: rmmod began at $mid_seen"
			[ "$(meminfo_kb MemTotal)" = "$memtotal0" ] || ok=0
			[ $ok = 1 ] && [ $mid = 0 ] && break
			[ $ok = 1 ] && midway_retry $try "the plug of 1 GiB" || ok=0
		done
		ktap_print_msg "MemTotal $memtotal0 -> $(meminfo_kb MemTotal) kB"
		dmesg | grep 'could not be unplugged' | tail -n 1 | sed 's/^/# /'
		unload_case virtio_mem_shim "$ST_MID" $ok
	else
		skip_state virtio_mem_shim "$ST_MID" "$NS"
	fi

	# Sub-block mode: a partially plugged block (2 of its 64 sub-blocks),
	# offlined by user space (its fake-offline sub-blocks skipped), then
	# unload.
	if want virtio_mem_shim "$ST_PARTIAL"; then
		ok=0
		if shim_load movable && [ "$(cat "$SHIM_DEV/mode")" = sbm ]; then
			request $((130 * MIB))
			if wait_for 120 plugged_is $((130 * MIB)); then
				b=$(awk '$4 == "added" && $NF != "64/64" { print $2; exit }' \
					$DEBUG/virtio_mem_shim/*/blocks)
				[ -n "$b" ] && echo offline > "$MEMORY_SYSFS/memory$b/state"
				ktap_print_msg "partial block memory$b: $(block_state "$b")"
				[ "$(block_state "$b")" = offline ] &&
					unload virtio_mem_shim && [ "$(qmp_memdev_size vm0)" = 0 ] &&
					[ "$(meminfo_kb MemTotal)" = "$memtotal0" ] && ok=1
			fi
			request 0
		fi
		ktap_print_msg "MemTotal $memtotal0 -> $(meminfo_kb MemTotal) kB"
		unload_case virtio_mem_shim "$ST_PARTIAL" $ok
	else
		skip_state virtio_mem_shim "$ST_PARTIAL" "$NS"
	fi

	# Midway as above, unplugging.
	if want virtio_mem_shim "$ST_SBM_MID"; then
		try=0
		ok=1
		while [ $ok = 1 ]; do
			try=$((try + 1))
			ok=0
			mid=1
			shim_load movable && [ "$(cat "$SHIM_DEV/mode")" = sbm ] || break
			# vm0 is 1 GiB here: 1000 MiB, not a multiple of a block.
			request $((1000 * MIB))
			if wait_for 120 plugged_is $((1000 * MIB)) &&
			   wait_for 60 memtotal_is $((memtotal0 + 1000 * 1024)); then
				request $((2 * MIB)) &
				req=$!
				midway_wait "$SHIM_DEV" "$memtotal0" $((1000 * MIB)) $((2 * MIB)) 120
				mid=$?
				unload virtio_mem_shim
				rc=$?
				wait $req
				[ $rc = 0 ] && [ "$(qmp_memdev_size vm0)" = 0 ] &&
					[ "$(meminfo_kb MemTotal)" = "$memtotal0" ] && ok=1
				ktap_print_msg "attempt $try: rmmod began at $mid_seen"
			fi
			request 0
			[ $ok = 1 ] && [ $mid = 0 ] && break
			[ $ok = 1 ] && midway_retry $try "the unplug to 2 MiB" || ok=0
		done
		ktap_print_msg "MemTotal $memtotal0 -> $(meminfo_kb MemTotal) kB"
		unload_case virtio_mem_shim "$ST_SBM_MID" $ok
	else
		skip_state virtio_mem_shim "$ST_SBM_MID" "$NS"
	fi

	# Kernel memory in the plugged ZONE_NORMAL memory;
	# what cannot be unplugged stays as System RAM, owned by nobody.
	if want virtio_mem_shim "$ST_REPRO1"; then
		ok=0
		if shim_load kernel; then
			request $((512 * MIB))
			if wait_for 120 plugged_is $((512 * MIB)); then
				mkdir -p "$TMP/fill"
				mount -t tmpfs -o size=400m none "$TMP/fill"
				t0=$(date +%s)
				bounded 300 python3 -c '
import os, sys
d = sys.argv[1]
chunk = bytes(range(256)) * 4096          # 1 MiB
for i in range(20000):
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(chunk if i < 300 else b"x" * 64)
' "$TMP/fill"
				ktap_print_msg "tmpfs: $(ls "$TMP/fill" | wc -l) files," \
					"$(du -sm "$TMP/fill" | cut -f1) MB in $(($(date +%s) - t0)) s;" \
					"MemTotal $(meminfo_kb MemTotal) kB"
				t0=$(date +%s)
				unload virtio_mem_shim
				rc=$?
				[ $rc = 0 ] && ok=1
				ktap_print_msg "rmmod exit $rc after $(($(date +%s) - t0)) s;" \
					"host size $(qmp_memdev_size vm0)," \
					"MemTotal $(meminfo_kb MemTotal) kB (base $memtotal0)"
				dmesg | grep 'could not be unplugged' | tail -n 1 | sed 's/^/# /'
				request 0
			fi
		fi
		unload_case virtio_mem_shim "$ST_REPRO1" $ok
		if mountpoint -q "$TMP/fill"; then
			rm -rf "${TMP:?}/fill/"*
			umount "$TMP/fill"
		fi
	else
		skip_state virtio_mem_shim "$ST_REPRO1" "$NS"
	fi
	set_auto_online offline
fi

ktap_print_msg "figures: $PAIRS_RAN object x operation pairs ran (of $STATES module states: unload," \
	"then $READERS readers each) in $(($(date +%s) - T0)) s"
ktap_finished
