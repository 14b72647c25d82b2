// SPDX-License-Identifier: GPL-2.0
/*
 * migrate_test: the ioctls of /dev/migrate_test. MIGRATE moves the pages of
 * a range of a mapping in batches (steps 1-8 and the locking rules are at
 * the top of migrate_test_pages.c), with new pages taken from a node, from
 * a pfn range or from anywhere outside a section; QUERY reports the pfn
 * behind each page, INJECT makes migrations fail on purpose, STATS and
 * RESET_STATS read and clear the counters.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/migrate.h>
#include <linux/memory_hotplug.h>
#include <linux/mmzone.h>
#include <linux/gfp.h>
#include <linux/xarray.h>
#include <linux/wait.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/migrate_test.h>
#include <memhp_compat.h>

#include "migrate_test_internal.h"

static unsigned int ref_timeout_ms = 100;
module_param(ref_timeout_ms, uint, 0444);
MODULE_PARM_DESC(ref_timeout_ms, "Default wait for references to drop (ms)");

static unsigned int default_batch = 32;
module_param(default_batch, uint, 0444);
MODULE_PARM_DESC(default_batch, "Default pages per MIGRATE batch (1-64)");

#define MTEST_ISOLATED_RETRIES	20

static atomic64_t mtest_hist[MIGRATE_TEST_HIST_BUCKETS];

static void mtest_hist_add(u64 ns)
{
	int b = ns ? fls64(ns) - 1 : 0;

	atomic64_inc(&mtest_hist[min(b, MIGRATE_TEST_HIST_BUCKETS - 1)]);
}

/* Allocation of new pages for the MIGRATE ioctl. */

struct mtest_alloc {
	const struct migrate_test_migrate *req;
	unsigned long scan_pfn;		/* TARGET_RANGE: next pfn to scan */
	struct list_head pool;		/* TARGET_RANGE: pages in the range */
	struct list_head reject;	/* TARGET_AWAY: pages in the section */
};

static bool mtest_satisfies(const struct migrate_test_migrate *req,
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
static void mtest_fill_pool(struct mtest_alloc *a, unsigned int want)
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
		mtest_count(MTEST_CONTIG_ALLOCS);
		if (memhp_alloc_contig_range(pfn, end,
					     GFP_KERNEL | __GFP_NOWARN))
			continue;
		for (p = pfn; p < end; p++, got++)
			list_add_tail(&pfn_to_page(p)->lru, &a->pool);
		cond_resched();
	}
}

static struct page *mtest_alloc_new(struct mtest_alloc *a)
{
	const struct migrate_test_migrate *req = a->req;
	const gfp_t gfp = GFP_HIGHUSER_MOVABLE | __GFP_NOWARN;
	struct page *page;

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
		/*
		 * Called with the batch's old pages locked (sleeping is fine:
		 * upstream allocates under source folio locks too). Pages that
		 * land in the excluded section stay on @reject until the end
		 * of the call, so the allocator runs out of them and moves
		 * on: the previous batch's old pages, freed to this CPU's pcp
		 * list, come back first, and right after TARGET_RANGE filled
		 * the section its split blocks are the low orders the buddy
		 * hands out first. Each reject is a distinct page of the
		 * section: at most a section's worth are held (64 tries per
		 * page, the first design, left pages there with -ENOMEM).
		 */
		for (;;) {
			if (fatal_signal_pending(current))
				return NULL;
			page = alloc_page(gfp | __GFP_NORETRY);
			if (!page || mtest_satisfies(req, page))
				return page;
			list_add(&page->lru, &a->reject);
		}
		return NULL;
	}
}

static void mtest_alloc_done(struct mtest_alloc *a)
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

struct mtest_slot {
	pgoff_t index;
	struct page *old, *new;
	bool committed;
	int err;
};

/*
 * Failed addresses wait in @fail_buf until the batch has released its
 * pages (see "No user memory is touched while a page is locked").
 */
struct mtest_result {
	struct migrate_test_migrate *req;
	unsigned long addr0;		/* user address of offset 0 */
	u64 __user *failed_addrs;
	u64 *fail_buf;			/* MIGRATE_TEST_MAX_BATCH entries */
	unsigned int nr_buf;		/* entries in fail_buf */
	u64 nr_copied;			/* entries already at failed_addrs */
};

