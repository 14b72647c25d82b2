// SPDX-License-Identifier: GPL-2.0
/*
 * User-space unit tests of the portable section table (mm/sectab*.c), run
 * against all five variants.
 *
 * Each behaviour NetBSD's tests/sys/uvm/t_uvm_physseg.c checks for
 * uvm_physseg(9) has a small test here, named after it where there is a
 * counterpart. Where this interface deliberately differs from NetBSD's the
 * test says so:
 *  - handles never change meaning (NetBSD's array build fails its
 *    uvm_physseg_handle_immutable test; every variant here passes it);
 *  - a stale handle is rejected, not dangling;
 *  - unplugging the last segment empties the table (NetBSD panics);
 *  - the array can split a segment while it has a free entry (NetBSD's
 *    array build panics on a middle unplug).
 * The boot-time-only parts of NetBSD's API (physload avail ranges, extent
 * slabs, free lists, start hints) are not part of this interface.
 *
 * Ends with a differential test: 10^5 random plug/unplug/find operations on
 * every variant, checked against a trivial per-pfn model.
 */
#include <stdint.h>
#include "kselftest_harness.h"

#include "sectab.h"

#define MB_PFN(x)	((unsigned long)(x) * 256)	/* MiB -> pfn */
#define KB_PFN(x)	((unsigned long)(x) / 4)	/* KiB -> pfn */

/* NetBSD's test ranges: PFN_1 [0, 1M), PFN_2 [1M, 2M), PFN_3 [2M, 3M). */
#define PFN_1		0UL
#define PFN_2		256UL
#define PFN_3		512UL
#define SEG_PAGES	256UL

struct fake_page {
	unsigned long pfn;
	unsigned long pad[7];		/* 64 bytes, like struct page */
};

FIXTURE(physseg) {
	struct sectab *t;
	struct fake_page pages[3 * SEG_PAGES];
};

FIXTURE_VARIANT(physseg) {
	enum sectab_kind kind;
};

FIXTURE_VARIANT_ADD(physseg, array) {
	.kind = SECTAB_ARRAY,
};

FIXTURE_VARIANT_ADD(physseg, rbtree) {
	.kind = SECTAB_RBTREE,
};

FIXTURE_VARIANT_ADD(physseg, sparse) {
	.kind = SECTAB_SPARSE,
};

FIXTURE_VARIANT_ADD(physseg, flat) {
	.kind = SECTAB_FLAT,
};

FIXTURE_VARIANT_ADD(physseg, pfndir) {
	.kind = SECTAB_PFNDIR,
};

FIXTURE_SETUP(physseg)
{
	struct sectab_params p = {
		.max_pfn = MB_PFN(1024),
		.max_segs = SECTAB_ARRAY_MAX_DEFAULT,
		.pg_size = sizeof(struct fake_page),
	};
	unsigned long i;

	for (i = 0; i < ARRAY_SIZE(self->pages); i++)
		self->pages[i].pfn = i;
	ASSERT_EQ(0, sectab_create(&self->t, variant->kind, &p));
}

FIXTURE_TEARDOWN(physseg)
{
	sectab_destroy(self->t);
}

/* Plug NetBSD's PFN_n (1 MiB) with its slice of the fake page array. */
static int plug_seg(struct sectab *t, struct fake_page *pages,
		    unsigned long start, u64 *h)
{
	return sectab_plug(t, start, SEG_PAGES, &pages[start], h);
}

/* uvm_physseg_init: entries == 0; get_first/get_last: INVALID_EMPTY. */
TEST_F(physseg, init_empty)
{
	ASSERT_EQ(0, sectab_nr_segs(self->t));
	ASSERT_EQ(0, sectab_nr_pages(self->t));
	ASSERT_EQ(SECTAB_EMPTY, sectab_first(self->t));
	ASSERT_EQ(SECTAB_EMPTY, sectab_last(self->t));
	ASSERT_EQ(SECTAB_BAD_PFN, sectab_highest_pfn(self->t));
	ASSERT_NULL(sectab_find(self->t, 0, NULL));
}

/* uvm_page_physload_preload: the plug returns a valid handle. */
TEST_F(physseg, plug_returns_valid_handle)
{
	u64 h = SECTAB_INVALID;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h));
	ASSERT_TRUE(sectab_valid(self->t, h));
	ASSERT_EQ(1, sectab_nr_segs(self->t));
	ASSERT_EQ(SEG_PAGES, sectab_nr_pages(self->t));
	ASSERT_EQ(PFN_1, sectab_start(self->t, h));
	ASSERT_EQ(PFN_1 + SEG_PAGES, sectab_end(self->t, h));
}

/* Two and three plugs: entries 2 and 3 (the VM_PHYSSEG_MAX > 1/2 cases). */
TEST_F(physseg, plug_counts_entries)
{
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, NULL));
	ASSERT_EQ(2, sectab_nr_segs(self->t));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_3, NULL));
	ASSERT_EQ(3, sectab_nr_segs(self->t));
	ASSERT_EQ(3 * SEG_PAGES, sectab_nr_pages(self->t));
}

