// SPDX-License-Identifier: GPL-2.0
/*
 * buddy_core: a bitmap-free buddy allocator with free areas split by reclaim
 * type (OLS 2005, "Hotplug Memory Redux", sections 4 and 5), plus the
 * classic single-area and bitmap buddies as baselines. Portable: the same
 * file is built into the buddy_split module and into the unit test.
 *
 * Data structures. Each online section has one struct bs_page per page and
 * one owner byte per top-order (BS_TOP_ORDER) block. A free block is a head
 * descriptor with BS_PG_BUDDY set, its order in ->order and the free area it
 * is listed on in ->area; an allocated block is a head with BS_PG_HEAD, its
 * order and its type. All other descriptors are zero. In BS_MODE_SPLIT the
 * owner of a top-order block is the free area its free pieces go to: a
 * global list (HOTPLUG or PINNED, from the section) while the whole block is
 * free, else the type that took it. A block that coalesces back to the top
 * order returns to its section's global list.
 *
 * No locking here: the caller serialises every call on an arena.
 */
#include "buddy_core.h"

#define BS_LONG_BITS	(8 * sizeof(unsigned long))

static const char * const bs_type_names[BS_NR_TYPES] = {
	"user_reclaimable", "kernel_reclaimable", "kernel_nonreclaimable",
};

static const char * const bs_area_names[BS_NR_AREAS] = {
	"user_reclaimable", "kernel_reclaimable", "kernel_nonreclaimable",
	"global_hotplug", "global_pinned",
};

static const char * const bs_mode_names[BS_NR_MODES] = {
	"split", "single", "bitmap",
};

static const char * const bs_policy_names[BS_NR_POLICIES] = {
	"strict", "fallback",
};

const char *bs_type_name(int type)
{
	return type >= 0 && type < BS_NR_TYPES ? bs_type_names[type] : "none";
}

const char *bs_area_name(int area)
{
	return area >= 0 && area < BS_NR_AREAS ? bs_area_names[area] : "none";
}

const char *bs_mode_name(int mode)
{
	return mode >= 0 && mode < BS_NR_MODES ? bs_mode_names[mode] : "none";
}

const char *bs_policy_name(int policy)
{
	return policy >= 0 && policy < BS_NR_POLICIES ?
		bs_policy_names[policy] : "none";
}

/* Match @s (a trailing newline allowed) against @names. */
static int bs_parse(const char *s, const char * const *names, int n)
{
	size_t len = strlen(s);
	int i;

	if (len && s[len - 1] == '\n')
		len--;
	for (i = 0; i < n; i++)
		if (strlen(names[i]) == len && !strncmp(s, names[i], len))
			return i;
	return -EINVAL;
}

int bs_mode_parse(const char *s)
{
	return bs_parse(s, bs_mode_names, BS_NR_MODES);
}

int bs_policy_parse(const char *s)
{
	return bs_parse(s, bs_policy_names, BS_NR_POLICIES);
}

/* Bit helpers of the bitmap baseline (own, to stay portable). */
static inline bool bs_test_bit(const unsigned long *map, unsigned long nr)
{
	return map[nr / BS_LONG_BITS] & (1UL << (nr % BS_LONG_BITS));
}

static inline void bs_set_bit(unsigned long *map, unsigned long nr)
{
	map[nr / BS_LONG_BITS] |= 1UL << (nr % BS_LONG_BITS);
}

static inline bool bs_test_and_change_bit(unsigned long *map,
					  unsigned long nr)
{
	unsigned long mask = 1UL << (nr % BS_LONG_BITS);
	unsigned long *word = map + nr / BS_LONG_BITS;
	bool old = *word & mask;

	*word ^= mask;
	return old;
}

static inline size_t bs_map_longs(unsigned long span, unsigned int order)
{
	unsigned long bits = span >> (order + 1);

	return (bits + BS_LONG_BITS - 1) / BS_LONG_BITS;
}

/* The bit of the buddy pair holding page @off of @s at @order. */
static inline unsigned long bs_map_index(const struct bs_arena *a,
					 const struct bs_section *s,
					 unsigned long off, unsigned int order)
{
	return (s->base_pfn - a->span_start + off) >> (order + 1);
}

/* Free-list primitives: no bitmap or counter side effects beyond nr_free. */
static void bs_list_put(struct bs_arena *a, struct bs_section *s,
			unsigned long off, unsigned int order, int area)
{
	struct bs_page *p = &s->pages[off];

	p->flags = BS_PG_BUDDY;
	p->order = order;
	p->area = area;
	list_add(&p->lru, &a->area[area].list[order]);
	a->area[area].nr_free[order]++;
}

static void bs_list_take(struct bs_arena *a, struct bs_page *p)
{
	list_del(&p->lru);
	a->area[p->area].nr_free[p->order]--;
	p->flags = 0;
	p->order = 0;
	p->area = 0;
}

