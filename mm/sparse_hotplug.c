// SPDX-License-Identifier: GPL-2.0
/*
 * sparse_hotplug: memory sections as sysfs objects, with controls.
 *
 * The core exposes memory *blocks* (/sys/devices/system/memory/memoryN, one
 * block is several 128 MiB sections on big machines); this module exposes
 * every present *section*, lets user space act on it, tells why it cannot
 * go away, hot-adds RAM hidden at boot, and logs every block transition:
 *
 *   /sys/kernel/sparse_hotplug/section_size_bytes   hex, like block_size_bytes
 *   /sys/kernel/sparse_hotplug/block_size_bytes
 *   /sys/kernel/sparse_hotplug/probe, remove        hidden RAM (ranges=)
 *   /sys/kernel/sparse_hotplug/sections/sectionN/
 *	start_pfn nr_pages block state zone nid offline_report
 *   /sys/kernel/debug/sparse_hotplug/sections, events, restarts,
 *	hold_ref (selftest_refs=1), provoke_warning (selftest_warn=1)
 *   tracepoints sparse_hotplug:* (sparse_hotplug_trace.h)
 *
 * Documentation/admin-guide/sparse_hotplug.rst is the user's guide and
 * Documentation/ABI/testing/sysfs-kernel-sparse_hotplug the ABI.
 *
 * Keeping the set of directories true: values are computed on each read from
 * mem_section and the memmap, so onlining and offlining need no bookkeeping.
 * Hot-add and removal create and delete memory block devices, and we watch
 * those through a notifier on the memory bus (BUS_NOTIFY_ADD_DEVICE and
 * BUS_NOTIFY_DEL_DEVICE). The bus itself (memory_subsys) is not exported, so
 * we find it from one memory block device that exists at load: its sysfs
 * directory node (kernfs) leads to its kobject, the device, and dev->bus.
 *
 * Online/offline route. device_online(), device_offline() and the device
 * hotplug lock are not exported to modules in 6.1, so "online", "offline",
 * "online_movable" and "online_kernel" written to a section's state are
 * written, from the store handler, to the containing block's own
 * /sys/devices/system/memory/memoryN/state by calling that attribute's
 * store directly (see shp_block_write_state()). The core then does
 * exactly what it does for user space: lock_device_hotplug_sysfs(),
 * device_online()/device_offline() with the zone policy, the memory
 * notifiers and the KOBJ_ONLINE/KOBJ_OFFLINE uevent.
 * lock_device_hotplug_sysfs() answers -ERESTARTNOINTR (and flags a pending
 * signal) when the lock is taken; we must not loop in our store: it holds
 * a kernfs active reference on our own attribute, and a memory removal that
 * holds the device hotplug lock may be waiting in our bus notifier for that
 * reference to drain before it can delete the section's kobject. Returning
 * restart_syscall() drops the reference and restarts the write.
 *
 * Isolation. "isolate" takes a whole online section away from the page
 * allocator the way virtio-mem unplugs a sub-block: alloc_contig_range(
 * MIGRATE_MOVABLE) migrates the movable pages out and hands us every page
 * with a reference; we mark them PageOffline and subtract them from the
 * managed pages. "release" gives them back. Offlining a block whose
 * sections are isolated works as virtio-mem's fake-offline: in
 * MEM_GOING_OFFLINE we drop our reference of each isolated page (PageOffline
 * with refcount 0 is skipped by the core) and add the pages back to the
 * managed count it is about to subtract; MEM_CANCEL_OFFLINE undoes that and
 * MEM_OFFLINE forgets the section (its memmap is reinitialized on online).
 *
 * Locking:
 * - shp_lock (mutex) protects shp_sections. The bus notifier runs with the
 *   device hotplug lock held (ADD also under mem_hotplug_lock; in 6.1
 *   try_remove_memory() deletes the block devices before
 *   mem_hotplug_begin()); it takes shp_lock and
 *   adds or removes kobjects, so nothing holds shp_lock for longer than
 *   one section's work (the debugfs table drops it between sections).
 *   Removing a kobject waits for readers and writers of its attributes,
 *   so section attribute handlers never take shp_lock nor block on
 *   anything memory hotplug holds (they use the restart route above).
 *   Show functions read mem_section flags and struct pages of online
 *   sections racily, as /proc/zoneinfo-style readers do. A section's
 *   memmap is freed only after its block device is deleted, which is
 *   after our DEL handler removed its directory and drained its users.
 * - shp_isolate_lock (mutex) protects shp_isolated (section -> state),
 *   the isolated pages and shp_held_ref. Taken by state stores
 *   (isolate/release, across alloc_contig_range, which needs no hotplug
 *   lock) and by the memory notifier (with mem_hotplug_lock held for
 *   write). Isolate and a concurrent offline exclude each other through
 *   pageblock isolation: the one that isolates the pageblocks second gets
 *   -EBUSY.
 * - shp_probe_lock (mutex) protects shp_added (blocks added by probe); held
 *   across add_memory_driver_managed()/offline_and_remove_memory(), which
 *   take the device hotplug lock themselves. probe and remove are root
 *   attributes, never removed by the bus notifier, so blocking there is
 *   safe. No notifier takes shp_probe_lock.
 * - shp_event_lock (mutex) protects the event ring. Transitions are
 *   serialized by mem_hotplug_lock, so one pending transition suffices.
 * Never hold shp_lock while calling into memory hotplug.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/kernfs.h>
#include <linux/device.h>
#include <linux/cpu.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/memory.h>
#include <linux/memory_hotplug.h>
#include <linux/page-flags.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/slab.h>
#include <linux/kmemleak.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/fs.h>
#include <linux/ioport.h>
#include <linux/ktime.h>
#include <linux/delay.h>
#include <linux/sched/signal.h>
#include <linux/overflow.h>
#include <asm/e820/api.h>

#define CREATE_TRACE_POINTS
#include "sparse_hotplug_trace.h"

static bool selftest_warn;
module_param(selftest_warn, bool, 0444);
MODULE_PARM_DESC(selftest_warn,
		 "Create debugfs sparse_hotplug/provoke_warning, which WARNs when written (tests that the VM runner catches kernel warnings)");

static bool selftest_refs;
module_param(selftest_refs, bool, 0444);
MODULE_PARM_DESC(selftest_refs,
		 "Create debugfs sparse_hotplug/hold_ref, which holds an extra reference on an isolated section's first page (tests offlining with an unexpected reference)");

static char *ranges;
module_param(ranges, charp, 0444);
MODULE_PARM_DESC(ranges,
		 "Physical RAM hidden at boot (mem=, memmap=) that probe may hot-add: START-END or SIZE@START, comma separated, block aligned (suffixes K M G)");

/* One directory of /sys/kernel/sparse_hotplug/sections. */
struct shp_section {
	struct kobject kobj;
	unsigned long nr;		/* section number */
};

#define to_shp_section(k) container_of(k, struct shp_section, kobj)

static struct kobject *shp_root_kobj;		/* /sys/kernel/sparse_hotplug */
static struct kobject *shp_sections_kobj;	/* .../sections */
static struct dentry *shp_debugfs;

/* Protects shp_sections (section number -> struct shp_section), shp_dying. */
static DEFINE_MUTEX(shp_lock);
static DEFINE_XARRAY(shp_sections);
static bool shp_dying;		/* module exit: add no more directories */

static unsigned long shp_sections_per_block;
static struct bus_type *shp_memory_bus;

static unsigned long shp_block_of(unsigned long nr)
{
	return nr / shp_sections_per_block;
}

/*
 * The online page at @pfn or NULL. pfn_to_online_page() checks that the
 * section is online and the subsection valid; its memmap is initialized.
 */
static struct page *shp_online_page(unsigned long pfn)
{
	return pfn_to_online_page(pfn);
}

/* ---- isolation ---------------------------------------------------------- */

/*
 * shp_isolated: section number -> xa_mk_value(SHP_ISO_*), under
 * shp_isolate_lock. HELD: we own one reference on every page of the
 * section; DROPPED: the section's block is going offline and we dropped
 * them (MEM_GOING_OFFLINE); release must wait for the offline to finish.
 */
