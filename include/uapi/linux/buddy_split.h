/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * buddy_split: a bitmap-free buddy allocator with free areas split by
 * reclaim type (OLS 2005 "Hotplug Memory Redux" sections 4-5) over an arena
 * of real page frames taken from the kernel. /dev/buddy_split ioctls.
 *
 * Every structure is fixed-size; reserved fields must be zero (-EINVAL
 * otherwise). Errors: -EINVAL bad argument, -ENOMEM arena exhausted (ALLOC),
 * -ENOENT pfn not allocated / section offline, -EBUSY section pinned
 * (SECTION_REMOVE, with the blocking type in ->blocker), -EUCLEAN invariant
 * violated (CHECK), -EINTR interrupted by a fatal signal (WORKLOAD).
 */
#ifndef _UAPI_LINUX_BUDDY_SPLIT_H
#define _UAPI_LINUX_BUDDY_SPLIT_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define BUDDY_SPLIT_MAX_ORDER		11	/* orders 0..10 */

/* Allocation (reclaim) types. */
#define BUDDY_SPLIT_USER_RECLAIMABLE		0
#define BUDDY_SPLIT_KERNEL_RECLAIMABLE		1
#define BUDDY_SPLIT_KERNEL_NONRECLAIMABLE	2
#define BUDDY_SPLIT_NR_TYPES			3

/* Allocator modes (sysfs "mode"), policies (sysfs "policy"). */
#define BUDDY_SPLIT_MODE_SPLIT		0
#define BUDDY_SPLIT_MODE_SINGLE		1
#define BUDDY_SPLIT_MODE_BITMAP		2
#define BUDDY_SPLIT_POLICY_STRICT	0
#define BUDDY_SPLIT_POLICY_FALLBACK	1

struct buddy_split_alloc {
	__u32 type;		/* in: BUDDY_SPLIT_*RECLAIMABLE */
	__u32 order;		/* in: 0..BUDDY_SPLIT_MAX_ORDER-1 */
	__u32 flags;		/* in: must be 0 */
	__u32 reserved;		/* must be 0 */
	__u64 pfn;		/* out: first page frame of the block */
};

struct buddy_split_free {
	__u64 pfn;		/* in: as returned by ALLOC */
	__u64 flags;		/* in: must be 0 */
};

/*
 * The workload generator (identical to the user-space one): @ops steps, each
 * freeing the blocks whose lifetime ended and allocating one block of a type
 * drawn from @mix (percent, sum 100), order k <= @max_order with probability
 * 2^-(k+1), lifetime uniform in [1, 2 * @lifetime[type]] (0: forever).
 */
struct buddy_split_workload {
	__u64 seed;				/* in */
	__u32 ops;				/* in: 1..10^8 */
	__u32 max_order;			/* in */
	__u32 mix[BUDDY_SPLIT_NR_TYPES];	/* in */
	__u32 lifetime[BUDDY_SPLIT_NR_TYPES];	/* in */
	__u32 flags;				/* in: must be 0 */
	__u32 reserved;				/* must be 0 */
	__u64 allocs[BUDDY_SPLIT_NR_TYPES];	/* out */
	__u64 fails[BUDDY_SPLIT_NR_TYPES];	/* out */
	__u64 frees;				/* out */
	__u64 live_pages[BUDDY_SPLIT_NR_TYPES];	/* out: arena pages in use */
	__u64 ns;				/* out: run time */
};

#define BUDDY_SPLIT_SECTION_DRY_RUN	0x1	/* verdict only, change nothing */

struct buddy_split_section {
	__u32 nr;		/* in: section slot */
	__u32 flags;		/* in: BUDDY_SPLIT_SECTION_* */
	__s32 blocker;		/* out: type pinning it, -1 when none */
	__u32 reserved;		/* must be 0 */
	__u64 ns;		/* out: allocator time of the operation */
};

#define BUDDY_SPLIT_BENCH_ARENA		0	/* the arena allocator */
#define BUDDY_SPLIT_BENCH_KERNEL	1	/* alloc_pages/__free_pages */

