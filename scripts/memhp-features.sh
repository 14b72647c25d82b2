#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# memhp-features.sh SRCTREE [OBJTREE]: the kernel features the memhp-lab modules
# adapt to, probed in the headers of the kernel they are built against,
# printed as -D flags for Kbuild (include/memhp_compat.h uses them). The
# code tests features, never version numbers, so any tree from 6.1 on
# (KDIR=) gets what it has. Each probe names the kernel change.
#
# A probe whose absence compiles but behaves differently is a two-form
# probe (probe2): it must find one of its two known forms; if it finds
# neither (a header reworded, a tree without headers) the script fails
# and prints a #error for Kbuild, instead of silently choosing one
# behaviour. Those are: driver-owned movable pages (decides whether
# migrate_test is built), alloc_contig_range()'s third argument (a
# migratetype of 1 is ACR_FLAGS_CMA where it is acr_flags_t),
# MIGRATE_SYNC_NO_COPY and __offline_isolated_pages()'s return.

inc=$1/include/linux
symvers=${2:+$2/Module.symvers}

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
# 6.13, "hrtimers: Introduce hrtimer_setup() to replace hrtimer_init()":
# the callback is given at initialisation (hrtimer_init() later removed).
probe hrtimer.h 'void hrtimer_setup\(struct hrtimer \*timer,' MEMHP_HAVE_HRTIMER_SETUP
# "mm: convert "movable" flag in page->mapping to a page flag" and "mm:
# rename __PageMovable() to page_has_movable_ops()": a PG_movable_ops page
# flag, and page->mapping's low bits are FOLIO_MAPPING_* (anon, KSM only).
probe page-flags.h 'static inline bool page_has_movable_ops\(' MEMHP_HAVE_PAGE_MOVABLE_OPS_FLAG
# Same rework, "mm: rename PAGE_MAPPING_* to FOLIO_MAPPING_*": the low
# bits of page->mapping are FOLIO_MAPPING_ANON/_KSM, masked by
# FOLIO_MAPPING_FLAGS.
probe page-flags.h '^#define FOLIO_MAPPING_FLAGS[[:space:]]' MEMHP_HAVE_FOLIO_MAPPING_FLAGS
# Large kmalloc allocations are a page type of their own (PGTY_large_kmalloc,
# 7.3), allocated frozen like slab pages.
probe page-flags.h '^PAGE_TYPE_OPS\(LargeKmalloc,' MEMHP_HAVE_PAGE_LARGE_KMALLOC
# "mm: introduce memdesc_flags_t": page->flags is a struct, its word .f.
probe mm_types.h '^\} memdesc_flags_t;' MEMHP_HAVE_MEMDESC_FLAGS_T
# "slab: Introduce kmalloc_obj() and family": typed allocation of one
# object (7.3's checkpatch prefers it to kmalloc(sizeof(...))).
probe slab.h '^#define kmalloc_obj\(' MEMHP_HAVE_KMALLOC_OBJ
# Driver-owned movable pages: __SetPageMovable() puts a driver's
# movable_operations in page->mapping. Removed with the movable_ops rework
# ("mm/migrate: remove __ClearPageMovable()", "mm: remove
# __SetPageMovable()"): the core now finds the ops by page type (balloon,
# zsmalloc) only, registered with set_movable_ops(). migrate_test then
# makes its pages balloon pages (below).
probe2 migrate.h 'void __SetPageMovable\(struct page \*page,' \
	'int set_movable_ops\(const struct movable_operations \*ops,' MEMHP_HAVE_DRIVER_MOVABLE_PAGES
# The balloon API in <linux/balloon.h> (7.3; <linux/balloon_compaction.h>
# before, CONFIG_BALLOON_COMPACTION then CONFIG_BALLOON_MIGRATION), where
# the balloon core, not the driver, hands a migrated page's registration
# over: migrate_test's pages are balloon pages where driver-owned movable
# pages are gone. A kernel with neither (balloon_compaction.h and no
# __SetPageMovable()) gets no migrate_test (mm/Kbuild).
[ ! -r "$inc/balloon.h" ] ||
	probe balloon.h '^size_t balloon_page_list_dequeue\(' MEMHP_HAVE_BALLOON_PAGES
# alloc_contig_range() takes acr_flags_t (ACR_FLAGS_NONE, ACR_FLAGS_CMA)
# where it took a migratetype: MIGRATE_MOVABLE, 1, would now mean
# ACR_FLAGS_CMA (sparse reports the different base types; gcc does not).
# Both forms are the prototype's second line (6.12 and 7.3 name it
# alloc_contig_range_noprof()).
probe2 gfp.h '^[[:space:]]*acr_flags_t alloc_flags, gfp_t gfp_mask\);' \
	'^[[:space:]]*unsigned migratetype, gfp_t gfp_mask\);' MEMHP_HAVE_ACR_FLAGS
# e820__mapped_raw_any(), the firmware's e820 table, exported to every
# module: a Module.symvers line with no namespace. Exports restricted to
# named modules (EXPORT_SYMBOL_FOR_MODULES(), the "module:NAMES"
# namespace) give it to the KVM modules only. Without it (or without
# Module.symvers) sparse_hotplug reads the firmware map's kernel copy,
# /sys/firmware/memmap, instead: both are right wherever they build.
tab=$(printf '\t')
if [ -n "$symvers" ] && [ -r "$symvers" ] &&
   grep -qE "^0x[0-9a-f]+${tab}e820__mapped_raw_any${tab}vmlinux${tab}EXPORT_SYMBOL(_GPL)?${tab}\$" "$symvers"; then
	printf ' -D%s' MEMHP_HAVE_E820_RAW_EXPORT
fi
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
