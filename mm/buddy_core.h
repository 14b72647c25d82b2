/* SPDX-License-Identifier: GPL-2.0 */
/*
 * buddy_core: a buddy allocator over an arena of sections, after the OLS 2005
 * "Hotplug Memory Redux" paper (sections 4 and 5), portable between the
 * kernel module mm/buddy_split_main.c and the user-space unit test.
 *
 * Three modes behind one API:
 *  - BS_MODE_SPLIT: no bitmaps (a free block's order lives in its head
 *    descriptor; the buddy test is "free and same order"), free areas per
 *    reclaim type, and two global lists of top-order blocks (HOTPLUG for
 *    removable sections, PINNED for the others) that refill a depleted type;
 *    fallback between types is off (strict) or on (fallback) at run time.
 *  - BS_MODE_SINGLE: the same no-bitmap buddy with one free area for all
 *    types (the classic allocator without the split).
 *  - BS_MODE_BITMAP: the classic bitmap buddy (one bit per buddy pair and
 *    order over the linear span of the arena; the bitmaps are reallocated
 *    when a section is hot-added outside that span).
 *
 * Buddies are found by offset XOR (1 << order) relative to the section base,
 * so sections may sit anywhere in the pfn space. The arena does no locking:
 * callers serialise every call.
 */
#ifndef _MEMHP_BUDDY_CORE_H
#define _MEMHP_BUDDY_CORE_H

#include "memhp/portable.h"

#define BS_MAX_ORDER		11
#define BS_TOP_ORDER		(BS_MAX_ORDER - 1)
#define BS_TOP_PAGES		BIT(BS_TOP_ORDER)
#define BS_MIN_SECTION_SHIFT	BS_TOP_ORDER
#define BS_MAX_SECTION_SHIFT	18

enum bs_type {
	BS_USER_RECLAIMABLE,
	BS_KERNEL_RECLAIMABLE,
	BS_KERNEL_NONRECLAIMABLE,
	BS_NR_TYPES
};

/* Free areas: one per type, then the two global top-order lists. */
enum bs_area {
	BS_AREA_USER = BS_USER_RECLAIMABLE,
	BS_AREA_KRECLAIM = BS_KERNEL_RECLAIMABLE,
	BS_AREA_KPINNED = BS_KERNEL_NONRECLAIMABLE,
	BS_AREA_HOTPLUG,
	BS_AREA_PINNED,
	BS_NR_AREAS
};

enum bs_mode {
	BS_MODE_SPLIT,
	BS_MODE_SINGLE,
	BS_MODE_BITMAP,
	BS_NR_MODES
};

enum bs_policy {
	BS_POLICY_STRICT,
	BS_POLICY_FALLBACK,
	BS_NR_POLICIES
};

/* Page descriptor flags. */
#define BS_PG_BUDDY	0x01	/* head of a free block, on a free list */
#define BS_PG_HEAD	0x02	/* head of an allocated block */
#define BS_PG_SEEN	0x80	/* scratch mark of the invariant checker */

/* One descriptor per page (the paper's memmap entry). */
struct bs_page {
	struct list_head lru;	/* free list link of a BS_PG_BUDDY head */
	u32 section;		/* slot of the section holding the page */
	u8 flags;
	u8 order;		/* order of the block a head starts */
	u8 type;		/* enum bs_type of an allocated head */
	u8 area;		/* enum bs_area of the list a free head is on */
};

struct bs_section {
	bool present;		/* has a base pfn (memory behind it) */
	bool online;		/* part of the allocator now */
	bool hotplug;		/* removable: its blocks start on HOTPLUG */
	unsigned long base_pfn;
	struct bs_page *pages;	/* descriptors, allocated while online */
	u8 *owner;		/* enum bs_area owning each top-order block */
	unsigned long used[BS_NR_TYPES];	/* allocated pages by type */
	unsigned long nr_free;			/* free pages */
};

struct bs_free_area {
	struct list_head list[BS_MAX_ORDER];
	unsigned long nr_free[BS_MAX_ORDER];	/* blocks per order */
};

struct bs_stats {
	u64 allocs[BS_NR_TYPES];
	u64 fails[BS_NR_TYPES];
	u64 frees;
	u64 refills[BS_NR_TYPES];	/* top blocks taken from the home list */
	u64 fallbacks[BS_NR_TYPES];	/* allocations served by fallback */
	u64 reclaimed_pages;		/* user pages reclaimed by removal */
	u64 bitmap_reallocs;
};