/* uvm_physseg_plug under DEBUG: a covered pfn is refused, nothing changes. */
TEST_F(physseg, plug_overlap_rejected)
{
	u64 h;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h));
	ASSERT_EQ(-EEXIST, sectab_plug(self->t, PFN_2, 1, NULL, NULL));
	ASSERT_EQ(-EEXIST, sectab_plug(self->t, PFN_2 - 1, 2, NULL, NULL));
	ASSERT_EQ(-EEXIST, sectab_plug(self->t, PFN_3 - 1, 2, NULL, NULL));
	ASSERT_EQ(-EEXIST, sectab_plug(self->t, PFN_1, 3 * SEG_PAGES,
				       NULL, NULL));
	ASSERT_EQ(1, sectab_nr_segs(self->t));
	ASSERT_EQ(PFN_2, sectab_start(self->t, h));
	ASSERT_NULL(sectab_find(self->t, PFN_2 - 1, NULL));
	ASSERT_NULL(sectab_find(self->t, PFN_3, NULL));
}

/* Adjacent segments stay separate (the load test's 32 x 8 pages). */
TEST_F(physseg, plug_adjacent_segments_stay_separate)
{
	u64 h1, h2;

	ASSERT_EQ(0, sectab_plug(self->t, 0, 8, NULL, &h1));
	ASSERT_EQ(0, sectab_plug(self->t, 8, 8, NULL, &h2));
	ASSERT_EQ(2, sectab_nr_segs(self->t));
	ASSERT_EQ(h1, sectab_find(self->t, 7, NULL)->handle);
	ASSERT_EQ(h2, sectab_find(self->t, 8, NULL)->handle);
}

TEST_F(physseg, plug_bad_ranges_rejected)
{
	ASSERT_EQ(-EINVAL, sectab_plug(self->t, PFN_1, 0, NULL, NULL));
	ASSERT_EQ(-ERANGE, sectab_plug(self->t, MB_PFN(1024), 1, NULL, NULL));
	ASSERT_EQ(-ERANGE, sectab_plug(self->t, MB_PFN(1024) - 1, 2,
				       NULL, NULL));
	ASSERT_EQ(-ERANGE, sectab_plug(self->t, ~0UL - 1, 4, NULL, NULL));
	ASSERT_EQ(0, sectab_plug(self->t, MB_PFN(1024) - 1, 1, NULL, NULL));
	ASSERT_EQ(1, sectab_nr_segs(self->t));
}

/* VM_PHYSSEG_MAX: the array holds 32 segments, the others any number. */
TEST_F(physseg, plug_array_capacity)
{
	unsigned long i;
	int ret;

	for (i = 0; i < 32; i++)
		ASSERT_EQ(0, sectab_plug(self->t, i * 8, 8, NULL, NULL));
	ret = sectab_plug(self->t, 32 * 8, 8, NULL, NULL);
	if (variant->kind == SECTAB_ARRAY) {
		ASSERT_EQ(-ENOSPC, ret);
		ASSERT_EQ(32, sectab_nr_segs(self->t));
		ASSERT_NULL(sectab_find(self->t, 32 * 8, NULL));
	} else {
		ASSERT_EQ(0, ret);
		ASSERT_EQ(33, sectab_nr_segs(self->t));
	}
}

/*
 * uvm_physseg_handle_immutable: plug PFN_2, then the lower PFN_1; the old
 * handle still names PFN_2 and its prev is now PFN_1. (NetBSD's array build
 * expects this to fail: its handle is an index that shifts.)
 */
TEST_F(physseg, handle_immutable)
{
	u64 h1, h2;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h2));
	ASSERT_EQ(SECTAB_EMPTY, sectab_prev(self->t, h2));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h1));
	ASSERT_EQ(h1, sectab_prev(self->t, h2));
	ASSERT_EQ(PFN_1, sectab_start(self->t, sectab_prev(self->t, h2)));
	ASSERT_EQ(PFN_2, sectab_end(self->t, sectab_prev(self->t, h2)));
	ASSERT_EQ(PFN_2, sectab_start(self->t, h2));
	ASSERT_EQ(PFN_3, sectab_end(self->t, h2));
}

/* Handles survive unplugs of other segments, splits included. */
TEST_F(physseg, handle_immutable_across_unplug)
{
	u64 h1, h2, h3;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h1));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h2));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_3, &h3));
	ASSERT_EQ(0, sectab_unplug(self->t, PFN_1, SEG_PAGES));
	ASSERT_EQ(0, sectab_unplug(self->t, PFN_2 + 10, 10));
	ASSERT_EQ(PFN_3, sectab_start(self->t, h3));
	ASSERT_EQ(PFN_2, sectab_start(self->t, h2));
	ASSERT_EQ(PFN_2 + 10, sectab_end(self->t, h2));
	ASSERT_EQ(h3, sectab_find(self->t, PFN_3 + 5, NULL)->handle);
}

