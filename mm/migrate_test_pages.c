// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_test: user memory backed by driver-owned movable pages, and a
 * driver-side implementation of the page migration sequence of "Hotplug
 * Memory Redux" (OLS 2005, section 6.3).
 *
 * mmap(MAP_SHARED) of /dev/migrate_test gives memory whose pages are
 * allocated on fault (GFP_HIGHUSER_MOVABLE, zeroed), recorded in a per-open
 * xarray (the "page_tree" of the paper: the source of truth for which page
 * backs which offset) and registered with the core as non-LRU movable
 * pages: driver-owned ones (__SetPageMovable()) or balloon pages, whichever
 * the kernel has ("How the pages are made movable" below). Compaction,
 * alloc_contig_range() and memory offlining therefore move them through
 * callbacks of ours, and the MIGRATE ioctl moves them on request to a node,
 * into a pfn range or away from a section. Both paths use the same steps:
 *
 *  1. lock the old page              (core: done by migrate_pages())
 *  2. allocate and lock the new page (core: done by migrate_pages())
 *  3. redirect the xarray entry to the new page and mark it MTEST_BUSY
 *  4. unmap the old page from every process (unmap_mapping_pages() on the
 *     device's address_space; the TLB is flushed before it returns)
 *  5. freeze the old page's refcount at 2 (xarray + migrator) with
 *     page_ref_freeze() (balloon pages: check that it is 2), retrying
 *     until a timeout: on timeout the entry is pointed back at the old
 *     page (rollback) and the page is reported failed
 *  6. copy, hand the movable registration over to the new page, unfreeze
 *  7. unlock the new page, clear MTEST_BUSY and wake the faults that waited:
 *     they look the entry up again and map the new page
 *  8. free the old page
 *
 * The mapping is VM_PFNMAP: faults insert the page's pfn (vmf_insert_pfn(),
 * a special pte) as TTM does for buffers that move. The ptes hold no page
 * reference and no mapcount, and get_user_pages() refuses the mapping with
 * -EFAULT before it looks at a page. That is deliberate: a page the driver
 * may move at any time cannot be pinned, and a FOLL_LONGTERM pin of a
 * non-LRU movable page in ZONE_MOVABLE would never return (GUP tries to
 * migrate it out of the zone, cannot isolate it as an LRU page and retries
 * forever: check_and_migrate_movable_pages()). So O_DIRECT, vmsplice,
 * process_vm_readv/writev, io_uring fixed buffers and process-shared
 * futexes get -EFAULT, and madvise(MADV_DONTNEED, MADV_PAGEOUT) -EINVAL;
 * copy_to/from_user (read(), write(), ioctl arguments) fault the pages in
 * as any access does, and ptrace comes through mtest_access().
 *
 * Locking rules
 * -------------
 * - ctx->pages (xarray) entries and marks change under its xa_lock. An
 *   entry that is present changes (redirect, rollback, erase) only while
 *   the page lock (PG_locked) of the page currently in it is held. So a
 *   holder of page P's lock who sees the entry == P knows it stays P.
 * - MTEST_BUSY is set on an entry only by a migrator that holds the old
 *   page's lock, and cleared before that lock is dropped. The MIGRATE
 *   ioctl sets it as soon as it has locked the old page (step 1), so
 *   faults sleep through the allocation too.
 * - A pte mapping P is installed only by mtest_fault() (for the faulting
 *   page or, fault-around, a neighbour) while it holds P's lock and has
 *   seen entry == P and !MTEST_BUSY. A migrator redirects the entry and
 *   then unmaps, both under P's lock, so no pte of P survives a migration
 *   and no new one can appear. The ptes hold no reference, so the unmap is
 *   what keeps a freed page out of user space: every migration unmaps,
 *   whatever its mode. fork() copies the ptes, and dup_mmap() puts the
 *   child after the parent in i_mmap, so an unmap that races with it zaps
 *   the copy too.
 * - mtest_fault() never sleeps on a page lock while holding a page reference
 *   (that reference would make the migrator time out): it trylocks; if the
 *   entry is MTEST_BUSY it drops its reference and sleeps on ctx->wq until the
 *   mark is cleared, otherwise (page locked by the core migration code or
 *   by a migrator that has not set MTEST_BUSY yet) it returns VM_FAULT_NOPAGE
 *   and the access faults again.
 * - Lock order: mmap_lock -> page lock (old, then new) -> i_mmap_rwsem
 *   (inside unmap_mapping_pages) -> page table lock; xa_lock is innermost
 *   and never held across anything that sleeps. The MIGRATE ioctl does not
 *   take mmap_lock except to translate its address range.
 *   ctx->migrate_lock serializes the MIGRATE batches of one open file and
 *   ctx->inject_lock its INJECT calls; neither is taken by faults or by
 *   the core callbacks, INJECT may run while a MIGRATE waits (e.g. to
 *   drop a held reference), and no user memory is touched under either
 *   (a fault on it may take mmap_lock or stall in userfaultfd).
 * - No user memory is touched while a page is locked or MTEST_BUSY: a
 *   user address may lie in this very mapping, and its fault would wait
 *   for the migration that waits for it. The MIGRATE ioctl collects the
 *   failed addresses of a batch in the kernel and copies them out after
 *   the batch has released its pages.
 * - Within a batch the MIGRATE ioctl blocks on the lock of its first page
 *   only and trylocks the others, so it never waits for a page lock while
 *   holding another (the core migration code may hold several).
 * - References to an owned page: one for the xarray entry, plus transient
 *   ones (a migrator's lookup, the core's isolation, a fault between its
 *   lookup and its trylock, HOLD_REF injection). Once redirected the old
 *   page is out of the xarray, so nobody takes a new reference with
 *   get_page(). Speculative get_page_unless_zero() users (pfn walkers, the
 *   core's isolation) still can: with driver-owned movable pages,
 *   page_ref_freeze() makes them fail while the page is copied; with
 *   balloon pages there is no freeze (see mtest_freeze()), their reference
 *   succeeds, and the old page's lock, held from step 1 until the
 *   migration is over, is what keeps them from acting on it (isolation
 *   trylocks the page first).
 * - MIGRATE_ASYNC (async compaction) must not wait: the core callback then
 *   tries the freeze once instead of polling for references. It still
 *   unmaps, and so may sleep on i_mmap_rwsem, as the core itself does for
 *   mapped LRU pages in async mode (try_to_migrate() sets no try_lock, so
 *   rmap_walk_file() takes i_mmap_rwsem); async mode only avoids waiting
 *   for page locks, writeback and references.
 * - Page state: a page in the xarray is registered with the core (its
 *   back pointer to the context and offset is the mechanism's). Pages
 *   leave the xarray only under their lock, after mtest_clear_movable(),
 *   so core callbacks never see a page of a freed context, and release()
 *   locks every page before freeing the context.
 * - Module unload: every open file (and every mapping, which holds its
 *   file) pins the module, so rmmod is refused while anything is mapped;
 *   release() runs after the last mapping is gone (no pte is left) and
 *   frees every page, so nothing of ours remains afterwards.
 *
 * Each open file gets its own range of page offsets (ctx->base) in the
 * shared device inode's address_space, so unmap_mapping_pages() of one
 * open file never touches another's mappings.
 *
 * 2 MiB pages are not supported: movable_operations move order-0 pages,
 * and the fault handler maps 4 KiB ptes only.
 *
 * Where each part lives:
 *  - migrate_test_pages.c (this file): the page tree, faults and
 *    fault-around, ptrace access, the steps shared by both migration
 *    paths (redirect, unmap, freeze, commit, rollback), the
 *    movable_operations callbacks of the core, open/release/mmap and
 *    module init/exit.
 *  - migrate_test_ioctl.c: allocation of new pages for the MIGRATE ioctl
 *    (node, pfn range, away from a section), the MIGRATE batch (steps 1-8
 *    above), QUERY, INJECT, STATS and RESET_STATS.
 *  - migrate_test_internal.h: what both share (struct mtest_ctx, the xarray
 *    marks, the counters and the step helpers).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/highmem.h>
#include <linux/migrate.h>
#include <linux/gfp.h>
#include <linux/xarray.h>
#include <linux/idr.h>
#include <linux/wait.h>
#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/migrate_test.h>
#ifndef MEMHP_HAVE_DRIVER_MOVABLE_PAGES
#include <linux/balloon.h>
#include <linux/suspend.h>
#endif
#include <memhp_compat.h>

#include "migrate_test_internal.h"

#define MTEST_ID_SHIFT	20		/* log2(MIGRATE_TEST_MAX_PAGES) */
#define MTEST_MAX_IDS	BIT(16)
#define MTEST_FAULT_AROUND	16	/* pages, a power of two */
/* References to a page being migrated: the xarray's and the migrator's. */
#define MTEST_EXPECTED_REFS	2

atomic64_t mtest_stats[MTEST_NR_STATS];
static DEFINE_IDA(mtest_ida);

void mtest_page_gone(void)
{
	atomic64_dec(&mtest_stats[MTEST_PAGES]);
	mtest_count(MTEST_FREED);
}

void mtest_page_born(void)
{
	atomic64_inc(&mtest_stats[MTEST_PAGES]);
	mtest_count(MTEST_ALLOCATED);
}

/* The page in the entry with a reference, or NULL. */
struct page *mtest_get_entry(struct mtest_ctx *ctx, pgoff_t index)
{
	struct page *page;

	xa_lock(&ctx->pages);
	page = xa_load(&ctx->pages, index);
	if (page)
		get_page(page);
	xa_unlock(&ctx->pages);
	return page;
}

/* Called with @page locked: is it still the page at @index? */
static bool mtest_page_current(struct mtest_ctx *ctx, pgoff_t index,
			       struct page *page)
{
	return xa_load(&ctx->pages, index) == page &&
	       !xa_get_mark(&ctx->pages, index, MTEST_BUSY);
}

/*
 * How the pages are made movable: the two mechanisms
 * ---------------------------------------------------
 * Both give the core (compaction, alloc_contig_range, offlining) a way to
 * isolate a page of ours, call back to migrate it, and put it back. Each
 * provides the same helpers:
 *  - mtest_prepare_index(): what an offset needs before its first page
 *    (may sleep, may fail with -ENOMEM);
 *  - mtest_set_movable(), mtest_clear_movable(): register a page of the
 *    page tree with the core, or take it back (false: the core has it
 *    isolated, try again); both with the page locked, so the core cannot
 *    isolate it meanwhile (isolation trylocks the page);
 *  - mtest_own_page(), mtest_disown_page(): a new page's back pointer to
 *    its offset, where the page itself holds it;
 *  - mtest_move_movable(): step 6's hand-over from the old page to the new
 *    one, both locked, the old one past step 5 (mtest_freeze());
 *  - mtest_page_isolated(): the core has isolated the (locked) page;
 *  - mtest_core_copy(): step 6 of a migration the core started.
 */
static int mtest_core_migrate(struct mtest_ctx *ctx, pgoff_t index,
			      struct page *dst, struct page *src,
			      enum migrate_mode mode);

#ifdef MEMHP_HAVE_DRIVER_MOVABLE_PAGES
/*
 * Driver-owned movable pages (__SetPageMovable()): page->mapping holds
 * mtest_mops, page->private the context and page->index the offset, and
 * the core calls mtest_mops directly. The driver hands the registration
 * over itself, in the core's migrations too.
 */
static const struct movable_operations mtest_mops;

static int mtest_prepare_index(struct mtest_ctx *ctx, pgoff_t index)
{
	return 0;
}

void mtest_own_page(struct mtest_ctx *ctx, pgoff_t index, struct page *page)
{
	set_page_private(page, (unsigned long)ctx);
	page->index = index;
}

static void mtest_disown_page(struct page *page)
{
	set_page_private(page, 0);
}

static void mtest_set_movable(struct mtest_ctx *ctx, pgoff_t index,
			      struct page *page)
{
	mtest_own_page(ctx, index, page);
	__SetPageMovable(page, &mtest_mops);
}

static bool mtest_clear_movable(struct mtest_ctx *ctx, pgoff_t index,
				struct page *page)
{
	__ClearPageMovable(page);
	mtest_disown_page(page);
	return true;
}

static void mtest_move_movable(struct mtest_ctx *ctx, pgoff_t index,
			       struct page *old, struct page *new)
{
	SetPageUptodate(new);
	__SetPageMovable(new, &mtest_mops);
	mtest_clear_movable(ctx, index, old);
}

bool mtest_page_isolated(struct page *page)
{
	return PageIsolated(page);
}

/*
 * Step 5: only the xarray and the migrator (or the core's isolation) hold
 * @old: freeze its refcount so that no speculative reference appears while
 * it is copied. The ptes hold none (VM_PFNMAP), and they are gone already.
 */
bool mtest_freeze(struct page *old)
{
	return page_ref_freeze(old, MTEST_EXPECTED_REFS);
}

static void mtest_unfreeze(struct page *old)
{
	page_ref_unfreeze(old, MTEST_EXPECTED_REFS);
}

static void mtest_core_copy(struct mtest_ctx *ctx, pgoff_t index,
			    struct page *dst, struct page *src)
{
	get_page(dst);			/* the xarray's reference */
	mtest_commit(ctx, index, src, dst);
	put_page(src);			/* the xarray's; isolation ref remains */
}

/* movable_operations: called by compaction, alloc_contig_range, offlining */

static bool mtest_isolate_page(struct page *page, isolate_mode_t mode)
{
	mtest_count(MTEST_CORE_ISOLATED);
	return true;
}

static int mtest_migrate_page(struct page *dst, struct page *src,
			      enum migrate_mode mode)
{
	struct mtest_ctx *ctx = (struct mtest_ctx *)page_private(src);
	int ret;

	ret = mtest_core_migrate(ctx, src->index, dst, src, mode);
	return ret ? ret : MIGRATEPAGE_SUCCESS;
}

static void mtest_putback_page(struct page *page)
{
	mtest_count(MTEST_CORE_PUTBACK);
}

static const struct movable_operations mtest_mops = {
	.isolate_page = mtest_isolate_page,
	.migrate_page = mtest_migrate_page,
	.putback_page = mtest_putback_page,
};

static void mtest_free_indexes(struct mtest_ctx *ctx)
{
}

static int mtest_mechanism_init(void)
{
	return 0;
}

static void mtest_mechanism_exit(void)
{
}
#else
/*
 * Balloon pages. Where the core finds movable_operations by page type
 * (balloon and zsmalloc pages only, set_movable_ops()), a module's pages
 * are movable as balloon pages: balloon_page_enqueue() makes them
 * PageOffline with PG_movable_ops, page->private points at their
 * balloon_dev_info and page->lru is on its list; the balloon core
 * isolates and puts back, and calls the device's migratepage() to move
 * one, then enqueues the new page and drops the old one's list
 * reference itself. Such pages count as balloon pages (NR_BALLOON_PAGES,
 * the balloon_* events of /proc/vmstat); MemTotal does not change
 * (adjust_managed_page_count stays false).
 *
 * balloon_page_dequeue() takes any page of a list, and MIGRATE and
 * release() must take one given page, so each offset has a
 * balloon_dev_info of its own, in struct mtest_bslot, from its first
 * fault until release(): its list holds the offset's page, or nothing
 * while the core has the page isolated, and container_of() gives
 * migratepage() its offset. A page leaves the list only under its lock
 * and the balloon's (dequeue), or by isolation, which trylocks it; so a
 * holder of the page lock who saw it not isolated finds it on the list.
 * The bslots are freed by release(), when no page points at them.
 */
struct mtest_bslot {
	struct balloon_dev_info b;
	struct mtest_ctx *ctx;
	pgoff_t index;
};

static int mtest_balloon_migrate(struct balloon_dev_info *b,
				 struct page *newpage, struct page *page,
				 enum migrate_mode mode);

static struct mtest_bslot *mtest_bslot(struct mtest_ctx *ctx, pgoff_t index)
{
	return xa_load(&ctx->bslots, index);
}

static int mtest_prepare_index(struct mtest_ctx *ctx, pgoff_t index)
{
	struct mtest_bslot *slot, *old;

	if (mtest_bslot(ctx, index))
		return 0;
	slot = memhp_kmalloc_obj(*slot, GFP_KERNEL);
	if (!slot)
		return -ENOMEM;
	balloon_devinfo_init(&slot->b);
	slot->b.migratepage = mtest_balloon_migrate;
	slot->ctx = ctx;
	slot->index = index;
	old = xa_cmpxchg(&ctx->bslots, index, NULL, slot, GFP_KERNEL);
	if (old) {			/* another fault's, or no memory */
		kfree(slot);
		return xa_is_err(old) ? xa_err(old) : 0;
	}
	return 0;
}

/* The bslot is the back pointer; the page's fields are the balloon's. */
void mtest_own_page(struct mtest_ctx *ctx, pgoff_t index, struct page *page)
{
}

static void mtest_disown_page(struct page *page)
{
}

static void mtest_set_movable(struct mtest_ctx *ctx, pgoff_t index,
			      struct page *page)
{
	balloon_page_enqueue(&mtest_bslot(ctx, index)->b, page);
}

static bool mtest_clear_movable(struct mtest_ctx *ctx, pgoff_t index,
				struct page *page)
{
	struct mtest_bslot *slot = mtest_bslot(ctx, index);
	LIST_HEAD(pages);

	if (!balloon_page_list_dequeue(&slot->b, &pages, 1))
		return false;
	/* The list holds the offset's current page only. */
	WARN_ON_ONCE(list_first_entry(&pages, struct page, lru) != page);
	list_del(&page->lru);
	return true;
}

static void mtest_move_movable(struct mtest_ctx *ctx, pgoff_t index,
			       struct page *old, struct page *new)
{
	/* @old is locked and was not isolated: it is on the list. */
	WARN_ON_ONCE(!mtest_clear_movable(ctx, index, old));
	mtest_set_movable(ctx, index, new);
}

bool mtest_page_isolated(struct page *page)
{
	return PageMovableOpsIsolated(page);
}

/*
 * Step 5 without the freeze: a PageOffline page at refcount 0 is one its
 * driver lets memory offlining skip ("fake offline", see
 * __test_page_isolated_in_pageblock()), so an offline that raced with
 * the copy could take the page while it is still ours. The count is
 * checked instead, under the page lock, with the page unmapped and out of
 * the xarray: a reference taken after the check is a speculative one
 * (a pfn walker's, isolation's trylock), which reads nothing and writes
 * nothing, and no new user can reach the page.
 */
bool mtest_freeze(struct page *old)
{
	return page_ref_count(old) == MTEST_EXPECTED_REFS;
}

static void mtest_unfreeze(struct page *old)
{
}

/*
 * The balloon core takes the xarray's reference to @dst and drops the
 * one of @src when migratepage() returns 0, and moves the registration.
 */
static void mtest_core_copy(struct mtest_ctx *ctx, pgoff_t index,
			    struct page *dst, struct page *src)
{
	copy_highpage(dst, src);
}

/* migratepage() of an offset's balloon: compaction, alloc_contig_range, offlining */
static int mtest_balloon_migrate(struct balloon_dev_info *b,
				 struct page *newpage, struct page *page,
				 enum migrate_mode mode)
{
	struct mtest_bslot *slot = container_of(b, struct mtest_bslot, b);

	return mtest_core_migrate(slot->ctx, slot->index, newpage, page, mode);
}

/* release(): every page is gone, so no page points at a bslot. */
static void mtest_free_indexes(struct mtest_ctx *ctx)
{
	struct mtest_bslot *slot;
	unsigned long index;

	xa_for_each(&ctx->bslots, index, slot)
		kfree(slot);
	xa_destroy(&ctx->bslots);
}

/*
 * Hibernation saves no PageOffline page (saveable_page()): a balloon's
 * pages hold nothing. Ours hold user data, which the resumed system would
 * find replaced by whatever the boot kernel left there, so hibernation is
 * refused while any exists. (/proc/kcore and dump tools skip them too.)
 * Pages made after an accepted PM_HIBERNATION_PREPARE, before the freezer
 * stops their tasks, are not refused: holding faults back in that window
 * would spin a fault taken inside a system call (copy_from_user() retries
 * a VM_FAULT_NOPAGE fault without a signal check), unkillable, for as
 * long as /dev/snapshot stays open. The window is in
 * Documentation/admin-guide/migrate_test.rst.
 */
static int mtest_pm_notify(struct notifier_block *nb, unsigned long action,
			   void *data)
{
	s64 pages = atomic64_read(&mtest_stats[MTEST_PAGES]);

	if (action != PM_HIBERNATION_PREPARE || !pages)
		return NOTIFY_DONE;
	pr_warn("hibernation refused: %lld pages of user data are balloon pages, which it does not save\n",
		pages);
	return notifier_from_errno(-EBUSY);
}

static struct notifier_block mtest_pm_nb = {
	.notifier_call = mtest_pm_notify,
};

static int mtest_mechanism_init(void)
{
	return register_pm_notifier(&mtest_pm_nb);
}

static void mtest_mechanism_exit(void)
{
	unregister_pm_notifier(&mtest_pm_nb);
}
#endif

/* Publish a fresh zeroed page at @index unless someone else did. */
static vm_fault_t mtest_populate(struct mtest_ctx *ctx, pgoff_t index)
{
	struct page *page, *old;

	if (mtest_prepare_index(ctx, index))
		return VM_FAULT_OOM;
	page = alloc_page(GFP_HIGHUSER_MOVABLE | __GFP_ZERO);
	if (!page)
		return VM_FAULT_OOM;
	if (!trylock_page(page)) {	/* a speculative locker: give up */
		put_page(page);
		return 0;
	}
	old = xa_cmpxchg(&ctx->pages, index, NULL, page, GFP_KERNEL);
	if (old) {
		unlock_page(page);
		put_page(page);
		return xa_is_err(old) ? VM_FAULT_OOM : 0;
	}
	/* Movable only now that it is ours; still locked, so not isolated. */
	mtest_set_movable(ctx, index, page);
	unlock_page(page);
	mtest_page_born();
	return 0;
}

/* Map @page (locked, current) at @addr: a special pte, no page reference. */
static vm_fault_t mtest_map_page(struct vm_area_struct *vma, unsigned long addr,
				 struct page *page)
{
	return vmf_insert_pfn(vma, addr, page_to_pfn(page));
}

/*
 * Fault-around: also map the populated neighbours of the faulting page in
 * its aligned window of MTEST_FAULT_AROUND pages, under the same rule as the
 * fault itself (page locked, entry current and not busy). A migration
 * leaves its pages unmapped, so this saves most refaults afterwards.
 */
static void mtest_fault_around(struct vm_fault *vmf, struct mtest_ctx *ctx,
			       pgoff_t index)
{
	struct vm_area_struct *vma = vmf->vma;
	pgoff_t first = round_down(index, MTEST_FAULT_AROUND), i;
	unsigned long addr;
	struct page *page;

	for (i = first; i < first + MTEST_FAULT_AROUND; i++) {
		addr = vmf->address + ((long)(i - index) << PAGE_SHIFT);
		if (i == index || addr < vma->vm_start || addr >= vma->vm_end)
			continue;
		page = mtest_get_entry(ctx, i);
		if (!page)
			continue;
		if (trylock_page(page)) {
			if (mtest_page_current(ctx, i, page))
				mtest_map_page(vma, addr & PAGE_MASK, page);
			unlock_page(page);
		}
		put_page(page);
	}
}

/*
 * A fatal signal came while the fault waited for a migration. NOPAGE would
 * make a kernel access (copy_to_user) fault again at once, in a loop until
 * the migration ends; RETRY with the fault's lock dropped (mmap_lock, or
 * the VMA's own lock where the kernel has per-VMA locks) lets the arch
 * fault handler see the signal (a kernel access then fails with -EFAULT).
 */
static vm_fault_t mtest_fault_dying(struct vm_fault *vmf)
{
	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY) ||
	    (vmf->flags & FAULT_FLAG_RETRY_NOWAIT))
		return VM_FAULT_NOPAGE;
	memhp_release_fault_lock(vmf);
	return VM_FAULT_RETRY;
}