static void mtest_fail(struct mtest_result *res, pgoff_t index, int err)
{
	struct migrate_test_migrate *req = res->req;

	if (res->failed_addrs && req->failed < req->failed_cap)
		res->fail_buf[res->nr_buf++] = res->addr0 + (index << PAGE_SHIFT);
	if (!req->first_error)
		req->first_error = err;
	req->failed++;
	mtest_count(MTEST_FAILED);
}

/* Called with no page locked and nothing MTEST_BUSY. */
static int mtest_flush_failed(struct mtest_result *res)
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
static struct page *mtest_lock_old(struct mtest_ctx *ctx, pgoff_t index,
				   bool block, int *err)
{
	int retries = 0;
	struct page *page;

	*err = 0;
	for (;;) {
		page = mtest_get_entry(ctx, index);
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
		if (!mtest_page_isolated(page))
			return page;
		/* The core isolated it and will migrate or put it back. */
		unlock_page(page);
		put_page(page);
		if (!block || ++retries > MTEST_ISOLATED_RETRIES) {
			*err = block ? -EBUSY : 0;
			return NULL;
		}
		usleep_range(1000, 2000);
	}
}

static void mtest_release_old(struct page *old, bool migrated)
{
	unlock_page(old);
	put_page(old);			/* the migrator's reference */
	if (migrated) {
		/* The xarray's: frees it, or a speculative holder's put will. */
		put_page(old);
		mtest_page_gone();
	}
}

/*
 * The steps of one MIGRATE batch (numbered as at the top of
 * migrate_test_pages.c), each called under ctx->migrate_lock by
 * mtest_migrate_batch(). The page locks span the steps: the old pages are
 * locked in step 1 and unlocked in step 8, the new pages locked in step 2
 * and unlocked in step 7 (those of failed slots too). A slot that fails
 * keeps its error in ->err and is skipped by steps 3-6; steps 7 and 8 act
 * on it too (unlock and put its new page, release its old page, record
 * the failure), while rollback only turns uncommitted slots into
 * -ETIMEDOUT.
 */

/*
 * Step 1: lock the old pages of [*@cursor, @end), at most @batch, into
 * @slots, each with a reference and MTEST_BUSY set (faults now sleep
 * instead of retrying on the locked page). Each offset taken either fails
 * now or fills a slot that may fail later: keep room for both in
 * fail_buf. Returns with the old pages of the slots locked; *@cursor:
 * the first offset not taken. Returns the number of slots filled.
 */
static unsigned int mtest_lock_batch(struct mtest_ctx *ctx,
				     struct mtest_result *res,
				     struct mtest_slot *slots, pgoff_t *cursor,
				     pgoff_t end, unsigned int batch)
{
	struct migrate_test_migrate *req = res->req;
	pgoff_t index = *cursor;
	unsigned int n = 0;
	struct page *old;
	int err;

	for (; index < end && n < batch; index++) {
		if (n + res->nr_buf >= MIGRATE_TEST_MAX_BATCH)
			break;
		old = mtest_lock_old(ctx, index, n == 0, &err);
		if (!old) {
			if (err) {
				mtest_fail(res, index, err);
				continue;
			}
			if (n && xa_load(&ctx->pages, index))
				break;	/* locked elsewhere: next batch */
			req->skipped++;
			continue;
		}
		if (!(req->flags & MIGRATE_TEST_FORCE) &&
		    mtest_satisfies(req, old)) {
			mtest_release_old(old, false);
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
		mtest_block(ctx, index);
	}
	*cursor = index;
	return n;
}

/*
 * Step 2: allocate and lock the new pages. Called with the old pages of
 * the slots locked. A slot without a new page fails with -ENOMEM, and
 * its entry is no longer MTEST_BUSY; the others return with the new page
 * locked and owned (mtest_own_page()).
 */
static void mtest_alloc_batch(struct mtest_ctx *ctx, struct mtest_alloc *a,
			      struct mtest_slot *slots, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct mtest_slot *s = &slots[i];

		if (xa_get_mark(&ctx->pages, s->index, MTEST_FAIL_ALLOC))
			s->new = NULL;
		else
			s->new = mtest_alloc_new(a);
		if (s->new && !trylock_page(s->new)) {
			put_page(s->new);
			s->new = NULL;
		}
		if (!s->new) {
			s->err = -ENOMEM;
			mtest_unblock(ctx, s->index);
			mtest_count(MTEST_RB_NOMEM);
			continue;
		}
		mtest_own_page(ctx, s->index, s->new);
	}
}

