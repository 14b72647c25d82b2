#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# QEMU 10's virtio-mem-pci properties unplugged-inaccessible and
# dynamic-memslots, driven by one driver (upstream virtio_mem or
# virtio_mem_shim): sourced by virtio_mem_props.sh and
# virtio_mem_shim_props.sh, whose guests have three devices (memhp-vm
# --virtio-mem SIZE:REQ:PROPS):
#
#   vm0  1 GiB  unplugged-inaccessible=on,  memory in a /dev/shm file
#   vm1  1 GiB  unplugged-inaccessible=off, anonymous memory
#   vm2  4 GiB  unplugged-inaccessible=on, dynamic-memslots=on, /dev/shm
#
# For each: the feature VIRTIO_MEM_F_UNPLUGGED_INACCESSIBLE is negotiated
# exactly when the device offers it; a plug moves MemTotal and the host's
# size by the request, and an unplug to 0 gives it all back. Nothing reads
# unplugged memory: the /dev/shm file of a shm device gets a page for
# every page the guest touches, a read too (memhp-qmp
# x-memhp-backend-usage), and it must never hold more than the plugged
# size, also after a workload filled half the plugged memory, and nothing after
# the unplug (QEMU discards unplugged blocks). With dynamic-memslots=on,
# QEMU maps a memslot of vm2 only while it holds plugged memory (info
# mtree): some while 1.5 GiB is plugged, none at 0, and every range the
# guest has online lies in a mapped memslot. Last, the instrument is
# checked: a read of unplugged memory of vm0, with no driver bound, through
# /dev/mem, must show up in its /dev/shm file.

MIB=$((1 << 20))
VIRTIO_MEM_F_UNPLUGGED_INACCESSIBLE=1
HOG_PID=

props_cleanup()
{
	local id

	[ -n "$HOG_PID" ] && kill "$HOG_PID" 2>/dev/null
	for id in vm0 vm1 vm2; do
		memhp-qmp qom-set path=$id property=requested-size value=0 >/dev/null 2>&1
	done
	set_auto_online offline 2>/dev/null
}

# The guest's virtio device directory of QEMU device ID (by PCI slot).
virtio_of()
{
	local slot d

	slot=$(memhp-qmp query-pci | python3 -c '
import json, sys
for bus in json.load(sys.stdin):
    for d in bus["devices"]:
        if d.get("qdev_id") == sys.argv[1]:
            print("%02x.%x" % (d["slot"], d["function"]))
' "$1")
	[ -n "$slot" ] || return 1
	for d in /sys/bus/virtio/devices/virtio*; do
		case "$(readlink -f "$d")" in
		*/0000:00:$slot/virtio*) echo "$d"; return 0 ;;
		esac
	done
	return 1
}

driver_of()
{
	basename "$(readlink "$1/driver" 2>/dev/null)"
}

# feature_bit DEV BIT: the driver's negotiated feature bit (0 or 1).
feature_bit()
{
	cut -c$(($2 + 1)) "$1/features"
}

# Allocated bytes of a backend=shm device's memory (vmemN).
backend_allocated()
{
	memhp-qmp x-memhp-backend-usage id="$1" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["allocated"])'
}

# mapped_memslots ID: "N lo-hi lo-hi ..." for the memslots of device ID's
# memory backend (vmemN) mapped in the system address space now.
mapped_memslots()
{
	memhp-qmp human-monitor-command command-line="info mtree" | python3 -c '
import json, re, sys
text, mem, want = json.load(sys.stdin), None, "@" + sys.argv[1] + " "
ranges = set()
for line in text.splitlines():
    if line.startswith("address-space:"):
        mem = line.strip() == "address-space: memory"
        continue
    m = re.match(r"\s*([0-9a-f]+)-([0-9a-f]+) \(prio \S+ ram\): alias (memslot-\d+) ", line)
    if mem and m and want in line:
        ranges.add((int(m.group(1), 16), int(m.group(2), 16)))
print(len(ranges), " ".join("%x-%x" % r for r in sorted(ranges)))
' "vmem${1#vm}"
}