static vm_fault_t mtest_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct mtest_ctx *ctx = vma->vm_private_data;
	pgoff_t index = vmf->pgoff - ctx->base;
	struct page *page;
	vm_fault_t ret;

	if (index >= MIGRATE_TEST_MAX_PAGES)
		return VM_FAULT_SIGBUS;
again:
	page = mtest_get_entry(ctx, index);
	if (!page) {
		ret = mtest_populate(ctx, index);
		if (ret)
			return ret;
		goto again;
	}
	if (!trylock_page(page)) {
		put_page(page);
		if (xa_get_mark(&ctx->pages, index, MTEST_BUSY)) {
			mtest_count(MTEST_FAULT_WAITS);
			if (wait_event_killable(ctx->wq,
						!xa_get_mark(&ctx->pages, index,
							     MTEST_BUSY)))
				return mtest_fault_dying(vmf);
			goto again;
		}
		/* Locked by the core migration code: fault again. */
		mtest_count(MTEST_FAULT_RETRIES);
		cond_resched();
		return VM_FAULT_NOPAGE;
	}
	if (!mtest_page_current(ctx, index, page)) {
		unlock_page(page);
		put_page(page);
		goto again;
	}
	ret = mtest_map_page(vma, vmf->address, page);
	unlock_page(page);
	put_page(page);
	mtest_count(MTEST_FAULTS);
	if (ret == VM_FAULT_NOPAGE)
		mtest_fault_around(vmf, ctx, index);
	return ret;
}

