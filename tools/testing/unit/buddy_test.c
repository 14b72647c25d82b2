// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of mm/buddy_core.c (the buddy_split allocator core) in user
 * space: one small test per behaviour, then 10^6 random operations per mode
 * checked against a simple page-owner model.
 */
#include "buddy_core.h"
#include "kselftest_harness.h"

#define SHIFT		12		/* 4096-page sections: 4 top blocks */
#define SPAGES		BIT(SHIFT)

static char msg[256];

static int check(struct bs_arena *a)
{
	int ret = bs_check(a, msg, sizeof(msg));

	if (ret)
		fprintf(stderr, "# bs_check: %s\n", msg);
	return ret;
}

/* An arena of @n sections at sparse bases; the first @pinned are pinned. */
static struct bs_arena *mk(enum bs_mode mode, unsigned int n,
			   unsigned int pinned)
{
	struct bs_arena *a = bs_arena_create(SHIFT, n, mode);
	unsigned int i;

	if (!a)
		return NULL;
	for (i = 0; i < n; i++) {
		/* Holes between sections: bases 3 sections apart. */
		if (bs_section_add(a, i, (1 + 3 * i) * SPAGES, i >= pinned)) {
			bs_arena_destroy(a);
			return NULL;
		}
	}
	return a;
}

static unsigned int sec_of(struct bs_arena *a, unsigned long pfn)
{
	unsigned int i;

	for (i = 0; i < a->nr_sections; i++)
		if (a->sections[i].online && pfn >= a->sections[i].base_pfn &&
		    pfn < a->sections[i].base_pfn + SPAGES)
			return i;
	return ~0U;
}

static unsigned long top_blocks(struct bs_arena *a)
{
	unsigned long n = 0;
	int ar;

	for (ar = 0; ar < BS_NR_AREAS; ar++)
		n += a->area[ar].nr_free[BS_TOP_ORDER];
	return n;
}

TEST(create_rejects_bad_geometry)
{
	struct bs_arena *a;

	ASSERT_EQ(NULL, bs_arena_create(BS_TOP_ORDER - 1, 1, BS_MODE_SPLIT));
	ASSERT_EQ(NULL, bs_arena_create(SHIFT, 0, BS_MODE_SPLIT));
	ASSERT_EQ(NULL, bs_arena_create(SHIFT, 1, BS_NR_MODES));
	a = bs_arena_create(SHIFT, 2, BS_MODE_SPLIT);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(-EINVAL, bs_section_add(a, 0, SPAGES + 1, true));
	ASSERT_EQ(-EINVAL, bs_section_add(a, 2, 0, true));
	ASSERT_EQ(0, bs_section_add(a, 0, SPAGES, true));
	ASSERT_EQ(-EBUSY, bs_section_add(a, 0, 4 * SPAGES, true));
	ASSERT_EQ(-EEXIST, bs_section_add(a, 1, SPAGES, true));
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);
}

TEST(bad_inputs_change_nothing)
{
	struct bs_arena *a = mk(BS_MODE_SPLIT, 2, 1);
	struct bs_workload w = { .seed = 1, .ops = 10, .mix = { 50, 50, 1 } };
	struct bs_workload_result r;
	unsigned long pfn;

	ASSERT_NE(NULL, a);
	ASSERT_EQ(-EINVAL, bs_alloc(a, BS_NR_TYPES, 0, &pfn));
	ASSERT_EQ(-EINVAL, bs_alloc(a, 0, BS_MAX_ORDER, &pfn));
	ASSERT_EQ(-ENOENT, bs_free(a, 0));
	ASSERT_EQ(-ENOENT, bs_free(a, SPAGES));		/* free, not allocated */
	ASSERT_EQ(-EINVAL, bs_workload_run(a, &w, &r, NULL, NULL));
	w.mix[2] = 0;
	w.max_order = BS_MAX_ORDER;
	ASSERT_EQ(-EINVAL, bs_workload_run(a, &w, &r, NULL, NULL));
	ASSERT_EQ(-EINVAL, bs_set_policy(a, BS_NR_POLICIES));
	ASSERT_EQ(-EINVAL, bs_set_kreclaim_home(a, BS_AREA_USER));
	ASSERT_EQ(-EINVAL, bs_mode_parse("splitx"));
	ASSERT_EQ(BS_MODE_BITMAP, bs_mode_parse("bitmap\n"));
	ASSERT_EQ(BS_POLICY_FALLBACK, bs_policy_parse("fallback"));
	ASSERT_EQ(2 * SPAGES, bs_free_pages(a));
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);
}

