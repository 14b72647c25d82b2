#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers shared by the memhp selftests. They run as root inside a guest
# started by tools/testing/vm/memhp-vm (MEMHP_TOP is the repository, and
# memhp-qmp is on PATH); nothing here is meant for the host.

MEMHP_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ktap_helpers.sh
. "$MEMHP_LIB_DIR/ktap_helpers.sh"

MEMHP_TOP=${MEMHP_TOP:-$(cd "$MEMHP_LIB_DIR/../../../.." && pwd)}
MEMORY_SYSFS=/sys/devices/system/memory
export PATH="$MEMHP_TOP/tools/testing/guest:$PATH"

# Skip the whole test (exit 4) unless we are root in a memhp guest.
memhp_require_guest()
{
	if [ "$(id -u)" != 0 ]; then
		ktap_print_header; ktap_set_plan 1
		ktap_test_skip "$(basename "$0")" "must run as root"
		ktap_finished
	fi
	if [ ! -e /dev/virtio-ports/org.memhp.qmp ]; then
		ktap_print_header; ktap_set_plan 1
		ktap_test_skip "$(basename "$0")" "not inside a memhp-vm guest (no QMP relay port)"
		ktap_finished
	fi
}

# Where `make` put the modules for the running kernel (one tree per kernel
# release, see the top Makefile).
MEMHP_MODDIR=${MEMHP_MODDIR:-$MEMHP_TOP/build/modules/$(uname -r)}

# The path of one of our modules, e.g. memhp_module_path sparse_hotplug.
memhp_module_path()
{
	local ko

	ko=$(find "$MEMHP_MODDIR/mm" "$MEMHP_MODDIR/drivers" -name "$1.ko" 2>/dev/null | head -n1)
	[ -n "$ko" ] && echo "$ko"
}

# Every module the suite builds (names without .ko), one per line.
memhp_all_modules()
{
	find "$MEMHP_MODDIR/mm" "$MEMHP_MODDIR/drivers" -name '*.ko' -printf '%f\n' 2>/dev/null |
		sed 's/\.ko$//' | sort
}

memhp_module_loaded()
{
	[ -d "/sys/module/$1" ]
}

# memhp_load NAME [params...]
memhp_load()
{
	local name=$1 ko

	shift
	memhp_module_loaded "$name" && return 0
	ko=$(memhp_module_path "$name") ||
		{ echo "# no $name.ko in $MEMHP_MODDIR: run make KVER=$(uname -r) first"; return 1; }
	insmod "$ko" "$@"
}

memhp_unload()
{
	memhp_module_loaded "$1" || return 0
	rmmod "$1"
}

# meminfo_kb FIELD: a /proc/meminfo value in kB.
meminfo_kb()
{
	awk -v f="$1:" '$1 == f { print $2 }' /proc/meminfo
}

block_size_bytes()
{
	echo $((0x$(cat $MEMORY_SYSFS/block_size_bytes)))
}

# The memory block ids present now, sorted numerically.
memory_blocks()
{
	local d

	for d in "$MEMORY_SYSFS"/memory[0-9]*; do
		[ -d "$d" ] && echo "${d##*memory}"
	done | sort -n
}

block_state()
{
	cat "$MEMORY_SYSFS/memory$1/state" 2>/dev/null
}

# dimm_add DIMM_ID MEM_ID SIZE: hot-add a SIZE-byte ACPI pc-dimm DIMM_ID
# backed by a new memory-backend-ram MEM_ID, over the guest's QMP relay.
dimm_add()
{
	memhp-qmp object-add qom-type=memory-backend-ram id="$2" size="$3" >/dev/null &&
		memhp-qmp device_add driver=pc-dimm id="$1" memdev="$2" >/dev/null
}

# dimm_del DIMM_ID [MEM_ID]: hot-remove the pc-dimm DIMM_ID (its blocks
# offline already), wait (60 s at most) for QEMU's DEVICE_DELETED, then
# delete its backend MEM_ID, if given.
dimm_del()
{
	memhp-qmp device_del id="$1" >/dev/null &&
		memhp-qmp x-memhp-wait-event event=DEVICE_DELETED "match={\"device\":\"$1\"}" \
			timeout=60 >/dev/null &&
		{ [ -z "${2:-}" ] || memhp-qmp object-del id="$2" >/dev/null; }
}

# wait_new_blocks BEFORE OUT COUNT: wait (30 s at most) until COUNT memory
# blocks exist that the file BEFORE (memory_blocks output) does not list,
# and write them to OUT, sorted numerically. OUT keeps the last list seen.
wait_new_blocks()
{
	wait_for 30 __new_blocks_are "$@"
}

__new_blocks_are()
{
	comm -13 <(sort "$1") <(memory_blocks | sort) | sort -n > "$2"
	[ "$(wc -l < "$2")" -eq "$3" ]
}