#define SHP_ISO_HELD	1
#define SHP_ISO_DROPPED	2

static DEFINE_MUTEX(shp_isolate_lock);
static DEFINE_XARRAY(shp_isolated);

/* The section whose first page hold_ref holds a reference of, or -1. */
static long shp_held_ref = -1;

static unsigned long shp_iso_state(unsigned long nr)
{
	void *entry = xa_load(&shp_isolated, nr);

	return entry ? xa_to_value(entry) : 0;
}

static void shp_mark_offline(unsigned long pfn, unsigned long nr_pages,
			     bool offline)
{
	unsigned long i;

	page_offline_begin();
	for (i = 0; i < nr_pages; i++) {
		if (offline)
			__SetPageOffline(pfn_to_page(pfn + i));
		else
			__ClearPageOffline(pfn_to_page(pfn + i));
	}
	page_offline_end();
}

/*
 * Takes the online section @nr from the page allocator. Returns 0, or
 * -EINVAL (not online, not one zone), -EEXIST (already isolated), or what
 * alloc_contig_range() says (-EBUSY: an unmovable page or a concurrent
 * offline; -ENOMEM; -EINTR).
 */
static int shp_isolate(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	struct page *first, *last;
	int ret, tries;

	mutex_lock(&shp_isolate_lock);
	if (shp_iso_state(nr)) {
		ret = -EEXIST;
		goto out;
	}
	/*
	 * Online now; if an offline isolated the pageblocks meanwhile,
	 * alloc_contig_range() fails with -EBUSY, and a completed offline
	 * cleared the online bit first (see the top comment).
	 */
	first = pfn_to_online_page(pfn);
	last = pfn_to_online_page(pfn + PAGES_PER_SECTION - 1);
	if (!first || !last || page_zone(first) != page_zone(last)) {
		ret = -EINVAL;
		goto out;
	}
	ret = xa_err(xa_store(&shp_isolated, nr, xa_mk_value(SHP_ISO_HELD),
			      GFP_KERNEL));
	if (ret)
		goto out;
	/*
	 * Like virtio-mem: in ZONE_MOVABLE a failure is transient (a page
	 * under I/O or briefly referenced), so retry a few times there.
	 */
	for (tries = 0; tries < 5; tries++) {
		ret = alloc_contig_range(pfn, pfn + PAGES_PER_SECTION,
					 MIGRATE_MOVABLE, GFP_KERNEL | __GFP_NOWARN);
		if (!ret || ret == -ENOMEM || ret == -EINTR ||
		    zone_idx(page_zone(first)) != ZONE_MOVABLE)
			break;
		cond_resched();
	}
	if (ret) {
		xa_erase(&shp_isolated, nr);
		goto out;
	}
	shp_mark_offline(pfn, PAGES_PER_SECTION, true);
	adjust_managed_page_count(first, -(long)PAGES_PER_SECTION);
out:
	mutex_unlock(&shp_isolate_lock);
	return ret;
}

/*
 * hold_ref's reference is taken and dropped like ours, without put_page():
 * dropped while its section is DROPPED, the page's count reaches 0 and the
 * offline in progress can skip it.
 */
static void shp_drop_held_ref_locked(void)
{
	lockdep_assert_held(&shp_isolate_lock);
	if (shp_held_ref < 0)
		return;
	page_ref_dec(pfn_to_page(section_nr_to_pfn(shp_held_ref)));
	WRITE_ONCE(shp_held_ref, -1);
}

/* hold_ref: N takes the reference on HELD section N, -1 drops it. */
static int shp_hold_ref(long nr)
{
	int ret = 0;

	mutex_lock(&shp_isolate_lock);
	if (nr < 0) {
		shp_drop_held_ref_locked();
	} else if (shp_held_ref >= 0) {
		ret = -EBUSY;
	} else if (shp_iso_state(nr) != SHP_ISO_HELD) {
		ret = -EINVAL;
	} else {
		page_ref_inc(pfn_to_page(section_nr_to_pfn(nr)));
		WRITE_ONCE(shp_held_ref, nr);
	}
	mutex_unlock(&shp_isolate_lock);
	return ret;
}

/* Gives an isolated section back: -EINVAL if not isolated, -EBUSY if offlining. */
static int shp_release_locked(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);

	lockdep_assert_held(&shp_isolate_lock);
	switch (shp_iso_state(nr)) {
	case SHP_ISO_HELD:
		break;
	case SHP_ISO_DROPPED:
		return -EBUSY;
	default:
		return -EINVAL;
	}
	if (shp_held_ref == nr)
		shp_drop_held_ref_locked();
	shp_mark_offline(pfn, PAGES_PER_SECTION, false);
	free_contig_range(pfn, PAGES_PER_SECTION);
	adjust_managed_page_count(pfn_to_page(pfn), PAGES_PER_SECTION);
	xa_erase(&shp_isolated, nr);
	return 0;
}

static int shp_release(unsigned long nr)
{
	int ret;

	mutex_lock(&shp_isolate_lock);
	ret = shp_release_locked(nr);
	mutex_unlock(&shp_isolate_lock);
	return ret;
}

/*
 * Before MEM_GOING_OFFLINE drops anything: every page of the HELD section
 * @nr must hold our reference only. Another reference (a speculative
 * get_page() on a stale pointer, memory_failure(), or selftest_refs'
 * hold_ref) vetoes the offline (-EBUSY) with nothing changed: were we to
 * drop ours, that holder's put_page() would free a PageOffline page into
 * the isolated range in the middle of the offline, and the core's
 * __offline_isolated_pages() hits BUG_ON(PageBuddy) (or a cancel would
 * take a reference on a free page). A reference taken between this check
 * and the drop is still possible; shp_fake_offline_going() reports it.
 */
static bool shp_fake_offline_ready(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	unsigned long i, busy = 0;
	struct page *first = NULL;

	lockdep_assert_held(&shp_isolate_lock);
	for (i = 0; i < PAGES_PER_SECTION; i++) {
		struct page *page = pfn_to_page(pfn + i);

		if (page_ref_count(page) != 1 && !busy++)
			first = page;
	}
	if (!busy)
		return true;
	pr_warn("section %lu going offline: %lu isolated page(s) still referenced, first pfn %#lx: offline refused\n",
		nr, busy, page_to_pfn(first));
	dump_page(first, "sparse_hotplug: isolated page referenced");
	return false;
}

/*
 * MEM_GOING_OFFLINE of the HELD section @nr, as virtio_mem's fake-offline
 * does: count its pages in to the managed pages the core is about to
 * subtract, and drop our reference of every page (refcount 0 PageOffline
 * pages are skipped by offlining). A page still referenced afterwards got
 * a reference after shp_fake_offline_ready(); we keep going, so that
 * shp_fake_offline_cancel() is the exact inverse, and report it. The core
 * then finds that page unmovable (scan_movable_pages(): PageOffline with
 * a reference) and cancels the offline with -EBUSY, unless that reference
 * is dropped first (the window upstream virtio_mem has too).
 */
static void shp_fake_offline_going(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	struct page *first = NULL;
	unsigned long i, busy = 0;

	lockdep_assert_held(&shp_isolate_lock);
	adjust_managed_page_count(pfn_to_page(pfn), PAGES_PER_SECTION);
	for (i = 0; i < PAGES_PER_SECTION; i++) {
		struct page *page = pfn_to_page(pfn + i);

		if (!page_ref_dec_and_test(page) && !busy++)
			first = page;
	}
	if (busy) {
		pr_warn("section %lu going offline: %lu isolated page(s) still referenced, first pfn %#lx\n",
			nr, busy, page_to_pfn(first));
		dump_page(first, "sparse_hotplug: isolated page referenced");
	}
}

/* MEM_CANCEL_OFFLINE of the DROPPED section @nr: the inverse of the above. */
static void shp_fake_offline_cancel(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	unsigned long i;

	lockdep_assert_held(&shp_isolate_lock);
	for (i = 0; i < PAGES_PER_SECTION; i++)
		page_ref_inc(pfn_to_page(pfn + i));
	adjust_managed_page_count(pfn_to_page(pfn), -(long)PAGES_PER_SECTION);
}

