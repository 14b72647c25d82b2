// SPDX-License-Identifier: GPL-2.0
/*
 * sparse_hotplug: section isolation. "isolate" written to a section's
 * state takes the online section from the page allocator, "release" gives
 * it back, and the memory notifier's fake-offline part lets a block with
 * isolated sections go offline. Design and locking: the top of
 * sparse_hotplug_sections.c.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/memory.h>
#include <linux/memory_hotplug.h>
#include <linux/page-flags.h>
#include <linux/page_ref.h>
#include <linux/gfp.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/uaccess.h>
#include <linux/delay.h>
#include <linux/sched/signal.h>

#include "sparse_hotplug_internal.h"

static bool selftest_refs;
module_param(selftest_refs, bool, 0444);
MODULE_PARM_DESC(selftest_refs,
		 "Create debugfs sparse_hotplug/hold_ref, which holds an extra reference on an isolated section's first page (tests offlining with an unexpected reference)");

/* ---- isolation ---------------------------------------------------------- */

/*
 * sparse_hp_isolated: section number -> xa_mk_value(enum sparse_hp_iso_state),
 * under sparse_hp_isolate_lock.
 */
enum sparse_hp_iso_state {
	/* Not isolated: no entry in sparse_hp_isolated. */
	SPARSE_HP_ISO_NONE,
	/* We own one reference on every page of the section. */
	SPARSE_HP_ISO_HELD,
	/*
	 * The section's block is going offline and we dropped them
	 * (MEM_GOING_OFFLINE); release must wait for the offline to finish.
	 */
	SPARSE_HP_ISO_DROPPED,
};

static DEFINE_MUTEX(sparse_hp_isolate_lock);
static DEFINE_XARRAY(sparse_hp_isolated);

/* The section whose first page hold_ref holds a reference of, or -1. */
static long sparse_hp_held_ref = -1;

unsigned long sparse_hp_iso_state(unsigned long nr)
{
	void *entry = xa_load(&sparse_hp_isolated, nr);

	return entry ? xa_to_value(entry) : 0;
}

static void sparse_hp_mark_offline(unsigned long pfn, unsigned long nr_pages,
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
int sparse_hp_isolate(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	struct page *first, *last;
	int ret, tries;

	mutex_lock(&sparse_hp_isolate_lock);
	if (sparse_hp_iso_state(nr)) {
		ret = -EEXIST;
		goto out;
	}
	/*
	 * Online now; if an offline isolated the pageblocks meanwhile,
	 * alloc_contig_range() fails with -EBUSY, and a completed offline
	 * cleared the online bit first (see the locking rules at the top of
	 * sparse_hotplug_sections.c).
	 */
	first = pfn_to_online_page(pfn);
	last = pfn_to_online_page(pfn + PAGES_PER_SECTION - 1);
	if (!first || !last || page_zone(first) != page_zone(last)) {
		ret = -EINVAL;
		goto out;
	}
	ret = xa_err(xa_store(&sparse_hp_isolated, nr, xa_mk_value(SPARSE_HP_ISO_HELD),
			      GFP_KERNEL));
	if (ret)
		goto out;
	/*
	 * Like virtio-mem: in ZONE_MOVABLE a failure is transient (a page
	 * under I/O or briefly referenced), so retry a few times there.
	 */
	for (tries = 0; tries < 5; tries++) {
		ret = memhp_alloc_contig_range(pfn, pfn + PAGES_PER_SECTION,
					       GFP_KERNEL | __GFP_NOWARN);
		if (!ret || ret == -ENOMEM || ret == -EINTR ||
		    zone_idx(page_zone(first)) != ZONE_MOVABLE)
			break;
		cond_resched();
	}
	if (ret) {
		xa_erase(&sparse_hp_isolated, nr);
		goto out;
	}
	sparse_hp_mark_offline(pfn, PAGES_PER_SECTION, true);
	adjust_managed_page_count(first, -(long)PAGES_PER_SECTION);
out:
	mutex_unlock(&sparse_hp_isolate_lock);
	return ret;
}

/*
 * hold_ref's reference is taken and dropped like ours, without put_page():
 * dropped while its section is DROPPED, the page's count reaches 0 and the
 * offline in progress can skip it.
 */
static void sparse_hp_drop_held_ref_locked(void)
{
	lockdep_assert_held(&sparse_hp_isolate_lock);
	if (sparse_hp_held_ref < 0)
		return;
	page_ref_dec(pfn_to_page(section_nr_to_pfn(sparse_hp_held_ref)));
	WRITE_ONCE(sparse_hp_held_ref, -1);
}

/* hold_ref: N takes the reference on HELD section N, -1 drops it. */
static int sparse_hp_hold_ref(long nr)
{
	int ret = 0;

	mutex_lock(&sparse_hp_isolate_lock);
	if (nr < 0) {
		sparse_hp_drop_held_ref_locked();
	} else if (sparse_hp_held_ref >= 0) {
		ret = -EBUSY;
	} else if (sparse_hp_iso_state(nr) != SPARSE_HP_ISO_HELD) {
		ret = -EINVAL;
	} else {
		page_ref_inc(pfn_to_page(section_nr_to_pfn(nr)));
		WRITE_ONCE(sparse_hp_held_ref, nr);
	}
	mutex_unlock(&sparse_hp_isolate_lock);
	return ret;
}

/* Module exit: a held test reference would make a block removal fail. */
void sparse_hp_hold_ref_drop(void)
{
	sparse_hp_hold_ref(-1);
}

/* Gives an isolated section back: -EINVAL if not isolated, -EBUSY if offlining. */
static int sparse_hp_release_locked(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);

	lockdep_assert_held(&sparse_hp_isolate_lock);
	switch (sparse_hp_iso_state(nr)) {
	case SPARSE_HP_ISO_HELD:
		break;
	case SPARSE_HP_ISO_DROPPED:
		return -EBUSY;
	default:
		return -EINVAL;
	}
	if (sparse_hp_held_ref == nr)
		sparse_hp_drop_held_ref_locked();
	sparse_hp_mark_offline(pfn, PAGES_PER_SECTION, false);
	free_contig_range(pfn, PAGES_PER_SECTION);
	adjust_managed_page_count(pfn_to_page(pfn), PAGES_PER_SECTION);
	xa_erase(&sparse_hp_isolated, nr);
	return 0;
}

