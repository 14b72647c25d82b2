#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-vm: --mem 3G --append mem=2G --append memory_hotplug.memmap_on_memory=1
# memhp-budget: 110
#
# sparse_hotplug's probe/remove of RAM hidden at boot. QEMU's pc machine
# puts 2 GiB of a 3 GiB guest below 4 GiB and 1 GiB at [4 GiB, 5 GiB);
# mem=2G hides the latter from the kernel, /sys/firmware/memmap still
# lists it as System RAM. The module is told ranges= that hidden RAM, a
# non-RAM range (the PCI hole at 2 GiB) and a range of present boot RAM;
# every error path must answer its errno and change nothing; 20
# probe/online/remove cycles must each restore MemTotal, while the debugfs
# section table is read in a loop; unloading removes what probe added,
# except a block it cannot offline, which it leaves with a logged reason
# (it changes the guest for good); the tracepoints count with perf and
# tools/bpftrace/online_latency.bt prints histograms. Last, the guest
# boots with memory_hotplug.memmap_on_memory=1: a 128 MiB pc-dimm holds its
# own memmap, and the offline report counts exactly those pages.

. "$(dirname "$0")/lib.sh"

SHP=/sys/kernel/sparse_hotplug
HIDDEN=$((4 << 30))
HIDDEN_END=$((5 << 30))
PCI_HOLE=$((2 << 30))
BOOT_RAM=$((1 << 30))
RANGES=$(printf '%#x-%#x,%#x-%#x,%#x-%#x' $HIDDEN $HIDDEN_END \
	$PCI_HOLE $((PCI_HOLE + (128 << 20))) $BOOT_RAM $((BOOT_RAM + (128 << 20))))

memhp_require_guest
ktap_print_header
ktap_set_plan 15

tmp=$(mktemp -d)
cleanup()
{
	[ -n "$bt" ] && kill "$bt" 2>/dev/null
	[ -n "$pin" ] && kill "$pin" 2>/dev/null
	[ -n "$reader" ] && kill "$reader" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT


# MemTotal, blocks, our /proc/iomem entries, blocks probe added (none
# when the module is not loaded, as at the start).
snapshot()
{
	{ meminfo_kb MemTotal; memory_blocks; grep -c sparse_hotplug /proc/iomem;
	  cat $SHP/probed; } > "$1"
}

grep -q "mem=2G" /proc/cmdline || ktap_exit_fail_msg "guest not booted with mem=2G"
mount -t debugfs none /sys/kernel/debug 2>/dev/null
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
set_auto_online offline

# 1: bad ranges= refuse the load
ok=1
for r in 0x100000000 0x100000001-0x200000000 banana 1G-0x100000 ""; do
	[ -z "$r" ] && continue
	if memhp_load sparse_hotplug ranges="$r" 2>/dev/null; then
		ktap_print_msg "ranges=$r accepted"
		ok=0
		memhp_unload sparse_hotplug
	fi
done
ktap_test_result "load refuses malformed or misaligned ranges=" [ $ok = 1 ]

memhp_load sparse_hotplug ranges="$RANGES" || ktap_exit_fail_msg "cannot load sparse_hotplug ranges=$RANGES"
# How the module tells firmware RAM (ram_check): "e820" or
# "firmware_memmap" (/sys/firmware/memmap's entries) must let probe work;
# only "none", where the kernel gives a module neither, makes it answer
# EOPNOTSUPP, and only then do the cases that need a successful probe
# skip. Any other answer to the PCI hole (in ranges=, not RAM) fails
# case 2, EOPNOTSUPP included.
noprobe=
nxio="No such device or address"
ram_check=$(cat $SHP/ram_check 2>&1)
ktap_print_msg "ram_check: $ram_check"
if [ "$ram_check" = none ]; then
	# A kernel that has the map but whose map the module could not find
	# or read is a failure of the module, not a reason to skip.
	[ -d /sys/firmware/memmap ] &&
		ktap_exit_fail_msg "ram_check is none although /sys/firmware/memmap exists (kernel log: $(dmesg | grep -m1 'firmware memory map unreadable'))"
	nxio="Operation not supported"
	noprobe="ram_check is none: this kernel exports e820__mapped_raw_any() to KVM only and has no firmware memory map (/sys/firmware/memmap, CONFIG_FIRMWARE_MEMMAP=y) (Documentation/admin-guide/sparse_hotplug.rst)"
	ktap_print_msg "$noprobe"
fi
ktap_print_msg "ranges=$RANGES; firmware RAM: $(for d in /sys/firmware/memmap/*; do
	[ "$(cat $d/type)" = "System RAM" ] && echo -n "$(cat $d/start)-$(cat $d/end) "; done)"

