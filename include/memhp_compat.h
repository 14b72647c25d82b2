/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memhp_compat.h - the kernel differences the memhp-lab modules meet
 * between the kernels they are built and tested for (the suite's kernels,
 * `make print-kvers`; Documentation/kernel-compat.rst) and any tree from
 * 6.1 on, through KDIR=.
 *
 * One rule: code says what it needs (a feature-named macro or helper from
 * here), never which kernel it runs on. The MEMHP_* feature macros come
 * from scripts/memhp-features.sh, which Kbuild runs on the headers of the
 * kernel being built against; each entry here names the kernel change
 * behind it. No version number is compared anywhere.
 */
#ifndef _MEMHP_COMPAT_H
#define _MEMHP_COMPAT_H

#include <linux/device.h>
#include <linux/gfp.h>
#include <linux/hrtimer.h>
#include <linux/memory.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/migrate_mode.h>
#include <linux/log2.h>
#include <linux/slab.h>

#ifdef MEMHP_FEATURES_UNPROBED
#error "scripts/memhp-features.sh could not probe this kernel's headers (see its message)"
#endif

/*
 * Buddy orders. 6.1: MAX_ORDER is the number of orders (11, exclusive).
 * 6.4 made MAX_ORDER inclusive and 6.8 renamed it MAX_PAGE_ORDER, adding
 * NR_PAGE_ORDERS for the count. MAX_ORDER_NR_PAGES, the pages of the
 * largest buddy, means the same on all of them, so the count is derived
 * from it (MAX_ORDER alone would be one short on 6.4-6.7).
 */
#define MEMHP_NR_PAGE_ORDERS	(ilog2(MAX_ORDER_NR_PAGES) + 1)

/*
 * struct device's bus pointer and the bus_*() helpers take a
 * const struct bus_type * since the driver core was constified (6.4-6.5);
 * 6.1 has no const. memhp_bus_ptr is the pointer type of struct device's
 * bus, whichever it is.
 */
#define memhp_bus_ptr	typeof(((struct device *)NULL)->bus)

/*
 * Pages at the start of a memory block that hold its own memmap
 * (memory_hotplug.memmap_on_memory=1). 6.1: struct memory_block counts them
 * in nr_vmemmap_pages. 6.6 ("mm/memory_hotplug: embed vmem_altmap details
 * in memory block") replaced the count with the block's vmem_altmap, whose
 * free pages are the memmap's. 6.12's removal clears mem->altmap before
 * the block device goes (remove_memory_blocks_and_altmaps()), so it is
 * read once; it is freed only after the device's users are gone.
 */
static inline unsigned long memhp_block_vmemmap_pages(struct memory_block *mem)
{
#ifdef MEMHP_MEMORY_BLOCK_ALTMAP
	struct vmem_altmap *altmap = READ_ONCE(mem->altmap);

	return altmap ? altmap->free : 0;
#else
	return mem->nr_vmemmap_pages;
#endif
}

/*
 * Mappings and references of an order-0 page. 6.12 removed the page_*()
 * wrappers (page_mapcount(), PageSwapCache(), page_has_private(),
 * page_maybe_dma_pinned()) in favour of their folio_*() forms; 6.1 has the
 * folio forms too, except folio_mapcount(), which it does not export.
 * For a small (non-compound) page the two mean the same thing, so these
 * helpers are for order-0 pages only.
 */
static inline int memhp_small_page_mapcount(struct page *page)
{
#ifdef MEMHP_HAVE_INLINE_FOLIO_MAPCOUNT
	return folio_mapcount(page_folio(page));
#else
	return page_mapcount(page);
#endif
}

static inline bool memhp_page_swapcache(struct page *page)
{
	return folio_test_swapcache(page_folio(page));
}

static inline bool memhp_page_has_private(struct page *page)
{
	return folio_has_private(page_folio(page));
}

static inline bool memhp_page_maybe_dma_pinned(struct page *page)
{
	return folio_maybe_dma_pinned(page_folio(page));
}

/*
 * MIGRATE_SYNC_NO_COPY (migrate without copying, for device memory) was
 * removed in 6.10 with its last user; a migrate_page callback only has to
 * refuse it where it exists.
 */
static inline bool memhp_migrate_mode_no_copy(enum migrate_mode mode)
{
#ifdef MEMHP_HAVE_MIGRATE_SYNC_NO_COPY
	return mode == MIGRATE_SYNC_NO_COPY;
#else
	return false;
#endif
}