/* get_start/get_end (the avail_* pair is not part of this interface). */
TEST_F(physseg, get_start_end)
{
	u64 h1, h2;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h1));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h2));
	ASSERT_EQ(PFN_1, sectab_start(self->t, h1));
	ASSERT_EQ(PFN_2, sectab_end(self->t, h1));
	ASSERT_EQ(PFN_2, sectab_start(self->t, h2));
	ASSERT_EQ(PFN_3, sectab_end(self->t, h2));
}

/* get_start_invalid/get_end_invalid: (paddr_t)-1 for a bad handle. */
TEST_F(physseg, get_start_end_invalid)
{
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_EQ(SECTAB_BAD_PFN, sectab_start(self->t, SECTAB_INVALID));
	ASSERT_EQ(SECTAB_BAD_PFN, sectab_end(self->t, SECTAB_INVALID));
	ASSERT_EQ(SECTAB_BAD_PFN, sectab_start(self->t, SECTAB_EMPTY));
	ASSERT_EQ(SECTAB_BAD_PFN, sectab_end(self->t, SECTAB_OVERFLOW));
	ASSERT_EQ(SECTAB_BAD_PFN, sectab_start(self->t, ~0ULL));
}

/* uvm_physseg_get_next: next(last) is OVERFLOW; next walks up. */
TEST_F(physseg, get_next)
{
	u64 h1, h2, h3;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h1));
	ASSERT_EQ(SECTAB_OVERFLOW, sectab_next(self->t, h1));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h2));
	ASSERT_EQ(h2, sectab_next(self->t, h1));
	ASSERT_EQ(SECTAB_OVERFLOW, sectab_next(self->t, h2));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_3, &h3));
	ASSERT_EQ(h2, sectab_next(self->t, h1));
	ASSERT_EQ(h3, sectab_next(self->t, h2));
	ASSERT_EQ(PFN_3, sectab_start(self->t, sectab_next(self->t, h2)));
	ASSERT_EQ(SECTAB_OVERFLOW, sectab_next(self->t, h3));
}

/* uvm_physseg_get_next_invalid: next(INVALID) is INVALID. */
TEST_F(physseg, get_next_invalid)
{
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_EQ(SECTAB_INVALID, sectab_next(self->t, SECTAB_INVALID));
	ASSERT_EQ(SECTAB_INVALID, sectab_next(self->t, SECTAB_EMPTY));
	ASSERT_EQ(SECTAB_INVALID, sectab_next(self->t, SECTAB_OVERFLOW));
}

/* uvm_physseg_get_prev: prev(lowest) is EMPTY, prev walks down. */
TEST_F(physseg, get_prev)
{
	u64 h1, h2, h3;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h1));
	ASSERT_EQ(SECTAB_EMPTY, sectab_prev(self->t, h1));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h2));
	ASSERT_EQ(h1, sectab_prev(self->t, h2));
	ASSERT_EQ(PFN_1, sectab_start(self->t, sectab_prev(self->t, h2)));
	ASSERT_EQ(PFN_2, sectab_end(self->t, sectab_prev(self->t, h2)));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_3, &h3));
	ASSERT_EQ(h2, sectab_prev(self->t, h3));
	ASSERT_EQ(SECTAB_EMPTY, sectab_prev(self->t, h1));
}

/* uvm_physseg_get_prev_invalid: prev(INVALID) is INVALID. */
TEST_F(physseg, get_prev_invalid)
{
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_EQ(SECTAB_INVALID, sectab_prev(self->t, SECTAB_INVALID));
	ASSERT_EQ(SECTAB_INVALID, sectab_prev(self->t, SECTAB_EMPTY));
}

/* uvm_physseg_get_first: EMPTY, then always the lowest (order 2, 1, 3). */
TEST_F(physseg, get_first)
{
	u64 h1, h2, h3;

	ASSERT_EQ(SECTAB_EMPTY, sectab_first(self->t));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h2));
	ASSERT_EQ(h2, sectab_first(self->t));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h1));
	ASSERT_EQ(h1, sectab_first(self->t));
	ASSERT_EQ(PFN_1, sectab_start(self->t, sectab_first(self->t)));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_3, &h3));
	ASSERT_EQ(h1, sectab_first(self->t));
}

/* uvm_physseg_get_last: EMPTY, then always the highest. */
TEST_F(physseg, get_last)
{
	u64 h1, h2, h3;

	ASSERT_EQ(SECTAB_EMPTY, sectab_last(self->t));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h2));
	ASSERT_EQ(h2, sectab_last(self->t));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h1));
	ASSERT_EQ(h2, sectab_last(self->t));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_3, &h3));
	ASSERT_EQ(h3, sectab_last(self->t));
	ASSERT_EQ(PFN_3 + SEG_PAGES, sectab_end(self->t, sectab_last(self->t)));
}