/* Split down to every order and coalesce back, in every mode. */
TEST(split_and_coalesce_every_order)
{
	enum bs_mode m;
	unsigned int o;

	for (m = 0; m < BS_NR_MODES; m++) {
		struct bs_arena *a = mk(m, 1, 0);
		unsigned long pfn;

		ASSERT_NE(NULL, a);
		for (o = 0; o <= BS_TOP_ORDER; o++) {
			ASSERT_EQ(0, bs_alloc(a, BS_USER_RECLAIMABLE, o, &pfn));
			ASSERT_EQ(0, pfn & ((1UL << o) - 1));
			ASSERT_EQ(SPAGES - (1UL << o), bs_free_pages(a));
			ASSERT_EQ(0, check(a));
			/* One free block at each order below o after the split. */
			if (o < BS_TOP_ORDER) {
				unsigned int k;

				for (k = o; k < BS_TOP_ORDER; k++)
					ASSERT_EQ(1, a->area[0].nr_free[k]);
			}
			ASSERT_EQ(0, bs_free(a, pfn));
			ASSERT_EQ(SPAGES >> BS_TOP_ORDER, top_blocks(a));
			ASSERT_EQ(0, check(a));
		}
		bs_arena_destroy(a);
	}
}

/* Fill a section with order-0 pages, free them in random order. */
TEST(coalesce_after_random_frees)
{
	enum bs_mode m;

	for (m = 0; m < BS_NR_MODES; m++) {
		struct bs_arena *a = mk(m, 1, 0);
		unsigned long pfns[SPAGES], pfn, i;
		u64 rng = 42 + m;

		ASSERT_NE(NULL, a);
		for (i = 0; i < SPAGES; i++)
			ASSERT_EQ(0, bs_alloc(a, 0, 0, &pfns[i]));
		ASSERT_EQ(-ENOMEM, bs_alloc(a, 0, 0, &pfn));
		ASSERT_EQ(0, check(a));
		for (i = SPAGES; i > 1; i--) {
			unsigned long j = bs_rand_below(&rng, i), t = pfns[i - 1];

			pfns[i - 1] = pfns[j];
			pfns[j] = t;
		}
		for (i = 0; i < SPAGES; i++) {
			ASSERT_EQ(0, bs_free(a, pfns[i]));
			if (!(i % 512))
				ASSERT_EQ(0, check(a));
		}
		ASSERT_EQ(SPAGES >> BS_TOP_ORDER, top_blocks(a));
		ASSERT_EQ(0, check(a));
		bs_arena_destroy(a);
	}
}

/* The buddy of a page is found by XOR relative to the section base. */
TEST(buddy_is_xor_of_offset)
{
	struct bs_arena *a = mk(BS_MODE_SINGLE, 1, 0);
	unsigned long p0, p1;

	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, bs_alloc(a, 0, 0, &p0));
	ASSERT_EQ(0, bs_alloc(a, 0, 0, &p1));
	ASSERT_EQ(p0 ^ 1, p1);
	ASSERT_EQ(0, bs_free(a, p0));
	/* p0 is free at order 0, its buddy p1 is not: no merge. */
	ASSERT_EQ(1, a->area[0].nr_free[0]);
	ASSERT_EQ(0, bs_free(a, p1));
	ASSERT_EQ(0, a->area[0].nr_free[0]);
	ASSERT_EQ(SPAGES >> BS_TOP_ORDER, top_blocks(a));
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);
}