/*
 * Memory notifier part: isolated sections of [start_pfn, +nr_pages).
 * MEM_GOING_OFFLINE checks every section before it changes one, so a veto
 * leaves them all HELD and the MEM_CANCEL_OFFLINE that follows has nothing
 * to undo.
 */
static int shp_isolated_notify(unsigned long action, unsigned long start_pfn,
			       unsigned long nr_pages)
{
	unsigned long first = pfn_to_section_nr(start_pfn);
	unsigned long last = pfn_to_section_nr(start_pfn + nr_pages - 1);
	unsigned long nr;
	void *entry;
	int ret = 0;

	mutex_lock(&shp_isolate_lock);
	if (action == MEM_GOING_OFFLINE) {
		xa_for_each_range(&shp_isolated, nr, entry, first, last) {
			if (xa_to_value(entry) != SHP_ISO_HELD)
				continue;
			if (!shp_fake_offline_ready(nr)) {
				ret = -EBUSY;
				goto out;
			}
		}
	}
	xa_for_each_range(&shp_isolated, nr, entry, first, last) {
		switch (action) {
		case MEM_GOING_OFFLINE:
			if (xa_to_value(entry) != SHP_ISO_HELD)
				break;
			shp_fake_offline_going(nr);
			xa_store(&shp_isolated, nr, xa_mk_value(SHP_ISO_DROPPED),
				 GFP_KERNEL);
			break;
		case MEM_CANCEL_OFFLINE:
			if (xa_to_value(entry) != SHP_ISO_DROPPED)
				break;
			shp_fake_offline_cancel(nr);
			xa_store(&shp_isolated, nr, xa_mk_value(SHP_ISO_HELD),
				 GFP_KERNEL);
			break;
		case MEM_OFFLINE:
			/*
			 * Gone with the block; onlining reinitializes the
			 * memmap. A held reference vetoed MEM_GOING_OFFLINE,
			 * so none can be on this section.
			 */
			if (WARN_ON(shp_held_ref == nr))
				WRITE_ONCE(shp_held_ref, -1);
			xa_erase(&shp_isolated, nr);
			break;
		}
	}
out:
	mutex_unlock(&shp_isolate_lock);
	return ret;
}

/*
 * Module exit: give everything back, after any offline in flight ended.
 * A DROPPED section belongs to an offline between MEM_GOING_OFFLINE and
 * its end. When the block is one section (128 MiB blocks: machines below
 * 64 GiB, our test guests) all its pages are ours and the offline ends at
 * once: skipped, or -EBUSY for a page with another reference. A block of
 * several sections can hold other pages, and offline_pages() retries their
 * migration until it succeeds or, for a page that never moves, until a
 * signal to the offlining task; a kernel thread (ACPI eject, virtio-mem)
 * never gets one. So a signal to rmmod ends the wait too. The sections still DROPPED
 * are then left to their offline: if it succeeds they go with the block;
 * if it is cancelled after our notifier is gone, their pages stay
 * PageOffline with refcount 0 and counted as managed (no longer ours,
 * referring to nothing of the module) until the block goes offline.
 */
static void shp_release_all(void)
{
	unsigned long nr, waited = 0;
	void *entry;
	bool busy;

	for (;;) {
		busy = false;
		mutex_lock(&shp_isolate_lock);
		xa_for_each(&shp_isolated, nr, entry)
			if (shp_release_locked(nr) == -EBUSY)
				busy = true;
		if (busy && signal_pending(current)) {
			xa_for_each(&shp_isolated, nr, entry)
				pr_warn("section %lu: stopped waiting for its offline (signal); its pages are left to it\n",
					nr);
			busy = false;
		}
		if (!busy) {
			/*
			 * Under the lock: a MEM_CANCEL_OFFLINE or MEM_OFFLINE
			 * of a section left to its offline that comes before
			 * our notifier is unregistered then finds nothing to
			 * do, as after it.
			 */
			shp_drop_held_ref_locked();
			xa_destroy(&shp_isolated);
		}
		mutex_unlock(&shp_isolate_lock);
		if (!busy)
			return;
		if (!(waited++ % 500))
			pr_info("waiting for an offline of an isolated section to end (a signal to rmmod stops waiting)\n");
		msleep_interruptible(20);
	}
}

/* ---- online/offline through the core's sysfs file ---------------------- */

/* Writes restarted because the device hotplug lock was busy (debugfs). */
static atomic_t shp_restarts = ATOMIC_INIT(0);

/*
 * Writes @cmd to /sys/devices/system/memory/memory<block>/state: the
 * core's own store of that attribute, with its semantics, locking and
 * uevents (see the top comment). It is called directly, not through the
 * VFS: our caller is itself a write to a sysfs file, and a write through
 * a file would take the sysfs superblock's freeze protection (sb_writers,
 * in kernel_write() and in a write open that misses the dcache) and a
 * kernfs open file's mutex a second time, which lockdep reports as
 * possible recursive locking. The block cannot go away meanwhile: its
 * removal first waits in our bus notifier for this store's active
 * reference on the section attribute.
 * -ERESTARTNOINTR (device hotplug lock busy) becomes restart_syscall().
 */
static int shp_block_write_state(unsigned long block, const char *cmd)
{
	const struct attribute_group *const *grp;
	struct device_attribute *state = NULL;
	struct attribute *const *attr;
	size_t len = strlen(cmd);
	struct device *dev;
	char name[32];
	ssize_t n;

	snprintf(name, sizeof(name), "memory%lu", block);
	dev = bus_find_device_by_name(shp_memory_bus, NULL, name);
	if (!dev)
		return -ENODEV;
	for (grp = dev->groups; grp && *grp && !state; grp++)
		for (attr = (*grp)->attrs; attr && *attr; attr++)
			if (!strcmp((*attr)->name, "state")) {
				state = container_of(*attr, struct device_attribute, attr);
				break;
			}
	n = state && state->store ? state->store(dev, state, cmd, len) : -ENODEV;
	put_device(dev);
	if (n == -ERESTARTNOINTR) {
		atomic_inc(&shp_restarts);
		return restart_syscall();
	}
	if (n < 0)
		return n;
	return n == len ? 0 : -EIO;
}

/* ---- why-offline-fails report ------------------------------------------ */

enum shp_class {
	SHP_FREE,
	SHP_LRU_ANON,
	SHP_LRU_FILE,
	SHP_NONLRU_MOVABLE,
	SHP_SLAB,
	SHP_PAGE_TABLES,
	SHP_RESERVED,
	SHP_DMA_PINNED,
	SHP_GUP_HELD,
	SHP_HUGETLB,
	SHP_MEMMAP,
	SHP_ISOLATED,
	SHP_OTHER,
	SHP_NR_CLASSES
};

static const char * const shp_class_names[SHP_NR_CLASSES] = {
	[SHP_FREE]		= "free",
	[SHP_LRU_ANON]		= "lru_anon",
	[SHP_LRU_FILE]		= "lru_file",
	[SHP_NONLRU_MOVABLE]	= "nonlru_movable",
	[SHP_SLAB]		= "slab",
	[SHP_PAGE_TABLES]	= "page_tables",
	[SHP_RESERVED]		= "reserved",
	[SHP_DMA_PINNED]	= "dma_pinned",
	[SHP_GUP_HELD]		= "gup_held",
	[SHP_HUGETLB]		= "hugetlb",
	[SHP_MEMMAP]		= "memmap_on_memory",
	[SHP_ISOLATED]		= "isolated",
	[SHP_OTHER]		= "other",
};

/* Classes that make offline_pages() fail (it cannot migrate or skip them). */
static bool shp_class_blocks(enum shp_class c)
{
	switch (c) {
	case SHP_SLAB:
	case SHP_PAGE_TABLES:
	case SHP_RESERVED:
	case SHP_DMA_PINNED:
	case SHP_GUP_HELD:
	case SHP_OTHER:
		return true;
	default:
		return false;
	}
}