/* Iteration first..next visits every segment once, in ascending order. */
TEST_F(physseg, iterate_ascending)
{
	unsigned long prev_end = 0, n = 0;
	u64 h;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_3, NULL));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, NULL));
	for (h = sectab_first(self->t); sectab_valid(self->t, h);
	     h = sectab_next(self->t, h)) {
		ASSERT_GE(sectab_start(self->t, h), prev_end);
		prev_end = sectab_end(self->t, h);
		n++;
	}
	ASSERT_EQ(SECTAB_OVERFLOW, h);
	ASSERT_EQ(3, n);
}

/* uvm_physseg_valid / valid_invalid: the sentinels are never valid. */
TEST_F(physseg, valid_and_sentinels_invalid)
{
	u64 h;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h));
	ASSERT_TRUE(sectab_valid(self->t, h));
	ASSERT_FALSE(sectab_valid(self->t, SECTAB_INVALID));
	ASSERT_FALSE(sectab_valid(self->t, SECTAB_EMPTY));
	ASSERT_FALSE(sectab_valid(self->t, SECTAB_OVERFLOW));
	ASSERT_FALSE(sectab_valid(self->t, h + (1ULL << 32)));
	ASSERT_FALSE(sectab_valid(self->t, h + 1000));
}

/* uvm_physseg_get_highest: end - 1 of the highest, whatever the order. */
TEST_F(physseg, get_highest)
{
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, NULL));
	ASSERT_EQ(PFN_3 - 1, sectab_highest_pfn(self->t));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_EQ(PFN_3 - 1, sectab_highest_pfn(self->t));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_3, NULL));
	ASSERT_EQ(PFN_3 + SEG_PAGES - 1, sectab_highest_pfn(self->t));
}

/* uvm_physseg_get_pg: pg[5] and pg[113] are the pages of pfn 5 and 113. */
TEST_F(physseg, get_pg)
{
	struct fake_page *pg;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	pg = sectab_pfn_to_pg(self->t, 5);
	ASSERT_EQ(5, pg->pfn);
	pg = sectab_pfn_to_pg(self->t, 113);
	ASSERT_EQ(113, pg->pfn);
	ASSERT_NULL(sectab_pfn_to_pg(self->t, PFN_2));
}

/* The descriptor array follows front unplugs and splits (tail pgs). */
TEST_F(physseg, get_pg_after_unplug)
{
	struct fake_page *pg;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, NULL));
	ASSERT_EQ(0, sectab_unplug(self->t, PFN_2, 3));
	pg = sectab_pfn_to_pg(self->t, PFN_2 + 3);
	ASSERT_EQ(PFN_2 + 3, pg->pfn);
	ASSERT_EQ(0, sectab_unplug(self->t, PFN_2 + 100, 50));
	pg = sectab_pfn_to_pg(self->t, PFN_2 + 150);
	ASSERT_EQ(PFN_2 + 150, pg->pfn);
	pg = sectab_pfn_to_pg(self->t, PFN_2 + 99);
	ASSERT_EQ(PFN_2 + 99, pg->pfn);
	ASSERT_NULL(sectab_pfn_to_pg(self->t, PFN_2 + 100));
}

/* vm_physseg_find: segment and offset across two segments. */
TEST_F(physseg, find)
{
	unsigned long off = 12345;
	u64 h1, h2;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h1));
	ASSERT_EQ(h1, sectab_find(self->t, KB_PFN(1024 - 12), &off)->handle);
	ASSERT_EQ(253, off);
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h2));
	ASSERT_EQ(h1, sectab_find(self->t, KB_PFN(1024 - 1), &off)->handle);
	ASSERT_EQ(255, off);
	ASSERT_EQ(h2, sectab_find(self->t, KB_PFN(1024 + 8), &off)->handle);
	ASSERT_EQ(2, off);
	/* offp may be NULL. */
	ASSERT_EQ(h2, sectab_find(self->t, PFN_2, NULL)->handle);
}

/* vm_physseg_find_invalid: NULL, and the offset is left untouched. */
TEST_F(physseg, find_invalid)
{
	unsigned long off = 12345;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_NULL(sectab_find(self->t, MB_PFN(3), &off));
	ASSERT_EQ(12345, off);
	ASSERT_NULL(sectab_find(self->t, PFN_2, &off));
	ASSERT_NULL(sectab_find(self->t, ~0UL, &off));
	ASSERT_EQ(12345, off);
}

/*
 * uvm_physseg_unplug, step by step on one 1 MiB segment, as NetBSD does:
 * find(256K) has offset 64; then middle, whole, back, front, last.
 */
TEST_F(physseg, unplug_find_offset)
{
	unsigned long off;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_NE(NULL, sectab_find(self->t, KB_PFN(256), &off));
	ASSERT_EQ(64, off);
}