/* Adjacent and sparse sections: no block crosses a section boundary. */
TEST(section_boundaries)
{
	enum bs_mode m;

	for (m = 0; m < BS_NR_MODES; m++) {
		struct bs_arena *a = bs_arena_create(SHIFT, 3, m);
		unsigned long pfn, n = 0;

		ASSERT_NE(NULL, a);
		/* Two adjacent sections and one far away, added out of order. */
		ASSERT_EQ(0, bs_section_add(a, 0, 1000 * SPAGES, true));
		ASSERT_EQ(0, bs_section_add(a, 1, 5 * SPAGES, true));
		ASSERT_EQ(0, bs_section_add(a, 2, 4 * SPAGES, true));
		while (!bs_alloc(a, 0, 3, &pfn)) {
			unsigned int s = sec_of(a, pfn);

			ASSERT_NE(~0U, s);
			ASSERT_EQ(s, sec_of(a, pfn + 7));
			n++;
		}
		ASSERT_EQ(3 * SPAGES / 8, n);
		ASSERT_EQ(0, check(a));
		ASSERT_EQ(0, bs_arena_reset(a, m));
		ASSERT_EQ(3 * SPAGES, bs_free_pages(a));
		/* Top blocks never merge across sections. */
		ASSERT_EQ(3 * (SPAGES >> BS_TOP_ORDER), top_blocks(a));
		ASSERT_EQ(0, check(a));
		bs_arena_destroy(a);
	}
}

/* Depleted types refill a top block from their global list. */
TEST(refill_from_global_lists)
{
	struct bs_arena *a = mk(BS_MODE_SPLIT, 2, 1);
	unsigned long pfn, blocks = SPAGES >> BS_TOP_ORDER;
	unsigned int o;

	ASSERT_NE(NULL, a);
	ASSERT_EQ(blocks, a->area[BS_AREA_HOTPLUG].nr_free[BS_TOP_ORDER]);
	ASSERT_EQ(blocks, a->area[BS_AREA_PINNED].nr_free[BS_TOP_ORDER]);
	ASSERT_EQ(0, bs_alloc(a, BS_USER_RECLAIMABLE, 0, &pfn));
	ASSERT_EQ(1, sec_of(a, pfn));
	ASSERT_EQ(1, a->stats.refills[BS_USER_RECLAIMABLE]);
	ASSERT_EQ(blocks - 1, a->area[BS_AREA_HOTPLUG].nr_free[BS_TOP_ORDER]);
	/* The refilled top block split into one free block per order. */
	for (o = 0; o < BS_TOP_ORDER; o++)
		ASSERT_EQ(1, a->area[BS_AREA_USER].nr_free[o]);
	ASSERT_EQ(0, bs_alloc(a, BS_KERNEL_NONRECLAIMABLE, 0, &pfn));
	ASSERT_EQ(0, sec_of(a, pfn));
	ASSERT_EQ(0, bs_alloc(a, BS_KERNEL_RECLAIMABLE, 0, &pfn));
	ASSERT_EQ(0, sec_of(a, pfn));
	ASSERT_EQ(blocks - 2, a->area[BS_AREA_PINNED].nr_free[BS_TOP_ORDER]);
	ASSERT_EQ(0, check(a));
	/* A block coalescing to the top order goes back to its global list. */
	ASSERT_EQ(0, bs_free(a, pfn));
	ASSERT_EQ(blocks - 1, a->area[BS_AREA_PINNED].nr_free[BS_TOP_ORDER]);
	ASSERT_EQ(0, check(a));
	/* kreclaim_home=hotplug sends kernel reclaimable to hotplug. */
	ASSERT_EQ(0, bs_set_kreclaim_home(a, BS_AREA_HOTPLUG));
	ASSERT_EQ(0, bs_alloc(a, BS_KERNEL_RECLAIMABLE, 0, &pfn));
	ASSERT_EQ(1, sec_of(a, pfn));
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);
}