/*
 * Step 3: redirect; from now on faults wait for the new page. Called with
 * the old and new pages of the slots locked.
 */
static void mtest_redirect_batch(struct mtest_ctx *ctx,
				 struct mtest_slot *slots, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!slots[i].err)
			mtest_redirect(ctx, slots[i].index, slots[i].new);
}

/*
 * Steps 5-6: once the other references to an old page are gone
 * (mtest_freeze()), commit it at once, until a timeout or a fatal signal,
 * which leave the slots not yet committed to rollback (-ETIMEDOUT). The
 * old page is out of the xarray and unmapped by then, so no new user can
 * reach it; only speculative get_page_unless_zero() users (pfn walkers,
 * the core's isolation) can meet it. With driver-owned movable pages the
 * page is frozen at refcount 0 while it is copied, so they fail. With
 * balloon pages nothing is frozen (mtest_freeze() only checks the count):
 * such a user gets its reference, and what keeps it away is the page lock,
 * which the batch holds until step 8 and which isolation trylocks before
 * it acts on a page; the old page is then freed when that reference is
 * dropped.
 * Called with the old and new pages of the slots locked; takes and drops
 * no lock.
 */
static void mtest_commit_batch(struct mtest_ctx *ctx, struct mtest_slot *slots,
			       unsigned int n, unsigned long timeout)
{
	unsigned long deadline = jiffies + timeout;
	unsigned int i, pending;

	for (;;) {
		pending = 0;
		for (i = 0; i < n; i++) {
			struct mtest_slot *s = &slots[i];

			if (s->err || s->committed)
				continue;
			if (mtest_freeze(s->old)) {
				mtest_commit(ctx, s->index, s->old, s->new);
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
}

/*
 * The slots steps 5-6 left uncommitted: roll back, -ETIMEDOUT (the entry
 * points at the old page again and is no longer MTEST_BUSY). Called with
 * the old and new pages of the slots locked.
 */
static void mtest_rollback_batch(struct mtest_ctx *ctx,
				 struct mtest_slot *slots, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct mtest_slot *s = &slots[i];

		if (s->err || s->committed)
			continue;
		s->err = -ETIMEDOUT;
		mtest_rollback(ctx, s->index, s->old, s->new);
		mtest_count(MTEST_RB_TIMEOUT);
	}
}

/*
 * Step 7: unlock the new pages (and drop those of failed slots), clear
 * MTEST_BUSY of the migrated entries and wake the faults that waited.
 * Called with the old and new pages of the slots locked; returns with
 * the old ones locked.
 */
static void mtest_finish_new(struct mtest_ctx *ctx, struct mtest_slot *slots,
			     unsigned int n, ktime_t t0)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct mtest_slot *s = &slots[i];

		if (!s->new)
			continue;
		if (s->err) {
			unlock_page(s->new);
			put_page(s->new);
			continue;
		}
		mtest_unblock(ctx, s->index);
		unlock_page(s->new);
		mtest_hist_add(ktime_to_ns(ktime_sub(ktime_get(), t0)));
		mtest_page_born();
	}
	wake_up_all(&ctx->wq);
}

/*
 * Step 8: unlock the old pages and free them (or leave them in place),
 * and count each slot as migrated or failed. Called with the old pages
 * of the slots locked; returns with nothing locked.
 */
static void mtest_release_batch(struct mtest_result *res,
				struct mtest_slot *slots, unsigned int n)
{
	struct migrate_test_migrate *req = res->req;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct mtest_slot *s = &slots[i];

