// SPDX-License-Identifier: GPL-2.0
/*
 * sparse_hotplug: why offlining a section fails. Every page of an online
 * section is classified (free, LRU, slab, pinned, ...); the classes that
 * offline_pages() can neither migrate nor skip make the verdict "blocked".
 * Read per section through offline_report and for all sections through
 * debugfs sparse_hotplug/sections. Design and locking: the top of
 * sparse_hotplug_sections.c.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/device.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/memory.h>
#include <linux/page-flags.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/slab.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/fs.h>

#include "sparse_hotplug_internal.h"

/* ---- why-offline-fails report ------------------------------------------ */

const char * const sparse_hp_class_names[SPARSE_HP_NR_CLASSES] = {
	[SPARSE_HP_FREE]		= "free",
	[SPARSE_HP_LRU_ANON]		= "lru_anon",
	[SPARSE_HP_LRU_FILE]		= "lru_file",
	[SPARSE_HP_NONLRU_MOVABLE]	= "nonlru_movable",
	[SPARSE_HP_SLAB]		= "slab",
	[SPARSE_HP_PAGE_TABLES]	= "page_tables",
	[SPARSE_HP_RESERVED]		= "reserved",
	[SPARSE_HP_DMA_PINNED]	= "dma_pinned",
	[SPARSE_HP_GUP_HELD]		= "gup_held",
	[SPARSE_HP_HUGETLB]		= "hugetlb",
	[SPARSE_HP_MEMMAP]		= "memmap_on_memory",
	[SPARSE_HP_ISOLATED]		= "isolated",
	[SPARSE_HP_OTHER]		= "other",
};

/* Classes that make offline_pages() fail (it cannot migrate or skip them). */
static bool sparse_hp_class_blocks(enum sparse_hp_class c)
{
	switch (c) {
	case SPARSE_HP_SLAB:
	case SPARSE_HP_PAGE_TABLES:
	case SPARSE_HP_RESERVED:
	case SPARSE_HP_DMA_PINNED:
	case SPARSE_HP_GUP_HELD:
	case SPARSE_HP_OTHER:
		return true;
	default:
		return false;
	}
}

/*
 * Pages of section @nr that hold its block's own memmap
 * (memory_hotplug.memmap_on_memory=1): the block device knows how many lie
 * at the block's start (memhp_block_vmemmap_pages(), set when the block
 * was added); offlining leaves them out. The caller keeps the
 * block alive (see sparse_hp_section_report()).
 */
static unsigned long sparse_hp_memmap_pages(unsigned long nr)
{
	unsigned long nr_vmemmap, skip;
	struct memory_block *mem;
	struct device *dev;
	char name[32];

	snprintf(name, sizeof(name), "memory%lu", sparse_hp_block_of(nr));
	dev = bus_find_device_by_name(sparse_hp_memory_bus, NULL, name);
	if (!dev)
		return 0;
	mem = container_of(dev, struct memory_block, dev);
	nr_vmemmap = memhp_block_vmemmap_pages(mem);
	put_device(dev);
	skip = (nr % sparse_hp_sections_per_block) * PAGES_PER_SECTION;
	if (nr_vmemmap <= skip)
		return 0;
	return min_t(unsigned long, nr_vmemmap - skip, PAGES_PER_SECTION);
}

/*
 * Does a small LRU page hold references beyond its mappings, the page
 * cache and fs-private data? Such a reference (get_user_pages() without
 * FOLL_PIN: vmsplice(), a driver's long-held page) makes migration fail
 * until it is dropped, and offlining retries until a signal. Compound
 * pages are not judged.
 */
static bool sparse_hp_extra_refs(struct page *page)
{
	int expected;

	if (PageCompound(page))
		return false;
	if (PageAnon(page))
		expected = memhp_small_page_mapcount(page) +
			   (memhp_page_swapcache(page) ? 1 : 0);
	else
		expected = 1 + memhp_small_page_mapcount(page) +
			   (memhp_page_has_private(page) ? 1 : 0);
	return page_count(page) > expected;
}

/*
 * The class of the page at @pfn and how many pages it covers (a free buddy
 * block counts whole). Racy by nature, like has_unmovable_pages() without
 * the zone lock: a snapshot.
 */
static enum sparse_hp_class sparse_hp_classify(unsigned long pfn,
					       bool isolated, unsigned long *nr)
{
	struct page *page = pfn_to_page(pfn);
	struct page *head;

	*nr = 1;
	if (PageBuddy(page)) {
		unsigned long order = READ_ONCE(page_private(page));

		if (order < MEMHP_NR_PAGE_ORDERS && IS_ALIGNED(pfn, 1UL << order))
			*nr = 1UL << order;
		return SPARSE_HP_FREE;
	}
	if (PageOffline(page))
		return SPARSE_HP_ISOLATED;	/* ours, or another driver's fake-offline */
	if (isolated)
		return SPARSE_HP_ISOLATED;
	head = compound_head(page);
	if (PageHuge(head))
		return SPARSE_HP_HUGETLB;
	/*
	 * Typed before counted: slab and large kmalloc pages are allocated
	 * frozen (refcount 0) where the slab allocator uses frozen pages
	 * (7.3), and would otherwise pass for free. A page table may be a
	 * compound page (x86's PTI pgd): its type is on the head.
	 */
	if (PageSlab(head) || memhp_page_large_kmalloc(head))
		return SPARSE_HP_SLAB;
	if (PageTable(head))
		return SPARSE_HP_PAGE_TABLES;
	if (!page_count(page))
		return SPARSE_HP_FREE;	/* on a per-cpu list, or being freed */
	if (memhp_page_maybe_dma_pinned(page))
		return SPARSE_HP_DMA_PINNED;
	if (PageLRU(head)) {
		if (sparse_hp_extra_refs(page))
			return SPARSE_HP_GUP_HELD;
		return PageAnon(head) ? SPARSE_HP_LRU_ANON : SPARSE_HP_LRU_FILE;
	}
	if (memhp_page_has_movable_ops(head))
		return SPARSE_HP_NONLRU_MOVABLE;
	if (PageReserved(page))
		return SPARSE_HP_RESERVED;
	/*
	 * Anonymous or page cache pages not on the LRU right now: in a
	 * per-cpu LRU batch (offlining drains those) or isolated by
	 * reclaim or compaction for a moment. Migratable all the same.
	 */
	if (PageAnon(head))
		return SPARSE_HP_LRU_ANON;
	if (head->mapping && !((unsigned long)head->mapping & MEMHP_PAGE_MAPPING_FLAGS))
		return SPARSE_HP_LRU_FILE;
	return SPARSE_HP_OTHER;
}