/*
 * ptrace and /proc/pid/mem: GUP refuses the mapping, so access_remote_vm()
 * comes here (as TTM's ttm_bo_vm_access() does for its buffers). Copies
 * within one page under that page's lock, with the same rules as a fault.
 */
static int mtest_access(struct vm_area_struct *vma, unsigned long addr,
			void *buf, int len, int write)
{
	struct mtest_ctx *ctx = vma->vm_private_data;
	pgoff_t index = vma->vm_pgoff - ctx->base +
			((addr - vma->vm_start) >> PAGE_SHIFT);
	unsigned int off = offset_in_page(addr);
	struct page *page;
	void *kaddr;

	if (index >= MIGRATE_TEST_MAX_PAGES)
		return -EIO;
	len = min_t(int, len, PAGE_SIZE - off);
	for (;;) {
		if (fatal_signal_pending(current))
			return -EINTR;
		page = mtest_get_entry(ctx, index);
		if (!page) {
			if (mtest_populate(ctx, index))
				return -ENOMEM;
			continue;
		}
		if (trylock_page(page)) {
			if (mtest_page_current(ctx, index, page))
				break;
			unlock_page(page);
			put_page(page);
			continue;
		}
		/* Being migrated: wait without holding a reference. */
		put_page(page);
		if (wait_event_killable(ctx->wq,
					!xa_get_mark(&ctx->pages, index,
						     MTEST_BUSY)))
			return -EINTR;
		cond_resched();
	}
	kaddr = kmap_local_page(page);
	if (write)
		memcpy(kaddr + off, buf, len);
	else
		memcpy(buf, kaddr + off, len);
	kunmap_local(kaddr);
	unlock_page(page);
	put_page(page);
	return len;
}

