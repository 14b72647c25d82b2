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
 * therefore move them through mtest_mops (isolate_page / migrate_page /
 * putback_page), and the MIGRATE ioctl moves them on request to a node, into
 * a pfn range or away from a section. Both paths use the same steps:
 *
 *  1. lock the old page              (core: done by migrate_pages())
 *  2. allocate and lock the new page (core: done by migrate_pages())
 *  3. redirect the xarray entry to the new page and mark it MTEST_BUSY
 *  4. unmap the old page from every process (unmap_mapping_pages() on the
 *     device's address_space; the TLB is flushed before it returns)
 *  5. freeze the old page's refcount at 2 (xarray + migrator) with
 *     page_ref_freeze(), retrying until a timeout: on timeout the entry is
 *     pointed back at the old page (rollback) and the page is reported
 *     failed
 *  6. copy, mark the new page up to date and movable, clear the old one,
 *     unfreeze
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
 *   get_page(); page_ref_freeze() keeps speculative get_page_unless_zero()
 *   users (pfn walkers) away while it is copied.
 * - MIGRATE_ASYNC (async compaction) must not wait: the core callback then
 *   tries the freeze once instead of polling for references. It still
 *   unmaps, and so may sleep on i_mmap_rwsem, as the core itself does for
 *   mapped LRU pages in async mode (try_to_migrate() sets no try_lock, so
 *   rmap_walk_file() takes i_mmap_rwsem); async mode only avoids waiting
 *   for page locks, writeback and references.
 * - Page state: page->private = ctx, page->index = offset in the file;
 *   page->mapping holds mtest_mops (PAGE_MAPPING_MOVABLE) while the page is
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
#include <memhp_compat.h>

#include "migrate_test_internal.h"

#define MTEST_ID_SHIFT	20		/* log2(MIGRATE_TEST_MAX_PAGES) */
#define MTEST_MAX_IDS	BIT(16)
#define MTEST_FAULT_AROUND	16	/* pages, a power of two */

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

static const struct movable_operations mtest_mops;

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

void mtest_own_page(struct mtest_ctx *ctx, pgoff_t index, struct page *page)
{
	set_page_private(page, (unsigned long)ctx);
	page->index = index;
}

/* Publish a fresh zeroed page at @index unless someone else did. */
static vm_fault_t mtest_populate(struct mtest_ctx *ctx, pgoff_t index)
{
	struct page *page, *old;

	page = alloc_page(GFP_HIGHUSER_MOVABLE | __GFP_ZERO);
	if (!page)
		return VM_FAULT_OOM;
	if (!trylock_page(page)) {	/* a speculative locker: give up */
		put_page(page);
		return 0;
	}
	mtest_own_page(ctx, index, page);
	__SetPageMovable(page, &mtest_mops);
	old = xa_cmpxchg(&ctx->pages, index, NULL, page, GFP_KERNEL);
	if (old) {
		__ClearPageMovable(page);
		unlock_page(page);
		set_page_private(page, 0);
		put_page(page);
		return xa_is_err(old) ? VM_FAULT_OOM : 0;
	}
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
	set_page_private(new, 0);
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
 * Step 5: only the xarray and the migrator (or the core's isolation) hold
 * @old: freeze its refcount so that no speculative reference appears while
 * it is copied. The ptes hold none (VM_PFNMAP), and they are gone already.
 */
#define MTEST_EXPECTED_REFS	2

bool mtest_freeze(struct page *old)
{
	return page_ref_freeze(old, MTEST_EXPECTED_REFS);
}

/* Step 6: copy, hand the movable registration over to @new, unfreeze. */
void mtest_commit(struct page *old, struct page *new)
{
	copy_highpage(new, old);
	SetPageUptodate(new);
	__SetPageMovable(new, &mtest_mops);
	__ClearPageMovable(old);
	set_page_private(old, 0);
	page_ref_unfreeze(old, MTEST_EXPECTED_REFS);
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
	pgoff_t index = src->index;
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
	get_page(dst);			/* the xarray's reference */
	mtest_commit(src, dst);
	mtest_unblock(ctx, index);
	wake_up_all(&ctx->wq);
	put_page(src);			/* the xarray's; isolation ref remains */
	mtest_count(MTEST_CORE_MIGRATED);
	mtest_count(MTEST_ALLOCATED);
	mtest_count(MTEST_FREED);
	return MIGRATEPAGE_SUCCESS;
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

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
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
			mtest_page_gone();
		}
	}
	xa_destroy(&ctx->pages);
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
	return misc_register(&mtest_misc);
}

static void __exit mtest_exit(void)
{
	misc_deregister(&mtest_misc);
	ida_destroy(&mtest_ida);
}

module_init(mtest_init);
module_exit(mtest_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Driver-owned movable pages and driver-side page migration");