/* Strict never puts a pinned page in a hotplug section; fallback does. */
TEST(fallback_off_and_on)
{
	struct bs_arena *a = mk(BS_MODE_SPLIT, 2, 1);
	unsigned long pfn, n = 0;

	ASSERT_NE(NULL, a);
	ASSERT_EQ(BS_POLICY_STRICT, a->policy);
	while (!bs_alloc(a, BS_KERNEL_NONRECLAIMABLE, 0, &pfn)) {
		ASSERT_EQ(0, sec_of(a, pfn));
		n++;
	}
	ASSERT_EQ(SPAGES, n);
	ASSERT_EQ(1, a->stats.fails[BS_KERNEL_NONRECLAIMABLE]);
	/* The hotplug section is untouched and still removable. */
	ASSERT_EQ(SPAGES, a->sections[1].nr_free);
	ASSERT_EQ(0, check(a));
	/* A user allocation leaves pieces on the user free area. */
	ASSERT_EQ(0, bs_alloc(a, BS_USER_RECLAIMABLE, 0, &pfn));
	ASSERT_EQ(-ENOMEM, bs_alloc(a, BS_KERNEL_NONRECLAIMABLE, 0, &pfn));
	/* Switch at run time: fallback steals the smallest fitting block. */
	ASSERT_EQ(0, bs_set_policy(a, BS_POLICY_FALLBACK));
	ASSERT_EQ(1, a->area[BS_AREA_USER].nr_free[0]);
	ASSERT_EQ(0, bs_alloc(a, BS_KERNEL_NONRECLAIMABLE, 0, &pfn));
	ASSERT_EQ(1, sec_of(a, pfn));
	ASSERT_EQ(0, a->area[BS_AREA_USER].nr_free[0]);
	ASSERT_EQ(1, a->stats.fallbacks[BS_KERNEL_NONRECLAIMABLE]);
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);

	/* With no other type's blocks, fallback takes the other global list. */
	a = mk(BS_MODE_SPLIT, 2, 1);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, bs_set_policy(a, BS_POLICY_FALLBACK));
	for (n = 0; n < SPAGES >> BS_TOP_ORDER; n++)
		ASSERT_EQ(0, bs_alloc(a, BS_KERNEL_NONRECLAIMABLE,
				      BS_TOP_ORDER, &pfn));
	ASSERT_EQ(0, a->stats.fallbacks[BS_KERNEL_NONRECLAIMABLE]);
	ASSERT_EQ(0, bs_alloc(a, BS_KERNEL_NONRECLAIMABLE, 0, &pfn));
	ASSERT_EQ(1, sec_of(a, pfn));
	ASSERT_EQ(1, a->stats.fallbacks[BS_KERNEL_NONRECLAIMABLE]);
	ASSERT_EQ((SPAGES >> BS_TOP_ORDER) - 1,
		  a->area[BS_AREA_HOTPLUG].nr_free[BS_TOP_ORDER]);
	ASSERT_EQ(0, check(a));
	/* Freed, the block returns to the hotplug list, not the pinned one. */
	ASSERT_EQ(0, bs_free(a, pfn));
	ASSERT_EQ(SPAGES >> BS_TOP_ORDER,
		  a->area[BS_AREA_HOTPLUG].nr_free[BS_TOP_ORDER]);
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);
}

TEST(section_remove_verdicts)
{
	struct bs_arena *a = mk(BS_MODE_SPLIT, 4, 0);
	unsigned long pfn, upfn = 0;
	int blocker, i;

	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, bs_set_kreclaim_home(a, BS_AREA_HOTPLUG));
	/* All four sections are hotplug; fill one with user pages only. */
	for (i = 0; i < SPAGES >> BS_TOP_ORDER; i++) {
		ASSERT_EQ(0, bs_alloc(a, BS_USER_RECLAIMABLE, BS_TOP_ORDER,
				      &pfn));
		if (!i)
			upfn = pfn;
		ASSERT_EQ(sec_of(a, upfn), sec_of(a, pfn));
	}
	ASSERT_EQ(0, bs_section_check(a, sec_of(a, upfn), &blocker));
	ASSERT_EQ(-1, blocker);
	ASSERT_EQ(0, bs_alloc(a, BS_KERNEL_RECLAIMABLE, 0, &pfn));
	ASSERT_NE(sec_of(a, upfn), sec_of(a, pfn));
	ASSERT_EQ(-EBUSY, bs_section_check(a, sec_of(a, pfn), &blocker));
	ASSERT_EQ(BS_KERNEL_RECLAIMABLE, blocker);
	ASSERT_EQ(0, bs_set_policy(a, BS_POLICY_FALLBACK));
	/* Pinned, with no pinned section: falls back next to the KR page. */
	ASSERT_EQ(0, bs_alloc(a, BS_KERNEL_NONRECLAIMABLE, 0, &pfn));
	ASSERT_EQ(-EBUSY, bs_section_remove(a, sec_of(a, pfn), &blocker));
	ASSERT_EQ(BS_KERNEL_NONRECLAIMABLE, blocker);
	ASSERT_EQ(0, check(a));
	/* The user section: removal reclaims the user pages. */
	ASSERT_EQ(0, bs_section_remove(a, sec_of(a, upfn), &blocker));
	ASSERT_EQ(SPAGES, a->stats.reclaimed_pages);
	ASSERT_EQ(3 * SPAGES, bs_online_pages(a));
	ASSERT_EQ(-ENOENT, bs_free(a, upfn));
	ASSERT_EQ(0, check(a));
	/* A free section is removable; an offline one is gone. */
	ASSERT_EQ(SPAGES, a->sections[1].nr_free);
	ASSERT_EQ(0, bs_section_remove(a, 1, &blocker));
	ASSERT_EQ(-ENOENT, bs_section_remove(a, 1, &blocker));
	ASSERT_EQ(-EINVAL, bs_section_remove(a, 4, &blocker));
	ASSERT_EQ(0, check(a));
	/* Hot-add it again. */
	ASSERT_EQ(2 * SPAGES, bs_online_pages(a));
	ASSERT_EQ(0, bs_section_add(a, 1, a->sections[1].base_pfn, true));
	ASSERT_EQ(3 * SPAGES, bs_online_pages(a));
	ASSERT_EQ(0, check(a));
	/* Reset brings every present section back, all free. */
	ASSERT_EQ(0, bs_arena_reset(a, BS_MODE_SPLIT));
	ASSERT_EQ(4 * SPAGES, bs_free_pages(a));
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);
}

