// SPDX-License-Identifier: GPL-2.0
/*
 * sectab variant SECTAB_FLAT: one segment pointer per pfn, from pfn 0 to the
 * highest pfn ever plugged, so a lookup is one indexed load (plus the
 * descriptor's start for the offset). This is the vmemmap-like lower bound;
 * its memory grows with the highest pfn, holes included.
 */
#include "sectab_priv.h"

struct sectab_flat {
	struct sectab t;
	struct sectab_seg **map;
	unsigned long nr;		/* entries in map */
};

static struct sectab_flat *to_flat(const struct sectab *t)
{
	return container_of(t, struct sectab_flat, t);
}

static int sectab_flat_init(struct sectab *t)
{
	return 0;
}

static void sectab_flat_fini(struct sectab *t)
{
	memhp_free(to_flat(t)->map);
}

static int sectab_flat_prepare(struct sectab *t, unsigned long start,
			       unsigned long end, unsigned int new_segs)
{
	struct sectab_flat *f = to_flat(t);
	struct sectab_seg **map;
	unsigned long nr;

	if (end <= f->nr)
		return 0;
	nr = max(end, min(f->nr * 2, t->p.max_pfn));
	map = memhp_zalloc(nr * sizeof(*map));
	if (!map)
		return -ENOMEM;
	if (f->nr)
		memcpy(map, f->map, f->nr * sizeof(*map));
	memhp_free(f->map);
	f->map = map;
	f->nr = nr;
	t->index_bytes = nr * sizeof(*map);
	return 0;
}

static void sectab_flat_paint(struct sectab *t, unsigned long a, unsigned long b,
			      struct sectab_seg *seg)
{
	struct sectab_flat *f = to_flat(t);

	for (; a < b; a++)
		f->map[a] = seg;
}

static void sectab_flat_commit(struct sectab *t, unsigned long start,
			       unsigned long end)
{
	sectab_walk_pieces(t, sectab_flat_paint, start, end);
}

struct sectab_seg *sectab_flat_find(const struct sectab *t,
				    unsigned long pfn, unsigned long *offp)
{
	const struct sectab_flat *f = to_flat(t);
	struct sectab_seg *seg;

	if (pfn >= f->nr)
		return NULL;
	seg = f->map[pfn];
	if (seg)
		*offp = pfn - seg->start;
	return seg;
}

const struct sectab_ops sectab_flat_ops = {
	.name = "flat",
	.size = sizeof(struct sectab_flat),
	.init = sectab_flat_init,
	.fini = sectab_flat_fini,
	.prepare = sectab_flat_prepare,
	.commit = sectab_flat_commit,
	.find = sectab_flat_find,
};