/* Middle unplug [256K, 768K): a gap, two entries, a valid tail handle. */
TEST_F(physseg, unplug_middle_splits)
{
	struct sectab_seg *tail;
	u64 h;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h));
	ASSERT_EQ(0, sectab_unplug(self->t, KB_PFN(256), KB_PFN(512)));
	ASSERT_EQ(2, sectab_nr_segs(self->t));
	ASSERT_EQ(KB_PFN(512), sectab_nr_pages(self->t));
	ASSERT_NULL(sectab_find(self->t, KB_PFN(256), NULL));
	ASSERT_NULL(sectab_find(self->t, KB_PFN(768) - 1, NULL));
	tail = sectab_find(self->t, KB_PFN(768), NULL);
	ASSERT_NE(NULL, tail);
	ASSERT_TRUE(sectab_valid(self->t, tail->handle));
	ASSERT_NE(h, tail->handle);
	ASSERT_EQ(KB_PFN(768), tail->start);
	ASSERT_EQ(KB_PFN(1024), tail->end);
	/* The head keeps the original handle. */
	ASSERT_EQ(0, sectab_start(self->t, h));
	ASSERT_EQ(KB_PFN(256), sectab_end(self->t, h));
	ASSERT_EQ(tail->handle, sectab_next(self->t, h));
}

/* Whole-segment unplug of that tail: its handle is invalidated. */
TEST_F(physseg, unplug_whole_invalidates_handle)
{
	u64 tail;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_EQ(0, sectab_unplug(self->t, KB_PFN(256), KB_PFN(512)));
	tail = sectab_find(self->t, KB_PFN(768), NULL)->handle;
	ASSERT_EQ(0, sectab_unplug(self->t, KB_PFN(768), KB_PFN(256)));
	ASSERT_FALSE(sectab_valid(self->t, tail));
	ASSERT_EQ(SECTAB_BAD_PFN, sectab_start(self->t, tail));
	ASSERT_EQ(SECTAB_INVALID, sectab_next(self->t, tail));
	ASSERT_EQ(1, sectab_nr_segs(self->t));
	ASSERT_NULL(sectab_find(self->t, KB_PFN(768), NULL));
}

/* A stale handle stays invalid when its slot is reused by a new plug. */
TEST_F(physseg, unplug_stale_handle_not_reused)
{
	u64 old, h;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &old));
	ASSERT_EQ(0, sectab_unplug(self->t, PFN_1, SEG_PAGES));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h));
	ASSERT_NE(old, h);
	ASSERT_FALSE(sectab_valid(self->t, old));
	ASSERT_TRUE(sectab_valid(self->t, h));
}

/* Back unplug [128K, 256K): the same handle, a shorter segment. */
TEST_F(physseg, unplug_end)
{
	u64 h;

	ASSERT_EQ(0, sectab_plug(self->t, 0, KB_PFN(256), NULL, &h));
	ASSERT_EQ(0, sectab_unplug(self->t, KB_PFN(128), KB_PFN(128)));
	ASSERT_EQ(1, sectab_nr_segs(self->t));
	ASSERT_EQ(KB_PFN(128), sectab_end(self->t, h));
	ASSERT_NULL(sectab_find(self->t, KB_PFN(128), NULL));
	ASSERT_EQ(h, sectab_find(self->t, KB_PFN(128) - 1, NULL)->handle);
}

/* Front unplug [0, 64K): the same handle, a later start. */
TEST_F(physseg, unplug_start)
{
	unsigned long off;
	u64 h;

	ASSERT_EQ(0, sectab_plug(self->t, 0, KB_PFN(128), NULL, &h));
	ASSERT_EQ(0, sectab_unplug(self->t, 0, KB_PFN(64)));
	ASSERT_EQ(1, sectab_nr_segs(self->t));
	ASSERT_EQ(KB_PFN(64), sectab_start(self->t, h));
	ASSERT_NULL(sectab_find(self->t, KB_PFN(64) - 1, NULL));
	ASSERT_EQ(h, sectab_find(self->t, KB_PFN(64), &off)->handle);
	ASSERT_EQ(0, off);
}

/* The last fragment: NetBSD panics ("out of memory"); here it empties. */
TEST_F(physseg, unplug_last_segment_empties_table)
{
	u64 h;

	ASSERT_EQ(0, sectab_plug(self->t, KB_PFN(64), KB_PFN(64), NULL, &h));
	ASSERT_EQ(0, sectab_unplug(self->t, KB_PFN(64), KB_PFN(64)));
	ASSERT_EQ(0, sectab_nr_segs(self->t));
	ASSERT_EQ(0, sectab_nr_pages(self->t));
	ASSERT_FALSE(sectab_valid(self->t, h));
	ASSERT_EQ(SECTAB_EMPTY, sectab_first(self->t));
	ASSERT_EQ(SECTAB_EMPTY, sectab_last(self->t));
}

/* physunload_delete_start: a one-page segment unplugged is deleted. */
TEST_F(physseg, unplug_one_page_segment_deleted)
{
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, NULL));
	ASSERT_EQ(0, sectab_plug(self->t, PFN_2 + 10, 1, NULL, NULL));
	ASSERT_EQ(2, sectab_nr_segs(self->t));
	ASSERT_EQ(0, sectab_unplug(self->t, PFN_2 + 10, 1));
	ASSERT_EQ(1, sectab_nr_segs(self->t));
	ASSERT_NULL(sectab_find(self->t, PFN_2 + 10, NULL));
}