static inline struct bs_section *bs_page_section(struct bs_arena *a,
						 struct bs_page *p,
						 unsigned long *off)
{
	struct bs_section *s = &a->sections[p->section];

	*off = p - s->pages;
	return s;
}

/* The online section holding @pfn, or NULL. */
static struct bs_section *bs_pfn_section(struct bs_arena *a,
					 unsigned long pfn)
{
	unsigned int lo = 0, hi = a->nr_sorted;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		struct bs_section *s = &a->sections[a->sorted[mid]];

		if (pfn < s->base_pfn)
			hi = mid;
		else if (pfn - s->base_pfn >= bs_section_pages(a))
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}

static void bs_sorted_insert(struct bs_arena *a, unsigned int nr)
{
	unsigned long base = a->sections[nr].base_pfn;
	unsigned int i = a->nr_sorted;

	while (i && a->sections[a->sorted[i - 1]].base_pfn > base) {
		a->sorted[i] = a->sorted[i - 1];
		i--;
	}
	a->sorted[i] = nr;
	a->nr_sorted++;
}

static void bs_sorted_delete(struct bs_arena *a, unsigned int nr)
{
	unsigned int i, j;

	for (i = 0, j = 0; i < a->nr_sorted; i++)
		if (a->sorted[i] != nr)
			a->sorted[j++] = a->sorted[i];
	a->nr_sorted = j;
}

static void bs_init_lists(struct bs_arena *a)
{
	int ar, o;

	for (ar = 0; ar < BS_NR_AREAS; ar++) {
		for (o = 0; o < BS_MAX_ORDER; o++) {
			INIT_LIST_HEAD(&a->area[ar].list[o]);
			a->area[ar].nr_free[o] = 0;
		}
	}
}

static void bs_free_maps(struct bs_arena *a)
{
	int o;

	for (o = 0; o < BS_TOP_ORDER; o++) {
		memhp_free(a->map[o]);
		a->map[o] = NULL;
	}
	a->span_start = 0;
	a->span_pages = 0;
}

struct bs_arena *bs_arena_create(unsigned int section_shift,
				 unsigned int nr_sections, enum bs_mode mode)
{
	struct bs_arena *a;

	if (section_shift < BS_MIN_SECTION_SHIFT ||
	    section_shift > BS_MAX_SECTION_SHIFT ||
	    !nr_sections || nr_sections > 4096 || mode >= BS_NR_MODES)
		return NULL;
	a = memhp_zalloc(sizeof(*a));
	if (!a)
		return NULL;
	a->sections = memhp_zalloc(nr_sections * sizeof(*a->sections));
	a->sorted = memhp_zalloc(nr_sections * sizeof(*a->sorted));
	if (!a->sections || !a->sorted) {
		memhp_free(a->sections);
		memhp_free(a->sorted);
		memhp_free(a);
		return NULL;
	}
	a->section_shift = section_shift;
	a->nr_sections = nr_sections;
	a->mode = mode;
	a->policy = BS_POLICY_STRICT;
	a->kreclaim_home = BS_AREA_PINNED;
	bs_init_lists(a);
	return a;
}

static void bs_section_release(struct bs_section *s)
{
	memhp_free(s->pages);
	memhp_free(s->owner);
	s->pages = NULL;
	s->owner = NULL;
	s->online = false;
	memset(s->used, 0, sizeof(s->used));
	s->nr_free = 0;
}

void bs_arena_destroy(struct bs_arena *a)
{
	unsigned int i;

	if (!a)
		return;
	for (i = 0; i < a->nr_sections; i++)
		bs_section_release(&a->sections[i]);
	bs_free_maps(a);
	memhp_free(a->sections);
	memhp_free(a->sorted);
	memhp_free(a);
}

/*
 * Reallocate the bitmaps to cover exactly [@nstart, @nend): allocate, copy
 * the bits of the overlap, free the old ones (the cost the paper's section
 * 4.1 removes). An empty range frees them.
 */
