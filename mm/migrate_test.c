// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_test: user memory backed by driver-owned movable pages, and a
 * driver-side implementation of the page migration sequence of "Hotplug
 * Memory Redux" (OLS 2005, section 6.3).
 *
 * mmap(MAP_SHARED) of /dev/migrate_test gives memory whose pages are
 * allocated on fault (GFP_HIGHUSER_MOVABLE, zeroed), recorded in a per-open
 * xarray (the "page_tree" of the paper: the source of truth for which page
 * backs which offset) and registered as non-LRU movable pages with
 * __SetPageMovable(). Compaction, alloc_contig_range() and memory offlining
 * therefore move them through migt_mops (isolate_page / migrate_page /
 * putback_page), and the MIGRATE ioctl moves them on request to a node, into
 * a pfn range or away from a section. Both paths use the same steps:
 *
 *  1. lock the old page              (core: done by migrate_pages())
 *  2. allocate and lock the new page (core: done by migrate_pages())
 *  3. redirect the xarray entry to the new page and mark it MIGT_BUSY
 *  4. unmap the old page from every process (unmap_mapping_pages() on the
 *     device's address_space; the TLB is flushed before it returns)
 *  5. freeze the old page's refcount at 2 (xarray + migrator) with
 *     page_ref_freeze(), retrying until a timeout: on timeout the entry is
 *     pointed back at the old page (rollback) and the page is reported
 *     failed
 *  6. copy, mark the new page up to date and movable, clear the old one,
 *     unfreeze
 *  7. unlock the new page, clear MIGT_BUSY and wake the faults that waited:
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
 * as any access does, and ptrace comes through migt_access().
 *
 * Locking rules
 * -------------
 * - ctx->pages (xarray) entries and marks change under its xa_lock. An
 *   entry that is present changes (redirect, rollback, erase) only while
 *   the page lock (PG_locked) of the page currently in it is held. So a
 *   holder of page P's lock who sees the entry == P knows it stays P.
 * - MIGT_BUSY is set on an entry only by a migrator that holds the old
 *   page's lock, and cleared before that lock is dropped. The MIGRATE
 *   ioctl sets it as soon as it has locked the old page (step 1), so
 *   faults sleep through the allocation too.
 * - A pte mapping P is installed only by migt_fault() (for the faulting
 *   page or, fault-around, a neighbour) while it holds P's lock and has
 *   seen entry == P and !MIGT_BUSY. A migrator redirects the entry and
 *   then unmaps, both under P's lock, so no pte of P survives a migration
 *   and no new one can appear. The ptes hold no reference, so the unmap is
 *   what keeps a freed page out of user space: every migration unmaps,
 *   whatever its mode. fork() copies the ptes, and dup_mmap() puts the
 *   child after the parent in i_mmap, so an unmap that races with it zaps
 *   the copy too.
 * - migt_fault() never sleeps on a page lock while holding a page reference
 *   (that reference would make the migrator time out): it trylocks; if the
 *   entry is MIGT_BUSY it drops its reference and sleeps on ctx->wq until the
 *   mark is cleared, otherwise (page locked by the core migration code or
 *   by a migrator that has not set MIGT_BUSY yet) it returns VM_FAULT_NOPAGE
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
 * - No user memory is touched while a page is locked or MIGT_BUSY: a
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
 *   get_page(); page_ref_freeze() keeps speculative get_page_unless_zero()
 *   users (pfn walkers) away while it is copied.
 * - MIGRATE_ASYNC (async compaction) must not wait: the core callback then
 *   tries the freeze once instead of polling for references. It still
 *   unmaps, and so may sleep on i_mmap_rwsem, as the core itself does for
 *   mapped LRU pages in async mode (try_to_migrate() sets no try_lock, so
 *   rmap_walk_file() takes i_mmap_rwsem); async mode only avoids waiting
 *   for page locks, writeback and references.
 * - Page state: page->private = ctx, page->index = offset in the file;
 *   page->mapping holds migt_mops (PAGE_MAPPING_MOVABLE) while the page is
 *   in the xarray. Pages leave the xarray only under their lock, after
 *   __ClearPageMovable(), so core callbacks never see a page of a freed
 *   context, and release() locks every page before freeing the context.
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
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/highmem.h>
#include <linux/migrate.h>
#include <linux/memory_hotplug.h>
#include <linux/mmzone.h>
#include <linux/gfp.h>
#include <linux/xarray.h>
#include <linux/idr.h>
#include <linux/wait.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/migrate_test.h>

#define MIGT_BUSY		XA_MARK_0	/* entry under migration */
#define MIGT_FAIL_ALLOC	XA_MARK_1	/* injected: allocation fails */

#define MIGT_ID_SHIFT	20		/* log2(MIGRATE_TEST_MAX_PAGES) */
#define MIGT_MAX_IDS	BIT(16)
#define MIGT_ISOLATED_RETRIES	20
#define MIGT_FAULT_AROUND	16	/* pages, a power of two */

static unsigned int ref_timeout_ms = 100;
module_param(ref_timeout_ms, uint, 0444);
MODULE_PARM_DESC(ref_timeout_ms, "Default wait for references to drop (ms)");

static unsigned int default_batch = 32;
module_param(default_batch, uint, 0444);
MODULE_PARM_DESC(default_batch, "Default pages per MIGRATE batch (1-64)");

struct migt_ctx {
	struct xarray pages;		/* offset -> page (the page tree) */
	struct xarray held;		/* offset -> page, HOLD_REF injection */
	struct address_space *mapping;	/* the device inode's mapping */
	pgoff_t base;			/* first page offset of this file */
	int id;
	wait_queue_head_t wq;		/* faults waiting for MIGT_BUSY to clear */
	struct mutex migrate_lock;	/* MIGRATE batches of this file */
	struct mutex inject_lock;	/* INJECT calls (ctx->held) */
};

enum migt_stat {
	MIGT_PAGES, MIGT_FAULTS, MIGT_FAULT_WAITS, MIGT_FAULT_RETRIES, MIGT_ALLOCATED,
	MIGT_FREED, MIGT_MIGRATED, MIGT_FAILED, MIGT_RB_TIMEOUT, MIGT_RB_NOMEM,
	MIGT_CORE_ISOLATED, MIGT_CORE_MIGRATED, MIGT_CORE_EAGAIN, MIGT_CORE_PUTBACK,
	MIGT_CONTIG_ALLOCS, MIGT_NR_STATS
};

static atomic64_t migt_stats[MIGT_NR_STATS];
static atomic64_t migt_hist[MIGRATE_TEST_HIST_BUCKETS];
static DEFINE_IDA(migt_ida);

static void migt_count(enum migt_stat s)
{
	atomic64_inc(&migt_stats[s]);
}

static void migt_hist_add(u64 ns)
{
	int b = ns ? fls64(ns) - 1 : 0;

	atomic64_inc(&migt_hist[min(b, MIGRATE_TEST_HIST_BUCKETS - 1)]);
}

static void migt_page_gone(void)
{
	atomic64_dec(&migt_stats[MIGT_PAGES]);
	migt_count(MIGT_FREED);
}

static void migt_page_born(void)
{
	atomic64_inc(&migt_stats[MIGT_PAGES]);
	migt_count(MIGT_ALLOCATED);
}

static const struct movable_operations migt_mops;

/* The page in the entry with a reference, or NULL. */
static struct page *migt_get_entry(struct migt_ctx *ctx, pgoff_t index)
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
static bool migt_page_current(struct migt_ctx *ctx, pgoff_t index,
			      struct page *page)
{
	return xa_load(&ctx->pages, index) == page &&
	       !xa_get_mark(&ctx->pages, index, MIGT_BUSY);
}

static void migt_own_page(struct migt_ctx *ctx, pgoff_t index, struct page *page)
{
	set_page_private(page, (unsigned long)ctx);
	page->index = index;
}

/* Publish a fresh zeroed page at @index unless someone else did. */
static vm_fault_t migt_populate(struct migt_ctx *ctx, pgoff_t index)
{
	struct page *page, *old;

	page = alloc_page(GFP_HIGHUSER_MOVABLE | __GFP_ZERO);
	if (!page)
		return VM_FAULT_OOM;
	if (!trylock_page(page)) {	/* a speculative locker: give up */
		put_page(page);
		return 0;
	}
	migt_own_page(ctx, index, page);
	__SetPageMovable(page, &migt_mops);
	old = xa_cmpxchg(&ctx->pages, index, NULL, page, GFP_KERNEL);
	if (old) {
		__ClearPageMovable(page);
		unlock_page(page);
		set_page_private(page, 0);
		put_page(page);
		return xa_is_err(old) ? VM_FAULT_OOM : 0;
	}
	unlock_page(page);
	migt_page_born();
	return 0;
}

/* Map @page (locked, current) at @addr: a special pte, no page reference. */
static vm_fault_t migt_map_page(struct vm_area_struct *vma, unsigned long addr,
				struct page *page)
{
	return vmf_insert_pfn(vma, addr, page_to_pfn(page));
}

/*
 * Fault-around: also map the populated neighbours of the faulting page in
 * its aligned window of MIGT_FAULT_AROUND pages, under the same rule as the
 * fault itself (page locked, entry current and not busy). A migration
 * leaves its pages unmapped, so this saves most refaults afterwards.
 */
static void migt_fault_around(struct vm_fault *vmf, struct migt_ctx *ctx,
			      pgoff_t index)
{
	struct vm_area_struct *vma = vmf->vma;
	pgoff_t first = round_down(index, MIGT_FAULT_AROUND), i;
	unsigned long addr;
	struct page *page;

	for (i = first; i < first + MIGT_FAULT_AROUND; i++) {
		addr = vmf->address + ((long)(i - index) << PAGE_SHIFT);
		if (i == index || addr < vma->vm_start || addr >= vma->vm_end)
			continue;
		page = migt_get_entry(ctx, i);
		if (!page)
			continue;
		if (trylock_page(page)) {
			if (migt_page_current(ctx, i, page))
				migt_map_page(vma, addr & PAGE_MASK, page);
			unlock_page(page);
		}
		put_page(page);
	}
}

/*
 * A fatal signal came while the fault waited for a migration. NOPAGE would
 * make a kernel access (copy_to_user) fault again at once, in a loop until
 * the migration ends; RETRY with mmap_lock dropped lets the arch fault
 * handler see the signal (a kernel access then fails with -EFAULT).
 */
static vm_fault_t migt_fault_dying(struct vm_fault *vmf)
{
	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY) ||
	    (vmf->flags & FAULT_FLAG_RETRY_NOWAIT))
		return VM_FAULT_NOPAGE;
	mmap_read_unlock(vmf->vma->vm_mm);
	return VM_FAULT_RETRY;
}