/* Section removal and re-adding in the baselines too. */
TEST(baselines_remove_and_readd)
{
	enum bs_mode m;

	for (m = BS_MODE_SINGLE; m < BS_NR_MODES; m++) {
		struct bs_arena *a = mk(m, 3, 0);
		unsigned long pfn;
		int blocker, i;

		ASSERT_NE(NULL, a);
		for (i = 0; i < 300; i++)
			ASSERT_EQ(0, bs_alloc(a, i % 3 ? 0 : 1, i % 4, &pfn));
		ASSERT_EQ(0, check(a));
		/* LIFO single area: everything came from the last top block. */
		ASSERT_EQ(-EBUSY, bs_section_remove(a, sec_of(a, pfn), &blocker));
		ASSERT_EQ(BS_KERNEL_RECLAIMABLE, blocker);
		ASSERT_EQ(0, bs_section_remove(a, 0, &blocker));
		ASSERT_EQ(0, check(a));
		ASSERT_EQ(0, bs_section_add(a, 0, SPAGES, true));
		ASSERT_EQ(0, check(a));
		bs_arena_destroy(a);
	}
}

/* Single: one free area for every type, the global lists unused. */
TEST(single_baseline_shares_lists)
{
	struct bs_arena *a = mk(BS_MODE_SINGLE, 2, 1);
	unsigned long pfn;
	int ar;

	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, bs_alloc(a, BS_KERNEL_NONRECLAIMABLE, 0, &pfn));
	/* Sections are listed LIFO: the last-added (hotplug) one is first. */
	ASSERT_EQ(1, sec_of(a, pfn));
	for (ar = 1; ar < BS_NR_AREAS; ar++) {
		unsigned int o;

		for (o = 0; o < BS_MAX_ORDER; o++)
			ASSERT_EQ(0, a->area[ar].nr_free[o]);
	}
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);
}