struct shp_report {
	unsigned long count[SHP_NR_CLASSES];
	bool online;
	const char *why;		/* blocked for a reason other than a page */
	bool blocked;			/* by the page below */
	unsigned long pfn;
	enum shp_class class;
	unsigned long flags;
};

/*
 * Pages of section @nr that hold its block's own memmap
 * (memory_hotplug.memmap_on_memory=1): the block device knows how many lie
 * at the block's start (struct memory_block::nr_vmemmap_pages, set when
 * the block was added); offlining leaves them out. The caller keeps the
 * block alive (see shp_section_report()).
 */
static unsigned long shp_memmap_pages(unsigned long nr)
{
	unsigned long nr_vmemmap, skip;
	struct device *dev;
	char name[32];

	snprintf(name, sizeof(name), "memory%lu", shp_block_of(nr));
	dev = bus_find_device_by_name(shp_memory_bus, NULL, name);
	if (!dev)
		return 0;
	nr_vmemmap = container_of(dev, struct memory_block, dev)->nr_vmemmap_pages;
	put_device(dev);
	skip = (nr % shp_sections_per_block) * PAGES_PER_SECTION;
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
static bool shp_extra_refs(struct page *page)
{
	int expected;

	if (PageCompound(page))
		return false;
	if (PageAnon(page))
		expected = page_mapcount(page) + (PageSwapCache(page) ? 1 : 0);
	else
		expected = 1 + page_mapcount(page) + (page_has_private(page) ? 1 : 0);
	return page_count(page) > expected;
}

/*
 * The class of the page at @pfn and how many pages it covers (a free buddy
 * block counts whole). Racy by nature, like has_unmovable_pages() without
 * the zone lock: a snapshot.
 */
static enum shp_class shp_classify(unsigned long pfn, bool isolated,
				   unsigned long *nr)
{
	struct page *page = pfn_to_page(pfn);
	struct page *head;

	*nr = 1;
	if (PageBuddy(page)) {
		unsigned long order = READ_ONCE(page_private(page));

		if (order < MAX_ORDER && IS_ALIGNED(pfn, 1UL << order))
			*nr = 1UL << order;
		return SHP_FREE;
	}
	if (PageOffline(page))
		return SHP_ISOLATED;	/* ours, or another driver's fake-offline */
	if (isolated)
		return SHP_ISOLATED;
	head = compound_head(page);
	if (PageHuge(head))
		return SHP_HUGETLB;
	if (!page_count(page))
		return SHP_FREE;	/* on a per-cpu list, or being freed */
	if (page_maybe_dma_pinned(page))
		return SHP_DMA_PINNED;
	if (PageLRU(head)) {
		if (shp_extra_refs(page))
			return SHP_GUP_HELD;
		return PageAnon(head) ? SHP_LRU_ANON : SHP_LRU_FILE;
	}
	if (__PageMovable(head))
		return SHP_NONLRU_MOVABLE;
	if (PageSlab(head))
		return SHP_SLAB;
	if (PageTable(page))
		return SHP_PAGE_TABLES;
	if (PageReserved(page))
		return SHP_RESERVED;
	/*
	 * Anonymous or page cache pages not on the LRU right now: in a
	 * per-cpu LRU batch (offlining drains those) or isolated by
	 * reclaim or compaction for a moment. Migratable all the same.
	 */
	if (PageAnon(head))
		return SHP_LRU_ANON;
	if (head->mapping && !((unsigned long)head->mapping & PAGE_MAPPING_FLAGS))
		return SHP_LRU_FILE;
	return SHP_OTHER;
}

/*
 * Fills @rep for section @nr; never sleeps long, takes none of our locks.
 * The caller keeps the section's block device alive (shp_lock, an active
 * reference on one of its attributes, or shp_probe_lock for our own block).
 */
static void shp_section_report(unsigned long nr, struct shp_report *rep)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	unsigned long end = pfn + PAGES_PER_SECTION;
	unsigned long memmap, n;
	struct zone *zone = NULL;
	bool isolated = shp_iso_state(nr) != 0;
	struct page *page;
	enum shp_class c;

	memset(rep, 0, sizeof(*rep));
	if (!online_section_nr(nr))
		return;
	rep->online = true;

	memmap = shp_memmap_pages(nr);
	rep->count[SHP_MEMMAP] = memmap;
	pfn += memmap;
	while (pfn < end) {
		page = shp_online_page(pfn);
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
		c = shp_classify(pfn, isolated, &n);
		n = min(n, end - pfn);
		rep->count[c] += n;
		if (shp_class_blocks(c) && !rep->blocked) {
			rep->blocked = true;
			rep->pfn = pfn;
			rep->class = c;
			rep->flags = READ_ONCE(page->flags);
		}
		pfn += n;
		if (!(pfn & (PAGES_PER_SUBSECTION - 1)))
			cond_resched();
	}
}

/* "offlinable", "blocked: ...", or "offline" (not online). */
static int shp_report_verdict(struct shp_report *rep, char *buf, size_t size)
{
	if (!rep->online)
		return scnprintf(buf, size, "offline");
	if (rep->blocked)
		return scnprintf(buf, size, "blocked: pfn %#lx %s %pGp",
				 rep->pfn, shp_class_names[rep->class],
				 &rep->flags);
	if (rep->why)
		return scnprintf(buf, size, "blocked: %s", rep->why);
	return scnprintf(buf, size, "offlinable");
}

/* ---- per-section attributes ------------------------------------------ */

static ssize_t start_pfn_show(struct kobject *kobj, struct kobj_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%#lx\n", section_nr_to_pfn(to_shp_section(kobj)->nr));
}

/* Pages of the section with a memmap: subsections count for hot-added ones. */
static ssize_t nr_pages_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	unsigned long pfn = section_nr_to_pfn(to_shp_section(kobj)->nr);
	unsigned long end = pfn + PAGES_PER_SECTION;
	unsigned long nr = 0;

	for (; pfn < end; pfn += PAGES_PER_SUBSECTION)
		if (pfn_valid(pfn))
			nr += PAGES_PER_SUBSECTION;
	return sysfs_emit(buf, "%lu\n", nr);
}

static ssize_t block_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%lu\n", shp_block_of(to_shp_section(kobj)->nr));
}

static const char *shp_section_state(unsigned long nr)
{
	struct mem_section *ms = __nr_to_section(nr);

	if (!ms || !present_section(ms))
		return "removed";
	if (!online_section(ms))
		return "offline";
	return shp_iso_state(nr) ? "isolated" : "online";
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%s\n", shp_section_state(to_shp_section(kobj)->nr));
}

enum {
	SHP_CMD_ONLINE,
	SHP_CMD_ONLINE_MOVABLE,
	SHP_CMD_ONLINE_KERNEL,
	SHP_CMD_OFFLINE,
	SHP_CMD_ISOLATE,
	SHP_CMD_RELEASE,
};

static const char * const shp_state_cmds[] = {
	[SHP_CMD_ONLINE]		= "online",
	[SHP_CMD_ONLINE_MOVABLE]	= "online_movable",
	[SHP_CMD_ONLINE_KERNEL]		= "online_kernel",
	[SHP_CMD_OFFLINE]		= "offline",
	[SHP_CMD_ISOLATE]		= "isolate",
	[SHP_CMD_RELEASE]		= "release",
};

/*
 * online, online_movable, online_kernel, offline: the containing block,
 * through the core (errors are the core's: -EINVAL when already in that
 * state or the zone is not allowed, -EBUSY/-EINTR when offlining fails).
 * isolate, release: this section only. Anything else: -EINVAL.
 */
static ssize_t state_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	unsigned long nr = to_shp_section(kobj)->nr;
	u64 t0 = ktime_get_ns();
	int cmd, ret;

	cmd = sysfs_match_string(shp_state_cmds, buf);
	if (cmd < 0)
		return -EINVAL;
	switch (cmd) {
	case SHP_CMD_ISOLATE:
		ret = shp_isolate(nr);
		break;
	case SHP_CMD_RELEASE:
		ret = shp_release(nr);
		break;
	default:
		ret = shp_block_write_state(shp_block_of(nr), shp_state_cmds[cmd]);
		break;
	}
	if (ret != -ERESTARTNOINTR)
		trace_section_control(nr, shp_state_cmds[cmd], ret,
				      ktime_get_ns() - t0);
	return ret ? ret : count;
}