# 2: every error path: errno, and nothing changes
snapshot "$tmp/s0"
ok=1
check()
{
	local got

	got=$(try_write "$SHP/$1" "$2")
	[ "$got" = "$3" ] || { ktap_print_msg "$1 '$2': '$got', want '$3'"; ok=0; }
}
check probe banana "Invalid argument"
check probe "" "Invalid argument"
check probe $((HIDDEN + 4096)) "Invalid argument"
check probe $((8 << 30)) "Numerical result out of range"
check probe $((HIDDEN - (128 << 20))) "Numerical result out of range"
check probe $BOOT_RAM "File exists"
# the end of the block would wrap past 2^64, or no block starts there
check probe 0xfffffffff8000000 "Invalid argument"
check probe 0xfffffffffffff000 "Invalid argument"
check probe 0xffffffffffffffff "Invalid argument"
check probe 0xfffffffff0000000 "Numerical result out of range"
check remove 0xfffffffff8000000 "No such file or directory"
check probe $PCI_HOLE "$nxio"
check remove $HIDDEN "No such file or directory"
check remove $BOOT_RAM "No such file or directory"
check remove $((HIDDEN + 1)) "Invalid argument"
snapshot "$tmp/s1"
ktap_test_result "probe/remove errors: EINVAL (also for an end past 2^64), ERANGE, EEXIST, ENXIO, ENOENT; nothing changed" \
	eval '[ $ok = 1 ] && cmp -s "$tmp/s0" "$tmp/s1"'