/* physunload_force: 256 front unplugs of one page, then find(255) fails. */
TEST_F(physseg, unplug_front_page_by_page)
{
	unsigned long pfn;
	u64 h;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, NULL));
	for (pfn = PFN_1; pfn < PFN_1 + SEG_PAGES; pfn++) {
		ASSERT_EQ(pfn, sectab_start(self->t, h));
		ASSERT_EQ(0, sectab_unplug(self->t, pfn, 1));
	}
	ASSERT_FALSE(sectab_valid(self->t, h));
	ASSERT_NULL(sectab_find(self->t, 255, NULL));
	ASSERT_EQ(1, sectab_nr_segs(self->t));
}

/* physunload_end: back unplugs of one page shrink the end by one. */
TEST_F(physseg, unplug_back_page_by_page)
{
	unsigned long end;
	u64 h;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h));
	for (end = PFN_3; end > PFN_2 + 1; end--) {
		ASSERT_EQ(0, sectab_unplug(self->t, end - 1, 1));
		ASSERT_EQ(end - 1, sectab_end(self->t, h));
	}
	ASSERT_EQ(1, sectab_nr_pages(self->t));
}

/* Unplug of an unplugged pfn, zero pages, or a span leaving the segment. */
TEST_F(physseg, unplug_bad_ranges_rejected)
{
	u64 h1, h2;

	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_1, &h1));
	ASSERT_EQ(0, plug_seg(self->t, self->pages, PFN_2, &h2));
	ASSERT_EQ(-ENOENT, sectab_unplug(self->t, PFN_3, 1));
	ASSERT_EQ(-EINVAL, sectab_unplug(self->t, PFN_1, 0));
	/* "oversized span": into the next segment, or past the end. */
	ASSERT_EQ(-EINVAL, sectab_unplug(self->t, PFN_2 - 1, 2));
	ASSERT_EQ(-EINVAL, sectab_unplug(self->t, PFN_3 - 1, 2));
	ASSERT_EQ(-EINVAL, sectab_unplug(self->t, PFN_1, 2 * SEG_PAGES));
	ASSERT_EQ(-EINVAL, sectab_unplug(self->t, PFN_1 + 1, ~0UL));
	ASSERT_EQ(2, sectab_nr_segs(self->t));
	ASSERT_EQ(2 * SEG_PAGES, sectab_nr_pages(self->t));
	ASSERT_EQ(PFN_1, sectab_start(self->t, h1));
	ASSERT_EQ(PFN_3, sectab_end(self->t, h2));
}

/* A full array cannot split (it needs a free entry); the others can. */
TEST_F(physseg, unplug_middle_needs_free_entry)
{
	unsigned long i;
	int ret;

	for (i = 0; i < 32; i++)
		ASSERT_EQ(0, sectab_plug(self->t, i * 8, 8, NULL, NULL));
	ret = sectab_unplug(self->t, 3, 2);
	if (variant->kind == SECTAB_ARRAY) {
		ASSERT_EQ(-ENOSPC, ret);
		ASSERT_NE(NULL, sectab_find(self->t, 3, NULL));
		ASSERT_EQ(32, sectab_nr_segs(self->t));
		/* Front, back and whole unplugs still work. */
		ASSERT_EQ(0, sectab_unplug(self->t, 0, 1));
		ASSERT_EQ(0, sectab_unplug(self->t, 15, 1));
		ASSERT_EQ(0, sectab_unplug(self->t, 16, 8));
	} else {
		ASSERT_EQ(0, ret);
		ASSERT_EQ(33, sectab_nr_segs(self->t));
	}
}

/* Segments larger than a section/chunk, unaligned, across boundaries. */
TEST_F(physseg, large_unaligned_segments)
{
	unsigned long s = MB_PFN(100) + 3, n = MB_PFN(300) + 5, off;
	u64 h;

	ASSERT_EQ(0, sectab_plug(self->t, s, n, NULL, &h));
	ASSERT_NULL(sectab_find(self->t, s - 1, NULL));
	ASSERT_EQ(h, sectab_find(self->t, s, &off)->handle);
	ASSERT_EQ(0, off);
	ASSERT_EQ(h, sectab_find(self->t, s + n - 1, &off)->handle);
	ASSERT_EQ(n - 1, off);
	ASSERT_NULL(sectab_find(self->t, s + n, NULL));
	/* Punch a hole across a 128 MiB boundary and refill it. */
	ASSERT_EQ(0, sectab_unplug(self->t, MB_PFN(128) - 7, 20));
	ASSERT_NULL(sectab_find(self->t, MB_PFN(128), NULL));
	ASSERT_EQ(h, sectab_find(self->t, MB_PFN(128) - 8, NULL)->handle);
	ASSERT_EQ(0, sectab_plug(self->t, MB_PFN(128) - 7, 20, NULL, NULL));
	ASSERT_EQ(3, sectab_nr_segs(self->t));
	ASSERT_EQ(n, sectab_nr_pages(self->t));
}