/*
 * The zones of the section's online pages, space separated in address
 * order ("DMA DMA32" for the first section of a PC), or "none" when the
 * section is offline.
 */
static ssize_t zone_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	unsigned long pfn = section_nr_to_pfn(to_shp_section(kobj)->nr);
	unsigned long end = pfn + PAGES_PER_SECTION;
	struct zone *last = NULL;
	int len = 0;

	for (; pfn < end; pfn += pageblock_nr_pages) {
		struct page *page = shp_online_page(pfn);
		struct zone *zone;

		if (!page)
			continue;
		zone = page_zone(page);
		if (zone == last)
			continue;
		len += sysfs_emit_at(buf, len, "%s%s", len ? " " : "", zone->name);
		last = zone;
	}
	if (!len)
		return sysfs_emit(buf, "none\n");
	return len + sysfs_emit_at(buf, len, "\n");
}

/*
 * The node: from the memmap when online; an offline section's memmap may be
 * uninitialized (poisoned), so ask the firmware tables for the address.
 */
static ssize_t nid_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf)
{
	unsigned long pfn = section_nr_to_pfn(to_shp_section(kobj)->nr);
	unsigned long end = pfn + PAGES_PER_SECTION;

	for (; pfn < end; pfn += pageblock_nr_pages) {
		struct page *page = shp_online_page(pfn);

		if (page)
			return sysfs_emit(buf, "%d\n", page_to_nid(page));
	}
	pfn = section_nr_to_pfn(to_shp_section(kobj)->nr);
	return sysfs_emit(buf, "%d\n", memory_add_physaddr_to_nid(PFN_PHYS(pfn)));
}

/* One "class count" line per class, then "verdict ...". */
static ssize_t offline_report_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct shp_report *rep;
	char verdict[128];
	int i, len = 0;

	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	shp_section_report(to_shp_section(kobj)->nr, rep);
	for (i = 0; i < SHP_NR_CLASSES; i++)
		len += sysfs_emit_at(buf, len, "%s %lu\n", shp_class_names[i],
				     rep->count[i]);
	shp_report_verdict(rep, verdict, sizeof(verdict));
	len += sysfs_emit_at(buf, len, "verdict %s\n", verdict);
	kfree(rep);
	return len;
}

static struct kobj_attribute start_pfn_attr = __ATTR_RO(start_pfn);
static struct kobj_attribute nr_pages_attr = __ATTR_RO(nr_pages);
static struct kobj_attribute block_attr = __ATTR_RO(block);
static struct kobj_attribute state_attr = __ATTR_RW(state);
static struct kobj_attribute zone_attr = __ATTR_RO(zone);
static struct kobj_attribute nid_attr = __ATTR_RO(nid);
static struct kobj_attribute offline_report_attr = __ATTR_RO(offline_report);