int sparse_hp_release(unsigned long nr)
{
	int ret;

	mutex_lock(&sparse_hp_isolate_lock);
	ret = sparse_hp_release_locked(nr);
	mutex_unlock(&sparse_hp_isolate_lock);
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
 * and the drop is still possible; sparse_hp_fake_offline_going() reports it.
 */
static bool sparse_hp_fake_offline_ready(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	unsigned long i, busy = 0;
	struct page *first = NULL;

	lockdep_assert_held(&sparse_hp_isolate_lock);
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
 * does: where the core still subtracts skipped pages (6.1), count ours
 * in to the managed pages it is about to subtract (see
 * memhp_going_offline_managed() in memhp_compat.h), and drop our reference
 * of every page (refcount 0 PageOffline pages are skipped by offlining).
 * A page still referenced afterwards got a reference after
 * sparse_hp_fake_offline_ready(); we keep going, so that
 * sparse_hp_fake_offline_cancel() is the exact inverse, and report it. The
 * core then finds that page unmovable (scan_movable_pages(): PageOffline with
 * a reference) and cancels the offline with -EBUSY, unless that reference
 * is dropped first (the window upstream virtio_mem has too).
 */
static void sparse_hp_fake_offline_going(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	struct page *first = NULL;
	unsigned long i, busy = 0;

	lockdep_assert_held(&sparse_hp_isolate_lock);
	memhp_going_offline_managed(pfn_to_page(pfn), PAGES_PER_SECTION);
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
static void sparse_hp_fake_offline_cancel(unsigned long nr)
{
	unsigned long pfn = section_nr_to_pfn(nr);
	unsigned long i;

	lockdep_assert_held(&sparse_hp_isolate_lock);
	for (i = 0; i < PAGES_PER_SECTION; i++)
		page_ref_inc(pfn_to_page(pfn + i));
	memhp_cancel_offline_managed(pfn_to_page(pfn), PAGES_PER_SECTION);
}

/*
 * Memory notifier part: isolated sections of [start_pfn, +nr_pages).
 * MEM_GOING_OFFLINE checks every section before it changes one, so a veto
 * leaves them all HELD and the MEM_CANCEL_OFFLINE that follows has nothing
 * to undo.
 */
int sparse_hp_isolated_notify(unsigned long action, unsigned long start_pfn,
			      unsigned long nr_pages)
{
	unsigned long first = pfn_to_section_nr(start_pfn);
	unsigned long last = pfn_to_section_nr(start_pfn + nr_pages - 1);
	unsigned long nr;
	void *entry;
	int ret = 0;

	mutex_lock(&sparse_hp_isolate_lock);
	if (action == MEM_GOING_OFFLINE) {
		xa_for_each_range(&sparse_hp_isolated, nr, entry, first, last) {
			if (xa_to_value(entry) != SPARSE_HP_ISO_HELD)
				continue;
			if (!sparse_hp_fake_offline_ready(nr)) {
				ret = -EBUSY;
				goto out;
			}
		}
	}
	xa_for_each_range(&sparse_hp_isolated, nr, entry, first, last) {
		switch (action) {
		case MEM_GOING_OFFLINE:
			if (xa_to_value(entry) != SPARSE_HP_ISO_HELD)
				break;
			sparse_hp_fake_offline_going(nr);
			xa_store(&sparse_hp_isolated, nr, xa_mk_value(SPARSE_HP_ISO_DROPPED),
				 GFP_KERNEL);
			break;
		case MEM_CANCEL_OFFLINE:
			if (xa_to_value(entry) != SPARSE_HP_ISO_DROPPED)
				break;
			sparse_hp_fake_offline_cancel(nr);
			xa_store(&sparse_hp_isolated, nr, xa_mk_value(SPARSE_HP_ISO_HELD),
				 GFP_KERNEL);
			break;
		case MEM_OFFLINE:
			/*
			 * Gone with the block; onlining reinitializes the
			 * memmap. A held reference vetoed MEM_GOING_OFFLINE,
			 * so none can be on this section.
			 */
			if (WARN_ON(sparse_hp_held_ref == nr))
				WRITE_ONCE(sparse_hp_held_ref, -1);
			xa_erase(&sparse_hp_isolated, nr);
			break;
		}
	}
out:
	mutex_unlock(&sparse_hp_isolate_lock);
	return ret;
}

/*
 * Module exit: give everything back, after any offline in flight ended.
 * A DROPPED section belongs to an offline between MEM_GOING_OFFLINE and
 * its end. When the block is one section (128 MiB blocks: x86-64's
 * probe_memory_block_size() picks them when boot memory ends below 64 GiB)
 * all its pages are ours and the offline ends at once: skipped, or -EBUSY
 * for a page with another reference. A block of several sections can hold
 * other pages, and offline_pages() retries their migration until it
 * succeeds or, for a page that never moves, until a signal to the
 * offlining task; a kernel thread (ACPI eject, virtio-mem) never gets
 * one. So a signal to rmmod ends the wait too. The sections still DROPPED
 * are then left to their offline: if it succeeds they go with the block;
 * if it is cancelled after our notifier is gone, their pages stay
 * PageOffline with refcount 0 (no longer ours, referring to nothing of the
 * module) until the block goes offline: counted as managed on 6.1 (the
 * GOING_OFFLINE add-back), not counted where offlining skips them (6.11+),
 * which is consistent with the later offline skipping them again.
 */
void sparse_hp_release_all(void)
{
	unsigned long nr, waited = 0;
	void *entry;
	bool busy;

	for (;;) {
		busy = false;
		mutex_lock(&sparse_hp_isolate_lock);
		xa_for_each(&sparse_hp_isolated, nr, entry)
			if (sparse_hp_release_locked(nr) == -EBUSY)
				busy = true;
		if (busy && signal_pending(current)) {
			xa_for_each(&sparse_hp_isolated, nr, entry)
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
			sparse_hp_drop_held_ref_locked();
			xa_destroy(&sparse_hp_isolated);
		}
		mutex_unlock(&sparse_hp_isolate_lock);
		if (!busy)
			return;
		if (!(waited++ % 500))
			pr_info("waiting for an offline of an isolated section to end (a signal to rmmod stops waiting)\n");
		msleep_interruptible(20);
	}
}

static ssize_t sparse_hp_hold_ref_read(struct file *file, char __user *ubuf,
				       size_t count, loff_t *ppos)
{
	char buf[24];
	int len;

	len = scnprintf(buf, sizeof(buf), "%ld\n", READ_ONCE(sparse_hp_held_ref));
	return simple_read_from_buffer(ubuf, count, ppos, buf, len);
}

static ssize_t sparse_hp_hold_ref_write(struct file *file,
					const char __user *ubuf,
					size_t count, loff_t *ppos)
{
	long nr;
	int ret;

	ret = kstrtol_from_user(ubuf, count, 0, &nr);
	if (ret)
		return ret;
	if (nr < -1 || nr >= (long)NR_MEM_SECTIONS)
		return -EINVAL;
	ret = sparse_hp_hold_ref(nr);
	return ret ? ret : count;
}

static const struct file_operations sparse_hp_hold_ref_fops = {
	.owner	= THIS_MODULE,
	.read	= sparse_hp_hold_ref_read,
	.write	= sparse_hp_hold_ref_write,
	.llseek	= default_llseek,
};

/* Module init: debugfs hold_ref, with selftest_refs=1 only. */
void sparse_hp_isolate_debugfs(struct dentry *dir)
{
	if (selftest_refs)
		debugfs_create_file("hold_ref", 0600, dir, NULL,
				    &sparse_hp_hold_ref_fops);
}
