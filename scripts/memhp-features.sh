#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# memhp-features.sh SRCTREE: the kernel features the memhp-lab modules
# adapt to, probed in the headers of the kernel they are built against,
# printed as -D flags for Kbuild (include/memhp_compat.h uses them). The
# code tests features, never version numbers, so any tree between 6.1
# and 6.12 (KDIR=) gets what it has. Each probe names the kernel change.
#
# A probe whose absence compiles but behaves differently (the last two)
# must find one of its two known forms; if it finds neither (a header
# reworded, a tree without headers) the script fails and prints a
# #error for Kbuild, instead of silently choosing one behaviour.

inc=$1/include/linux

if [ ! -r "$inc/mm.h" ]; then
	echo "memhp-features.sh: no $inc/mm.h: not a kernel tree" >&2
	echo " -DMEMHP_FEATURES_UNPROBED"
	exit 1
fi

probe()
{
	# probe HEADER EXTENDED-REGEX MACRO
	grep -qE "$2" "$inc/$1" && printf ' -D%s' "$3"
}

# probe2 HEADER REGEX-IF-PRESENT REGEX-IF-ABSENT MACRO: one must match.
probe2()
{
	if grep -qE "$2" "$inc/$1"; then
		printf ' -D%s' "$4"
	elif ! grep -qE "$3" "$inc/$1"; then
		echo "memhp-features.sh: $1 matches neither form of $4" >&2
		printf ' -DMEMHP_FEATURES_UNPROBED'
		status=1
	fi
}
status=0

# 6.6, "mm/memory_hotplug: embed vmem_altmap details in memory block":
# struct memory_block has the altmap, not nr_vmemmap_pages.
probe memory.h 'struct vmem_altmap[[:space:]]+\*altmap;' MEMHP_MEMORY_BLOCK_ALTMAP
# 6.3, per-VMA locks: vma->vm_flags is const, vm_flags_set() writes it.
probe mm.h 'static inline void vm_flags_set\(' MEMHP_HAVE_VM_FLAGS_SET
# 6.12 dropped page_mapcount(); folio_mapcount() became an inline there
# (6.1 has it out of line and does not export it).
probe mm.h 'static inline int folio_mapcount\(' MEMHP_HAVE_INLINE_FOLIO_MAPCOUNT
# 6.5/6.6: release_fault_lock() drops mmap_lock or the VMA lock a fault
# runs under (without it, a fault runs under mmap_lock).
probe mm.h 'static inline void release_fault_lock\(' MEMHP_HAVE_RELEASE_FAULT_LOCK
# 6.10 removed MIGRATE_SYNC_NO_COPY.
probe2 migrate_mode.h '^[[:space:]]*MIGRATE_SYNC_NO_COPY,' '^[[:space:]]*MIGRATE_SYNC,' \
	MEMHP_HAVE_MIGRATE_SYNC_NO_COPY
# 6.11, "mm/memory_hotplug: skip adjust_managed_page_count() for
# PageOffline() pages when offlining": __offline_isolated_pages() returns
# the pages it took off, refcount-0 PageOffline ones excluded (void before).
probe2 memory_hotplug.h 'unsigned long __offline_isolated_pages\(' \
	'void __offline_isolated_pages\(' MEMHP_OFFLINE_SKIPS_FAKE_OFFLINE
echo
exit $status