static struct attribute *shp_section_attrs[] = {
	&start_pfn_attr.attr,
	&nr_pages_attr.attr,
	&block_attr.attr,
	&state_attr.attr,
	&zone_attr.attr,
	&nid_attr.attr,
	&offline_report_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(shp_section);

static void shp_section_release(struct kobject *kobj)
{
	kfree(to_shp_section(kobj));
}

static const struct kobj_type shp_section_ktype = {
	.release	= shp_section_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= shp_section_groups,
};

/* ---- the set of sections --------------------------------------------- */

static int shp_add_section(unsigned long nr)
{
	struct shp_section *sec;
	int ret;

	lockdep_assert_held(&shp_lock);
	if (xa_load(&shp_sections, nr))
		return 0;

	sec = kzalloc(sizeof(*sec), GFP_KERNEL);
	if (!sec)
		return -ENOMEM;
	sec->nr = nr;
	ret = kobject_init_and_add(&sec->kobj, &shp_section_ktype,
				   shp_sections_kobj, "section%lu", nr);
	if (ret)
		goto out_put;
	ret = xa_err(xa_store(&shp_sections, nr, sec, GFP_KERNEL));
	if (ret)
		goto out_put;
	kobject_uevent(&sec->kobj, KOBJ_ADD);
	return 0;

out_put:
	kobject_put(&sec->kobj);	/* frees sec through the release */
	return ret;
}

static void shp_del_section(unsigned long nr)
{
	struct shp_section *sec;

	lockdep_assert_held(&shp_lock);
	sec = xa_erase(&shp_sections, nr);
	if (sec)
		kobject_put(&sec->kobj);
}

/* Adds the present sections of [first, first + nr). */
static int shp_add_present(unsigned long first, unsigned long nr)
{
	unsigned long i;
	int ret;

	lockdep_assert_held(&shp_lock);
	for (i = first; i < first + nr && i < NR_MEM_SECTIONS; i++) {
		if (!present_section_nr(i))
			continue;
		ret = shp_add_section(i);
		if (ret)
			return ret;
	}
	return 0;
}

/* Adds every present section; roots never allocated are skipped whole. */
static int shp_scan_all(void)
{
	unsigned long nr;
	int ret;

	lockdep_assert_held(&shp_lock);
	for (nr = 0; nr < NR_MEM_SECTIONS; nr += SECTIONS_PER_ROOT) {
		if (!mem_section || !mem_section[SECTION_NR_TO_ROOT(nr)])
			continue;
		ret = shp_add_present(nr, SECTIONS_PER_ROOT);
		if (ret)
			return ret;
		cond_resched();
	}
	return 0;
}

static unsigned long shp_count_sections(void)
{
	struct shp_section *sec;
	unsigned long nr, count = 0;

	xa_for_each(&shp_sections, nr, sec)
		count++;
	return count;
}

static void shp_del_all(void)
{
	struct shp_section *sec;
	unsigned long nr;

	mutex_lock(&shp_lock);
	xa_for_each(&shp_sections, nr, sec)
		shp_del_section(nr);
	mutex_unlock(&shp_lock);
}

/*
 * Memory block devices come and go with hot-add and removal. Sections are
 * already present when a block device is added and still present when it
 * is deleted (the memmap is torn down afterwards).
 */
static int shp_memory_bus_notify(struct notifier_block *nb,
				 unsigned long action, void *data)
{
	struct device *dev = data;
	unsigned long first = dev->id * shp_sections_per_block;
	unsigned long i;

	switch (action) {
	case BUS_NOTIFY_ADD_DEVICE:
		mutex_lock(&shp_lock);
		if (!shp_dying && shp_add_present(first, shp_sections_per_block))
			pr_warn("no sysfs directories for block %u: out of memory\n",
				dev->id);
		mutex_unlock(&shp_lock);
		break;
	case BUS_NOTIFY_DEL_DEVICE:
		mutex_lock(&shp_lock);
		for (i = first; i < first + shp_sections_per_block; i++)
			shp_del_section(i);
		mutex_unlock(&shp_lock);
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block shp_memory_bus_nb = {
	.notifier_call = shp_memory_bus_notify,
};

/*
 * Finds the memory bus through the first present section's block device:
 * /sys/devices/system is the grandparent of CPU 0's device, and each
 * directory's kernfs node carries its kobject. Boot memory blocks are not
 * removed while we look (their removal needs an ACPI eject of boot RAM).
 */
static struct bus_type *shp_find_memory_bus(void)
{
	struct kernfs_node *memory_kn, *block_kn;
	struct bus_type *bus = NULL;
	struct device *cpu0 = get_cpu_device(0);
	char name[32];
	unsigned long nr;

	if (!cpu0 || !cpu0->kobj.parent || !cpu0->kobj.parent->parent)
		return NULL;
	for (nr = 0; nr < NR_MEM_SECTIONS; nr++)
		if (present_section_nr(nr))
			break;
	if (nr == NR_MEM_SECTIONS)
		return NULL;
	snprintf(name, sizeof(name), "memory%lu", shp_block_of(nr));

	memory_kn = kernfs_find_and_get(cpu0->kobj.parent->parent->sd, "memory");
	if (!memory_kn)
		return NULL;
	block_kn = kernfs_find_and_get(memory_kn, name);
	kernfs_put(memory_kn);
	if (!block_kn)
		return NULL;
	if (kernfs_type(block_kn) == KERNFS_DIR && block_kn->priv) {
		struct device *dev = kobj_to_dev(block_kn->priv);

		if (dev->bus && !strcmp(dev->bus->name, "memory"))
			bus = dev->bus;
	}
	kernfs_put(block_kn);
	return bus;
}

/* ---- event log (memory notifier) --------------------------------------- */

#define SHP_NR_EVENTS	1024

struct shp_event {
	u64 time_ns;			/* CLOCK_BOOTTIME at the end */
	u64 duration_ns;		/* GOING_* to the final event */
	unsigned long block;
	int from, to, result;
	char zone[16];			/* after onlining; "-" otherwise */
};

/* Protects the ring and shp_pending (see the top comment). */
static DEFINE_MUTEX(shp_event_lock);
static struct shp_event *shp_events;
static u64 shp_events_total;		/* ever recorded; ring index = total % N */

static struct {
	bool active;
	unsigned long block;
	int to;
	u64 start_ns;
} shp_pending;

static void shp_event_begin(struct memory_notify *mn, int to)
{
	unsigned long block = pfn_to_section_nr(mn->start_pfn) / shp_sections_per_block;

	mutex_lock(&shp_event_lock);
	shp_pending.active = true;
	shp_pending.block = block;
	shp_pending.to = to;
	shp_pending.start_ns = ktime_get_ns();
	mutex_unlock(&shp_event_lock);
	trace_block_going(block, mn->start_pfn, mn->nr_pages, to);
}

static void shp_event_end(struct memory_notify *mn, int to, int result)
{
	unsigned long block = pfn_to_section_nr(mn->start_pfn) / shp_sections_per_block;
	struct page *page = shp_online_page(mn->start_pfn);
	const char *zone = (page && to == SHP_BLOCK_ONLINE && result == SHP_RESULT_OK) ?
			   page_zone(page)->name : "-";
	/* from/to name the attempted change; a cancelled one ends in from. */
	int from = to == SHP_BLOCK_ONLINE ? SHP_BLOCK_OFFLINE : SHP_BLOCK_ONLINE;
	struct shp_event *ev;
	u64 now = ktime_get_ns(), duration = 0;

	mutex_lock(&shp_event_lock);
	if (shp_pending.active && shp_pending.block == block && shp_pending.to == to)
		duration = now - shp_pending.start_ns;
	shp_pending.active = false;
	ev = &shp_events[shp_events_total++ % SHP_NR_EVENTS];
	ev->time_ns = ktime_get_boottime_ns();
	ev->duration_ns = duration;
	ev->block = block;
	ev->from = from;
	ev->to = to;
	ev->result = result;
	strscpy(ev->zone, zone, sizeof(ev->zone));
	mutex_unlock(&shp_event_lock);
	trace_block_transition(block, from, to, result, duration, zone);
}

static int shp_memory_notify(struct notifier_block *nb, unsigned long action,
			     void *arg)
{
	struct memory_notify *mn = arg;

	switch (action) {
	case MEM_GOING_ONLINE:
		shp_event_begin(mn, SHP_BLOCK_ONLINE);
		break;
	case MEM_GOING_OFFLINE:
		shp_event_begin(mn, SHP_BLOCK_OFFLINE);
		/* A veto: the core sends MEM_CANCEL_OFFLINE, which ends the event. */
		return notifier_from_errno(shp_isolated_notify(action,
							       mn->start_pfn,
							       mn->nr_pages));
	case MEM_ONLINE:
		shp_event_end(mn, SHP_BLOCK_ONLINE, SHP_RESULT_OK);
		break;
	case MEM_CANCEL_ONLINE:
		shp_event_end(mn, SHP_BLOCK_ONLINE, SHP_RESULT_CANCELLED);
		break;
	case MEM_OFFLINE:
		shp_isolated_notify(action, mn->start_pfn, mn->nr_pages);
		shp_event_end(mn, SHP_BLOCK_OFFLINE, SHP_RESULT_OK);
		break;
	case MEM_CANCEL_OFFLINE:
		shp_isolated_notify(action, mn->start_pfn, mn->nr_pages);
		shp_event_end(mn, SHP_BLOCK_OFFLINE, SHP_RESULT_CANCELLED);
		break;
	}
	return NOTIFY_OK;
}

static struct notifier_block shp_memory_nb = {
	.notifier_call = shp_memory_notify,
};

static const char *shp_state_name(int s)
{
	return s == SHP_BLOCK_ONLINE ? "online" : "offline";
}

static int shp_events_show(struct seq_file *m, void *v)
{
	struct shp_event *ev;
	u64 i, first;

	seq_puts(m, "# seq time_s block from to zone result duration_us\n");
	mutex_lock(&shp_event_lock);
	first = shp_events_total > SHP_NR_EVENTS ? shp_events_total - SHP_NR_EVENTS : 0;
	for (i = first; i < shp_events_total; i++) {
		ev = &shp_events[i % SHP_NR_EVENTS];
		seq_printf(m, "%llu %llu.%06llu %lu %s %s %s %s %llu\n", i,
			   ev->time_ns / NSEC_PER_SEC,
			   (ev->time_ns % NSEC_PER_SEC) / NSEC_PER_USEC,
			   ev->block, shp_state_name(ev->from),
			   shp_state_name(ev->to), ev->zone,
			   ev->result == SHP_RESULT_OK ? "ok" : "cancelled",
			   ev->duration_ns / NSEC_PER_USEC);
	}
	mutex_unlock(&shp_event_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(shp_events);

/* ---- debugfs section table ---------------------------------------------- */

static int shp_sections_table_show(struct seq_file *m, void *v)
{
	struct shp_report *rep;
	struct shp_section *sec;
	const char *state;
	char verdict[128];
	unsigned long nr;
	int i;

	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	seq_puts(m, "section block state");
	for (i = 0; i < SHP_NR_CLASSES; i++)
		seq_printf(m, " %s", shp_class_names[i]);
	seq_puts(m, " verdict\n");
	/*
	 * One section at a time under shp_lock, which keeps that section's
	 * block device, hence its memmap, alive while we read it (removal
	 * waits in our DEL handler). Dropped between sections: the bus
	 * notifier, which a hot-add or removal calls holding the device
	 * hotplug lock and mem_hotplug_lock, waits for one section's
	 * classification at most, never for the whole table.
	 */
	for (nr = 0; ; nr++) {
		mutex_lock(&shp_lock);
		sec = xa_find(&shp_sections, &nr, ULONG_MAX, XA_PRESENT);
		if (sec) {
			shp_section_report(nr, rep);
			state = shp_section_state(nr);
		}
		mutex_unlock(&shp_lock);
		if (!sec)
			break;
		shp_report_verdict(rep, verdict, sizeof(verdict));
		seq_printf(m, "%lu %lu %s", nr, shp_block_of(nr), state);
		for (i = 0; i < SHP_NR_CLASSES; i++)
			seq_printf(m, " %lu", rep->count[i]);
		seq_printf(m, " %s\n", verdict);
		cond_resched();
	}
	kfree(rep);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(shp_sections_table);

/* ---- hidden RAM: probe and remove ---------------------------------------- */

#define SHP_MAX_RANGES	8

/* [start, end) physical, block aligned; parsed from ranges= at load. */
static struct {
	u64 start, end;
} shp_ranges[SHP_MAX_RANGES];
static int shp_nr_ranges;

/* A block added by probe. */
struct shp_added {
	struct list_head list;
	u64 phys;
};

/* Protects shp_added; held across add and remove (see the top comment). */
static DEFINE_MUTEX(shp_probe_lock);
static LIST_HEAD(shp_added);

/*
 * The resource name lives in /proc/iomem as long as the memory: allocated,
 * and freed at unload only if everything we added was removed.
 */
static const char *shp_resource_name;

/* START-END or SIZE@START, comma separated; memparse() suffixes. */
static int shp_parse_ranges(char *str)
{
	u64 bs = memory_block_size_bytes();
	char *tok, *p;
	u64 a, b;

	while ((tok = strsep(&str, ","))) {
		if (!*tok)
			continue;
		if (shp_nr_ranges == SHP_MAX_RANGES)
			return -E2BIG;
		a = memparse(tok, &p);
		if (*p == '-') {
			b = memparse(p + 1, &p);
		} else if (*p == '@') {
			u64 size = a;

			a = memparse(p + 1, &p);
			b = a + size;
		} else {
			return -EINVAL;
		}
		if (*p || b <= a || !IS_ALIGNED(a, bs) || !IS_ALIGNED(b, bs))
			return -EINVAL;
		shp_ranges[shp_nr_ranges].start = a;
		shp_ranges[shp_nr_ranges].end = b;
		shp_nr_ranges++;
	}
	return 0;
}

static bool shp_in_ranges(u64 start, u64 end)
{
	int i;

	for (i = 0; i < shp_nr_ranges; i++)
		if (start >= shp_ranges[i].start && end <= shp_ranges[i].end)
			return true;
	return false;
}

/*
 * Is [start, end) System RAM in the firmware's memory map (e820 as the
 * firmware gave it, before mem= and memmap= trimmed it; what
 * /sys/firmware/memmap shows)? Asked of the table itself, page by page
 * (adjacent RAM entries count as one): reading /sys/firmware/memmap from
 * here, our probe store, would take a second kernfs open file mutex,
 * which lockdep reports as possible recursive locking.
 */
static bool shp_firmware_ram(u64 start, u64 end)
{
	u64 p;

	for (p = start; p < end; p += PAGE_SIZE)
		if (!e820__mapped_raw_any(p, p + PAGE_SIZE, E820_TYPE_RAM))
			return false;
	return true;
}

static struct shp_added *shp_find_added(u64 phys)
{
	struct shp_added *a;

	lockdep_assert_held(&shp_probe_lock);
	list_for_each_entry(a, &shp_added, list)
		if (a->phys == phys)
			return a;
	return NULL;
}

/*
 * -EINVAL: not block aligned, or no block can start there (the end would
 * wrap past 2^64); -ERANGE: not in ranges=; -EEXIST, -ENXIO, or what
 * add_memory_driver_managed() says.
 */
static int shp_probe(u64 phys)
{
	u64 bs = memory_block_size_bytes();
	struct shp_added *a;
	u64 end;
	int ret;

	if (!IS_ALIGNED(phys, bs) || check_add_overflow(phys, bs, &end))
		return -EINVAL;
	if (!shp_in_ranges(phys, end))
		return -ERANGE;
	mutex_lock(&shp_probe_lock);
	if (shp_find_added(phys) || present_section_nr(pfn_to_section_nr(PHYS_PFN(phys))) ||
	    region_intersects(phys, bs, IORESOURCE_SYSTEM_RAM, IORES_DESC_NONE) !=
	    REGION_DISJOINT) {
		ret = -EEXIST;
		goto out;
	}
	if (!shp_firmware_ram(phys, end)) {
		ret = -ENXIO;
		goto out;
	}
	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a) {
		ret = -ENOMEM;
		goto out;
	}
	/* Onlines inside the call if auto_online_blocks says so. */
	ret = add_memory_driver_managed(memory_add_physaddr_to_nid(phys), phys,
					bs, shp_resource_name, MHP_NONE);
	if (ret) {
		kfree(a);
		goto out;
	}
	a->phys = phys;
	list_add_tail(&a->list, &shp_added);
out:
	mutex_unlock(&shp_probe_lock);
	return ret;
}

static int shp_remove(u64 phys)
{
	struct shp_added *a;
	int ret;

	if (!IS_ALIGNED(phys, memory_block_size_bytes()))
		return -EINVAL;
	mutex_lock(&shp_probe_lock);
	a = shp_find_added(phys);
	if (!a) {
		ret = -ENOENT;
		goto out;
	}
	ret = offline_and_remove_memory(phys, memory_block_size_bytes());
	if (!ret) {
		list_del(&a->list);
		kfree(a);
	}
out:
	mutex_unlock(&shp_probe_lock);
	return ret;
}

/*
 * Why the block at @phys cannot be offlined, into @buf (empty if it can,
 * as far as the offline report sees). Used at unload, where a page held
 * in ZONE_MOVABLE would make offline_pages() retry until a signal that
 * rmmod never gets.
 */
static void shp_block_blocked(u64 phys, char *buf, size_t size)
{
	unsigned long nr = pfn_to_section_nr(PHYS_PFN(phys));
	unsigned long i;
	struct shp_report *rep;

	buf[0] = '\0';
	rep = kmalloc(sizeof(*rep), GFP_KERNEL);
	if (!rep)
		return;
	for (i = nr; i < nr + shp_sections_per_block && !buf[0]; i++) {
		shp_section_report(i, rep);
		if (rep->online && (rep->blocked || rep->why))
			shp_report_verdict(rep, buf, size);
	}
	kfree(rep);
}

/*
 * Unload: remove what we added. A block the offline report calls blocked,
 * or whose removal fails, stays added as System RAM: an exit function
 * cannot fail rmmod. Nothing of it refers to the module afterwards: the
 * notifiers are gone, its isolated sections are given back by
 * shp_release_all(), and the resource's name is kstrdup_const()'s heap
 * copy (a module's literal is not kernel rodata), which then stays
 * allocated on purpose (see sparse_hotplug_exit()). The blocks that stay
 * are listed in one warning, after a line each saying why.
 */
static bool shp_remove_all(void)
{
	struct shp_added *a, *tmp;
	char why[128], stays[160] = "";
	int ret, n = 0, listed = 0, len = 0;

	mutex_lock(&shp_probe_lock);
	list_for_each_entry_safe(a, tmp, &shp_added, list) {
		shp_block_blocked(a->phys, why, sizeof(why));
		if (why[0]) {
			pr_warn("memory block at %#llx stays added: %s\n", a->phys, why);
		} else {
			ret = offline_and_remove_memory(a->phys,
							memory_block_size_bytes());
			if (!ret) {
				list_del(&a->list);
				kfree(a);
				continue;
			}
			pr_warn("memory block at %#llx stays added: offline_and_remove_memory: %d\n",
				a->phys, ret);
		}
		n++;
		/* The first few in probe order, then "...": one line. */
		if (len < sizeof(stays) - 24) {
			len += scnprintf(stays + len, sizeof(stays) - len, " %#llx",
					 a->phys);
			listed++;
		}
		list_del(&a->list);
		kfree(a);
	}
	if (n)
		pr_warn("%d memory block(s) stay added as System RAM (sparse_hotplug):%s%s\n",
			n, stays, listed < n ? " ..." : "");
	mutex_unlock(&shp_probe_lock);
	return !n;
}

static ssize_t shp_hidden_ram_store(const char *buf, size_t count, bool add)
{
	u64 t0 = ktime_get_ns();
	u64 phys;
	int ret;

	ret = kstrtou64(buf, 0, &phys);
	if (ret)
		return ret;
	ret = add ? shp_probe(phys) : shp_remove(phys);
	trace_hidden_ram(add, phys, ret, ktime_get_ns() - t0);
	return ret ? ret : count;
}

static ssize_t probe_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	return shp_hidden_ram_store(buf, count, true);
}

static ssize_t remove_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	return shp_hidden_ram_store(buf, count, false);
}

/* The blocks probe added, one physical address a line. */
static ssize_t probed_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	struct shp_added *a;
	int len = 0;

	mutex_lock(&shp_probe_lock);
	list_for_each_entry(a, &shp_added, list)
		len += sysfs_emit_at(buf, len, "%#llx\n", a->phys);
	mutex_unlock(&shp_probe_lock);
	return len;
}

/* ---- root attributes --------------------------------------------------- */

static ssize_t section_size_bytes_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lx\n", PAGES_PER_SECTION << PAGE_SHIFT);
}

static ssize_t block_size_bytes_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lx\n", memory_block_size_bytes());
}