static vm_fault_t migt_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct migt_ctx *ctx = vma->vm_private_data;
	pgoff_t index = vmf->pgoff - ctx->base;
	struct page *page;
	vm_fault_t ret;

	if (index >= MIGRATE_TEST_MAX_PAGES)
		return VM_FAULT_SIGBUS;
again:
	page = migt_get_entry(ctx, index);
	if (!page) {
		ret = migt_populate(ctx, index);
		if (ret)
			return ret;
		goto again;
	}
	if (!trylock_page(page)) {
		put_page(page);
		if (xa_get_mark(&ctx->pages, index, MIGT_BUSY)) {
			migt_count(MIGT_FAULT_WAITS);
			if (wait_event_killable(ctx->wq,
						!xa_get_mark(&ctx->pages, index,
							     MIGT_BUSY)))
				return migt_fault_dying(vmf);
			goto again;
		}
		/* Locked by the core migration code: fault again. */
		migt_count(MIGT_FAULT_RETRIES);
		cond_resched();
		return VM_FAULT_NOPAGE;
	}
	if (!migt_page_current(ctx, index, page)) {
		unlock_page(page);
		put_page(page);
		goto again;
	}
	ret = migt_map_page(vma, vmf->address, page);
	unlock_page(page);
	put_page(page);
	migt_count(MIGT_FAULTS);
	if (ret == VM_FAULT_NOPAGE)
		migt_fault_around(vmf, ctx, index);
	return ret;
}