/* Unplugging everything gives the lookup structure's memory back. */
TEST_F(physseg, memory_returned_after_unplug)
{
	size_t empty = sectab_index_bytes(self->t);

	ASSERT_EQ(0, sectab_plug(self->t, 5, MB_PFN(200), NULL, NULL));
	ASSERT_EQ(0, sectab_unplug(self->t, 100, 10));
	ASSERT_EQ(0, sectab_unplug(self->t, 5, 95));
	ASSERT_EQ(0, sectab_unplug(self->t, 110, MB_PFN(200) - 105));
	ASSERT_EQ(0, sectab_nr_segs(self->t));
	switch (variant->kind) {
	case SECTAB_ARRAY:
	case SECTAB_RBTREE:
		ASSERT_EQ(empty, sectab_index_bytes(self->t));
		break;
	case SECTAB_FLAT:	/* the map never shrinks */
		break;
	case SECTAB_SPARSE:	/* root pages stay, like mem_section roots */
		ASSERT_LE(sectab_index_bytes(self->t), empty + 4096);
		break;
	case SECTAB_PFNDIR:	/* only the directory words stay */
		ASSERT_LE(sectab_index_bytes(self->t), 8 * 64);
		break;
	default:
		break;
	}
}

/* --- differential test against a per-pfn model --- */

#define DIFF_PFNS	(3 * 32768UL + 100)
#define DIFF_OPS	100000
#define DIFF_MAX_SEGS	DIFF_PFNS	/* one-page segments at most */

struct model_seg {
	unsigned long start, end;
	u64 handle;
};

struct model {
	int *owner;			/* per pfn: index in segs or -1 */
	struct model_seg segs[DIFF_MAX_SEGS];
	int nr;
	unsigned long pages;
};

static unsigned long rnd(unsigned long n)
{
	return ((unsigned long)random() << 31 ^ random()) % n;
}

/* Positions near chunk/section boundaries find more bugs. */
static unsigned long pick_pfn(void)
{
	switch (rnd(3)) {
	case 0:
		return rnd(DIFF_PFNS);
	case 1:
		return (rnd(DIFF_PFNS / 4096) * 4096 + rnd(7) + DIFF_PFNS - 3) %
		       DIFF_PFNS;
	default:
		return (rnd(4) * 32768 + rnd(9) + DIFF_PFNS - 4) % DIFF_PFNS;
	}
}

static unsigned long pick_len(void)
{
	return rnd(10) < 8 ? 1 + rnd(64) : 1 + rnd(40000);
}

static void model_set(struct model *m, unsigned long a, unsigned long b,
		      int id)
{
	for (; a < b; a++)
		m->owner[a] = id;
}

static int model_plug(struct model *m, unsigned long pfn, unsigned long n,
		      unsigned int cap)
{
	unsigned long p;

	if (pfn + n > DIFF_PFNS)
		return -ERANGE;
	for (p = pfn; p < pfn + n; p++)
		if (m->owner[p] >= 0)
			return -EEXIST;
	if (m->nr >= cap)
		return -ENOSPC;
	m->segs[m->nr].start = pfn;
	m->segs[m->nr].end = pfn + n;
	model_set(m, pfn, pfn + n, m->nr);
	m->nr++;
	m->pages += n;
	return 0;
}

static void model_del(struct model *m, int id)
{
	int last = m->nr - 1;

	if (id != last) {
		m->segs[id] = m->segs[last];
		model_set(m, m->segs[id].start, m->segs[id].end, id);
	}
	m->nr--;
}