/*
 * vma->vm_flags became read-only (const) in 6.3 with the per-VMA lock
 * work: flags are set with vm_flags_set(), which write-locks the VMA.
 * 6.1 (Debian) has no vm_flags_set(): plain assignment, under mmap_lock.
 */
#ifdef MEMHP_HAVE_VM_FLAGS_SET
#define memhp_vm_flags_set(vma, flags)	vm_flags_set((vma), (flags))
#else
#define memhp_vm_flags_set(vma, flags)	((vma)->vm_flags |= (flags))
#endif

/*
 * A fault handler that returns VM_FAULT_RETRY drops the lock it was called
 * under. Per-VMA locks (6.4) let a fault run under its VMA's read lock
 * (FAULT_FLAG_VMA_LOCK) instead of mmap_lock; release_fault_lock() drops
 * whichever is held. On 6.12 a ->fault of a mapping without ->map_pages
 * (migrate_test's) is still called under mmap_lock (vmf_can_call_fault()
 * retries a VMA-locked fault first), so mmap_read_unlock() would do there
 * today; the helper keeps the handler right if that changes. 6.1 has
 * mmap_lock only.
 */
#ifdef MEMHP_HAVE_RELEASE_FAULT_LOCK
#define memhp_release_fault_lock(vmf)	release_fault_lock(vmf)
#else
#define memhp_release_fault_lock(vmf)	mmap_read_unlock((vmf)->vma->vm_mm)
#endif

/*
 * Offlining and fake-offline (PageOffline, refcount 0) pages.
 *
 * A driver that keeps pages of an online block fake-offline (allocated,
 * PageOffline, subtracted from the managed page count) drops its
 * references at MEM_GOING_OFFLINE so that offline_pages() can skip them.
 *
 * 6.1: offline_pages() subtracts the whole range from the managed count,
 * skipped pages included, so the driver adds its pages back at
 * MEM_GOING_OFFLINE (and subtracts them again at MEM_CANCEL_OFFLINE), as
 * virtio_mem does there.
 *
 * 6.11 ("mm/memory_hotplug: skip adjust_managed_page_count() for
 * PageOffline() pages when offlining", MEMHP_OFFLINE_SKIPS_FAKE_OFFLINE):
 * __offline_isolated_pages() returns the pages it really took, refcount-0
 * PageOffline ones excluded, and only those are subtracted. A driver that
 * still added its pages back would inflate MemTotal by their size on every
 * offline (seen on 6.12: +128 MiB per isolated section).
 *
 * memhp_going_offline_managed(page, nr) / memhp_cancel_offline_managed():
 * the managed-count step a driver takes at those two events; nothing where
 * the core no longer counts the pages.
 */
static inline void memhp_going_offline_managed(struct page *page, long nr)
{
#ifndef MEMHP_OFFLINE_SKIPS_FAKE_OFFLINE
	adjust_managed_page_count(page, nr);
#endif
}

static inline void memhp_cancel_offline_managed(struct page *page, long nr)
{
#ifndef MEMHP_OFFLINE_SKIPS_FAKE_OFFLINE
	adjust_managed_page_count(page, -nr);
#endif
}

/*
 * hrtimer_setup() ("hrtimers: Introduce hrtimer_setup() to replace
 * hrtimer_init()", 6.13) takes the callback at initialisation;
 * hrtimer_init() and setting ->function by hand were later removed.
 */
static inline void memhp_hrtimer_setup(struct hrtimer *timer,
				       enum hrtimer_restart (*function)(struct hrtimer *),
				       clockid_t clock_id, enum hrtimer_mode mode)
{
#ifdef MEMHP_HAVE_HRTIMER_SETUP
	hrtimer_setup(timer, function, clock_id, mode);
#else
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
#endif
}

/*
 * Non-LRU movable pages. Up to the movable_ops rework, a page with
 * movable_operations had PAGE_MAPPING_MOVABLE in page->mapping's low bits
 * and __PageMovable() tested it. "mm: convert "movable" flag in
 * page->mapping to a page flag" made it the PG_movable_ops page flag,
 * tested with page_has_movable_ops() (for balloon and zsmalloc pages only).
 */
static inline bool memhp_page_has_movable_ops(struct page *page)
{
#ifdef MEMHP_HAVE_PAGE_MOVABLE_OPS_FLAG
	return page_has_movable_ops(page);
#else
	return __PageMovable(page);
#endif
}