/*
 * ptrace and /proc/pid/mem: GUP refuses the mapping, so access_remote_vm()
 * comes here (as TTM's ttm_bo_vm_access() does for its buffers). Copies
 * within one page under that page's lock, with the same rules as a fault.
 */
static int migt_access(struct vm_area_struct *vma, unsigned long addr,
		       void *buf, int len, int write)
{
	struct migt_ctx *ctx = vma->vm_private_data;
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
		page = migt_get_entry(ctx, index);
		if (!page) {
			if (migt_populate(ctx, index))
				return -ENOMEM;
			continue;
		}
		if (trylock_page(page)) {
			if (migt_page_current(ctx, index, page))
				break;
			unlock_page(page);
			put_page(page);
			continue;
		}
		/* Being migrated: wait without holding a reference. */
		put_page(page);
		if (wait_event_killable(ctx->wq,
					!xa_get_mark(&ctx->pages, index,
						     MIGT_BUSY)))
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

static const struct vm_operations_struct migt_vm_ops = {
	.fault = migt_fault,
	.access = migt_access,
};

/* Step 3: point the entry at @new (locked) and block accesses. */
static void migt_redirect(struct migt_ctx *ctx, pgoff_t index, struct page *new)
{
	xa_lock(&ctx->pages);
	__xa_store(&ctx->pages, index, new, GFP_ATOMIC);
	__xa_set_mark(&ctx->pages, index, MIGT_BUSY);
	xa_unlock(&ctx->pages);
}

/* Rollback: point the entry back at @old; faults then map @old again. */
static void migt_rollback(struct migt_ctx *ctx, pgoff_t index, struct page *old,
			  struct page *new)
{
	xa_lock(&ctx->pages);
	__xa_store(&ctx->pages, index, old, GFP_ATOMIC);
	__xa_clear_mark(&ctx->pages, index, MIGT_BUSY);
	xa_unlock(&ctx->pages);
	set_page_private(new, 0);
}

/*
 * Step 4 for [index, index + nr): no pte maps the old pages afterwards.
 * Pages of the range that are not being migrated are unmapped too; they
 * fault back in.
 */
static void migt_unmap(struct migt_ctx *ctx, pgoff_t index, pgoff_t nr)
{
	unmap_mapping_pages(ctx->mapping, ctx->base + index, nr, false);
}

static void migt_block(struct migt_ctx *ctx, pgoff_t index)
{
	xa_lock(&ctx->pages);
	__xa_set_mark(&ctx->pages, index, MIGT_BUSY);
	xa_unlock(&ctx->pages);
}

static void migt_unblock(struct migt_ctx *ctx, pgoff_t index)
{
	xa_lock(&ctx->pages);
	__xa_clear_mark(&ctx->pages, index, MIGT_BUSY);
	xa_unlock(&ctx->pages);
}

/*
 * Step 5: only the xarray and the migrator (or the core's isolation) hold
 * @old: freeze its refcount so that no speculative reference appears while
 * it is copied. The ptes hold none (VM_PFNMAP), and they are gone already.
 */
#define MIGT_EXPECTED_REFS	2

static bool migt_freeze(struct page *old)
{
	return page_ref_freeze(old, MIGT_EXPECTED_REFS);
}

/* Step 6: copy, hand the movable registration over to @new, unfreeze. */
static void migt_commit(struct page *old, struct page *new)
{
	copy_highpage(new, old);
	SetPageUptodate(new);
	__SetPageMovable(new, &migt_mops);
	__ClearPageMovable(old);
	set_page_private(old, 0);
	page_ref_unfreeze(old, MIGT_EXPECTED_REFS);
}

/* movable_operations: called by compaction, alloc_contig_range, offlining */

static bool migt_isolate_page(struct page *page, isolate_mode_t mode)
{
	migt_count(MIGT_CORE_ISOLATED);
	return true;
}

static int migt_migrate_page(struct page *dst, struct page *src,
			     enum migrate_mode mode)
{
	struct migt_ctx *ctx = (struct migt_ctx *)page_private(src);
	pgoff_t index = src->index;
	int tries = mode == MIGRATE_ASYNC ? 0 : 50;

	/* Without the copy the data would be lost. */
	if (mode == MIGRATE_SYNC_NO_COPY)
		return -EINVAL;
	/* src is locked and movable, so it is ours and in the page tree. */
	if (xa_load(&ctx->pages, index) != src)
		return -EAGAIN;

	migt_own_page(ctx, index, dst);
	migt_redirect(ctx, index, dst);
	migt_unmap(ctx, index, 1);
	/*
	 * Expected: the xarray's reference and the isolation reference. The
	 * core retries -EAGAIN up to ten passes over its whole list, so with
	 * many pages held elsewhere each wait adds up: a pending signal (an
	 * interrupted offline, a killed compacting task) stops waiting.
	 */
	while (!migt_freeze(src)) {
		if (tries-- <= 0 || signal_pending(current)) {
			migt_rollback(ctx, index, src, dst);
			wake_up_all(&ctx->wq);
			migt_count(MIGT_CORE_EAGAIN);
			return -EAGAIN;
		}
		usleep_range(100, 200);
	}
	get_page(dst);			/* the xarray's reference */
	migt_commit(src, dst);
	migt_unblock(ctx, index);
	wake_up_all(&ctx->wq);
	put_page(src);			/* the xarray's; isolation ref remains */
	migt_count(MIGT_CORE_MIGRATED);
	migt_count(MIGT_ALLOCATED);
	migt_count(MIGT_FREED);
	return MIGRATEPAGE_SUCCESS;
}

static void migt_putback_page(struct page *page)
{
	migt_count(MIGT_CORE_PUTBACK);
}

static const struct movable_operations migt_mops = {
	.isolate_page = migt_isolate_page,
	.migrate_page = migt_migrate_page,
	.putback_page = migt_putback_page,
};

/* Allocation of new pages for the MIGRATE ioctl. */

struct migt_alloc {
	const struct migrate_test_migrate *req;
	unsigned long scan_pfn;		/* TARGET_RANGE: next pfn to scan */
	struct list_head pool;		/* TARGET_RANGE: pages in the range */
	struct list_head reject;	/* TARGET_AWAY: pages in the section */
};

static bool migt_satisfies(const struct migrate_test_migrate *req,
			   struct page *page)
{
	unsigned long pfn = page_to_pfn(page);

	switch (req->target) {
	case MIGRATE_TEST_TARGET_NODE:
		return req->node == NUMA_NO_NODE || page_to_nid(page) == req->node;
	case MIGRATE_TEST_TARGET_RANGE:
		return pfn >= req->start_pfn && pfn < req->end_pfn;
	default:
		return pfn_to_section_nr(pfn) != req->section;
	}
}

/*
 * TARGET_RANGE: find runs of free pages in the range and take each run
 * with one alloc_contig_range() call (one pcp drain per run, not per page).
 * Called with no page locks held: alloc_contig_range() migrates.
 */
static void migt_fill_pool(struct migt_alloc *a, unsigned int want)
{
	const struct migrate_test_migrate *req = a->req;
	unsigned int got = 0;
	unsigned long pfn, end, p;
	struct page *page, *q;

	list_for_each_entry(page, &a->pool, lru)
		got++;
	while (got < want && a->scan_pfn < req->end_pfn) {
		pfn = a->scan_pfn;
		page = pfn_to_online_page(pfn);
		if (!page) {
			a->scan_pfn = SECTION_ALIGN_UP(pfn + 1);
			continue;
		}
		if (!is_free_buddy_page(page)) {
			a->scan_pfn++;
			continue;
		}
		for (end = pfn + 1; end < req->end_pfn && end - pfn < want - got;
		     end++) {
			q = pfn_to_online_page(end);
			if (!q || page_zone(q) != page_zone(page) ||
			    !is_free_buddy_page(q))
				break;
		}
		a->scan_pfn = end;
		migt_count(MIGT_CONTIG_ALLOCS);
		if (alloc_contig_range(pfn, end, MIGRATE_MOVABLE,
				       GFP_KERNEL | __GFP_NOWARN))
			continue;
		for (p = pfn; p < end; p++, got++)
			list_add_tail(&pfn_to_page(p)->lru, &a->pool);
		cond_resched();
	}
}

static struct page *migt_alloc_new(struct migt_alloc *a)
{
	const struct migrate_test_migrate *req = a->req;
	const gfp_t gfp = GFP_HIGHUSER_MOVABLE | __GFP_NOWARN;
	struct page *page;
	int tries;

	switch (req->target) {
	case MIGRATE_TEST_TARGET_NODE:
		if (req->node == NUMA_NO_NODE)
			return alloc_page(gfp);
		return alloc_pages_node(req->node, gfp | __GFP_THISNODE, 0);
	case MIGRATE_TEST_TARGET_RANGE:
		page = list_first_entry_or_null(&a->pool, struct page, lru);
		if (page)
			list_del(&page->lru);
		return page;
	default:
		for (tries = 0; tries < 64; tries++) {
			page = alloc_page(gfp | __GFP_NORETRY);
			if (!page || migt_satisfies(req, page))
				return page;
			list_add(&page->lru, &a->reject);
		}
		return NULL;
	}
}

static void migt_alloc_done(struct migt_alloc *a)
{
	struct page *page, *next;

	list_for_each_entry_safe(page, next, &a->pool, lru) {
		list_del(&page->lru);
		__free_page(page);
	}
	list_for_each_entry_safe(page, next, &a->reject, lru) {
		list_del(&page->lru);
		__free_page(page);
	}
}

/* The MIGRATE ioctl */

struct migt_slot {
	pgoff_t index;
	struct page *old, *new;
	bool committed;
	int err;
};

/*
 * Failed addresses wait in @fail_buf until the batch has released its
 * pages (see "No user memory is touched while a page is locked").
 */
struct migt_result {
	struct migrate_test_migrate *req;
	unsigned long addr0;		/* user address of offset 0 */
	u64 __user *failed_addrs;
	u64 *fail_buf;			/* MIGRATE_TEST_MAX_BATCH entries */
	unsigned int nr_buf;		/* entries in fail_buf */
	u64 nr_copied;			/* entries already at failed_addrs */
};

static void migt_fail(struct migt_result *res, pgoff_t index, int err)
{
	struct migrate_test_migrate *req = res->req;

	if (res->failed_addrs && req->failed < req->failed_cap)
		res->fail_buf[res->nr_buf++] = res->addr0 + (index << PAGE_SHIFT);
	if (!req->first_error)
		req->first_error = err;
	req->failed++;
	migt_count(MIGT_FAILED);
}

/* Called with no page locked and nothing MIGT_BUSY. */
static int migt_flush_failed(struct migt_result *res)
{
	size_t bytes = res->nr_buf * sizeof(u64);

	if (!res->nr_buf)
		return 0;
	if (copy_to_user(res->failed_addrs + res->nr_copied, res->fail_buf,
			 bytes))
		return -EFAULT;
	res->nr_copied += res->nr_buf;
	res->nr_buf = 0;
	return 0;
}

/*
 * Step 1 for one offset: the current page, locked (@block: may sleep for
 * the lock), with a reference. NULL and *err = 0: nothing to migrate here
 * (not populated; or locked elsewhere and !@block). NULL and *err < 0:
 * failed.
 */
static struct page *migt_lock_old(struct migt_ctx *ctx, pgoff_t index, bool block,
				  int *err)
{
	int retries = 0;
	struct page *page;

	*err = 0;
	for (;;) {
		page = migt_get_entry(ctx, index);
		if (!page)
			return NULL;
		if (block) {
			lock_page(page);
		} else if (!trylock_page(page)) {
			put_page(page);
			return NULL;
		}
		if (xa_load(&ctx->pages, index) != page) {
			unlock_page(page);
			put_page(page);
			continue;		/* moved meanwhile: look again */
		}
		if (!PageIsolated(page))
			return page;
		/* The core isolated it and will migrate or put it back. */
		unlock_page(page);
		put_page(page);
		if (!block || ++retries > MIGT_ISOLATED_RETRIES) {
			*err = block ? -EBUSY : 0;
			return NULL;
		}
		usleep_range(1000, 2000);
	}
}

static void migt_release_old(struct page *old, bool migrated)
{
	unlock_page(old);
	put_page(old);			/* the migrator's reference */
	if (migrated) {
		put_page(old);		/* the xarray's: frees it */
		migt_page_gone();
	}
}

static int migt_migrate_batch(struct migt_ctx *ctx, struct migt_result *res,
			      struct migt_alloc *a, struct migt_slot *slots,
			      pgoff_t *cursor, pgoff_t end, unsigned int batch,
			      unsigned long timeout)
{
	struct migrate_test_migrate *req = res->req;
	unsigned int n = 0, i, pending;
	pgoff_t index = *cursor;
	unsigned long deadline;
	struct page *old;
	ktime_t t0;
	int err;

	if (req->target == MIGRATE_TEST_TARGET_RANGE)
		migt_fill_pool(a, batch);

	/*
	 * Step 1: lock the old pages. Each offset taken either fails now or
	 * fills a slot that may fail later: keep room for both in fail_buf.
	 */
	for (; index < end && n < batch; index++) {
		if (n + res->nr_buf >= MIGRATE_TEST_MAX_BATCH)
			break;
		old = migt_lock_old(ctx, index, n == 0, &err);
		if (!old) {
			if (err) {
				migt_fail(res, index, err);
				continue;
			}
			if (n && xa_load(&ctx->pages, index))
				break;	/* locked elsewhere: next batch */
			req->skipped++;
			continue;
		}
		if (!(req->flags & MIGRATE_TEST_FORCE) &&
		    migt_satisfies(req, old)) {
			migt_release_old(old, false);
			req->skipped++;
			continue;
		}
		slots[n].index = index;
		slots[n].old = old;
		slots[n].new = NULL;
		slots[n].committed = false;
		slots[n].err = 0;
		n++;
		/* Faults now sleep instead of retrying on the locked page. */
		migt_block(ctx, index);
	}
	*cursor = index;
	if (!n)
		return 0;

	/* Step 2: allocate and lock the new pages. */
	for (i = 0; i < n; i++) {
		struct migt_slot *s = &slots[i];

		if (xa_get_mark(&ctx->pages, s->index, MIGT_FAIL_ALLOC))
			s->new = NULL;
		else
			s->new = migt_alloc_new(a);
		if (s->new && !trylock_page(s->new)) {
			put_page(s->new);
			s->new = NULL;
		}
		if (!s->new) {
			s->err = -ENOMEM;
			migt_unblock(ctx, s->index);
			migt_count(MIGT_RB_NOMEM);
			continue;
		}
		migt_own_page(ctx, s->index, s->new);
	}

	/* Step 3: redirect; from now on faults wait for the new page. */
	t0 = ktime_get();
	for (i = 0; i < n; i++)
		if (!slots[i].err)
			migt_redirect(ctx, slots[i].index, slots[i].new);

	/* Step 4: unmap the old pages, one TLB flush for the batch. */
	migt_unmap(ctx, slots[0].index, slots[n - 1].index - slots[0].index + 1);

	/*
	 * Steps 5-6: freeze each old page once the other references are gone
	 * and commit it at once (the page stays frozen only while it is
	 * copied), with a timeout. A frozen page is out of the xarray already,
	 * so only speculative get_page_unless_zero() users can meet it, and
	 * they fail.
	 */
	deadline = jiffies + timeout;
	for (;;) {
		pending = 0;
		for (i = 0; i < n; i++) {
			struct migt_slot *s = &slots[i];

			if (s->err || s->committed)
				continue;
			if (migt_freeze(s->old)) {
				migt_commit(s->old, s->new);
				s->committed = true;
			} else {
				pending++;
			}
		}
		if (!pending || time_after(jiffies, deadline) ||
		    fatal_signal_pending(current))
			break;
		usleep_range(50, 100);
	}

	/* The rest: roll back. */
	for (i = 0; i < n; i++) {
		struct migt_slot *s = &slots[i];

		if (s->err || s->committed)
			continue;
		s->err = -ETIMEDOUT;
		migt_rollback(ctx, s->index, s->old, s->new);
		migt_count(MIGT_RB_TIMEOUT);
	}

	/* Step 7 */
	for (i = 0; i < n; i++) {
		struct migt_slot *s = &slots[i];

		if (!s->new)
			continue;
		if (s->err) {
			unlock_page(s->new);
			put_page(s->new);
			continue;
		}
		migt_unblock(ctx, s->index);
		unlock_page(s->new);
		migt_hist_add(ktime_to_ns(ktime_sub(ktime_get(), t0)));
		migt_page_born();
	}
	wake_up_all(&ctx->wq);

	/* Step 8: free the old pages (or leave them in place). */
	for (i = 0; i < n; i++) {
		struct migt_slot *s = &slots[i];

		migt_release_old(s->old, !s->err);
		if (s->err) {
			migt_fail(res, s->index, s->err);
		} else {
			req->migrated++;
			migt_count(MIGT_MIGRATED);
		}
	}
	return 0;
}

static int migt_check_target(const struct migrate_test_migrate *req)
{
	switch (req->target) {
	case MIGRATE_TEST_TARGET_NODE:
		if (req->node == NUMA_NO_NODE)
			return 0;
		if (req->node < 0 || req->node >= MAX_NUMNODES ||
		    !node_state(req->node, N_MEMORY))
			return -EINVAL;
		return 0;
	case MIGRATE_TEST_TARGET_RANGE:
		if (req->start_pfn >= req->end_pfn ||
		    req->end_pfn > (NR_MEM_SECTIONS << PFN_SECTION_SHIFT))
			return -EINVAL;
		return 0;
	case MIGRATE_TEST_TARGET_AWAY:
		return req->section < NR_MEM_SECTIONS ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

/*
 * Translate [addr, addr + len) of the caller's mm to page offsets of @ctx:
 * it must lie within one mapping of this very file.
 */
static int migt_translate(struct file *file, u64 addr, u64 len, pgoff_t *first,
			  unsigned long *addr0)
{
	struct migt_ctx *ctx = file->private_data;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	int ret = -EINVAL;

	if (!len || !PAGE_ALIGNED(addr) || !PAGE_ALIGNED(len) ||
	    addr + len < addr || addr > TASK_SIZE)
		return -EINVAL;
	if (mmap_read_lock_killable(mm))
		return -EINTR;
	vma = vma_lookup(mm, addr);
	if (vma && vma->vm_file == file && vma->vm_ops == &migt_vm_ops &&
	    addr + len <= vma->vm_end) {
		*first = vma->vm_pgoff - ctx->base +
			 ((addr - vma->vm_start) >> PAGE_SHIFT);
		*addr0 = addr - (*first << PAGE_SHIFT);
		ret = 0;
	}
	mmap_read_unlock(mm);
	return ret;
}

static long migt_ioctl_migrate(struct file *file, void __user *uarg)
{
	struct migt_ctx *ctx = file->private_data;
	struct migrate_test_migrate req;
	struct migt_result res = { .req = &req };
	struct migt_slot *slots;
	struct migt_alloc a;
	unsigned int batch;
	pgoff_t first, cursor, end;
	unsigned long timeout;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved || (req.flags & ~MIGRATE_TEST_FORCE) ||
	    req.batch > MIGRATE_TEST_MAX_BATCH || req.timeout_ms > 60000 ||
	    (req.failed_cap && !req.failed_addrs))
		return -EINVAL;
	ret = migt_check_target(&req);
	if (ret)
		return ret;
	ret = migt_translate(file, req.addr, req.len, &first, &res.addr0);
	if (ret)
		return ret;
	batch = req.batch ?: clamp(default_batch, 1U, MIGRATE_TEST_MAX_BATCH);
	timeout = msecs_to_jiffies(req.timeout_ms ?: min(ref_timeout_ms, 60000U));
	res.failed_addrs = u64_to_user_ptr(req.failed_addrs);
	if (req.failed_cap &&
	    !access_ok(res.failed_addrs, (u64)req.failed_cap * sizeof(u64)))
		return -EFAULT;
	req.migrated = 0;
	req.skipped = 0;
	req.failed = 0;
	req.first_error = 0;

	a.req = &req;
	a.scan_pfn = req.start_pfn;
	INIT_LIST_HEAD(&a.pool);
	INIT_LIST_HEAD(&a.reject);

	slots = kmalloc_array(MIGRATE_TEST_MAX_BATCH, sizeof(*slots),
			      GFP_KERNEL);
	res.fail_buf = kmalloc_array(MIGRATE_TEST_MAX_BATCH,
				     sizeof(*res.fail_buf), GFP_KERNEL);
	if (!slots || !res.fail_buf) {
		ret = -ENOMEM;
		goto out_free;
	}
	end = first + (req.len >> PAGE_SHIFT);
	for (cursor = first; cursor < end; ) {
		if (mutex_lock_killable(&ctx->migrate_lock)) {
			ret = -EINTR;
			break;
		}
		migt_migrate_batch(ctx, &res, &a, slots, &cursor, end, batch,
				   timeout);
		mutex_unlock(&ctx->migrate_lock);
		/* Nothing is locked now: failed_addrs may be in our mapping. */
		ret = migt_flush_failed(&res);
		if (ret)
			break;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		cond_resched();
	}
	migt_alloc_done(&a);
	if (copy_to_user(uarg, &req, sizeof(req)))
		ret = -EFAULT;
out_free:
	kfree(res.fail_buf);
	kfree(slots);
	return ret;
}

static long migt_ioctl_query(struct file *file, void __user *uarg)
{
	struct migt_ctx *ctx = file->private_data;
	struct migrate_test_query q;
	unsigned long addr0;
	pgoff_t first, i, n;
	struct page *page;
	u64 __user *out;
	u64 pfn;
	int ret;

	if (copy_from_user(&q, uarg, sizeof(q)))
		return -EFAULT;
	if (q.flags)
		return -EINVAL;
	ret = migt_translate(file, q.addr, q.len, &first, &addr0);
	if (ret)
		return ret;
	out = u64_to_user_ptr(q.pfns);
	n = q.len >> PAGE_SHIFT;
	q.populated = 0;
	for (i = 0; i < n; i++) {
		rcu_read_lock();
		page = xa_load(&ctx->pages, first + i);
		pfn = page ? page_to_pfn(page) : ~0ULL;
		rcu_read_unlock();
		if (page)
			q.populated++;
		if (put_user(pfn, out + i))
			return -EFAULT;
		if (!(i % 4096))
			cond_resched();
	}
	if (copy_to_user(uarg, &q, sizeof(q)))
		return -EFAULT;
	return 0;
}

static void migt_unhold(struct migt_ctx *ctx, pgoff_t index)
{
	struct page *page = xa_erase(&ctx->held, index);

	if (page)
		put_page(page);
}

static long migt_ioctl_inject(struct file *file, void __user *uarg)
{
	struct migt_ctx *ctx = file->private_data;
	struct migrate_test_inject inj;
	unsigned long addr0;
	pgoff_t first, i, n;
	struct page *page;
	int ret;

	if (copy_from_user(&inj, uarg, sizeof(inj)))
		return -EFAULT;
	if (inj.reserved || inj.kind > MIGRATE_TEST_INJECT_CLEAR)
		return -EINVAL;
	ret = migt_translate(file, inj.addr, inj.len, &first, &addr0);
	if (ret)
		return ret;
	n = inj.len >> PAGE_SHIFT;
	inj.count = 0;
	mutex_lock(&ctx->inject_lock);
	for (i = first; i < first + n; i++) {
		switch (inj.kind) {
		case MIGRATE_TEST_INJECT_ALLOC_FAIL:
			if (!xa_load(&ctx->pages, i))
				continue;
			xa_set_mark(&ctx->pages, i, MIGT_FAIL_ALLOC);
			break;
		case MIGRATE_TEST_INJECT_HOLD_REF:
			if (xa_load(&ctx->held, i))
				continue;
			page = migt_get_entry(ctx, i);
			if (!page)
				continue;
			if (xa_err(xa_store(&ctx->held, i, page, GFP_KERNEL))) {
				put_page(page);
				ret = -ENOMEM;
				goto out;
			}
			break;
		default:
			if (!xa_get_mark(&ctx->pages, i, MIGT_FAIL_ALLOC) &&
			    !xa_load(&ctx->held, i))
				continue;
			xa_clear_mark(&ctx->pages, i, MIGT_FAIL_ALLOC);
			migt_unhold(ctx, i);
			break;
		}
		inj.count++;
	}
out:
	mutex_unlock(&ctx->inject_lock);
	if (!ret && copy_to_user(uarg, &inj, sizeof(inj)))
		ret = -EFAULT;
	return ret;
}

static u64 migt_stat(enum migt_stat s)
{
	return atomic64_read(&migt_stats[s]);
}

static long migt_ioctl_stats(void __user *uarg)
{
	struct migrate_test_stats *st;
	int i, ret = 0;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	if (copy_from_user(st, uarg, sizeof(*st))) {
		ret = -EFAULT;
		goto out;
	}
	if (st->flags || st->reserved) {
		ret = -EINVAL;
		goto out;
	}
	memset(st, 0, sizeof(*st));
	st->pages = migt_stat(MIGT_PAGES);
	st->faults = migt_stat(MIGT_FAULTS);
	st->fault_waits = migt_stat(MIGT_FAULT_WAITS);
	st->fault_retries = migt_stat(MIGT_FAULT_RETRIES);
	st->allocated = migt_stat(MIGT_ALLOCATED);
	st->freed = migt_stat(MIGT_FREED);
	st->migrated = migt_stat(MIGT_MIGRATED);
	st->failed = migt_stat(MIGT_FAILED);
	st->rollback_timeout = migt_stat(MIGT_RB_TIMEOUT);
	st->rollback_nomem = migt_stat(MIGT_RB_NOMEM);
	st->core_isolated = migt_stat(MIGT_CORE_ISOLATED);
	st->core_migrated = migt_stat(MIGT_CORE_MIGRATED);
	st->core_eagain = migt_stat(MIGT_CORE_EAGAIN);
	st->core_putback = migt_stat(MIGT_CORE_PUTBACK);
	st->contig_allocs = migt_stat(MIGT_CONTIG_ALLOCS);
	BUILD_BUG_ON(MIGT_NR_STATS != 15);	/* one line above per counter */
	BUILD_BUG_ON(ARRAY_SIZE(st->hist_ns) != ARRAY_SIZE(migt_hist));
	for (i = 0; i < MIGRATE_TEST_HIST_BUCKETS; i++)
		st->hist_ns[i] = atomic64_read(&migt_hist[i]);
	if (copy_to_user(uarg, st, sizeof(*st)))
		ret = -EFAULT;
out:
	kfree(st);
	return ret;
}

static void migt_reset_stats(void)
{
	int i;

	for (i = 0; i < MIGT_NR_STATS; i++)
		if (i != MIGT_PAGES)
			atomic64_set(&migt_stats[i], 0);
	for (i = 0; i < MIGRATE_TEST_HIST_BUCKETS; i++)
		atomic64_set(&migt_hist[i], 0);
}

static long migt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case MIGRATE_TEST_IOC_MIGRATE:
		return migt_ioctl_migrate(file, uarg);
	case MIGRATE_TEST_IOC_QUERY:
		return migt_ioctl_query(file, uarg);
	case MIGRATE_TEST_IOC_INJECT:
		return migt_ioctl_inject(file, uarg);
	case MIGRATE_TEST_IOC_STATS:
		return migt_ioctl_stats(uarg);
	case MIGRATE_TEST_IOC_RESET_STATS:
		migt_reset_stats();
		return 0;
	default:
		return -ENOTTY;
	}
}