bs=$(block_size_bytes)
if [ -z "$noprobe" ]; then
	# 3: probe adds one offline block, named in /proc/iomem
	blk=$((HIDDEN / $(block_size_bytes)))
	r=$(try_write $SHP/probe $HIDDEN)
	grep sparse_hotplug /proc/iomem | sed 's/^/# /'
	ktap_test_result "probe $(printf %#x $HIDDEN): block $blk offline, System RAM (sparse_hotplug)" eval \
		'[ "$r" = ok ] && [ "$(block_state $blk)" = offline ] &&
		 grep -q "100000000-107ffffff : System RAM (sparse_hotplug)" /proc/iomem &&
		 [ "$(cat $SHP/sections/section$blk/state)" = offline ] &&
		 [ "$(cat $SHP/probed)" = "$(printf %#x $HIDDEN)" ]'

	# 4: probing it again
	ktap_test_result "probe of a present block: EEXIST" \
		[ "$(try_write $SHP/probe $HIDDEN)" = "File exists" ]

	# 5: online via the section, remove offlines and removes
	m0=$(meminfo_kb MemTotal)
	try_write $SHP/sections/section$blk/state online_movable > /dev/null
	m1=$(meminfo_kb MemTotal)
	r=$(try_write $SHP/remove $HIDDEN)
	ktap_print_msg "MemTotal $m0 -> $m1 -> $(meminfo_kb MemTotal) kB, remove: $r"
	ktap_test_result "online then remove: MemTotal +128 MiB and back, block gone" eval \
		'[ $((m1 - m0)) -eq 131072 ] && [ "$r" = ok ] && [ "$(meminfo_kb MemTotal)" = "$m0" ] &&
		 [ ! -e $MEMORY_SYSFS/memory$blk ] && ! grep -q sparse_hotplug /proc/iomem'

	# 6: 20 cycles over the hidden GiB, auto-onlined, while the debugfs
	# section table is read in a loop (the table drops its lock between
	# sections, so the add and remove of blocks go on meanwhile)
	set_auto_online online_movable
	ok=1
	TABLE=/sys/kernel/debug/sparse_hotplug/sections
	(
		n=0
		while [ ! -e "$tmp/stop" ]; do
			cat $TABLE > "$tmp/table" || echo "read failed" >> "$tmp/table_errors"
			awk 'NR == 1 && $1 != "section" { bad = 1 }
			     NR > 1 && (NF < 17 || $1 !~ /^[0-9]+$/) { bad = 1 } END { exit bad }' "$tmp/table" ||
				echo "malformed" >> "$tmp/table_errors"
			n=$((n + 1))
		done
		echo $n > "$tmp/table_reads"
	) &
	reader=$!
	start=$(date +%s%N)
	for i in $(seq 0 19); do
		addr=$((HIDDEN + (i % 8) * bs))
		r=$(try_write $SHP/probe $addr)
		[ "$r" = ok ] || { ktap_print_msg "cycle $i probe: $r"; ok=0; break; }
		[ "$(meminfo_kb MemTotal)" = $((m0 + 131072)) ] || { ktap_print_msg "cycle $i: MemTotal $(meminfo_kb MemTotal)"; ok=0; }
		r=$(try_write $SHP/remove $addr)
		[ "$r" = ok ] || { ktap_print_msg "cycle $i remove: $r"; ok=0; break; }
		[ "$(meminfo_kb MemTotal)" = "$m0" ] || { ktap_print_msg "cycle $i: MemTotal $(meminfo_kb MemTotal) after remove"; ok=0; }
	done
	ktap_print_msg "20 cycles in $((($(date +%s%N) - start) / 1000000)) ms"
	touch "$tmp/stop"
	wait $reader
	reader=
	ktap_print_msg "table read $(cat "$tmp/table_reads") times meanwhile, errors: $(cat "$tmp/table_errors" 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
	snapshot "$tmp/s2"
	ktap_test_result "20 probe/online/remove cycles, MemTotal restored each time, table read meanwhile" \
		eval '[ $ok = 1 ] && cmp -s "$tmp/s0" "$tmp/s2" && [ ! -e "$tmp/table_errors" ] &&
		      [ "$(cat "$tmp/table_reads")" -ge 1 ]'

	# 7: the event log has them all
	n=$(awk '!/^#/ && $3 >= 32 && $3 < 40 && $7 == "ok"' /sys/kernel/debug/sparse_hotplug/events | wc -l)
	ktap_test_result "event log: $n transitions of hidden-RAM blocks (>= 41)" [ "$n" -ge 41 ]

	# 8: perf counts the tracepoints
	if command -v perf > /dev/null; then
		perf stat -x, -e 'sparse_hotplug:*' -- sh -c \
			"echo $HIDDEN > $SHP/probe && echo $HIDDEN > $SHP/remove" 2> "$tmp/perf" > /dev/null
		sed 's/^/# /' "$tmp/perf"
		ktap_test_result "perf stat -e 'sparse_hotplug:*': 2 hidden_ram, 2 block_transition" eval \
			'grep -q "^2,,sparse_hotplug:hidden_ram" "$tmp/perf" &&
			 grep -q "^2,,sparse_hotplug:block_transition" "$tmp/perf"'
	else
		ktap_test_fail "perf not installed (tools/setup.sh installs linux-perf)"
	fi

	# 9: bpftrace prints latency histograms
	if command -v bpftrace > /dev/null; then
		bpftrace "$MEMHP_TOP/tools/bpftrace/online_latency.bt" > "$tmp/bt" 2>&1 &
		bt=$!
		wait_for 180 grep -q "Tracing" "$tmp/bt"
		for i in 0 1 2; do
			echo $((HIDDEN + i * bs)) > $SHP/probe
			echo $((HIDDEN + i * bs)) > $SHP/remove
		done
		kill -INT $bt
		# Bounded: bpftrace still attaching ignores SIGINT (its first start
		# on 6.12 under TCG took 77 s on a loaded host).
		if ! wait_for 120 eval '! kill -0 $bt 2>/dev/null'; then
			# Why it did not exit: its state, signal masks, kernel stack
			# and threads (Documentation/known-issues.rst).
			ktap_print_msg "bpftrace still running 120 s after SIGINT:" \
				"$(grep -E '^(State|SigBlk|SigIgn|SigCgt|Threads):' /proc/$bt/status | tr '\t\n' '  ')"
			for t in /proc/$bt/task/*; do
				ktap_print_msg "  task ${t##*/} $(cat "$t/comm") wchan $(cat "$t/wchan"):" \
					"$(tr '\n' ' ' < "$t/stack" 2>/dev/null | cut -c1-300)"
			done
			kill -KILL $bt
		fi
		wait $bt
		bt=
		sed 's/^/# /' "$tmp/bt" | head -40
		ktap_test_result "online_latency.bt: online and offline histograms, 3 each" eval \
			'grep -q "^@online_us:" "$tmp/bt" && grep -q "^@offline_us:" "$tmp/bt" &&
			 grep -q "^@online_count: 3" "$tmp/bt" && grep -q "^@offline_count: 3" "$tmp/bt"'
	else
		ktap_test_fail "bpftrace not installed (tools/setup.sh installs it)"
	fi

	# 10: isolate on hot-added memory, then remove with an isolated section
	echo $HIDDEN > $SHP/probe
	r1=$(try_write $SHP/sections/section$blk/state isolate)
	r2=$(try_write $SHP/remove $HIDDEN)
	ktap_test_result "remove of a block whose section is isolated" eval \
		'[ "$r1" = ok ] && [ "$r2" = ok ] && [ "$(meminfo_kb MemTotal)" = "$m0" ]'

	# 11: unload removes what probe added
	set_auto_online offline
	echo $HIDDEN > $SHP/probe
	echo $((HIDDEN + bs)) > $SHP/probe
	echo online_movable > $SHP/sections/section$((blk + 1))/state
	before=$(grep -c sparse_hotplug /proc/iomem)
	memhp_unload sparse_hotplug
	ktap_print_msg "$before blocks added before rmmod"
	ktap_test_result "rmmod removes the probed blocks (one online, one offline)" eval \
		'[ "$before" = 2 ] && ! grep -q sparse_hotplug /proc/iomem && [ ! -e $MEMORY_SYSFS/memory$blk ] &&
		 [ "$(meminfo_kb MemTotal)" = "$m0" ]'