static struct kobj_attribute section_size_bytes_attr = __ATTR_RO(section_size_bytes);
static struct kobj_attribute block_size_bytes_attr = __ATTR_RO(block_size_bytes);
static struct kobj_attribute probe_attr = __ATTR_WO(probe);
static struct kobj_attribute remove_attr = __ATTR_WO(remove);
static struct kobj_attribute probed_attr = __ATTR_RO(probed);

static struct attribute *shp_root_attrs[] = {
	&section_size_bytes_attr.attr,
	&block_size_bytes_attr.attr,
	&probe_attr.attr,
	&remove_attr.attr,
	&probed_attr.attr,
	NULL,
};

static const struct attribute_group shp_root_group = {
	.attrs = shp_root_attrs,
};

/* ---- debugfs ------------------------------------------------------------ */

static ssize_t shp_provoke_warning_write(struct file *file,
					 const char __user *ubuf,
					 size_t count, loff_t *ppos)
{
	bool val;
	int ret;

	ret = kstrtobool_from_user(ubuf, count, &val);
	if (ret)
		return ret;
	WARN(val, "sparse_hotplug: warning provoked on request through debugfs\n");
	return count;
}

static const struct file_operations shp_provoke_warning_fops = {
	.owner	= THIS_MODULE,
	.write	= shp_provoke_warning_write,
	.llseek	= noop_llseek,
};