const struct vm_operations_struct mtest_vm_ops = {
	.fault = mtest_fault,
	.access = mtest_access,
};

/* Step 3: point the entry at @new (locked) and block accesses. */
void mtest_redirect(struct mtest_ctx *ctx, pgoff_t index, struct page *new)
{
	xa_lock(&ctx->pages);
	__xa_store(&ctx->pages, index, new, GFP_ATOMIC);
	__xa_set_mark(&ctx->pages, index, MTEST_BUSY);
	xa_unlock(&ctx->pages);
}

/* Rollback: point the entry back at @old; faults then map @old again. */
void mtest_rollback(struct mtest_ctx *ctx, pgoff_t index, struct page *old,
		    struct page *new)
{
	xa_lock(&ctx->pages);
	__xa_store(&ctx->pages, index, old, GFP_ATOMIC);
	__xa_clear_mark(&ctx->pages, index, MTEST_BUSY);
	xa_unlock(&ctx->pages);
	mtest_disown_page(new);
}

/*
 * Step 4 for [index, index + nr): no pte maps the old pages afterwards.
 * Pages of the range that are not being migrated are unmapped too; they
 * fault back in.
 */
void mtest_unmap(struct mtest_ctx *ctx, pgoff_t index, pgoff_t nr)
{
	unmap_mapping_pages(ctx->mapping, ctx->base + index, nr, false);
}