/* Bitmap: hot-add outside the span reallocates every map; no-bitmap doesn't. */
TEST(bitmap_hot_add_reallocates)
{
	struct bs_arena *a = bs_arena_create(SHIFT, 3, BS_MODE_BITMAP);
	struct bs_arena *b = bs_arena_create(SHIFT, 3, BS_MODE_SPLIT);
	unsigned long pfn, p2;
	int blocker;
	size_t maps;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, bs_section_add(a, 0, 10 * SPAGES, true));
	ASSERT_EQ(1, a->stats.bitmap_reallocs);
	ASSERT_EQ(0, bs_alloc(a, 0, 0, &pfn));
	ASSERT_EQ(0, bs_alloc(a, 0, 1, &p2));
	/* Above and below the span: the maps move, the bits with them. */
	ASSERT_EQ(0, bs_section_add(a, 1, 20 * SPAGES, true));
	ASSERT_EQ(2, a->stats.bitmap_reallocs);
	ASSERT_EQ(0, bs_section_add(a, 2, 2 * SPAGES, true));
	ASSERT_EQ(3, a->stats.bitmap_reallocs);
	ASSERT_EQ(0, check(a));
	ASSERT_EQ(0, bs_free(a, pfn));
	ASSERT_EQ(0, bs_free(a, p2));
	ASSERT_EQ(0, check(a));
	ASSERT_EQ(3 * (SPAGES >> BS_TOP_ORDER), top_blocks(a));
	bs_metadata_bytes(a, &maps);
	/* Span of 19 sections: the maps cover the holes too. */
	ASSERT_GT(maps, 19 * SPAGES / 16);
	/* Removing the top section shrinks the span, re-adding regrows it. */
	ASSERT_EQ(0, bs_alloc(a, 0, 0, &pfn));
	ASSERT_EQ(0, bs_section_remove(a, 1, &blocker));
	ASSERT_EQ(4, a->stats.bitmap_reallocs);
	ASSERT_EQ(9 * SPAGES, a->span_pages);
	ASSERT_EQ(0, check(a));
	ASSERT_EQ(0, bs_section_add(a, 1, 20 * SPAGES, true));
	ASSERT_EQ(5, a->stats.bitmap_reallocs);
	ASSERT_EQ(0, check(a));
	/* Removing a middle section keeps the span. */
	ASSERT_EQ(0, bs_section_remove(a, 0, &blocker));
	ASSERT_EQ(5, a->stats.bitmap_reallocs);
	ASSERT_EQ(0, check(a));
	ASSERT_EQ(0, bs_section_add(b, 0, 10 * SPAGES, true));
	ASSERT_EQ(0, bs_section_add(b, 1, 20 * SPAGES, true));
	bs_metadata_bytes(b, &maps);
	ASSERT_EQ(0, maps);
	ASSERT_EQ(0, b->stats.bitmap_reallocs);
	bs_arena_destroy(a);
	bs_arena_destroy(b);
}

/* The generator is deterministic: same seed, same arena state. */
TEST(workload_is_deterministic)
{
	struct bs_workload w = {
		.seed = 7, .ops = 20000, .max_order = 3,
		.mix = { 70, 20, 10 }, .lifetime = { 500, 500, 1000 },
	};
	struct bs_workload_result r1, r2;
	struct bs_arena *a = mk(BS_MODE_SPLIT, 4, 1);
	struct bs_arena *b = mk(BS_MODE_SPLIT, 4, 1);
	unsigned int i;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, bs_workload_run(a, &w, &r1, NULL, NULL));
	ASSERT_EQ(0, bs_workload_run(b, &w, &r2, NULL, NULL));
	ASSERT_EQ(0, memcmp(&r1, &r2, sizeof(r1)));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, memcmp(a->sections[i].used, b->sections[i].used,
				    sizeof(a->sections[i].used)));
	ASSERT_GT(r1.allocs[0], 0);
	ASSERT_GT(r1.frees, 0);
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);
	bs_arena_destroy(b);
}

static int stop_at_once(void *arg)
{
	return 1;
}

TEST(workload_tick_stops)
{
	struct bs_workload w = { .seed = 1, .ops = 5000, .mix = { 100 } };
	struct bs_workload_result r;
	struct bs_arena *a = mk(BS_MODE_SPLIT, 1, 0);

	ASSERT_NE(NULL, a);
	ASSERT_EQ(-EINTR, bs_workload_run(a, &w, &r, stop_at_once, NULL));
	ASSERT_EQ(0, check(a));
	bs_arena_destroy(a);
}

/*
 * 10^6 random operations per mode against a model that owns every page:
 * no allocated block overlaps another, free-page counts agree, a failed
 * single/bitmap allocation really had no aligned free range of that order
 * (complete coalescing), and bs_check() passes every 10^5 operations.
 */
#define NSEC	4
#define NPAGES	(NSEC * SPAGES)
#define OPS	1000000

struct model {
	int owner[NPAGES];		/* live block id + 1, 0 when free */
	unsigned long pfn[NPAGES];	/* live blocks */
	unsigned int order[NPAGES];
	unsigned long nlive, used;
};

static unsigned long midx(unsigned long pfn)
{
	/* mk() puts section i at (1 + 3i) * SPAGES. */
	unsigned long s = pfn / SPAGES;

	return (s - 1) / 3 * SPAGES + pfn % SPAGES;
}