static int migt_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct migt_ctx *ctx = file->private_data;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff >= MIGRATE_TEST_MAX_PAGES ||
	    vma_pages(vma) > MIGRATE_TEST_MAX_PAGES - vma->vm_pgoff)
		return -EINVAL;
	vma->vm_pgoff += ctx->base;
	/* See "The mapping is VM_PFNMAP" at the top. */
	vma->vm_flags |= VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
	vma->vm_ops = &migt_vm_ops;
	vma->vm_private_data = ctx;
	return 0;
}

static int migt_open(struct inode *inode, struct file *file)
{
	struct migt_ctx *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	ctx->id = ida_alloc_max(&migt_ida, MIGT_MAX_IDS - 1, GFP_KERNEL);
	if (ctx->id < 0) {
		int ret = ctx->id;

		kfree(ctx);
		return ret;
	}
	ctx->base = (pgoff_t)ctx->id << MIGT_ID_SHIFT;
	xa_init(&ctx->pages);
	xa_init(&ctx->held);
	init_waitqueue_head(&ctx->wq);
	mutex_init(&ctx->migrate_lock);
	mutex_init(&ctx->inject_lock);
	ctx->mapping = file->f_mapping;
	file->private_data = ctx;
	return 0;
}

/* No mapping and no ioctl is left; core callbacks may still run. */
static int migt_release(struct inode *inode, struct file *file)
{
	struct migt_ctx *ctx = file->private_data;
	unsigned long index;
	struct page *page;

	xa_for_each(&ctx->held, index, page)
		migt_unhold(ctx, index);
	xa_destroy(&ctx->held);

	xa_for_each(&ctx->pages, index, page) {
		while ((page = migt_get_entry(ctx, index))) {
			lock_page(page);
			if (xa_load(&ctx->pages, index) != page) {
				unlock_page(page);	/* migrated meanwhile */
				put_page(page);
				continue;
			}
			__ClearPageMovable(page);
			xa_erase(&ctx->pages, index);
			unlock_page(page);
			set_page_private(page, 0);
			put_page(page);
			put_page(page);
			migt_page_gone();
		}
	}
	xa_destroy(&ctx->pages);
	ida_free(&migt_ida, ctx->id);
	kfree(ctx);
	return 0;
}

static const struct file_operations migt_fops = {
	.owner		= THIS_MODULE,
	.open		= migt_open,
	.release	= migt_release,
	.mmap		= migt_mmap,
	.unlocked_ioctl	= migt_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice migt_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "migrate_test",
	.fops	= &migt_fops,
	.mode	= 0600,
};

static int __init migt_init(void)
{
	return misc_register(&migt_misc);
}

static void __exit migt_exit(void)
{
	misc_deregister(&migt_misc);
	ida_destroy(&migt_ida);
}

module_init(migt_init);
module_exit(migt_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Driver-owned movable pages and driver-side page migration");