void mtest_block(struct mtest_ctx *ctx, pgoff_t index)
{
	xa_lock(&ctx->pages);
	__xa_set_mark(&ctx->pages, index, MTEST_BUSY);
	xa_unlock(&ctx->pages);
}

void mtest_unblock(struct mtest_ctx *ctx, pgoff_t index)
{
	xa_lock(&ctx->pages);
	__xa_clear_mark(&ctx->pages, index, MTEST_BUSY);
	xa_unlock(&ctx->pages);
}

/*
 * Step 6: copy, hand the movable registration over to @new, unfreeze.
 * The MIGRATE ioctl's, and the core's where the driver owns the
 * registration (driver-owned movable pages); where the balloon core does
 * (balloon pages), its migrations end in mtest_core_copy() instead.
 */
void mtest_commit(struct mtest_ctx *ctx, pgoff_t index, struct page *old,
		  struct page *new)
{
	copy_highpage(new, old);
	mtest_move_movable(ctx, index, old, new);
	mtest_unfreeze(old);
}

/*
 * A migration started by the core (compaction, alloc_contig_range,
 * offlining): @src and @dst are locked, @src isolated. Steps 3-7; step 8
 * (freeing @src) is the core's.
 */
static int mtest_core_migrate(struct mtest_ctx *ctx, pgoff_t index,
			      struct page *dst, struct page *src,
			      enum migrate_mode mode)
{
	int tries = mode == MIGRATE_ASYNC ? 0 : 50;