		mtest_release_old(s->old, !s->err);
		if (s->err) {
			mtest_fail(res, s->index, s->err);
		} else {
			req->migrated++;
			mtest_count(MTEST_MIGRATED);
		}
	}
}

/*
 * One batch of the MIGRATE ioctl, from *@cursor: steps 1-8. Called under
 * ctx->migrate_lock, with no page locked; returns with no page locked and
 * nothing MTEST_BUSY.
 */
static int mtest_migrate_batch(struct mtest_ctx *ctx, struct mtest_result *res,
			       struct mtest_alloc *a, struct mtest_slot *slots,
			       pgoff_t *cursor, pgoff_t end, unsigned int batch,
			       unsigned long timeout)
{
	struct migrate_test_migrate *req = res->req;
	unsigned int n;
	ktime_t t0;

	if (req->target == MIGRATE_TEST_TARGET_RANGE)
		mtest_fill_pool(a, batch);

	n = mtest_lock_batch(ctx, res, slots, cursor, end, batch);
	if (!n)
		return 0;
	mtest_alloc_batch(ctx, a, slots, n);
	t0 = ktime_get();
	mtest_redirect_batch(ctx, slots, n);
	/* Step 4: unmap the old pages, one TLB flush for the batch. */
	mtest_unmap(ctx, slots[0].index, slots[n - 1].index - slots[0].index + 1);
	mtest_commit_batch(ctx, slots, n, timeout);
	mtest_rollback_batch(ctx, slots, n);
	mtest_finish_new(ctx, slots, n, t0);
	mtest_release_batch(res, slots, n);
	return 0;
}

static int mtest_check_target(const struct migrate_test_migrate *req)
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
static int mtest_translate(struct file *file, u64 addr, u64 len, pgoff_t *first,
			   unsigned long *addr0)
{
	struct mtest_ctx *ctx = file->private_data;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	int ret = -EINVAL;

	if (!len || !PAGE_ALIGNED(addr) || !PAGE_ALIGNED(len) ||
	    addr + len < addr || addr > TASK_SIZE)
		return -EINVAL;
	if (mmap_read_lock_killable(mm))
		return -EINTR;
	vma = vma_lookup(mm, addr);
	if (vma && vma->vm_file == file && vma->vm_ops == &mtest_vm_ops &&
	    addr + len <= vma->vm_end) {
		*first = vma->vm_pgoff - ctx->base +
			 ((addr - vma->vm_start) >> PAGE_SHIFT);
		*addr0 = addr - (*first << PAGE_SHIFT);
		ret = 0;
	}
	mmap_read_unlock(mm);
	return ret;
}

static long mtest_ioctl_migrate(struct file *file, void __user *uarg)
{
	struct mtest_ctx *ctx = file->private_data;
	struct migrate_test_migrate req;
	struct mtest_result res = { .req = &req };
	struct mtest_slot *slots;
	struct mtest_alloc a;
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
	ret = mtest_check_target(&req);
	if (ret)
		return ret;
	ret = mtest_translate(file, req.addr, req.len, &first, &res.addr0);
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
		mtest_migrate_batch(ctx, &res, &a, slots, &cursor, end, batch,
				    timeout);
		mutex_unlock(&ctx->migrate_lock);
		/* Nothing is locked now: failed_addrs may be in our mapping. */
		ret = mtest_flush_failed(&res);
		if (ret)
			break;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		cond_resched();
	}
	mtest_alloc_done(&a);
	if (copy_to_user(uarg, &req, sizeof(req)))
		ret = -EFAULT;
out_free:
	kfree(res.fail_buf);
	kfree(slots);
	return ret;
}