static int bs_resize_maps(struct bs_arena *a, unsigned long nstart,
			  unsigned long nend)
{
	unsigned long *new[BS_TOP_ORDER];
	int o;

	if (nstart == a->span_start && nend == a->span_start + a->span_pages)
		return 0;
	if (nstart == nend) {
		bs_free_maps(a);
		return 0;
	}
	for (o = 0; o < BS_TOP_ORDER; o++) {
		size_t longs = bs_map_longs(nend - nstart, o);

		new[o] = memhp_zalloc(max_t(size_t, 1, longs) * sizeof(long));
		if (!new[o]) {
			while (o--)
				memhp_free(new[o]);
			return -ENOMEM;
		}
	}
	for (o = 0; o < BS_TOP_ORDER; o++) {
		unsigned long bits = a->span_pages >> (o + 1), i;
		long delta = ((long)a->span_start - (long)nstart) /
			     (2L << o);

		/*
		 * Bits outside the new span are all clear (removed sections
		 * clear theirs), so whole words may move when they align.
		 */
		if (a->span_pages && !(delta % (long)BS_LONG_BITS)) {
			long dw = delta / (long)BS_LONG_BITS, nw;
			size_t old_longs = bs_map_longs(a->span_pages, o);
			size_t new_longs = bs_map_longs(nend - nstart, o);

			for (i = 0; i < old_longs; i++) {
				nw = (long)i + dw;
				if (nw >= 0 && nw < (long)new_longs)
					new[o][nw] = a->map[o][i];
			}
			bits = 0;
		}
		for (i = 0; i < bits; i++) {
			unsigned long pos = a->span_start + (i << (o + 1));

			if (pos >= nstart && pos < nend &&
			    bs_test_bit(a->map[o], i))
				bs_set_bit(new[o], (pos - nstart) >> (o + 1));
		}
		memhp_free(a->map[o]);
		a->map[o] = new[o];
	}
	a->span_start = nstart;
	a->span_pages = nend - nstart;
	a->stats.bitmap_reallocs++;
	return 0;
}

/* Grow the bitmaps to cover [@start, @end) too. */
static int bs_grow_maps(struct bs_arena *a, unsigned long start,
			unsigned long end)
{
	if (a->span_pages) {
		start = min(start, a->span_start);
		end = max(end, a->span_start + a->span_pages);
	}
	return bs_resize_maps(a, start, end);
}

/* Shrink the bitmaps to the online sections (best effort). */
static void bs_shrink_maps(struct bs_arena *a)
{
	unsigned long start = 0, end = 0;

	if (a->nr_sorted) {
		start = a->sections[a->sorted[0]].base_pfn;
		end = a->sections[a->sorted[a->nr_sorted - 1]].base_pfn +
		      bs_section_pages(a);
	}
	bs_resize_maps(a, start, end);
}

/* The free area a free top-order block of @s belongs to. */
static int bs_home_area(const struct bs_arena *a, const struct bs_section *s)
{
	if (a->mode != BS_MODE_SPLIT)
		return 0;
	return s->hotplug ? BS_AREA_HOTPLUG : BS_AREA_PINNED;
}

int bs_section_add(struct bs_arena *a, unsigned int nr,
		   unsigned long base_pfn, bool hotplug)
{
	unsigned long pages = bs_section_pages(a), off;
	unsigned int i, nblocks = pages >> BS_TOP_ORDER;
	struct bs_section *s;
	int area, ret;

	if (nr >= a->nr_sections || base_pfn % pages ||
	    base_pfn + pages < base_pfn)
		return -EINVAL;
	s = &a->sections[nr];
	if (s->online)
		return -EBUSY;
	for (i = 0; i < a->nr_sorted; i++) {
		struct bs_section *o = &a->sections[a->sorted[i]];

		if (base_pfn < o->base_pfn + pages &&
		    o->base_pfn < base_pfn + pages)
			return -EEXIST;
	}
	s->pages = memhp_zalloc(pages * sizeof(*s->pages));
	s->owner = memhp_zalloc(nblocks);
	if (!s->pages || !s->owner) {
		bs_section_release(s);
		return -ENOMEM;
	}
	if (a->mode == BS_MODE_BITMAP) {
		ret = bs_grow_maps(a, base_pfn, base_pfn + pages);
		if (ret) {
			bs_section_release(s);
			return ret;
		}
	}
	s->present = true;
	s->online = true;
	s->hotplug = hotplug;
	s->base_pfn = base_pfn;
	for (off = 0; off < pages; off++)
		s->pages[off].section = nr;
	area = bs_home_area(a, s);
	for (i = 0; i < nblocks; i++) {
		s->owner[i] = area;
		bs_list_put(a, s, (unsigned long)i << BS_TOP_ORDER,
			    BS_TOP_ORDER, area);
	}
	s->nr_free = pages;
	bs_sorted_insert(a, nr);
	return 0;
}

/* Split the free head @p down to @order; return the allocated head. */
static struct bs_page *bs_take(struct bs_arena *a, struct bs_page *p,
			       unsigned int order, enum bs_type type)
{
	unsigned long off;
	struct bs_section *s = bs_page_section(a, p, &off);
	unsigned int k = p->order;
	int area = p->area;

	bs_list_take(a, p);
	if (a->mode == BS_MODE_BITMAP && k < BS_TOP_ORDER)
		bs_test_and_change_bit(a->map[k], bs_map_index(a, s, off, k));
	while (k > order) {
		k--;
		bs_list_put(a, s, off + (1UL << k), k, area);
		if (a->mode == BS_MODE_BITMAP)
			bs_test_and_change_bit(a->map[k],
					       bs_map_index(a, s, off, k));
	}
	p->flags = BS_PG_HEAD;
	p->order = order;
	p->type = type;
	s->used[type] += 1UL << order;
	s->nr_free -= 1UL << order;
	return p;
}