	/* Without the copy the data would be lost. */
	if (memhp_migrate_mode_no_copy(mode))
		return -EINVAL;
	/* src is locked and movable, so it is ours and in the page tree. */
	if (xa_load(&ctx->pages, index) != src)
		return -EAGAIN;

	mtest_own_page(ctx, index, dst);
	mtest_redirect(ctx, index, dst);
	mtest_unmap(ctx, index, 1);
	/*
	 * Expected: the xarray's reference and the isolation reference. The
	 * core retries -EAGAIN up to ten passes over its whole list, so with
	 * many pages held elsewhere each wait adds up: a pending signal (an
	 * interrupted offline, a killed compacting task) stops waiting.
	 */
	while (!mtest_freeze(src)) {
		if (tries-- <= 0 || signal_pending(current)) {
			mtest_rollback(ctx, index, src, dst);
			wake_up_all(&ctx->wq);
			mtest_count(MTEST_CORE_EAGAIN);
			return -EAGAIN;
		}
		usleep_range(100, 200);
	}
	mtest_core_copy(ctx, index, dst, src);
	mtest_unblock(ctx, index);
	wake_up_all(&ctx->wq);
	mtest_count(MTEST_CORE_MIGRATED);
	mtest_count(MTEST_ALLOCATED);
	mtest_count(MTEST_FREED);
	return 0;
}