static long mtest_ioctl_query(struct file *file, void __user *uarg)
{
	struct mtest_ctx *ctx = file->private_data;
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
	ret = mtest_translate(file, q.addr, q.len, &first, &addr0);
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

void mtest_unhold(struct mtest_ctx *ctx, pgoff_t index)
{
	struct page *page = xa_erase(&ctx->held, index);

	if (page)
		put_page(page);
}

static long mtest_ioctl_inject(struct file *file, void __user *uarg)
{
	struct mtest_ctx *ctx = file->private_data;
	struct migrate_test_inject inj;
	unsigned long addr0;
	pgoff_t first, i, n;
	struct page *page;
	int ret;

	if (copy_from_user(&inj, uarg, sizeof(inj)))
		return -EFAULT;
	if (inj.reserved || inj.kind > MIGRATE_TEST_INJECT_CLEAR)
		return -EINVAL;
	ret = mtest_translate(file, inj.addr, inj.len, &first, &addr0);
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
			xa_set_mark(&ctx->pages, i, MTEST_FAIL_ALLOC);
			break;
		case MIGRATE_TEST_INJECT_HOLD_REF:
			if (xa_load(&ctx->held, i))
				continue;
			page = mtest_get_entry(ctx, i);
			if (!page)
				continue;
			if (xa_err(xa_store(&ctx->held, i, page, GFP_KERNEL))) {
				put_page(page);
				ret = -ENOMEM;
				goto out;
			}
			break;
		default:
			if (!xa_get_mark(&ctx->pages, i, MTEST_FAIL_ALLOC) &&
			    !xa_load(&ctx->held, i))
				continue;
			xa_clear_mark(&ctx->pages, i, MTEST_FAIL_ALLOC);
			mtest_unhold(ctx, i);
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

static u64 mtest_stat(enum mtest_stat s)
{
	return atomic64_read(&mtest_stats[s]);
}

static long mtest_ioctl_stats(void __user *uarg)
{
	struct migrate_test_stats *st;
	int i, ret = 0;

	st = memhp_kzalloc_obj(*st, GFP_KERNEL);
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
	st->pages = mtest_stat(MTEST_PAGES);
	st->faults = mtest_stat(MTEST_FAULTS);
	st->fault_waits = mtest_stat(MTEST_FAULT_WAITS);
	st->fault_retries = mtest_stat(MTEST_FAULT_RETRIES);
	st->allocated = mtest_stat(MTEST_ALLOCATED);
	st->freed = mtest_stat(MTEST_FREED);
	st->migrated = mtest_stat(MTEST_MIGRATED);
	st->failed = mtest_stat(MTEST_FAILED);
	st->rollback_timeout = mtest_stat(MTEST_RB_TIMEOUT);
	st->rollback_nomem = mtest_stat(MTEST_RB_NOMEM);
	st->core_isolated = mtest_stat(MTEST_CORE_ISOLATED);
	st->core_migrated = mtest_stat(MTEST_CORE_MIGRATED);
	st->core_eagain = mtest_stat(MTEST_CORE_EAGAIN);
	st->core_putback = mtest_stat(MTEST_CORE_PUTBACK);
	st->contig_allocs = mtest_stat(MTEST_CONTIG_ALLOCS);
	BUILD_BUG_ON(MTEST_NR_STATS != 15);	/* one line above per counter */
	BUILD_BUG_ON(ARRAY_SIZE(st->hist_ns) != ARRAY_SIZE(mtest_hist));
	for (i = 0; i < MIGRATE_TEST_HIST_BUCKETS; i++)
		st->hist_ns[i] = atomic64_read(&mtest_hist[i]);
	if (copy_to_user(uarg, st, sizeof(*st)))
		ret = -EFAULT;
out:
	kfree(st);
	return ret;
}

static void mtest_reset_stats(void)
{
	int i;

	for (i = 0; i < MTEST_NR_STATS; i++)
		if (i != MTEST_PAGES)
			atomic64_set(&mtest_stats[i], 0);
	for (i = 0; i < MIGRATE_TEST_HIST_BUCKETS; i++)
		atomic64_set(&mtest_hist[i], 0);
}

long mtest_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case MIGRATE_TEST_IOC_MIGRATE:
		return mtest_ioctl_migrate(file, uarg);
	case MIGRATE_TEST_IOC_QUERY:
		return mtest_ioctl_query(file, uarg);
	case MIGRATE_TEST_IOC_INJECT:
		return mtest_ioctl_inject(file, uarg);
	case MIGRATE_TEST_IOC_STATS:
		return mtest_ioctl_stats(uarg);
	case MIGRATE_TEST_IOC_RESET_STATS:
		mtest_reset_stats();
		return 0;
	default:
		return -ENOTTY;
	}
}