/* The smallest free block of order >= @order on @area, or NULL. */
static struct bs_page *bs_area_first(struct bs_arena *a, int area,
				     unsigned int order)
{
	for (; order < BS_MAX_ORDER; order++) {
		struct list_head *l = &a->area[area].list[order];

		if (!list_empty(l))
			return list_first_entry(l, struct bs_page, lru);
	}
	return NULL;
}

/* Move a top-order block from global list @g to type area @type. */
static bool bs_refill(struct bs_arena *a, int g, enum bs_type type)
{
	struct list_head *l = &a->area[g].list[BS_TOP_ORDER];
	struct bs_section *s;
	struct bs_page *p;
	unsigned long off;

	if (list_empty(l))
		return false;
	p = list_first_entry(l, struct bs_page, lru);
	s = bs_page_section(a, p, &off);
	bs_list_take(a, p);
	s->owner[off >> BS_TOP_ORDER] = type;
	bs_list_put(a, s, off, BS_TOP_ORDER, type);
	return true;
}

static int bs_type_home(const struct bs_arena *a, enum bs_type type)
{
	if (type == BS_USER_RECLAIMABLE)
		return BS_AREA_HOTPLUG;
	if (type == BS_KERNEL_RECLAIMABLE)
		return a->kreclaim_home;
	return BS_AREA_PINNED;
}

static struct bs_page *bs_alloc_split(struct bs_arena *a, enum bs_type type,
				      unsigned int order)
{
	int home = bs_type_home(a, type), other, t;
	struct bs_page *p;

	p = bs_area_first(a, type, order);
	if (p)
		return p;
	if (bs_refill(a, home, type)) {
		a->stats.refills[type]++;
		return bs_area_first(a, type, order);
	}
	if (a->policy == BS_POLICY_STRICT)
		return NULL;
	/* Fallback: the smallest fitting block of another type, ... */
	for (t = 0; t < BS_NR_TYPES; t++) {
		if (t == type)
			continue;
		p = bs_area_first(a, t, order);
		if (p) {
			a->stats.fallbacks[type]++;
			return p;
		}
	}
	/* ... else a top-order block of the other global list. */
	other = home == BS_AREA_HOTPLUG ? BS_AREA_PINNED : BS_AREA_HOTPLUG;
	if (bs_refill(a, other, type)) {
		a->stats.fallbacks[type]++;
		return bs_area_first(a, type, order);
	}
	return NULL;
}

int bs_alloc(struct bs_arena *a, enum bs_type type, unsigned int order,
	     unsigned long *pfn)
{
	struct bs_section *s;
	struct bs_page *p;
	unsigned long off;

	if (type >= BS_NR_TYPES || order > BS_TOP_ORDER)
		return -EINVAL;
	if (a->mode == BS_MODE_SPLIT)
		p = bs_alloc_split(a, type, order);
	else
		p = bs_area_first(a, 0, order);
	if (!p) {
		a->stats.fails[type]++;
		return -ENOMEM;
	}
	p = bs_take(a, p, order, type);
	s = bs_page_section(a, p, &off);
	*pfn = s->base_pfn + off;
	a->stats.allocs[type]++;
	return 0;
}

/* Free the allocated head at @off of @s, coalescing with its buddies. */
static void bs_free_block(struct bs_arena *a, struct bs_section *s,
			  unsigned long off)
{
	struct bs_page *p = &s->pages[off];
	unsigned int order = p->order;
	int area = 0;

	s->used[p->type] -= 1UL << order;
	s->nr_free += 1UL << order;
	p->flags = 0;
	p->type = 0;
	if (a->mode == BS_MODE_SPLIT)
		area = s->owner[off >> BS_TOP_ORDER];
	while (order < BS_TOP_ORDER) {
		unsigned long boff = off ^ (1UL << order);
		struct bs_page *b = &s->pages[boff];

		if (a->mode == BS_MODE_BITMAP) {
			unsigned long bit = bs_map_index(a, s, off, order);

			/* Old bit 0: the buddy is not free (4.3). */
			if (!bs_test_and_change_bit(a->map[order], bit))
				break;
		} else if (!(b->flags & BS_PG_BUDDY) || b->order != order) {
			/* The no-bitmap test: free and same order (4.4). */
			break;
		}
		bs_list_take(a, b);
		off &= boff;
		order++;
	}
	if (a->mode == BS_MODE_SPLIT && order == BS_TOP_ORDER) {
		area = bs_home_area(a, s);
		s->owner[off >> BS_TOP_ORDER] = area;
	}
	bs_list_put(a, s, off, order, area);
	a->stats.frees++;
}

int bs_free(struct bs_arena *a, unsigned long pfn)
{
	struct bs_section *s = bs_pfn_section(a, pfn);
	unsigned long off;

	if (!s)
		return -ENOENT;
	off = pfn - s->base_pfn;
	if (!(s->pages[off].flags & BS_PG_HEAD))
		return -ENOENT;
	bs_free_block(a, s, off);
	return 0;
}