# memhp_blocks_gone BLOCK...: true when none of these memory blocks exists
# (after a DIMM's removal, with wait_for).
memhp_blocks_gone()
{
	local b

	for b in "$@"; do
		[ -e "$MEMORY_SYSFS/memory$b" ] && return 1
	done
	return 0
}

# wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds.
wait_for()
{
	local deadline=$(($(date +%s) + $1))

	shift
	while ! "$@"; do
		[ "$(date +%s)" -ge "$deadline" ] && return 1
		sleep 0.2
	done
}

# The auto-online policy for hot-added memory, set explicitly by tests:
# Debian leaves hot-added memory offline by default.
set_auto_online()
{
	echo "$1" > "$MEMORY_SYSFS/auto_online_blocks"
}

# The size in bytes of the first memory device QEMU reports for an id.
qmp_memdev_size()
{
	memhp-qmp query-memory-devices | python3 -c '
import json, sys
for d in json.load(sys.stdin):
    if d["data"].get("id") == sys.argv[1]:
        print(d["data"]["size"])
        break
' "$1"
}

# The path of a helper program built by the selftests Makefile: beside the
# scripts when installed, else in build/selftests (make selftests).
memhp_bin()
{
	if [ -x "$MEMHP_LIB_DIR/$1" ]; then
		echo "$MEMHP_LIB_DIR/$1"
	else
		echo "$MEMHP_TOP/build/selftests/$1"
	fi
}

# try_write FILE VALUE: "ok", or the error text of the failed write
# (e.g. "Invalid argument"), for checking that bad input gets its errno.
try_write()
{
	local out

	out=$( { echo "$2" > "$1"; } 2>&1 ) && { echo ok; return; }
	echo "${out##*: }"
}

# settle: write back, drop the page cache and slab caches, let a second
# pass, before a measurement of free memory.
settle()
{
	sync
	echo 3 > /proc/sys/vm/drop_caches
	sleep 1
}