static int mtest_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct mtest_ctx *ctx = file->private_data;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff >= MIGRATE_TEST_MAX_PAGES ||
	    vma_pages(vma) > MIGRATE_TEST_MAX_PAGES - vma->vm_pgoff)
		return -EINVAL;
	vma->vm_pgoff += ctx->base;
	/* See "The mapping is VM_PFNMAP" at the top. */
	memhp_vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &mtest_vm_ops;
	vma->vm_private_data = ctx;
	return 0;
}

static int mtest_open(struct inode *inode, struct file *file)
{
	struct mtest_ctx *ctx;

	ctx = memhp_kzalloc_obj(*ctx, GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->id = ida_alloc_max(&mtest_ida, MTEST_MAX_IDS - 1, GFP_KERNEL);
	if (ctx->id < 0) {
		int ret = ctx->id;

		kfree(ctx);
		return ret;
	}
	ctx->base = (pgoff_t)ctx->id << MTEST_ID_SHIFT;
	xa_init(&ctx->pages);
	xa_init(&ctx->held);
#ifndef MEMHP_HAVE_DRIVER_MOVABLE_PAGES
	xa_init(&ctx->bslots);
#endif
	init_waitqueue_head(&ctx->wq);
	mutex_init(&ctx->migrate_lock);
	mutex_init(&ctx->inject_lock);
	ctx->mapping = file->f_mapping;
	file->private_data = ctx;
	return 0;
}

/* No mapping and no ioctl is left; core callbacks may still run. */
static int mtest_release(struct inode *inode, struct file *file)
{
	struct mtest_ctx *ctx = file->private_data;
	unsigned long index;
	struct page *page;

	xa_for_each(&ctx->held, index, page)
		mtest_unhold(ctx, index);
	xa_destroy(&ctx->held);

	xa_for_each(&ctx->pages, index, page) {
		while ((page = mtest_get_entry(ctx, index))) {
			/*
			 * Not lock_page(): a migrator holding the lock would
			 * find our reference and time out on it.
			 */
			if (!trylock_page(page)) {
				put_page(page);
				usleep_range(100, 200);
				continue;
			}
			if (xa_load(&ctx->pages, index) != page) {
				unlock_page(page);	/* migrated meanwhile */
				put_page(page);
				continue;
			}
			if (!mtest_clear_movable(ctx, index, page)) {
				/* Isolated: migrated or put back soon. */
				unlock_page(page);
				put_page(page);
				usleep_range(100, 200);
				continue;
			}
			xa_erase(&ctx->pages, index);
			unlock_page(page);
			put_page(page);
			put_page(page);
			mtest_page_gone();
		}
	}
	xa_destroy(&ctx->pages);
	mtest_free_indexes(ctx);
	ida_free(&mtest_ida, ctx->id);
	kfree(ctx);
	return 0;
}

static const struct file_operations mtest_fops = {
	.owner		= THIS_MODULE,
	.open		= mtest_open,
	.release	= mtest_release,
	.mmap		= mtest_mmap,
	.unlocked_ioctl	= mtest_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice mtest_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "migrate_test",
	.fops	= &mtest_fops,
	.mode	= 0600,
};

static int __init mtest_init(void)
{
	int ret = mtest_mechanism_init();

	if (ret)
		return ret;
	ret = misc_register(&mtest_misc);
	if (ret)
		mtest_mechanism_exit();
	return ret;
}

static void __exit mtest_exit(void)
{
	misc_deregister(&mtest_misc);
	mtest_mechanism_exit();
	ida_destroy(&mtest_ida);
}

module_init(mtest_init);
module_exit(mtest_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Driver-owned movable pages and driver-side page migration");