static ssize_t shp_hold_ref_read(struct file *file, char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	char buf[24];
	int len;

	len = scnprintf(buf, sizeof(buf), "%ld\n", READ_ONCE(shp_held_ref));
	return simple_read_from_buffer(ubuf, count, ppos, buf, len);
}

static ssize_t shp_hold_ref_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	long nr;
	int ret;

	ret = kstrtol_from_user(ubuf, count, 0, &nr);
	if (ret)
		return ret;
	if (nr < -1 || nr >= (long)NR_MEM_SECTIONS)
		return -EINVAL;
	ret = shp_hold_ref(nr);
	return ret ? ret : count;
}

static const struct file_operations shp_hold_ref_fops = {
	.owner	= THIS_MODULE,
	.read	= shp_hold_ref_read,
	.write	= shp_hold_ref_write,
	.llseek	= default_llseek,
};

/* ---- module ------------------------------------------------------------- */

static int __init sparse_hotplug_init(void)
{
	char *str;
	int ret;

	shp_sections_per_block = memory_block_size_bytes() >> SECTION_SIZE_BITS;
	if (!shp_sections_per_block)
		return -EINVAL;

	if (ranges) {
		str = kstrdup(ranges, GFP_KERNEL);
		if (!str)
			return -ENOMEM;
		ret = shp_parse_ranges(str);
		kfree(str);
		if (ret) {
			pr_err("ranges=%s: want START-END or SIZE@START, comma separated, %#lx aligned, at most %d\n",
			       ranges, memory_block_size_bytes(), SHP_MAX_RANGES);
			return ret;
		}
	}

	shp_memory_bus = shp_find_memory_bus();
	if (!shp_memory_bus) {
		pr_err("memory block devices not found in /sys/devices/system/memory\n");
		return -ENODEV;
	}

	shp_events = kvcalloc(SHP_NR_EVENTS, sizeof(*shp_events), GFP_KERNEL);
	shp_resource_name = kstrdup_const("System RAM (sparse_hotplug)", GFP_KERNEL);
	if (!shp_events || !shp_resource_name) {
		ret = -ENOMEM;
		goto out_free;
	}

	ret = register_memory_notifier(&shp_memory_nb);
	if (ret)
		goto out_free;

	ret = -ENOMEM;
	shp_root_kobj = kobject_create_and_add("sparse_hotplug", kernel_kobj);
	if (!shp_root_kobj)
		goto out_unregister_memory;
	shp_sections_kobj = kobject_create_and_add("sections", shp_root_kobj);
	if (!shp_sections_kobj)
		goto out_put_root;

	/*
	 * Watch first, then scan: a block added in between is seen twice,
	 * which shp_add_section() tolerates.
	 */
	ret = bus_register_notifier(shp_memory_bus, &shp_memory_bus_nb);
	if (ret)
		goto out_put_sections;
	mutex_lock(&shp_lock);
	ret = shp_scan_all();
	mutex_unlock(&shp_lock);
	if (ret)
		goto out_unregister_bus;
	ret = sysfs_create_group(shp_root_kobj, &shp_root_group);
	if (ret)
		goto out_unregister_bus;

	shp_debugfs = debugfs_create_dir("sparse_hotplug", NULL);
	debugfs_create_file("sections", 0400, shp_debugfs, NULL,
			    &shp_sections_table_fops);
	debugfs_create_file("events", 0400, shp_debugfs, NULL, &shp_events_fops);
	debugfs_create_atomic_t("restarts", 0400, shp_debugfs, &shp_restarts);
	if (selftest_warn)
		debugfs_create_file("provoke_warning", 0200, shp_debugfs, NULL,
				    &shp_provoke_warning_fops);
	if (selftest_refs)
		debugfs_create_file("hold_ref", 0600, shp_debugfs, NULL,
				    &shp_hold_ref_fops);

	pr_info("%lu sections of %lu MiB, %lu per memory block, %d hidden RAM range(s)\n",
		shp_count_sections(),
		(PAGES_PER_SECTION << PAGE_SHIFT) >> 20, shp_sections_per_block,
		shp_nr_ranges);
	return 0;

out_unregister_bus:
	bus_unregister_notifier(shp_memory_bus, &shp_memory_bus_nb);
	shp_del_all();
out_put_sections:
	kobject_put(shp_sections_kobj);
out_put_root:
	kobject_put(shp_root_kobj);
out_unregister_memory:
	unregister_memory_notifier(&shp_memory_nb);
out_free:
	kfree_const(shp_resource_name);
	kvfree(shp_events);
	return ret;
}

/*
 * Teardown order: debugfs readers and probe/remove writers are drained
 * first, then what probe added is removed (our notifiers still watch),
 * then the section directories go (draining isolate/release writers),
 * isolated sections are given back, and only then the memory notifier,
 * which an offline of an isolated section still needs, is unregistered.
 */
static void __exit sparse_hotplug_exit(void)
{
	bool all_removed;

	debugfs_remove_recursive(shp_debugfs);
	/* A held test reference would make a probed block's removal fail. */
	shp_hold_ref(-1);
	sysfs_remove_group(shp_root_kobj, &shp_root_group);
	all_removed = shp_remove_all();
	/*
	 * Directories go before the bus notifier: until they are gone, a
	 * block removal waits in BUS_NOTIFY_DEL_DEVICE for their readers, so
	 * no reader classifies a memmap that is being freed. Blocks added
	 * meanwhile get no directory (shp_dying).
	 */
	mutex_lock(&shp_lock);
	shp_dying = true;
	mutex_unlock(&shp_lock);
	shp_del_all();
	bus_unregister_notifier(shp_memory_bus, &shp_memory_bus_nb);
	xa_destroy(&shp_sections);
	shp_release_all();
	unregister_memory_notifier(&shp_memory_nb);
	kobject_put(shp_sections_kobj);
	kobject_put(shp_root_kobj);
	kvfree(shp_events);
	/*
	 * Else /proc/iomem still names memory we could not remove: the name
	 * stays, and kmemleak is told it is kept on purpose (a later removal
	 * drops the last pointer to it).
	 */
	if (all_removed)
		kfree_const(shp_resource_name);
	else
		kmemleak_not_leak(shp_resource_name);
}

module_init(sparse_hotplug_init);
module_exit(sparse_hotplug_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("memhp-lab");
MODULE_DESCRIPTION("Memory sections as sysfs objects: state, controls, offline report, hidden RAM probe, event log");