int bs_set_policy(struct bs_arena *a, enum bs_policy policy)
{
	if (policy >= BS_NR_POLICIES)
		return -EINVAL;
	a->policy = policy;
	return 0;
}

int bs_set_kreclaim_home(struct bs_arena *a, enum bs_area home)
{
	if (home != BS_AREA_PINNED && home != BS_AREA_HOTPLUG)
		return -EINVAL;
	a->kreclaim_home = home;
	return 0;
}

/*
 * Removal verdict: 0 when every page is free or user reclaimable, else
 * -EBUSY and *@blocker the type that pins it (non-reclaimable first).
 */
int bs_section_check(struct bs_arena *a, unsigned int nr, int *blocker)
{
	struct bs_section *s;

	*blocker = -1;
	if (nr >= a->nr_sections)
		return -EINVAL;
	s = &a->sections[nr];
	if (!s->online)
		return -ENOENT;
	if (s->used[BS_KERNEL_NONRECLAIMABLE])
		*blocker = BS_KERNEL_NONRECLAIMABLE;
	else if (s->used[BS_KERNEL_RECLAIMABLE])
		*blocker = BS_KERNEL_RECLAIMABLE;
	return *blocker < 0 ? 0 : -EBUSY;
}

int bs_section_remove(struct bs_arena *a, unsigned int nr, int *blocker)
{
	unsigned long pages = bs_section_pages(a), off;
	struct bs_section *s;
	int ret, o;

	ret = bs_section_check(a, nr, blocker);
	if (ret)
		return ret;
	s = &a->sections[nr];
	/* Reclaim the user pages through the ordinary free path. */
	for (off = 0; off < pages; off++) {
		if (s->pages[off].flags & BS_PG_HEAD) {
			unsigned long n = 1UL << s->pages[off].order;

			bs_free_block(a, s, off);
			a->stats.reclaimed_pages += n;
			off += n - 1;
		}
	}
	/* Now every page is free: unlink the free blocks. */
	for (off = 0; off < pages; off++) {
		struct bs_page *p = &s->pages[off];

		if (p->flags & BS_PG_BUDDY) {
			unsigned long n = 1UL << p->order;

			bs_list_take(a, p);
			off += n - 1;
		}
	}
	if (a->mode == BS_MODE_BITMAP) {
		for (o = 0; o < BS_TOP_ORDER; o++) {
			unsigned long i, first = bs_map_index(a, s, 0, o);

			for (i = 0; i < pages >> (o + 1); i++)
				if (bs_test_bit(a->map[o], first + i))
					bs_test_and_change_bit(a->map[o],
							       first + i);
		}
	}
	bs_sorted_delete(a, nr);
	bs_section_release(s);
	if (a->mode == BS_MODE_BITMAP)
		bs_shrink_maps(a);
	return 0;
}

int bs_arena_reset(struct bs_arena *a, enum bs_mode mode)
{
	unsigned int i;
	int ret = 0;

	if (mode >= BS_NR_MODES)
		return -EINVAL;
	for (i = 0; i < a->nr_sections; i++)
		bs_section_release(&a->sections[i]);
	a->nr_sorted = 0;
	bs_free_maps(a);
	bs_init_lists(a);
	memset(&a->stats, 0, sizeof(a->stats));
	a->mode = mode;
	for (i = 0; i < a->nr_sections; i++) {
		struct bs_section *s = &a->sections[i];

		if (!s->present)
			continue;
		ret = bs_section_add(a, i, s->base_pfn, s->hotplug);
		if (ret)
			break;
	}
	return ret;
}

unsigned long bs_online_pages(const struct bs_arena *a)
{
	return (unsigned long)a->nr_sorted << a->section_shift;
}

unsigned long bs_free_pages(const struct bs_arena *a)
{
	unsigned long n = 0;
	unsigned int i;

	for (i = 0; i < a->nr_sorted; i++)
		n += a->sections[a->sorted[i]].nr_free;
	return n;
}

/* Allocator metadata now: descriptors + owner bytes, and the bitmaps. */
size_t bs_metadata_bytes(const struct bs_arena *a, size_t *bitmap_bytes)
{
	size_t per_sec = bs_section_pages(a) * sizeof(struct bs_page) +
			 (bs_section_pages(a) >> BS_TOP_ORDER);
	size_t maps = 0;
	int o;

	if (a->span_pages)
		for (o = 0; o < BS_TOP_ORDER; o++)
			maps += max_t(size_t, 1,
				      bs_map_longs(a->span_pages, o)) *
				sizeof(long);
	if (bitmap_bytes)
		*bitmap_bytes = maps;
	return per_sec * a->nr_sorted + maps;
}