# page_census: sets census[free] (MemFree + per-cpu free lists),
# census[pcp] (the per-cpu free lists: "count" in /proc/zoneinfo),
# census[unacc] (memory no meminfo counter accounts for: MemTotal minus
# MemFree, the per-cpu lists and every counter of used memory, so pages
# handed out by alloc_pages() that nothing tracks) and the meminfo fields
# of CENSUS_FIELDS, in kB, after settle and after folding the per-cpu
# vmstat deltas (stat_refresh). MemFree alone is no measure of a leak:
# the per-cpu lists hold tens of MiB at rest and move it by as much.
declare -gA census
CENSUS_FIELDS="MemTotal MemFree Slab SUnreclaim VmallocUsed Percpu"
page_census()
{
	local k v

	settle
	echo 1 > /proc/sys/vm/stat_refresh
	while read -r k v; do
		census[$k]=$v
	done < <(awk '
	FILENAME == "/proc/zoneinfo" { if ($1 == "count:") pcp += $2 * 4; next }
	{ sub(":", "", $1); m[$1] = $2 }
	END {
		used = m["Buffers"] + m["Cached"] + m["AnonPages"] + m["Slab"] + \
		       m["KernelStack"] + m["PageTables"] + m["VmallocUsed"] + \
		       m["Percpu"] + m["Hugetlb"]
		print "pcp", pcp
		print "free", m["MemFree"] + pcp
		print "unacc", m["MemTotal"] - m["MemFree"] - pcp - used
		split("'"$CENSUS_FIELDS"'", f, " ")
		for (i in f)
			print f[i], m[f[i]]
	}' /proc/zoneinfo /proc/meminfo)
}

# census_line WHEN: the census as one KTAP diagnostic line.
census_line()
{
	ktap_print_msg "$1: free $((census[free])) kB (MemFree ${census[MemFree]} + per-cpu ${census[pcp]}), unaccounted ${census[unacc]} kB, Slab ${census[Slab]} kB"
}

# census_before: take the census into census_before[] (and print it).
declare -gA census_before census_after
census_before()
{
	local f

	page_census
	for f in $CENSUS_FIELDS free unacc pcp; do
		census_before[$f]=${census[$f]}
	done
	census_line "before the cycles"
}

# census_after WHEN: take the census into census_after[] and print each
# field's change. Pages freed a little later (RCU, deferred work) are no
# leak: while unaccounted memory is 1 MiB or more above census_before, the
# census is taken again, up to 3 times 5 s apart.
census_after()
{
	local f i

	page_census
	census_line "$1"
	for i in 1 2 3; do
		[ $((census[unacc] - census_before[unacc])) -lt 1024 ] && break
		sleep 5
		page_census
		census_line "again after $((i * 5)) s"
	done
	for f in $CENSUS_FIELDS free unacc pcp; do
		census_after[$f]=${census[$f]}
		ktap_print_msg "$f: ${census_before[$f]} -> ${census_after[$f]} kB ($((census_after[$f] - census_before[$f])) kB)"
	done
}

# census_grew FIELD: census_after minus census_before, in kB.
census_grew()
{
	echo $((census_after[$1] - census_before[$1]))
}

# --- Unloads midway through a plug or an unplug -----------------------------
# A case that unloads virtio_mem_shim "while plugging" (or unplugging)
# asserts that the operation had started and not reached its target when
# rmmod began: a fast guest (KVM) may finish first, and the unload would then
# be one "after" the operation. midway_wait samples the device's plugged_size
# and MemTotal without forking and returns on the sample taken just before
# the caller's rmmod. The caller sends the request in the background and
# calls midway_wait at once: memhp-qmp itself takes longer under TCG than a
# plug of 1 GiB, which was complete by the time it returned. The device takes a whole request at once and adding
# and onlining follow block by block, so the operation is complete only when
# both plugged_size and MemTotal (above the base) are at the target.
# A case that finds it complete unloads anyway (its checks still run) and
# tries again, MIDWAY_TRIES attempts in all; one that was never midway fails
# ("not midway"), it never passes.
# MEMHP_MIDWAY_FORCE_COMPLETE=1 forces the fast path on purpose: the case
# waits for the operation to complete before rmmod and does not retry, so it
# fails.
MIDWAY_TRIES=3

midway_forced()
{
	[ "${MEMHP_MIDWAY_FORCE_COMPLETE:-0}" = 1 ]
}

# __midway_sample DEV BASE_KB: mid_dev (DEV's plugged_size) and mid_mem
# (MemTotal above BASE_KB), in bytes; shell builtins only.
__midway_sample()
{
	local k v u

	mid_dev=
	{ read -r mid_dev < "$1/plugged_size"; } 2>/dev/null
	while read -r k v u; do
		[ "$k" = MemTotal: ] && break
	done < /proc/meminfo
	mid_mem=$(((v - $2) * 1024))
}

# midway_wait DEV BASE_KB FROM TO SECS: wait, at most SECS, until the plug
# or unplug taking DEV from FROM to TO bytes has started (polling without
# a pause), or with MEMHP_MIDWAY_FORCE_COMPLETE=1 until it is complete.
# True if the last sample is midway: started and not complete. The sample
# is in mid_dev and mid_mem, in words in mid_seen; why it is not midway
# (complete, not started) in mid_why.
midway_wait()
{
	local dev=$1 base=$2 from=$3 to=$4 end=$((SECONDS + $5)) done

	while :; do
		__midway_sample "$dev" "$base"
		done=0
		[ "$mid_dev" = "$to" ] && [ "$mid_mem" = "$to" ] && done=1
		if [ -z "$mid_dev" ]; then
			:	# not bound yet
		elif midway_forced; then
			[ $done = 1 ] && break
		elif [ "$mid_dev" != "$from" ] || [ "$mid_mem" != "$from" ]; then
			break
		fi
		[ $SECONDS -ge $end ] && break
		midway_forced && sleep 0.2
	done
	mid_seen="device plugged $((${mid_dev:-0} >> 20)) MiB, MemTotal +$((mid_mem >> 20)) MiB (from $((from >> 20)) to $((to >> 20)) MiB)"
	if [ -z "$mid_dev" ]; then
		mid_why="unknown (device not bound)"
	elif [ $done = 1 ]; then
		mid_why=complete
	elif [ "$mid_dev" = "$from" ] && [ "$mid_mem" = "$from" ]; then
		mid_why="not started"
	else
		mid_why=midway
		return 0
	fi
	return 1
}

# midway_retry TRY WHAT: attempt TRY found WHAT not midway at rmmod
# (mid_why): true if another attempt is allowed, else says why not.
midway_retry()
{
	if midway_forced; then
		ktap_print_msg "not midway: $2 was $mid_why at rmmod (MEMHP_MIDWAY_FORCE_COMPLETE=1: no retry)"
		return 1
	fi
	if [ "$1" -ge $MIDWAY_TRIES ]; then
		ktap_print_msg "not midway in $1 attempts (the last: $2 was $mid_why at rmmod)"
		return 1
	fi
	ktap_print_msg "attempt $1: $2 was $mid_why at rmmod; again"
	return 0
}

# midway_slow TRY: from the second attempt on, virtio_mem_shim (loaded)
# plugs and adds one unit per request (plug_batch=1, add_batch=1): more
# steps, the same operation.
midway_slow()
{
	local p=/sys/module/virtio_mem_shim/parameters

	[ "$1" -gt 1 ] || return 0
	echo 1 > $p/plug_batch && echo 1 > $p/add_batch
}