static int model_unplug(struct model *m, unsigned long pfn, unsigned long n,
			unsigned int cap)
{
	struct model_seg *s;
	int id;

	if (pfn >= DIFF_PFNS || m->owner[pfn] < 0)
		return -ENOENT;
	id = m->owner[pfn];
	s = &m->segs[id];
	if (pfn + n > s->end)
		return -EINVAL;
	if (pfn > s->start && pfn + n < s->end && m->nr >= cap)
		return -ENOSPC;
	model_set(m, pfn, pfn + n, -1);
	m->pages -= n;
	if (pfn == s->start && pfn + n == s->end) {
		model_del(m, id);
	} else if (pfn == s->start) {
		s->start = pfn + n;
	} else if (pfn + n == s->end) {
		s->end = pfn;
	} else {
		m->segs[m->nr].start = pfn + n;
		m->segs[m->nr].end = s->end;
		m->segs[m->nr].handle = SECTAB_INVALID;	/* learnt below */
		model_set(m, pfn + n, s->end, m->nr);
		s->end = pfn;
		m->nr++;
	}
	return 0;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct model_seg *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Every pfn, the counters and the ordered walk agree with the model. */
static void check_all(struct __test_metadata *_metadata, struct sectab *t,
		      struct model *m)
{
	static struct model_seg sorted[DIFF_MAX_SEGS];
	struct sectab_seg *seg;
	unsigned long p, off;
	int i = 0;
	u64 h;

	for (p = 0; p < DIFF_PFNS + 10; p++) {
		seg = sectab_find(t, p, &off);
		if (p >= DIFF_PFNS || m->owner[p] < 0) {
			ASSERT_NULL(seg) TH_LOG("pfn %lu should be a hole", p);
			continue;
		}
		ASSERT_NE(NULL, seg) TH_LOG("pfn %lu not found", p);
		ASSERT_EQ(m->segs[m->owner[p]].handle, seg->handle);
		ASSERT_EQ(m->segs[m->owner[p]].start, seg->start);
		ASSERT_EQ(p - seg->start, off);
	}
	ASSERT_EQ(m->nr, sectab_nr_segs(t));
	ASSERT_EQ(m->pages, sectab_nr_pages(t));
	memcpy(sorted, m->segs, m->nr * sizeof(*sorted));
	qsort(sorted, m->nr, sizeof(*sorted), cmp_seg);
	for (h = sectab_first(t); sectab_valid(t, h); h = sectab_next(t, h)) {
		ASSERT_LT(i, m->nr);
		ASSERT_EQ(sorted[i].handle, h);
		ASSERT_EQ(sorted[i].end, sectab_end(t, h));
		i++;
	}
	ASSERT_EQ(m->nr ? SECTAB_OVERFLOW : SECTAB_EMPTY, h);
	ASSERT_EQ(m->nr, i);
}

TEST_F_TIMEOUT(physseg, differential_random_ops, 300)
{
	unsigned int cap = variant->kind == SECTAB_ARRAY ? 32 : DIFF_MAX_SEGS;

	struct sectab_params p = {
		.max_pfn = DIFF_PFNS,
		.max_segs = cap,
	};
	unsigned long pfn, n, off;
	struct sectab_seg *seg;
	struct sectab *t;
	struct model *m;
	int i, want, got;

	m = calloc(1, sizeof(*m));
	ASSERT_NE(NULL, m);
	m->owner = malloc(DIFF_PFNS * sizeof(*m->owner));
	ASSERT_NE(NULL, m->owner);
	memset(m->owner, 0xff, DIFF_PFNS * sizeof(*m->owner));
	ASSERT_EQ(0, sectab_create(&t, variant->kind, &p));
	srandom(4242 + variant->kind);

	for (i = 0; i < DIFF_OPS; i++) {
		unsigned int op = rnd(10);
		u64 h;

		if (op < 3) {
			pfn = pick_pfn();
			n = pick_len();
			want = model_plug(m, pfn, n, cap);
			got = sectab_plug(t, pfn, n, NULL, &h);
			ASSERT_EQ(want, got) TH_LOG("op %d plug %lu+%lu", i,
						    pfn, n);
			if (!got)
				m->segs[m->nr - 1].handle = h;
		} else if (op < 6) {
			if (m->nr && rnd(4)) {
				/* Mostly inside a live segment. */
				struct model_seg *s = &m->segs[rnd(m->nr)];

				pfn = s->start + rnd(s->end - s->start);
				n = 1 + rnd(s->end - pfn + (rnd(8) ? 0 : 3));
			} else {
				pfn = pick_pfn();
				n = pick_len();
			}
			want = model_unplug(m, pfn, n, cap);
			got = sectab_unplug(t, pfn, n);
			ASSERT_EQ(want, got) TH_LOG("op %d unplug %lu+%lu",
						    i, pfn, n);
			if (!got && m->nr &&
			    m->segs[m->nr - 1].handle == SECTAB_INVALID) {
				/* A split: learn the tail's new handle. */
				seg = sectab_find(t, m->segs[m->nr - 1].start,
						  NULL);
				ASSERT_NE(NULL, seg);
				m->segs[m->nr - 1].handle = seg->handle;
			}
		} else {
			pfn = rnd(DIFF_PFNS + 5);
			seg = sectab_find(t, pfn, &off);
			if (pfn >= DIFF_PFNS || m->owner[pfn] < 0) {
				ASSERT_NULL(seg);
			} else {
				ASSERT_NE(NULL, seg);
				ASSERT_EQ(m->segs[m->owner[pfn]].handle,
					  seg->handle);
				ASSERT_EQ(pfn - m->segs[m->owner[pfn]].start,
					  off);
			}
		}
		if (i % 2000 == 0)
			check_all(_metadata, t, m);
	}
	check_all(_metadata, t, m);
	TH_LOG("%s: %d ops, %d segments, %lu pages, index %zu bytes",
	       sectab_kind_name(variant->kind), DIFF_OPS, m->nr, m->pages,
	       sectab_index_bytes(t));
	sectab_destroy(t);
	free(m->owner);
	free(m);
}

TEST_HARNESS_MAIN