# online_outside_slots RANGES...: the online memory blocks of the guest that
# lie outside every given range (hex lo-hi); none when all are inside.
online_outside_slots()
{
	local bs b start end r lo hi in

	bs=$(block_size_bytes)
	for b in $(memory_blocks); do
		[ "$(block_state "$b")" = online ] || continue
		start=$((b * bs))
		end=$((start + bs - 1))
		[ "$start" -ge $((DEV_ADDR)) ] && [ "$end" -lt $((DEV_ADDR + DEV_SIZE)) ] || continue
		in=0
		for r in "$@"; do
			lo=$((0x${r%-*}))
			hi=$((0x${r#*-}))
			[ "$start" -ge "$lo" ] && [ "$end" -le "$hi" ] && in=1
		done
		[ $in = 1 ] || echo "memory$b"
	done
}

qmp_memdev_field()
{
	memhp-qmp query-memory-devices | python3 -c '
import json, sys
for d in json.load(sys.stdin):
    if d["data"].get("id") == sys.argv[1]:
        print(d["data"][sys.argv[2]])
' "$1" "$2"
}

request()
{
	memhp-qmp qom-set path="$1" property=requested-size value="$2" >/dev/null
}

# at_size ID BYTES: guest MemTotal and the host's size agree with BYTES
# (and the shim's plugged_size, with the shim).
at_size()
{
	[ "$(qmp_memdev_size "$1")" = "$2" ] &&
		[ $(($(meminfo_kb MemTotal) - MEMTOTAL0)) -eq $(($2 / 1024)) ] || return 1
	[ "$DRIVER" = virtio_mem_shim ] || return 0
	[ "$(cat "$DEV/plugged_size")" = "$2" ]
}

state_line()
{
	echo "MemTotal +$((($(meminfo_kb MemTotal) - MEMTOTAL0) / 1024)) MiB," \
	     "host size $(($(qmp_memdev_size "$1") / MIB)) MiB"
}

# hog MIB: a process holding MIB MiB of written anonymous memory (which
# the allocator takes from ZONE_MOVABLE first, where the plugged memory is).
hog_start()
{
	rm -f /tmp/props_hog.ready
	python3 -c '
import sys, time
b = bytearray(b"\x01") * (int(sys.argv[1]) << 20)
open("/tmp/props_hog.ready", "w").close()
time.sleep(3600)
' "$1" &
	HOG_PID=$!
	wait_for 120 test -e /tmp/props_hog.ready
}

hog_stop()
{
	kill "$HOG_PID" 2>/dev/null
	wait "$HOG_PID" 2>/dev/null
	HOG_PID=
}

# device_case ID SIZE_MIB UI(on|off) SHM(0|1) DYN(0|1)
device_case()
{
	local id=$1 mib=$2 ui=$3 shm=$4 dyn=$5 bit want ok a0= a1 a2 slots1 slots2 outside ranges msg

	DEV=$(virtio_of "$id") || { ktap_test_fail "$id: no virtio device in the guest"; return; }
	DEV_ADDR=$(qmp_memdev_field "$id" memaddr)
	DEV_SIZE=$(qmp_memdev_field "$id" max-size)

	# features
	bit=$(feature_bit "$DEV" $VIRTIO_MEM_F_UNPLUGGED_INACCESSIBLE)
	want=0
	[ "$ui" = on ] && want=1
	ktap_print_msg "$id ($(basename "$DEV"), driver $(driver_of "$DEV")): unplugged-inaccessible=$ui," \
		"dynamic-memslots=$([ "$dyn" = 1 ] && echo on || echo off), region $(printf '%#x' "$DEV_ADDR")" \
		"+$((DEV_SIZE / MIB)) MiB, features $(cut -c1-8 "$DEV/features")..."
	ktap_test_result "$id: VIRTIO_MEM_F_UNPLUGGED_INACCESSIBLE negotiated = $want ($DRIVER)" \
		eval '[ "$(driver_of "$DEV")" = "$DRIVER" ] && [ "$bit" = $want ]'

	# plug
	[ "$shm" = 1 ] && a0=$(backend_allocated "vmem${id#vm}")
	request "$id" $((mib * MIB))
	ok=0
	wait_for 180 at_size "$id" $((mib * MIB)) && ok=1
	ktap_print_msg "$id: requested $mib MiB: $(state_line "$id")${a0:+, backend allocated before: $a0}"
	if [ "$dyn" = 1 ]; then
		read -r slots1 ranges <<< "$(mapped_memslots "$id")"
		# shellcheck disable=SC2086
		outside=$(online_outside_slots $ranges)
		ktap_print_msg "$id: $slots1 memslot(s) mapped: ${ranges:-none}; online blocks outside them: ${outside:-none}"
		[ "${slots1:-0}" -ge 1 ] && [ -z "$outside" ] || ok=0
	fi
	ktap_test_result "$id: plug $mib MiB: MemTotal and host size +$mib MiB$([ "$dyn" = 1 ] &&
		echo ', online memory in mapped memslots')" [ $ok = 1 ]

	# touch the plugged memory, then measure what the host had to back
	if [ "$shm" = 1 ]; then
		hog_start $((mib / 2))
		a1=$(backend_allocated "vmem${id#vm}")
		hog_stop
		ktap_print_msg "$id: backend allocated $((a0 / MIB)) MiB before, $((a1 / MIB)) MiB with a" \
			"$((mib / 2)) MiB workload ($a1 bytes; plugged $((mib * MIB)))"
		ktap_test_result "$id: unplugged memory never touched: backend allocation within the plugged $mib MiB" \
			eval '[ "$a0" = 0 ] && [ "$a1" -gt 0 ] && [ "$a1" -le $((mib * MIB)) ]'
	fi

	# unplug
	request "$id" 0
	ok=0
	wait_for 180 at_size "$id" 0 && ok=1
	msg="$id: requested 0: $(state_line "$id")"
	if [ "$shm" = 1 ]; then
		a2=$(backend_allocated "vmem${id#vm}")
		msg+=", backend allocated $a2 bytes"
		[ "$a2" = 0 ] || ok=0
	fi
	if [ "$dyn" = 1 ]; then
		read -r slots2 ranges <<< "$(mapped_memslots "$id")"
		msg+=", $slots2 memslot(s) mapped"
		[ "$slots2" = 0 ] || ok=0
	fi
	ktap_print_msg "$msg"
	ktap_test_result "$id: unplug to 0: MemTotal and host size back$([ "$shm" = 1 ] &&
		echo ', backend empty')$([ "$dyn" = 1 ] && echo ', no memslot mapped')" [ $ok = 1 ]
}

# The shim only: MemTotal through bind -> shrink -> unload. With the shim
# unloaded, the host asks vm0 for 256 MiB; loading the shim binds it and
# plugs 256 MiB (+256), the host shrinks it to 128 MiB (+128: one unit
# fake-offlined, then offlined and removed, where 6.1 and 6.12 count the
# managed pages differently), and rmmod unplugs the rest (0).
shim_bind_shrink_unload()
{
	local ok=0 m1= m2= m3= h3=

	memhp_unload virtio_mem_shim
	DEV=$(virtio_of vm0)
	request vm0 $((256 * MIB))
	if memhp_load virtio_mem_shim && wait_for 30 eval '[ "$(driver_of "$DEV")" = virtio_mem_shim ]' &&
	   wait_for 180 at_size vm0 $((256 * MIB)); then
		m1=$((($(meminfo_kb MemTotal) - MEMTOTAL0) / 1024))
		request vm0 $((128 * MIB))
		if wait_for 180 at_size vm0 $((128 * MIB)); then
			m2=$((($(meminfo_kb MemTotal) - MEMTOTAL0) / 1024))
			rmmod virtio_mem_shim
			m3=$(($(meminfo_kb MemTotal) - MEMTOTAL0))
			h3=$(qmp_memdev_size vm0)
			[ "$m3" = 0 ] && [ "$h3" = 0 ] && ok=1
		fi
	fi
	ktap_print_msg "vm0: bind with 256 MiB requested: +${m1:-?} MiB; shrink to 128 MiB: +${m2:-?} MiB;" \
		"rmmod: +${m3:-?} kB, host size ${h3:-?}"
	ktap_test_result "shim: bind -> shrink -> unload: MemTotal +256, +128, +0 MiB" [ $ok = 1 ]
}

# Upstream virtio_mem only, and only where the kernel knows the feature
# (6.12's and 7.3's uapi virtio_mem.h define VIRTIO_MEM_F_PERSISTENT_SUSPEND,
# 6.1's does not: SKIP there, with that reason): QEMU 10 offers it, so the
# driver negotiates it on every device. The header is the kernel's own,
# or the copy `make modules` keeps beside the modules (a kernel whose
# headers are in the build root, 7.3, has none the guest can see).
persistent_suspend_case()
{
	local hdr bit id ok=1 name="virtio_mem negotiates VIRTIO_MEM_F_PERSISTENT_SUSPEND on vm0, vm1, vm2"

	for hdr in /usr/lib/modules/$(uname -r)/source/include/uapi/linux/virtio_mem.h \
		   "$MEMHP_TOP/build/modules/$(uname -r)/uapi/linux/virtio_mem.h"; do
		[ -r "$hdr" ] && break
	done
	if [ ! -r "$hdr" ]; then
		ktap_test_skip "$name" "no uapi virtio_mem.h for $(uname -r) to tell whether it has the feature"
		return
	fi
	bit=$(awk '$1 == "#define" && $2 == "VIRTIO_MEM_F_PERSISTENT_SUSPEND" { print $3 }' "$hdr")
	if [ -z "$bit" ]; then
		ktap_test_skip "$name" "$(uname -r)'s virtio_mem.h has no VIRTIO_MEM_F_PERSISTENT_SUSPEND"
		return
	fi
	for id in vm0 vm1 vm2; do
		[ "$(feature_bit "$(virtio_of $id)" "$bit")" = 1 ] || ok=0
	done
	ktap_print_msg "VIRTIO_MEM_F_PERSISTENT_SUSPEND is bit $bit; features vm0 $(cut -c1-8 "$(virtio_of vm0)/features")," \
		"vm1 $(cut -c1-8 "$(virtio_of vm1)/features"), vm2 $(cut -c1-8 "$(virtio_of vm2)/features")"
	ktap_test_result "$name" [ $ok = 1 ]
}

# The instrument itself: with no driver bound to vm0 any more, a read of
# 2 MiB of its unplugged memory (the region's end, through /dev/mem) must
# show up as 2 MiB more in its /dev/shm file. (Last, as that memory stays
# allocated: nothing unplugs it.)
instrument_check()
{
	local addr size before after r

	DEV=$(virtio_of vm0)
	[ -e "$DEV/driver" ] && echo "$(basename "$DEV")" > "$DEV/driver/unbind"
	addr=$(qmp_memdev_field vm0 memaddr)
	size=$(qmp_memdev_field vm0 max-size)
	before=$(backend_allocated vmem0)
	r=$(timeout 60 python3 -c '
import mmap, os, sys
fd = os.open("/dev/mem", os.O_RDONLY | os.O_SYNC)
m = mmap.mmap(fd, 2 << 20, mmap.MAP_SHARED, mmap.PROT_READ, offset=int(sys.argv[1]))
print(sum(m[i] for i in range(0, 2 << 20, 4096)))
' $((addr + size - (2 << 20))) 2>&1 | tail -n1)
	after=$(backend_allocated vmem0)
	ktap_print_msg "vm0 unbound ($(driver_of "$DEV" || true)); read of its last 2 MiB: '$r';" \
		"backend allocated $before -> $after bytes"
	ktap_test_result "the probe sees a read of unplugged memory: +2 MiB in the backend" \
		eval '[ -n "$before" ] && [ $((after - before)) -eq $((2 << 20)) ]'
}

# props_run DRIVER: the whole test with DRIVER bound to every device.
props_run()
{
	DRIVER=$1
	memhp_require_guest
	ktap_print_header
	ktap_set_plan 14
	trap props_cleanup EXIT

	set_auto_online online_movable
	if [ "$DRIVER" = virtio_mem ]; then
		modprobe virtio_mem
	else
		memhp_load virtio_mem_shim
	fi
	bound_all()
	{
		local id

		for id in vm0 vm1 vm2; do
			[ "$(driver_of "$(virtio_of $id)")" = "$DRIVER" ] || return 1
		done
	}
	if wait_for 30 bound_all; then
		ktap_test_pass "$DRIVER bound to vm0, vm1 and vm2"
	else
		for id in vm0 vm1 vm2; do
			ktap_print_msg "$id: $(virtio_of $id) driver '$(driver_of "$(virtio_of $id)")'"
		done
		ktap_exit_fail_msg "$DRIVER did not bind to every device"
	fi
	MEMTOTAL0=$(meminfo_kb MemTotal)

	device_case vm0 512 on 1 0
	device_case vm1 512 off 0 0
	device_case vm2 1536 on 1 1

	if [ "$DRIVER" = virtio_mem_shim ]; then
		shim_bind_shrink_unload
	else
		persistent_suspend_case
	fi
	instrument_check
	ktap_finished
}
