// SPDX-License-Identifier: GPL-2.0
/*
 * sectab variant SECTAB_SPARSE: Linux's classic SPARSEMEM_EXTREME layout.
 * A root array of pointers to pages of mem_section entries, one entry per
 * 2^SECTAB_SECTION_SHIFT pages (128 MiB on x86-64), as __nr_to_section():
 *
 *	root = roots[nr / SECTIONS_PER_ROOT];	(NULL: nothing there)
 *	ms = &root[nr % SECTIONS_PER_ROOT];
 *
 * Linux maps a section to one mem_map and tracks 2 MiB subsections; to keep
 * page-granular plug/unplug, a section here holds the sorted list of the
 * segments that intersect it (one in the common case), binary-searched.
 * Root pages stay allocated once used, like mem_section[] roots.
 */
#include "sectab_priv.h"

struct sectab_mem_section {
	struct sectab_seg **segs;	/* sorted by start */
	u32 nr;
	u32 cap;
};

#define SECTAB_SECTIONS_PER_ROOT	(4096 / sizeof(struct sectab_mem_section))
#define SECTAB_PAGES_PER_SECTION	BIT(SECTAB_SECTION_SHIFT)

struct sectab_sparse {
	struct sectab t;
	struct sectab_mem_section **roots;
	unsigned long nr_roots;
	unsigned long nr_sections;
};

static struct sectab_sparse *to_sparse(const struct sectab *t)
{
	return container_of(t, struct sectab_sparse, t);
}

static int sectab_sparse_init(struct sectab *t)
{
	struct sectab_sparse *s = to_sparse(t);

	s->nr_sections = DIV_ROUND_UP(t->p.max_pfn, SECTAB_PAGES_PER_SECTION);
	s->nr_roots = DIV_ROUND_UP(s->nr_sections, SECTAB_SECTIONS_PER_ROOT);
	s->roots = memhp_zalloc(s->nr_roots * sizeof(*s->roots));
	if (!s->roots)
		return -ENOMEM;
	t->index_bytes = s->nr_roots * sizeof(*s->roots);
	return 0;
}

static void sectab_sparse_fini(struct sectab *t)
{
	struct sectab_sparse *s = to_sparse(t);
	unsigned long r, i;

	for (r = 0; r < s->nr_roots; r++) {
		if (!s->roots[r])
			continue;
		for (i = 0; i < SECTAB_SECTIONS_PER_ROOT; i++)
			memhp_free(s->roots[r][i].segs);
		memhp_free(s->roots[r]);
	}
	memhp_free(s->roots);
}

/* Grow the section's list so it can hold @need segments. */
static int section_reserve(struct sectab *t, struct sectab_mem_section *ms,
			   u32 need)
{
	struct sectab_seg **segs;
	u32 cap = ms->cap ? ms->cap : 2;

	if (need <= ms->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	segs = memhp_zalloc(cap * sizeof(*segs));
	if (!segs)
		return -ENOMEM;
	if (ms->nr)
		memcpy(segs, ms->segs, ms->nr * sizeof(*segs));
	memhp_free(ms->segs);
	t->index_bytes += (cap - ms->cap) * sizeof(*segs);
	ms->segs = segs;
	ms->cap = cap;
	return 0;
}

static int sectab_sparse_prepare(struct sectab *t, unsigned long start,
				 unsigned long end, unsigned int new_segs)
{
	struct sectab_sparse *s = to_sparse(t);
	unsigned long nr, last = (end - 1) >> SECTAB_SECTION_SHIFT;
	int ret;

	for (nr = start >> SECTAB_SECTION_SHIFT; nr <= last; nr++) {
		unsigned long r = nr / SECTAB_SECTIONS_PER_ROOT;
		struct sectab_mem_section *ms;

		if (!s->roots[r]) {
			s->roots[r] = memhp_zalloc(SECTAB_SECTIONS_PER_ROOT *
						   sizeof(*ms));
			if (!s->roots[r])
				return -ENOMEM;
			t->index_bytes += SECTAB_SECTIONS_PER_ROOT *
					  sizeof(*ms);
		}
		ms = &s->roots[r][nr % SECTAB_SECTIONS_PER_ROOT];
		ret = section_reserve(t, ms, ms->nr + new_segs);
		if (ret)
			return ret;
	}
	return 0;
}

/* Rebuild the lists of the sections [start, end) touches from the tree. */
static void sectab_sparse_commit(struct sectab *t, unsigned long start,
				 unsigned long end)
{
	struct sectab_sparse *s = to_sparse(t);
	unsigned long nr, last = (end - 1) >> SECTAB_SECTION_SHIFT;

	for (nr = start >> SECTAB_SECTION_SHIFT; nr <= last; nr++) {
		unsigned long lo = nr << SECTAB_SECTION_SHIFT;
		unsigned long hi = lo + SECTAB_PAGES_PER_SECTION;
		struct sectab_mem_section *ms;
		struct sectab_seg *seg;
		u32 n = 0;

		ms = &s->roots[nr / SECTAB_SECTIONS_PER_ROOT]
			      [nr % SECTAB_SECTIONS_PER_ROOT];
		seg = sectab_floor(t, lo);
		if (seg && seg->end <= lo)
			seg = sectab_seg_next(seg);
		else if (!seg && !RB_EMPTY_ROOT(&t->tree.rb_root))
			seg = rb_entry(rb_first_cached(&t->tree),
				       struct sectab_seg, node);
		for (; seg && seg->start < hi; seg = sectab_seg_next(seg)) {
			if (memhp_warn_on(n >= ms->cap))
				break;
			ms->segs[n++] = seg;
		}
		ms->nr = n;
		if (!n && ms->cap) {
			t->index_bytes -= ms->cap * sizeof(*ms->segs);
			memhp_free(ms->segs);
			ms->segs = NULL;
			ms->cap = 0;
		}
	}
}

struct sectab_seg *sectab_sparse_find(const struct sectab *t,
				      unsigned long pfn, unsigned long *offp)
{
	const struct sectab_sparse *s = to_sparse(t);
	unsigned long nr = pfn >> SECTAB_SECTION_SHIFT;
	const struct sectab_mem_section *root, *ms;
	u32 lo, hi;

	if (nr >= s->nr_sections)
		return NULL;
	root = s->roots[nr / SECTAB_SECTIONS_PER_ROOT];
	if (!root)
		return NULL;
	ms = &root[nr % SECTAB_SECTIONS_PER_ROOT];
	lo = 0;
	hi = ms->nr;
	while (lo < hi) {
		u32 mid = (lo + hi) / 2;
		struct sectab_seg *seg = ms->segs[mid];

		if (pfn < seg->start) {
			hi = mid;
		} else if (pfn >= seg->end) {
			lo = mid + 1;
		} else {
			*offp = pfn - seg->start;
			return seg;
		}
	}
	return NULL;
}

const struct sectab_ops sectab_sparse_ops = {
	.name = "sparse",
	.size = sizeof(struct sectab_sparse),
	.init = sectab_sparse_init,
	.fini = sectab_sparse_fini,
	.prepare = sectab_sparse_prepare,
	.commit = sectab_sparse_commit,
	.find = sectab_sparse_find,
};