static bool model_has_free_range(struct model *m, unsigned int order)
{
	unsigned long i, k;

	for (i = 0; i < NPAGES; i += 1UL << order) {
		for (k = 0; k < 1UL << order; k++)
			if (m->owner[i + k])
				break;
		if (k == 1UL << order)
			return true;
	}
	return false;
}

static void random_ops(struct __test_metadata *_metadata, enum bs_mode mode,
		       enum bs_policy policy)
{
	struct model *m = calloc(1, sizeof(*m));
	struct bs_arena *a = mk(mode, NSEC, 1);
	u64 rng = 1234 + mode * 10 + policy;
	unsigned long op, fails = 0;

	ASSERT_NE(NULL, m);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, bs_set_policy(a, policy));
	for (op = 0; op < OPS; op++) {
		/* Keep the arena between about 40% and 90% full. */
		bool alloc = m->used < NPAGES * 4 / 10 ||
			(m->used < NPAGES * 9 / 10 && bs_rand_below(&rng, 2));

		if (alloc || !m->nlive) {
			unsigned int order = bs_rand_below(&rng, 5);
			unsigned int type = bs_rand_below(&rng, BS_NR_TYPES);
			unsigned long pfn, i, k;

			if (!bs_rand_below(&rng, 1000))
				order = BS_TOP_ORDER;
			if (bs_alloc(a, type, order, &pfn)) {
				fails++;
				if (mode != BS_MODE_SPLIT && fails < 100)
					ASSERT_FALSE(model_has_free_range(m, order));
				continue;
			}
			ASSERT_EQ(0, pfn & ((1UL << order) - 1));
			/* Strict split: types stay in their own sections. */
			if (mode == BS_MODE_SPLIT && policy == BS_POLICY_STRICT)
				ASSERT_EQ(type == BS_USER_RECLAIMABLE,
					  sec_of(a, pfn) != 0);
			i = midx(pfn);
			for (k = 0; k < 1UL << order; k++) {
				ASSERT_EQ(0, m->owner[i + k]);
				m->owner[i + k] = m->nlive + 1;
			}
			m->pfn[m->nlive] = pfn;
			m->order[m->nlive] = order;
			m->nlive++;
			m->used += 1UL << order;
		} else {
			unsigned long j = bs_rand_below(&rng, m->nlive), i, k;
			unsigned long last = m->nlive - 1;

			ASSERT_EQ(0, bs_free(a, m->pfn[j]));
			i = midx(m->pfn[j]);
			for (k = 0; k < 1UL << m->order[j]; k++)
				m->owner[i + k] = 0;
			m->used -= 1UL << m->order[j];
			if (j != last) {
				m->pfn[j] = m->pfn[last];
				m->order[j] = m->order[last];
				i = midx(m->pfn[j]);
				for (k = 0; k < 1UL << m->order[j]; k++)
					m->owner[i + k] = j + 1;
			}
			m->nlive--;
		}
		ASSERT_EQ(NPAGES - m->used, bs_free_pages(a));
		if (!(op % 100000))
			ASSERT_EQ(0, check(a));
	}
	ASSERT_EQ(0, check(a));
	while (m->nlive)
		ASSERT_EQ(0, bs_free(a, m->pfn[--m->nlive]));
	ASSERT_EQ(NSEC * (SPAGES >> BS_TOP_ORDER), top_blocks(a));
	ASSERT_EQ(0, check(a));
	TH_LOG("mode %s policy %s: %lu failed allocations",
	       bs_mode_name(mode), bs_policy_name(policy), fails);
	bs_arena_destroy(a);
	free(m);
}

TEST(random_ops_split_strict)
{
	random_ops(_metadata, BS_MODE_SPLIT, BS_POLICY_STRICT);
}

TEST(random_ops_split_fallback)
{
	random_ops(_metadata, BS_MODE_SPLIT, BS_POLICY_FALLBACK);
}

TEST(random_ops_single)
{
	random_ops(_metadata, BS_MODE_SINGLE, BS_POLICY_STRICT);
}

TEST(random_ops_bitmap)
{
	random_ops(_metadata, BS_MODE_BITMAP, BS_POLICY_STRICT);
}

TEST_HARNESS_MAIN