/* The error of bs_check(), its message printed into msg[len]. */
#define BS_ERR(...) \
	(snprintf(msg, msg ? len : 0, __VA_ARGS__), -EUCLEAN)

static bool bs_is_free(const struct bs_section *s, unsigned long off,
		       unsigned int order)
{
	const struct bs_page *p = &s->pages[off];

	return (p->flags & BS_PG_BUDDY) && p->order == order;
}

/*
 * bs_check() step 1, one free list: each page on list @o of area @ar lies in
 * an online section and is the head of a free block of that order and area,
 * listed once; each is marked BS_PG_SEEN for bs_check_blocks(). *@nr: the
 * pages listed.
 */
static int bs_check_list(struct bs_arena *a, int ar, unsigned int o,
			 unsigned long *nr, char *msg, size_t len)
{
	unsigned long pages = bs_section_pages(a), n = 0;
	struct bs_page *p;

	list_for_each_entry(p, &a->area[ar].list[o], lru) {
		struct bs_section *s;

		if (p->section >= a->nr_sections)
			return BS_ERR("list %s/%u: bad section %u",
				      bs_area_name(ar), o, p->section);
		s = &a->sections[p->section];
		if (!s->online || p < s->pages || p >= s->pages + pages)
			return BS_ERR("list %s/%u: page outside its section",
				      bs_area_name(ar), o);
		if (!(p->flags & BS_PG_BUDDY) || p->order != o ||
		    p->area != ar || (p->flags & BS_PG_SEEN))
			return BS_ERR("list %s/%u: pfn %lu flags %#x o%u a%u",
				      bs_area_name(ar), o,
				      s->base_pfn + (p - s->pages),
				      p->flags, p->order, p->area);
		p->flags |= BS_PG_SEEN;
		n++;
	}
	*nr = n;
	return 0;
}

/*
 * bs_check() step 1, the free lists: every list passes bs_check_list(), its
 * length is its nr_free, only split mode uses an area other than the first,
 * and the global lists hold top-order blocks only. *@listed: the blocks on
 * all lists.
 */
static int bs_check_lists(struct bs_arena *a, unsigned long *listed,
			  char *msg, size_t len)
{
	unsigned long n;
	unsigned int o;
	int ar, ret;

	for (ar = 0; ar < BS_NR_AREAS; ar++) {
		for (o = 0; o < BS_MAX_ORDER; o++) {
			ret = bs_check_list(a, ar, o, &n, msg, len);
			if (ret)
				return ret;
			if (n != a->area[ar].nr_free[o])
				return BS_ERR("list %s/%u: %lu listed, nr_free %lu",
					      bs_area_name(ar), o, n,
					      a->area[ar].nr_free[o]);
			if (n && a->mode != BS_MODE_SPLIT && ar)
				return BS_ERR("mode %s uses area %s",
					      bs_mode_name(a->mode),
					      bs_area_name(ar));
			if (n && ar >= BS_AREA_HOTPLUG && o != BS_TOP_ORDER)
				return BS_ERR("global list %s has order %u",
					      bs_area_name(ar), o);
			*listed += n;
		}
	}
	return 0;
}

/* bs_check() step 2: online sections are sorted by base pfn. */
static int bs_check_sorted(struct bs_arena *a, unsigned int i, char *msg,
			   size_t len)
{
	struct bs_section *s = &a->sections[a->sorted[i]];

	if (i && s->base_pfn <= a->sections[a->sorted[i - 1]].base_pfn)
		return BS_ERR("sorted index out of order at %u", i);
	return 0;
}

/*
 * bs_check() step 4, split mode: the free block at @off, on the list of
 * area p->area, lies in a top-order block that area owns; a global area
 * is the section's home, and holds whole top-order blocks only.
 */
static int bs_check_owner(struct bs_arena *a, struct bs_section *s,
			  unsigned long off, char *msg, size_t len)
{
	struct bs_page *p = &s->pages[off];

	if (a->mode != BS_MODE_SPLIT)
		return 0;
	if (p->area != s->owner[off >> BS_TOP_ORDER])
		return BS_ERR("pfn %lu: on %s, block owned by %s",
			      s->base_pfn + off, bs_area_name(p->area),
			      bs_area_name(s->owner[off >> BS_TOP_ORDER]));
	if (p->area >= BS_AREA_HOTPLUG && p->area != bs_home_area(a, s))
		return BS_ERR("pfn %lu: on %s in a %s section",
			      s->base_pfn + off, bs_area_name(p->area),
			      s->hotplug ? "hotplug" : "pinned");
	if (p->order < BS_TOP_ORDER && p->area >= BS_AREA_HOTPLUG)
		return BS_ERR("pfn %lu: partial block on a global list",
			      s->base_pfn + off);
	return 0;
}