struct buddy_split_bench {
	__u32 target;		/* in: BUDDY_SPLIT_BENCH_* */
	__u32 type;		/* in: arena only */
	__u32 order;		/* in */
	__u32 reserved;		/* must be 0 */
	__u64 count;		/* in: blocks, 1..2^20 */
	__u64 seed;		/* in: free order shuffle */
	__u64 done;		/* out: blocks allocated (and freed) */
	__u64 alloc_ns;		/* out */
	__u64 free_ns;		/* out */
};

struct buddy_split_reset {
	__u32 mode;		/* in: BUDDY_SPLIT_MODE_* */
	__u32 reserved;		/* must be 0 */
};

struct buddy_split_info {
	__u32 nr_sections;	/* slots */
	__u32 nr_online;
	__u32 section_shift;	/* pages per section = 1 << shift */
	__u32 mode;
	__u32 policy;
	__u32 pinned_sections;	/* slots 0..pinned_sections-1 are pinned */
	__u64 online_pages;
	__u64 free_pages;
	__u64 meta_bytes;	/* descriptors + bitmaps */
	__u64 bitmap_bytes;
	__u64 bitmap_reallocs;
	__u64 reclaimed_pages;
	__u64 reserved[4];	/* out: 0 (room for new fields) */
};

/*
 * Real-kernel comparison: hold @pages order-0 pages from the kernel's own
 * allocator, GFP_KERNEL (type KERNEL_NONRECLAIMABLE: MIGRATE_UNMOVABLE) or
 * GFP_KERNEL | __GFP_RECLAIMABLE (type KERNEL_RECLAIMABLE), until
 * KERNEL_RELEASE or unload. At most a quarter of RAM is held at a time.
 */
struct buddy_split_hold {
	__u32 type;		/* in: KERNEL_RECLAIMABLE or KERNEL_NONRECLAIMABLE */
	__u32 reserved;		/* must be 0 */
	__u64 pages;		/* in: pages to take; out: pages taken */
};

/*
 * 0xBE: unclaimed in Documentation/userspace-api/ioctl/ioctl-number.rst
 * (6.1 and upstream); 0xB5 belongs to rpmsg.
 */
#define BUDDY_SPLIT_IOC_MAGIC	0xBE

#define BUDDY_SPLIT_IOC_ALLOC	_IOWR(BUDDY_SPLIT_IOC_MAGIC, 0x01, struct buddy_split_alloc)
#define BUDDY_SPLIT_IOC_FREE	_IOW(BUDDY_SPLIT_IOC_MAGIC, 0x02, struct buddy_split_free)
#define BUDDY_SPLIT_IOC_WORKLOAD \
	_IOWR(BUDDY_SPLIT_IOC_MAGIC, 0x03, struct buddy_split_workload)
#define BUDDY_SPLIT_IOC_SECTION_REMOVE \
	_IOWR(BUDDY_SPLIT_IOC_MAGIC, 0x04, struct buddy_split_section)
#define BUDDY_SPLIT_IOC_SECTION_ADD \
	_IOWR(BUDDY_SPLIT_IOC_MAGIC, 0x05, struct buddy_split_section)
#define BUDDY_SPLIT_IOC_RESET	_IOW(BUDDY_SPLIT_IOC_MAGIC, 0x06, struct buddy_split_reset)
#define BUDDY_SPLIT_IOC_BENCH	_IOWR(BUDDY_SPLIT_IOC_MAGIC, 0x07, struct buddy_split_bench)
#define BUDDY_SPLIT_IOC_INFO	_IOR(BUDDY_SPLIT_IOC_MAGIC, 0x08, struct buddy_split_info)
#define BUDDY_SPLIT_IOC_CHECK	_IO(BUDDY_SPLIT_IOC_MAGIC, 0x09)
#define BUDDY_SPLIT_IOC_KERNEL_HOLD \
	_IOWR(BUDDY_SPLIT_IOC_MAGIC, 0x0a, struct buddy_split_hold)
#define BUDDY_SPLIT_IOC_KERNEL_RELEASE _IO(BUDDY_SPLIT_IOC_MAGIC, 0x0b)

#endif /* _UAPI_LINUX_BUDDY_SPLIT_H */