else
	for t in "probe $(printf %#x $HIDDEN): block $((HIDDEN / $(block_size_bytes))) offline, System RAM (sparse_hotplug)" \
		 "probe of a present block: EEXIST" \
		 "online then remove: MemTotal +128 MiB and back, block gone" \
		 "20 probe/online/remove cycles, MemTotal restored each time, table read meanwhile" \
		 "event log: transitions of hidden-RAM blocks (>= 41)" \
		 "perf stat -e 'sparse_hotplug:*': 2 hidden_ram, 2 block_transition" \
		 "online_latency.bt: online and offline histograms, 3 each" \
		 "remove of a block whose section is isolated" \
		 "rmmod removes the probed blocks (one online, one offline)"; do
		ktap_test_skip "$t" "$noprobe"
	done
	memhp_unload sparse_hotplug
fi

# 12: without ranges= nothing can be probed
memhp_load sparse_hotplug
ktap_test_result "no ranges=: probe answers ERANGE" \
	[ "$(try_write $SHP/probe $HIDDEN)" = "Numerical result out of range" ]
memhp_unload sparse_hotplug

# 13: everything as it was
snapshot_nomod()
{
	{ meminfo_kb MemTotal; memory_blocks; grep -c sparse_hotplug /proc/iomem; } > "$1"
}
snapshot_nomod "$tmp/s3"
ktap_test_result "MemTotal, block list and /proc/iomem as at the start" \
	cmp -s "$tmp/s0" "$tmp/s3"

