/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * migrate_test: user memory backed by driver-owned movable pages.
 *
 * mmap(MAP_SHARED) of /dev/migrate_test gives memory whose pages the driver
 * allocates on fault and registers as non-LRU movable pages, so compaction,
 * alloc_contig_range() and memory offlining move them through the driver.
 * The ioctls below migrate them on request and report what happened.
 */
#ifndef _UAPI_LINUX_MIGRATE_TEST_H
#define _UAPI_LINUX_MIGRATE_TEST_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Largest mapping of one open file: 4 GiB of 4 KiB pages. */
#define MIGRATE_TEST_MAX_PAGES	(1ULL << 20)

/* struct migrate_test_migrate.target */
#define MIGRATE_TEST_TARGET_NODE	0	/* node (-1: any node) */
#define MIGRATE_TEST_TARGET_RANGE	1	/* pfns [start_pfn, end_pfn) */
#define MIGRATE_TEST_TARGET_AWAY	2	/* anywhere but section @section */

/* struct migrate_test_migrate.flags */
/* Move a page even if it already satisfies the target. */
#define MIGRATE_TEST_FORCE		(1U << 0)

#define MIGRATE_TEST_MAX_BATCH		64

struct migrate_test_migrate {
	/* in */
	__u64 addr;		/* page aligned, inside one mapping of this fd */
	__u64 len;		/* page aligned, > 0 */
	__u32 target;		/* MIGRATE_TEST_TARGET_* */
	__s32 node;		/* TARGET_NODE */
	__u64 start_pfn;	/* TARGET_RANGE */
	__u64 end_pfn;		/* TARGET_RANGE */
	__u64 section;		/* TARGET_AWAY */
	__u32 flags;		/* MIGRATE_TEST_FORCE */
	__u32 timeout_ms;	/* reference wait per batch; 0: module default */
	__u32 batch;		/* pages per batch, 1..MAX_BATCH; 0: default */
	__u32 failed_cap;	/* entries available at failed_addrs */
	/*
	 * failed_addrs: user pointer to __u64[failed_cap], or 0. It may point
	 * into this very mapping; it is written after each batch (-EFAULT if
	 * it cannot be; its content is then undefined).
	 */
	__u64 failed_addrs;
	/* out */
	__u64 migrated;		/* pages moved */
	__u64 skipped;		/* not populated, or already on target */
	__u64 failed;		/* pages left where they were */
	__s32 first_error;	/* negative errno of the first failure, or 0 */
	__u32 reserved;		/* must be 0 */
};

/* Per-page placement of a mapped range (populated pages only). */
struct migrate_test_query {
	__u64 addr;		/* page aligned */
	__u64 len;		/* page aligned, > 0 */
	__u64 pfns;		/* user pointer to __u64[len / page size] */
	__u64 flags;		/* in: must be 0 */
	/* out: pfns[i] = pfn of the page, or ~0ULL if not populated */
	__u64 populated;
};

/* Fault injection on the pages of [addr, addr + len). */
#define MIGRATE_TEST_INJECT_ALLOC_FAIL	0	/* new-page allocation fails */
#define MIGRATE_TEST_INJECT_HOLD_REF	1	/* an extra reference is held */
#define MIGRATE_TEST_INJECT_CLEAR	2	/* drop both kinds */

struct migrate_test_inject {
	__u64 addr;
	__u64 len;
	__u32 kind;		/* MIGRATE_TEST_INJECT_* */
	__u32 reserved;		/* must be 0 */
	__u64 count;		/* out: pages affected */
};

#define MIGRATE_TEST_HIST_BUCKETS	32

/* Global counters since module load. */
struct migrate_test_stats {
	__u32 flags;		/* in: must be 0 */
	__u32 reserved;		/* in: must be 0; out: 0 */
	__u64 pages;		/* driver pages alive now */
	__u64 faults;		/* faults that mapped a page */
	__u64 fault_waits;	/* faults that waited for a migration */
	__u64 fault_retries;	/* faults retried: page locked elsewhere */
	__u64 allocated;	/* pages allocated (faults + migrations) */
	__u64 freed;
	__u64 migrated;		/* ioctl migrations that completed */
	__u64 failed;		/* ioctl migrations rolled back */
	__u64 rollback_timeout;	/* rolled back: references did not drop */
	__u64 rollback_nomem;	/* rolled back: no new page */
	/*
	 * core_isolated and core_putback stay 0 where the pages are balloon
	 * pages: the kernel's balloon code isolates and puts them back.
	 */
	__u64 core_isolated;	/* isolate_page() callbacks that accepted */
	__u64 core_migrated;	/* migrate_page() callbacks that moved */
	__u64 core_eagain;	/* migrate_page() callbacks that refused */
	__u64 core_putback;	/* putback_page() callbacks */
	__u64 contig_allocs;	/* alloc_contig_range() calls (range target) */
	/*
	 * log2 histogram of the per-page blocked window (redirect to
	 * commit), ns: bucket i counts [2^i, 2^(i+1)) ns.
	 */
	__u64 hist_ns[MIGRATE_TEST_HIST_BUCKETS];
	__u64 reserved2[8];	/* out: 0 (room for new counters) */
};

/*
 * 0xBD: unclaimed in Documentation/userspace-api/ioctl/ioctl-number.rst
 * (6.1 and upstream), where 'M' belongs to mtd and others.
 */
#define MIGRATE_TEST_IOC_MAGIC	0xBD
#define MIGRATE_TEST_IOC_MIGRATE \
	_IOWR(MIGRATE_TEST_IOC_MAGIC, 1, struct migrate_test_migrate)
#define MIGRATE_TEST_IOC_QUERY \
	_IOWR(MIGRATE_TEST_IOC_MAGIC, 2, struct migrate_test_query)
#define MIGRATE_TEST_IOC_INJECT \
	_IOWR(MIGRATE_TEST_IOC_MAGIC, 3, struct migrate_test_inject)
#define MIGRATE_TEST_IOC_STATS \
	_IOWR(MIGRATE_TEST_IOC_MAGIC, 4, struct migrate_test_stats)
#define MIGRATE_TEST_IOC_RESET_STATS \
	_IO(MIGRATE_TEST_IOC_MAGIC, 5)

#endif /* _UAPI_LINUX_MIGRATE_TEST_H */