struct bs_arena {
	unsigned int section_shift;	/* pages per section = 1 << shift */
	unsigned int nr_sections;	/* slots */
	enum bs_mode mode;
	enum bs_policy policy;
	enum bs_area kreclaim_home;	/* BS_AREA_PINNED or BS_AREA_HOTPLUG */
	struct bs_section *sections;
	unsigned int *sorted;		/* online slots sorted by base pfn */
	unsigned int nr_sorted;
	struct bs_free_area area[BS_NR_AREAS];
	/* BS_MODE_BITMAP: one bit per buddy pair, orders 0..TOP-1. */
	unsigned long *map[BS_TOP_ORDER];
	unsigned long span_start;	/* first pfn covered by the maps */
	unsigned long span_pages;	/* pages covered, 0 without maps */
	struct bs_stats stats;
};

/* Arena life cycle and sections (the hotplug operations). */
struct bs_arena *bs_arena_create(unsigned int section_shift,
				 unsigned int nr_sections, enum bs_mode mode);
void bs_arena_destroy(struct bs_arena *a);
int bs_section_add(struct bs_arena *a, unsigned int nr,
		   unsigned long base_pfn, bool hotplug);
int bs_section_check(struct bs_arena *a, unsigned int nr, int *blocker);
int bs_section_remove(struct bs_arena *a, unsigned int nr, int *blocker);
int bs_arena_reset(struct bs_arena *a, enum bs_mode mode);

static inline unsigned long bs_section_pages(const struct bs_arena *a)
{
	return 1UL << a->section_shift;
}

/* Allocation. */
int bs_alloc(struct bs_arena *a, enum bs_type type, unsigned int order,
	     unsigned long *pfn);
int bs_free(struct bs_arena *a, unsigned long pfn);
int bs_set_policy(struct bs_arena *a, enum bs_policy policy);
int bs_set_kreclaim_home(struct bs_arena *a, enum bs_area home);

/* Introspection. */
unsigned long bs_online_pages(const struct bs_arena *a);
unsigned long bs_free_pages(const struct bs_arena *a);
size_t bs_metadata_bytes(const struct bs_arena *a, size_t *bitmap_bytes);
int bs_check(struct bs_arena *a, char *msg, size_t len);

const char *bs_type_name(int type);
const char *bs_area_name(int area);
const char *bs_mode_name(int mode);
const char *bs_policy_name(int policy);
int bs_mode_parse(const char *s);
int bs_policy_parse(const char *s);

/*
 * The workload generator, identical in kernel and user space. Each of @ops
 * steps first frees the blocks whose lifetime ended, then allocates one
 * block: the type drawn with probabilities @mix (percent, sum 100), the order
 * k in 0..@max_order with probability 2^-(k+1) (the rest to order 0), and a
 * lifetime uniform in [1, 2 * lifetime[type]] steps (0: never freed). Blocks
 * still alive at the end stay allocated in the arena.
 */
struct bs_workload {
	u64 seed;
	u32 ops;
	u32 max_order;
	u32 mix[BS_NR_TYPES];
	u32 lifetime[BS_NR_TYPES];
};

struct bs_workload_result {
	u64 allocs[BS_NR_TYPES];
	u64 fails[BS_NR_TYPES];
	u64 frees;
	u64 live_pages[BS_NR_TYPES];
};

/* @tick is called every 1024 steps; a non-zero return stops the run. */
typedef int (*bs_tick_fn)(void *arg);

int bs_workload_valid(const struct bs_workload *w);
int bs_workload_run(struct bs_arena *a, const struct bs_workload *w,
		    struct bs_workload_result *res, bs_tick_fn tick,
		    void *arg);

/*
 * Throughput bench: allocate @n blocks of @order and @type (their pfns into
 * @pfns), then free them in a random order drawn from @seed. Returns the
 * number of blocks allocated (all of them are freed again).
 */
unsigned long bs_bench(struct bs_arena *a, enum bs_type type,
		       unsigned int order, unsigned long n, u64 seed,
		       unsigned long *pfns);

/* A small deterministic PRNG (splitmix64) for the generator and benches. */
static inline u64 bs_rand(u64 *state)
{
	u64 z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline u32 bs_rand_below(u64 *state, u32 n)
{
	return (u32)(((bs_rand(state) >> 32) * (u64)n) >> 32);
}

#endif /* _MEMHP_BUDDY_CORE_H */