if [ -z "$noprobe" ]; then
	# 14: a probed block with a pinned page: rmmod leaves it, saying why
	memhp_load sparse_hotplug ranges="$RANGES"
	echo $HIDDEN > $SHP/probe
	echo online_kernel > $SHP/sections/section$blk/state
	"$(memhp_bin memhp_pin)" 400 $((HIDDEN >> 12)) $(((HIDDEN + bs) >> 12)) "$tmp/pinned" > "$tmp/pin.log" &
	pin=$!
	wait_for 120 test -s "$tmp/pinned"
	cat "$tmp/pin.log"
	memhp_unload sparse_hotplug
	why=$(dmesg | grep "stays added: " | tail -n1)
	stay=$(dmesg | grep "stay added as System RAM" | tail -n1)
	ktap_print_msg "${why#*] }"
	ktap_print_msg "${stay#*] }"
	ktap_test_result "rmmod leaves a blocked probed block online, logging why and listing it" eval \
		'[ -s "$tmp/pinned" ] && echo "$why" | grep -q "stays added: blocked: pfn" &&
		 echo "$stay" | grep -q "1 memory block(s) stay added as System RAM (sparse_hotplug): $(printf %#x $HIDDEN)$" &&
		 [ "$(block_state $blk)" = online ] && grep -q "System RAM (sparse_hotplug)" /proc/iomem'
	kill -USR1 $pin
	wait $pin
	pin=
else
	ktap_test_skip "rmmod leaves a blocked probed block online, logging why and listing it" "$noprobe"
fi

# 15: memmap_on_memory: a block-sized pc-dimm holds its own memmap
# (mhp_supports_memmap_on_memory() wants exactly one block); the report
# counts the block's nr_vmemmap_pages (block size / 4 KiB * 64 bytes of
# struct page, in pages) as memmap_on_memory, the rest as usual, and the
# block offlines.
memhp_load sparse_hotplug || ktap_exit_fail_msg "cannot load sparse_hotplug"
spb=$((bs / 0x$(cat $SHP/section_size_bytes)))
memory_blocks > "$tmp/blocks1"
want=$((bs / 4096 * 64 / 4096))
ok=0
if dimm_add mom-dimm0 mom-mem0 $bs && wait_new_blocks "$tmp/blocks1" "$tmp/new1" 1; then
	d=$(cat "$tmp/new1")
	sd=$((d * spb))
	r=$(try_write $SHP/sections/section$sd/state online_movable)
	rep=$SHP/sections/section$sd/offline_report
	sed 's/^/# /' $rep
	got=$(sed -n 's/^memmap_on_memory //p' $rep)
	sum=$(awk '!/^verdict/ { s += $2 } END { print s }' $rep)
	v=$(sed -n 's/^verdict //p' $rep)
	r2=$(try_write $SHP/sections/section$sd/state offline)
	ktap_print_msg "memmap_on_memory=$(cat /sys/module/memory_hotplug/parameters/memmap_on_memory), block $d: online_movable $r, memmap_on_memory $got (want $want), $sum pages, verdict $v, offline $r2"
	[ "$r" = ok ] && [ "$got" = "$want" ] && [ "$sum" = $((bs / spb / 4096)) ] &&
		[ "$v" = offlinable ] && [ "$r2" = ok ] && ok=1
	memhp-qmp device_del id=mom-dimm0 >/dev/null &&
		memhp-qmp x-memhp-wait-event event=DEVICE_DELETED 'match={"device":"mom-dimm0"}' timeout=60 >/dev/null &&
		memhp-qmp object-del id=mom-mem0 >/dev/null
fi
memhp_unload sparse_hotplug
ktap_test_result "memmap_on_memory block: its $want own-memmap pages counted from nr_vmemmap_pages" [ $ok = 1 ]
ktap_finished