/*
 * The low bits of page->mapping that say it is no address_space:
 * PAGE_MAPPING_FLAGS (anon, movable) until "mm: rename PAGE_MAPPING_* to
 * FOLIO_MAPPING_*" of the same rework, FOLIO_MAPPING_FLAGS (anon, KSM).
 */
#ifdef MEMHP_HAVE_FOLIO_MAPPING_FLAGS
#define MEMHP_PAGE_MAPPING_FLAGS	FOLIO_MAPPING_FLAGS
#else
#define MEMHP_PAGE_MAPPING_FLAGS	PAGE_MAPPING_FLAGS
#endif

/*
 * The page flags word, read once. "mm: introduce memdesc_flags_t" made
 * page->flags a struct (memdesc_flags_t) whose word is .f.
 */
static inline unsigned long memhp_page_flags(struct page *page)
{
#ifdef MEMHP_HAVE_MEMDESC_FLAGS_T
	return READ_ONCE(page->flags.f);
#else
	return READ_ONCE(page->flags);
#endif
}

/*
 * alloc_contig_range() of an ordinary (not CMA) range: its third argument
 * was the migratetype of the range's pageblocks, MIGRATE_MOVABLE for us;
 * it became acr_flags_t (MEMHP_HAVE_ACR_FLAGS), where 1 (MIGRATE_MOVABLE)
 * is ACR_FLAGS_CMA, so an ordinary request passes ACR_FLAGS_NONE there.
 */
#ifdef MEMHP_HAVE_ACR_FLAGS
#define memhp_alloc_contig_range(start, end, gfp) \
	alloc_contig_range((start), (end), ACR_FLAGS_NONE, (gfp))
#else
#define memhp_alloc_contig_range(start, end, gfp) \
	alloc_contig_range((start), (end), MIGRATE_MOVABLE, (gfp))
#endif

/*
 * A large kmalloc allocation (more than the biggest slab). Where it is a
 * page type (MEMHP_HAVE_PAGE_LARGE_KMALLOC, 7.3) it is allocated frozen,
 * refcount 0, as slab pages are; elsewhere it is a compound page with a
 * reference, which the offline report counts as "other".
 */
static inline bool memhp_page_large_kmalloc(struct page *head)
{
#ifdef MEMHP_HAVE_PAGE_LARGE_KMALLOC
	return PageLargeKmalloc(head);
#else
	return false;
#endif
}

/*
 * One object of @p's type (a variable or a type), as kmalloc_obj() and
 * kzalloc_obj() allocate it where the kernel has them ("slab: Introduce
 * kmalloc_obj() and family"; 7.3's checkpatch asks for them over
 * kmalloc(sizeof(...))), and as kmalloc(sizeof()) does elsewhere.
 */
#ifdef MEMHP_HAVE_KMALLOC_OBJ
#define memhp_kmalloc_obj(p, gfp)	kmalloc_obj(p, gfp)
#define memhp_kzalloc_obj(p, gfp)	kzalloc_obj(p, gfp)
#else
#define memhp_kmalloc_obj(p, gfp)	kmalloc(sizeof(p), gfp)
#define memhp_kzalloc_obj(p, gfp)	kzalloc(sizeof(p), gfp)
#endif

/*
 * e820__mapped_raw_any(), the e820 table as the firmware gave it, is
 * exported to every module (MEMHP_HAVE_E820_RAW_EXPORT, read from
 * Module.symvers) on some kernels and to the KVM modules only
 * (EXPORT_SYMBOL_FOR_MODULES()) on others. memhp_e820_raw_exported is 1
 * or 0, for C conditions that keep the other branch compiled.
 */
#ifdef MEMHP_HAVE_E820_RAW_EXPORT
#define memhp_e820_raw_exported	1
#else
#define memhp_e820_raw_exported	0
#endif

/*
 * The struct page @n pages after @page within one memory block: the
 * kernel's nth_page() of 6.1 and 6.12, which 7.3 no longer has. With
 * SPARSEMEM_VMEMMAP (every x86-64 kernel) the memmap is virtually
 * contiguous: page + n, no reload of vmemmap_base per page in loops that
 * an atomic's memory clobber would force; else by pfn.
 */
static inline struct page *memhp_page_add(struct page *page, unsigned long n)
{
#ifdef CONFIG_SPARSEMEM_VMEMMAP
	return page + n;
#else
	return pfn_to_page(page_to_pfn(page) + n);
#endif
}

#endif /* _MEMHP_COMPAT_H */