/*
 * Fills @rep for section @nr; never sleeps long, takes none of our locks.
 * The caller keeps the section's block device alive (sparse_hp_lock, an active
 * reference on one of its attributes, or sparse_hp_probe_lock for our own block).
 */
void sparse_hp_section_report(unsigned long nr, struct sparse_hp_report *rep)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	unsigned long end = pfn + PAGES_PER_SECTION;
	unsigned long memmap, n;
	struct zone *zone = NULL;
	bool isolated = sparse_hp_iso_state(nr) != 0;
	struct page *page;
	enum sparse_hp_class c;

	memset(rep, 0, sizeof(*rep));
	if (!online_section_nr(nr))
		return;
	rep->online = true;

	memmap = sparse_hp_memmap_pages(nr);
	rep->count[SPARSE_HP_MEMMAP] = memmap;
	pfn += memmap;
	while (pfn < end) {
		page = sparse_hp_online_page(pfn);
		if (!page) {
			if (!rep->why)
				rep->why = "hole";	/* test_pages_in_a_zone() */
			pfn = ALIGN(pfn + 1, PAGES_PER_SUBSECTION);
			continue;
		}
		if (!zone)
			zone = page_zone(page);
		else if (zone != page_zone(page) && !rep->why)
			rep->why = "spans zones";
		c = sparse_hp_classify(pfn, isolated, &n);
		n = min(n, end - pfn);
		rep->count[c] += n;
		if (sparse_hp_class_blocks(c) && !rep->blocked) {
			rep->blocked = true;
			rep->pfn = pfn;
			rep->class = c;
			rep->flags = memhp_page_flags(page);
		}
		pfn += n;
		if (!(pfn & (PAGES_PER_SUBSECTION - 1)))
			cond_resched();
	}
}

/* "offlinable", "blocked: ...", or "offline" (not online). */
int sparse_hp_report_verdict(struct sparse_hp_report *rep, char *buf,
			     size_t size)
{
	if (!rep->online)
		return scnprintf(buf, size, "offline");
	if (rep->blocked)
		return scnprintf(buf, size, "blocked: pfn %#lx %s %pGp",
				 rep->pfn, sparse_hp_class_names[rep->class],
				 &rep->flags);
	if (rep->why)
		return scnprintf(buf, size, "blocked: %s", rep->why);
	return scnprintf(buf, size, "offlinable");
}

/* ---- debugfs section table ---------------------------------------------- */

static int sparse_hp_sections_table_show(struct seq_file *m, void *v)
{
	struct sparse_hp_report *rep;
	struct sparse_hp_section *sec;
	const char *state;
	char verdict[128];
	unsigned long nr;
	int i;

	rep = memhp_kmalloc_obj(*rep, GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	seq_puts(m, "section block state");
	for (i = 0; i < SPARSE_HP_NR_CLASSES; i++)
		seq_printf(m, " %s", sparse_hp_class_names[i]);
	seq_puts(m, " verdict\n");
	/*
	 * One section at a time under sparse_hp_lock, which keeps that section's
	 * block device, hence its memmap, alive while we read it (removal
	 * waits in our DEL handler). Dropped between sections: the bus
	 * notifier, which a hot-add or removal calls holding the device
	 * hotplug lock and mem_hotplug_lock, waits for one section's
	 * classification at most, never for the whole table.
	 */
	for (nr = 0; ; nr++) {
		mutex_lock(&sparse_hp_lock);
		sec = xa_find(&sparse_hp_sections, &nr, ULONG_MAX, XA_PRESENT);
		if (sec) {
			sparse_hp_section_report(nr, rep);
			state = sparse_hp_section_state(nr);
		}
		mutex_unlock(&sparse_hp_lock);
		if (!sec)
			break;
		sparse_hp_report_verdict(rep, verdict, sizeof(verdict));
		seq_printf(m, "%lu %lu %s", nr, sparse_hp_block_of(nr), state);
		for (i = 0; i < SPARSE_HP_NR_CLASSES; i++)
			seq_printf(m, " %lu", rep->count[i]);
		seq_printf(m, " %s\n", verdict);
		cond_resched();
	}
	kfree(rep);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sparse_hp_sections_table);

/* Module init: debugfs sections. */
void sparse_hp_report_debugfs(struct dentry *dir)
{
	debugfs_create_file("sections", 0400, dir, NULL,
			    &sparse_hp_sections_table_fops);
}
