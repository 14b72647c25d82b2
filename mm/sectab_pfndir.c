// SPDX-License-Identifier: GPL-2.0
/*
 * sectab variant SECTAB_PFNDIR (ours): a directory with one word per chunk
 * of 2^SECTAB_PFNDIR_SHIFT pages (16 MiB), covering pfn 0 up to the highest
 * pfn plugged. A word is
 *
 *	&pfndir_empty		nothing plugged in the chunk (a shared,
 *				never written, empty leaf);
 *	seg | PFNDIR_UNIFORM	one segment covers the whole chunk;
 *	leaf			a mixed chunk: one segment pointer per pfn
 *				(NULL in holes) and a bitmap of the non-NULL
 *				ones.
 *
 * A lookup loads the directory word and, in a mixed chunk, the bitmap word:
 * both small enough to stay in the L1 cache (8 bytes per 16 MiB, 512 bytes
 * per leaf), so a hole is answered before the per-pfn pointer (the flat
 * array's only load) arrives. A hit costs the flat array's loads plus the
 * directory word. Plug and unplug work on any page range; memory is 8 bytes
 * per 16 MiB of address space plus 32.5 KiB per chunk that segments share
 * or only partly fill.
 */
#include "sectab_priv.h"

#define PFNDIR_PAGES	BIT(SECTAB_PFNDIR_SHIFT)
#define PFNDIR_MASK	(PFNDIR_PAGES - 1)
#define PFNDIR_UNIFORM	1UL

struct pfndir_leaf {
	unsigned long present[PFNDIR_PAGES / BITS_PER_LONG];	/* pg != NULL */
	struct sectab_seg *pg[PFNDIR_PAGES];
	unsigned long used;			/* non-NULL entries */
};

/* Empty chunks point here, so a lookup needs no test for them. */
static const struct pfndir_leaf pfndir_empty;

#define PFNDIR_EMPTY	((unsigned long)&pfndir_empty)

struct sectab_pfndir {
	struct sectab t;
	unsigned long *dir;
	unsigned long nr_dir;
};

static struct sectab_pfndir *to_pfndir(const struct sectab *t)
{
	return container_of(t, struct sectab_pfndir, t);
}

/* Whether the word @e is a leaf of this table's own. */
static bool entry_is_leaf(unsigned long e)
{
	return !(e & PFNDIR_UNIFORM) && e != PFNDIR_EMPTY;
}

static int sectab_pfndir_init(struct sectab *t)
{
	return 0;
}

static void sectab_pfndir_fini(struct sectab *t)
{
	struct sectab_pfndir *d = to_pfndir(t);
	unsigned long i;

	for (i = 0; i < d->nr_dir; i++)
		if (entry_is_leaf(d->dir[i]))
			memhp_free((void *)d->dir[i]);
	memhp_free(d->dir);
}

/* Turn chunk @i into a leaf with the same contents (invisible to lookups). */
static int make_leaf(struct sectab *t, unsigned long i)
{
	struct sectab_pfndir *d = to_pfndir(t);
	unsigned long e = d->dir[i], k;
	struct pfndir_leaf *leaf;

	if (entry_is_leaf(e))
		return 0;
	leaf = memhp_zalloc(sizeof(*leaf));
	if (!leaf)
		return -ENOMEM;
	if (e & PFNDIR_UNIFORM) {
		for (k = 0; k < PFNDIR_PAGES; k++)
			leaf->pg[k] = (struct sectab_seg *)(e - PFNDIR_UNIFORM);
		memset(leaf->present, 0xff, sizeof(leaf->present));
		leaf->used = PFNDIR_PAGES;
	}
	t->index_bytes += sizeof(*leaf);
	d->dir[i] = (unsigned long)leaf;
	return 0;
}

static void set_entry(struct sectab *t, unsigned long i, unsigned long e)
{
	struct sectab_pfndir *d = to_pfndir(t);

	if (entry_is_leaf(d->dir[i])) {
		memhp_free((void *)d->dir[i]);
		t->index_bytes -= sizeof(struct pfndir_leaf);
	}
	d->dir[i] = e;
}

