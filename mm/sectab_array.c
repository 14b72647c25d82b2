// SPDX-License-Identifier: GPL-2.0
/*
 * sectab variant SECTAB_ARRAY: a sorted array of at most max_segs entries
 * searched by binary search, as NetBSD's vm_physmem[VM_PHYSSEG_MAX] with
 * VM_PSTRAT_BSEARCH (the baseline of the uvm_hotplug paper). The key array
 * keeps start/end inline, so a lookup touches only the array; the segment
 * descriptors (and so the handles) never move.
 */
#include "sectab_priv.h"

struct sectab_key {
	unsigned long start;
	unsigned long end;
	struct sectab_seg *seg;
};

struct sectab_array {
	struct sectab t;
	struct sectab_key *keys;	/* max_segs entries, sorted by start */
	unsigned int nr;
};

static struct sectab_array *to_array(const struct sectab *t)
{
	return container_of(t, struct sectab_array, t);
}

static int sectab_array_init(struct sectab *t)
{
	struct sectab_array *a = to_array(t);

	a->keys = memhp_zalloc(t->p.max_segs * sizeof(*a->keys));
	if (!a->keys)
		return -ENOMEM;
	t->index_bytes = t->p.max_segs * sizeof(*a->keys);
	return 0;
}

static void sectab_array_fini(struct sectab *t)
{
	memhp_free(to_array(t)->keys);
}

static int sectab_array_prepare(struct sectab *t, unsigned long start,
				unsigned long end, unsigned int new_segs)
{
	if (t->nr_segs + new_segs > t->p.max_segs)
		return -ENOSPC;
	return 0;
}

/* Rebuild the array from the ordered tree (at most max_segs entries). */
static void sectab_array_commit(struct sectab *t, unsigned long start,
				unsigned long end)
{
	struct sectab_array *a = to_array(t);
	struct rb_node *n;
	unsigned int i = 0;

	for (n = rb_first_cached(&t->tree); n; n = rb_next(n)) {
		struct sectab_seg *seg = rb_entry(n, struct sectab_seg, node);

		if (memhp_warn_on(i >= t->p.max_segs))
			break;
		a->keys[i].start = seg->start;
		a->keys[i].end = seg->end;
		a->keys[i].seg = seg;
		i++;
	}
	a->nr = i;
}

/* vm_physseg_find_bsearch(): halve len, "adjust" it when going right. */
struct sectab_seg *sectab_array_find(const struct sectab *t,
				     unsigned long pfn, unsigned long *offp)
{
	const struct sectab_array *a = to_array(t);
	const struct sectab_key *keys = a->keys;
	unsigned int start = 0, len, try;

	for (len = a->nr; len != 0; len = len / 2) {
		try = start + len / 2;
		if (pfn >= keys[try].start && pfn < keys[try].end) {
			*offp = pfn - keys[try].start;
			return keys[try].seg;
		}
		if (pfn > keys[try].start) {
			start = try + 1;
			len--;
		}
	}
	return NULL;
}

const struct sectab_ops sectab_array_ops = {
	.name = "array",
	.size = sizeof(struct sectab_array),
	.init = sectab_array_init,
	.fini = sectab_array_fini,
	.prepare = sectab_array_prepare,
	.commit = sectab_array_commit,
	.find = sectab_array_find,
};