/*
 * bs_check() step 3, the pages of sorted section @i: each is in exactly one
 * block, aligned to its order, allocated (of a valid type) or free; a free
 * block was met on a list in step 1 (its BS_PG_SEEN mark is cleared here)
 * and passes bs_check_owner(). Counts the pages of each type in @used and
 * the free pages in *@nfree; adds the free blocks to *@heads.
 */
static int bs_check_blocks(struct bs_arena *a, unsigned int i,
			   unsigned long used[BS_NR_TYPES],
			   unsigned long *nfree, unsigned long *heads,
			   char *msg, size_t len)
{
	struct bs_section *s = &a->sections[a->sorted[i]];
	unsigned long pages = bs_section_pages(a), off, n;
	int ret;

	memset(used, 0, BS_NR_TYPES * sizeof(*used));
	*nfree = 0;
	for (off = 0; off < pages; off += n) {
		struct bs_page *p = &s->pages[off];
		unsigned long k;

		if (!(p->flags & (BS_PG_BUDDY | BS_PG_HEAD)) ||
		    p->order > BS_TOP_ORDER)
			return BS_ERR("section %u pfn %lu: in no block",
				      a->sorted[i], s->base_pfn + off);
		n = 1UL << p->order;
		if (off & (n - 1))
			return BS_ERR("section %u pfn %lu: misaligned order %u",
				      a->sorted[i], s->base_pfn + off,
				      p->order);
		for (k = 1; k < n; k++)
			if (s->pages[off + k].flags)
				return BS_ERR("section %u pfn %lu: in two blocks",
					      a->sorted[i],
					      s->base_pfn + off + k);
		if (p->flags & BS_PG_HEAD) {
			if (p->type >= BS_NR_TYPES)
				return BS_ERR("pfn %lu: bad type %u",
					      s->base_pfn + off, p->type);
			used[p->type] += n;
			continue;
		}
		if (!(p->flags & BS_PG_SEEN))
			return BS_ERR("section %u pfn %lu: free but on no list",
				      a->sorted[i], s->base_pfn + off);
		p->flags &= ~BS_PG_SEEN;
		(*heads)++;
		*nfree += n;
		ret = bs_check_owner(a, s, off, msg, len);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * bs_check() step 5: sorted section @i's counters agree with the pages
 * bs_check_blocks() counted.
 */
static int bs_check_counters(struct bs_arena *a, unsigned int i,
			     const unsigned long used[BS_NR_TYPES],
			     unsigned long nfree, char *msg, size_t len)
{
	struct bs_section *s = &a->sections[a->sorted[i]];
	int t;

	for (t = 0; t < BS_NR_TYPES; t++)
		if (used[t] != s->used[t])
			return BS_ERR("section %u: %lu %s pages, counter %lu",
				      a->sorted[i], used[t], bs_type_name(t),
				      s->used[t]);
	if (nfree != s->nr_free)
		return BS_ERR("section %u: %lu free pages, counter %lu",
			      a->sorted[i], nfree, s->nr_free);
	return 0;
}

/*
 * bs_check() step 6, bitmap mode: in sorted section @i, each pair's bit is
 * "exactly one buddy free at this order".
 */
static int bs_check_bitmap(struct bs_arena *a, unsigned int i, char *msg,
			   size_t len)
{
	struct bs_section *s = &a->sections[a->sorted[i]];
	unsigned long pages = bs_section_pages(a), off;
	unsigned int o;

	for (o = 0; o < BS_TOP_ORDER; o++) {
		for (off = 0; off < pages; off += 2UL << o) {
			bool want = bs_is_free(s, off, o) ^
				    bs_is_free(s, off + (1UL << o), o);

			if (bs_test_bit(a->map[o],
					bs_map_index(a, s, off, o)) != want)
				return BS_ERR("bitmap order %u pfn %lu: bit %d, want %d",
					      o, s->base_pfn + off, !want,
					      want);
		}
	}
	return 0;
}

/* After a failed bs_check(): leave no scratch marks behind. */
static void bs_check_clear_marks(struct bs_arena *a)
{
	unsigned long pages = bs_section_pages(a), off;
	unsigned int i;

	for (i = 0; i < a->nr_sorted; i++) {
		struct bs_section *s = &a->sections[a->sorted[i]];

		for (off = 0; off < pages; off++)
			s->pages[off].flags &= ~BS_PG_SEEN;
	}
}

/*
 * The invariant check: every page of every online section is in exactly one
 * place (one free block on the list its descriptor names, or one allocated
 * block), the counters agree, split-mode owners agree with the lists, and in
 * bitmap mode each pair's bit is "exactly one buddy free at this order".
 * Returns 0, or -EUCLEAN with the first violation in @msg.
 *
 * Steps, in order (the first violation found is the one reported):
 *  1. the free lists (bs_check_lists()), marking each listed block;
 *  for each online section, in pfn order:
 *  2. the sorted index (bs_check_sorted());
 *  3. every page in exactly one block, each free block marked in step 1
 *     (bs_check_blocks());
 *  4. in split mode, the owner of each free block (bs_check_owner(), from
 *     step 3);
 *  5. the section's counters (bs_check_counters());
 *  6. in bitmap mode, the bitmaps (bs_check_bitmap());
 *  then as many free blocks on the lists as in the sections.
 */
int bs_check(struct bs_arena *a, char *msg, size_t len)
{
	unsigned long used[BS_NR_TYPES], nfree, listed = 0, heads = 0;
	unsigned int i;
	int ret;

	if (msg && len)
		msg[0] = '\0';
	ret = bs_check_lists(a, &listed, msg, len);
	if (ret)
		goto out;
	for (i = 0; i < a->nr_sorted; i++) {
		ret = bs_check_sorted(a, i, msg, len);
		if (ret)
			goto out;
		ret = bs_check_blocks(a, i, used, &nfree, &heads, msg, len);
		if (ret)
			goto out;
		ret = bs_check_counters(a, i, used, nfree, msg, len);
		if (ret)
			goto out;
		if (a->mode != BS_MODE_BITMAP)
			continue;
		ret = bs_check_bitmap(a, i, msg, len);
		if (ret)
			goto out;
	}
	if (heads != listed)
		ret = BS_ERR("%lu listed blocks, %lu free heads in sections",
			     listed, heads);
out:
	if (ret)
		bs_check_clear_marks(a);
	return ret;
}

int bs_workload_valid(const struct bs_workload *w)
{
	int t;

	if (w->max_order > BS_TOP_ORDER || !w->ops || w->ops > 100000000)
		return -EINVAL;
	if (w->mix[0] + (u64)w->mix[1] + w->mix[2] != 100)
		return -EINVAL;
	for (t = 0; t < BS_NR_TYPES; t++)
		if (w->lifetime[t] > (1U << 30))
			return -EINVAL;
	return 0;
}

struct bs_death {
	u64 when;
	unsigned long pfn;
};

static void bs_heap_push(struct bs_death *h, unsigned long *n, u64 when,
			 unsigned long pfn)
{
	unsigned long i = (*n)++;

	while (i) {
		unsigned long parent = (i - 1) / 2;

		if (h[parent].when <= when)
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i].when = when;
	h[i].pfn = pfn;
}

static void bs_heap_pop(struct bs_death *h, unsigned long *n)
{
	struct bs_death last = h[--(*n)];
	unsigned long i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && h[c + 1].when < h[c].when)
			c++;
		if (last.when <= h[c].when)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = last;
}

int bs_workload_run(struct bs_arena *a, const struct bs_workload *w,
		    struct bs_workload_result *res, bs_tick_fn tick,
		    void *arg)
{
	unsigned long cap = bs_online_pages(a) + 1, n = 0, pfn;
	struct bs_death *heap;
	u64 rng = w->seed, step;
	unsigned int i;
	int ret = bs_workload_valid(w), t;

	if (ret)
		return ret;
	memset(res, 0, sizeof(*res));
	heap = memhp_zalloc(cap * sizeof(*heap));
	if (!heap)
		return -ENOMEM;
	for (step = 0; step < w->ops; step++) {
		u32 r, order = 0, life = 0;

		if (tick && !(step & 1023) && tick(arg)) {
			ret = -EINTR;
			break;
		}
		while (n && heap[0].when <= step) {
			if (!bs_free(a, heap[0].pfn))
				res->frees++;
			bs_heap_pop(heap, &n);
		}
		r = bs_rand_below(&rng, 100);
		t = r < w->mix[0] ? 0 : r < w->mix[0] + w->mix[1] ? 1 : 2;
		while (order < w->max_order && (bs_rand(&rng) & 1))
			order++;
		if (w->lifetime[t])
			life = 1 + bs_rand_below(&rng, 2 * w->lifetime[t]);
		if (bs_alloc(a, t, order, &pfn)) {
			res->fails[t]++;
			continue;
		}
		res->allocs[t]++;
		if (life && n < cap)
			bs_heap_push(heap, &n, step + life, pfn);
	}
	memhp_free(heap);
	for (i = 0; i < a->nr_sorted; i++)
		for (t = 0; t < BS_NR_TYPES; t++)
			res->live_pages[t] += a->sections[a->sorted[i]].used[t];
	return ret;
}

unsigned long bs_bench(struct bs_arena *a, enum bs_type type,
		       unsigned int order, unsigned long n, u64 seed,
		       unsigned long *pfns)
{
	unsigned long i, got;

	for (got = 0; got < n; got++)
		if (bs_alloc(a, type, order, &pfns[got]))
			break;
	for (i = got; i > 1; i--) {
		unsigned long j = bs_rand_below(&seed, i), tmp = pfns[i - 1];

		pfns[i - 1] = pfns[j];
		pfns[j] = tmp;
	}
	for (i = 0; i < got; i++)
		bs_free(a, pfns[i]);
	return got;
}