static int sectab_pfndir_prepare(struct sectab *t, unsigned long start,
				 unsigned long end, unsigned int new_segs)
{
	struct sectab_pfndir *d = to_pfndir(t);
	unsigned long first = start >> SECTAB_PFNDIR_SHIFT;
	unsigned long last = (end - 1) >> SECTAB_PFNDIR_SHIFT;
	int ret;

	if (last >= d->nr_dir) {
		unsigned long max = DIV_ROUND_UP(t->p.max_pfn, PFNDIR_PAGES);
		unsigned long nr = max(last + 1, min(d->nr_dir * 2, max));
		unsigned long *dir = memhp_zalloc(nr * sizeof(*dir)), k;

		if (!dir)
			return -ENOMEM;
		if (d->nr_dir)
			memcpy(dir, d->dir, d->nr_dir * sizeof(*dir));
		for (k = d->nr_dir; k < nr; k++)
			dir[k] = PFNDIR_EMPTY;
		memhp_free(d->dir);
		t->index_bytes += (nr - d->nr_dir) * sizeof(*dir);
		d->dir = dir;
		d->nr_dir = nr;
	}

	/* Only the chunks at the ends can be partly covered. */
	if (start & PFNDIR_MASK || (first == last && end & PFNDIR_MASK)) {
		ret = make_leaf(t, first);
		if (ret)
			return ret;
	}
	if (last != first && end & PFNDIR_MASK)
		return make_leaf(t, last);
	return 0;
}

/* Back to a compact word if a leaf became empty or uniform. */
static void normalize(struct sectab *t, unsigned long i)
{
	struct pfndir_leaf *leaf = (struct pfndir_leaf *)to_pfndir(t)->dir[i];
	unsigned long k;

	if (!leaf->used) {
		set_entry(t, i, PFNDIR_EMPTY);
		return;
	}
	if (leaf->used != PFNDIR_PAGES)
		return;
	for (k = 1; k < PFNDIR_PAGES; k++)
		if (leaf->pg[k] != leaf->pg[0])
			return;
	set_entry(t, i, (unsigned long)leaf->pg[0] | PFNDIR_UNIFORM);
}

static void sectab_pfndir_paint(struct sectab *t, unsigned long a, unsigned long b,
				struct sectab_seg *seg)
{
	struct sectab_pfndir *d = to_pfndir(t);
	unsigned long i, last = (b - 1) >> SECTAB_PFNDIR_SHIFT;

	for (i = a >> SECTAB_PFNDIR_SHIFT; i <= last; i++) {
		unsigned long lo = max(a, i << SECTAB_PFNDIR_SHIFT);
		unsigned long hi = min(b, (i + 1) << SECTAB_PFNDIR_SHIFT);
		struct pfndir_leaf *leaf;

		if (hi - lo == PFNDIR_PAGES) {
			set_entry(t, i, seg ? (unsigned long)seg |
					      PFNDIR_UNIFORM : PFNDIR_EMPTY);
			continue;
		}
		/* prepare() made every partly covered chunk a leaf. */
		if (memhp_warn_on(!entry_is_leaf(d->dir[i])))
			continue;
		leaf = (struct pfndir_leaf *)d->dir[i];
		for (; lo < hi; lo++) {
			unsigned long k = lo & PFNDIR_MASK;
			unsigned long *w = &leaf->present[k / BITS_PER_LONG];

			leaf->used += !!seg - !!leaf->pg[k];
			leaf->pg[k] = seg;
			if (seg)
				*w |= BIT(k % BITS_PER_LONG);
			else
				*w &= ~BIT(k % BITS_PER_LONG);
		}
	}
}

static void sectab_pfndir_commit(struct sectab *t, unsigned long start,
				 unsigned long end)
{
	struct sectab_pfndir *d = to_pfndir(t);
	unsigned long i, last = (end - 1) >> SECTAB_PFNDIR_SHIFT;

	sectab_walk_pieces(t, sectab_pfndir_paint, start, end);
	for (i = start >> SECTAB_PFNDIR_SHIFT; i <= last; i++)
		if (entry_is_leaf(d->dir[i]))
			normalize(t, i);
}

struct sectab_seg *sectab_pfndir_find(const struct sectab *t,
				      unsigned long pfn, unsigned long *offp)
{
	const struct sectab_pfndir *d = to_pfndir(t);
	unsigned long i = pfn >> SECTAB_PFNDIR_SHIFT, e;
	struct sectab_seg *seg;

	if (i >= d->nr_dir)
		return NULL;
	e = d->dir[i];
	if (likely(!(e & PFNDIR_UNIFORM))) {
		const struct pfndir_leaf *leaf = (const struct pfndir_leaf *)e;
		unsigned long k = pfn & PFNDIR_MASK;

		/* The bitmap answers holes from a line that stays in L1. */
		if (!(leaf->present[k / BITS_PER_LONG] &
		      BIT(k % BITS_PER_LONG)))
			return NULL;
		seg = leaf->pg[k];
	} else {
		seg = (struct sectab_seg *)(e - PFNDIR_UNIFORM);
	}
	*offp = pfn - seg->start;
	return seg;
}

const struct sectab_ops sectab_pfndir_ops = {
	.name = "pfndir",
	.size = sizeof(struct sectab_pfndir),
	.init = sectab_pfndir_init,
	.fini = sectab_pfndir_fini,
	.prepare = sectab_pfndir_prepare,
	.commit = sectab_pfndir_commit,
	.find = sectab_pfndir_find,
};
