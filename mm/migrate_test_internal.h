/* SPDX-License-Identifier: GPL-2.0 */
/*
 * migrate_test internals shared by migrate_test_pages.c (page tree, faults,
 * core callbacks, device) and migrate_test_ioctl.c (the ioctls). The rules
 * they follow are at the top of migrate_test_pages.c.
 */
#ifndef _MEMHP_MIGRATE_TEST_INTERNAL_H
#define _MEMHP_MIGRATE_TEST_INTERNAL_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#define MTEST_BUSY		XA_MARK_0	/* entry under migration */
#define MTEST_FAIL_ALLOC	XA_MARK_1	/* injected: allocation fails */

struct mtest_ctx {
	struct xarray pages;		/* offset -> page (the page tree) */
	struct xarray held;		/* offset -> page, HOLD_REF injection */
#ifndef MEMHP_HAVE_DRIVER_MOVABLE_PAGES
	struct xarray bslots;		/* offset -> struct mtest_bslot */
#endif
	struct address_space *mapping;	/* the device inode's mapping */
	pgoff_t base;			/* first page offset of this file */
	int id;
	wait_queue_head_t wq;		/* faults waiting for MTEST_BUSY to clear */
	struct mutex migrate_lock;	/* MIGRATE batches of this file */
	struct mutex inject_lock;	/* INJECT calls (ctx->held) */
};

enum mtest_stat {
	MTEST_PAGES, MTEST_FAULTS, MTEST_FAULT_WAITS, MTEST_FAULT_RETRIES,
	MTEST_ALLOCATED, MTEST_FREED, MTEST_MIGRATED, MTEST_FAILED,
	MTEST_RB_TIMEOUT, MTEST_RB_NOMEM, MTEST_CORE_ISOLATED,
	MTEST_CORE_MIGRATED, MTEST_CORE_EAGAIN, MTEST_CORE_PUTBACK,
	MTEST_CONTIG_ALLOCS, MTEST_NR_STATS
};

extern atomic64_t mtest_stats[MTEST_NR_STATS];

static inline void mtest_count(enum mtest_stat s)
{
	atomic64_inc(&mtest_stats[s]);
}

/* migrate_test_pages.c */
extern const struct vm_operations_struct mtest_vm_ops;
void mtest_page_born(void);
void mtest_page_gone(void);
struct page *mtest_get_entry(struct mtest_ctx *ctx, pgoff_t index);
void mtest_own_page(struct mtest_ctx *ctx, pgoff_t index, struct page *page);
/* Steps 3-6 and rollback, shared by the core callback and MIGRATE. */
void mtest_redirect(struct mtest_ctx *ctx, pgoff_t index, struct page *new);
void mtest_rollback(struct mtest_ctx *ctx, pgoff_t index, struct page *old,
		    struct page *new);
void mtest_unmap(struct mtest_ctx *ctx, pgoff_t index, pgoff_t nr);
void mtest_block(struct mtest_ctx *ctx, pgoff_t index);
void mtest_unblock(struct mtest_ctx *ctx, pgoff_t index);
bool mtest_freeze(struct page *old);
void mtest_commit(struct mtest_ctx *ctx, pgoff_t index, struct page *old,
		  struct page *new);
bool mtest_page_isolated(struct page *page);

/* migrate_test_ioctl.c */
void mtest_unhold(struct mtest_ctx *ctx, pgoff_t index);
long mtest_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

#endif /* _MEMHP_MIGRATE_TEST_INTERNAL_H */
