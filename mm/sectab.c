// SPDX-License-Identifier: GPL-2.0
/*
 * sectab: common part. Owns the segment descriptors, their handles and the
 * ordered tree; validates every request before anything changes; lets the
 * variant (sectab_<kind>.c) keep its lookup structure in step.
 */
#include "sectab_priv.h"

static const struct sectab_ops *const sectab_kinds[SECTAB_NR_KINDS] = {
	[SECTAB_ARRAY] = &sectab_array_ops,
	[SECTAB_RBTREE] = &sectab_rbtree_ops,
	[SECTAB_SPARSE] = &sectab_sparse_ops,
	[SECTAB_FLAT] = &sectab_flat_ops,
	[SECTAB_PFNDIR] = &sectab_pfndir_ops,
};

const char *sectab_kind_name(enum sectab_kind kind)
{
	if ((unsigned int)kind >= SECTAB_NR_KINDS)
		return "?";
	return sectab_kinds[kind]->name;
}

int sectab_create(struct sectab **tp, enum sectab_kind kind,
		  const struct sectab_params *params)
{
	const struct sectab_ops *ops;
	struct sectab *t;
	int ret;

	*tp = NULL;
	if ((unsigned int)kind >= SECTAB_NR_KINDS)
		return -EINVAL;
	ops = sectab_kinds[kind];

	t = memhp_zalloc(ops->size);
	if (!t)
		return -ENOMEM;
	t->ops = ops;
	t->kind = kind;
	if (params)
		t->p = *params;
	if (!t->p.max_pfn || t->p.max_pfn > SECTAB_MAX_PFN_DEFAULT)
		t->p.max_pfn = SECTAB_MAX_PFN_DEFAULT;
	if (!t->p.max_segs)
		t->p.max_segs = SECTAB_ARRAY_MAX_DEFAULT;
	t->tree = RB_ROOT_CACHED;

	ret = ops->init(t);
	if (ret) {
		memhp_free(t);
		return ret;
	}
	*tp = t;
	return 0;
}

void sectab_destroy(struct sectab *t)
{
	struct rb_node *n;

	if (!t)
		return;
	t->ops->fini(t);
	while ((n = rb_first_cached(&t->tree))) {
		rb_erase_cached(n, &t->tree);
		memhp_free(rb_entry(n, struct sectab_seg, node));
	}
	memhp_free(t->slots);
	memhp_free(t);
}

enum sectab_kind sectab_get_kind(const struct sectab *t)
{
	return t->kind;
}

/* Handles: (generation << 32) | slot index; generations start at 1. */
static u64 slot_handle(const struct sectab *t, u32 idx)
{
	return ((u64)t->slots[idx].gen << 32) | idx;
}

struct sectab_seg *sectab_get(const struct sectab *t, u64 h)
{
	u32 idx = (u32)h;
	u32 gen = (u32)(h >> 32);

	if (!gen || idx >= t->nr_slots || t->slots[idx].gen != gen)
		return NULL;
	return t->slots[idx].seg;
}

bool sectab_valid(const struct sectab *t, u64 h)
{
	return !!sectab_get(t, h);
}

/* Make sure one slot is free: may grow the slot table. */
static int slot_reserve(struct sectab *t)
{
	struct sectab_slot *slots;
	u32 nr, i;

	if (t->free_slot)
		return 0;
	nr = t->nr_slots ? t->nr_slots * 2 : 16;
	if (nr <= t->nr_slots)
		return -ENOSPC;
	slots = memhp_zalloc(nr * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	if (t->nr_slots)
		memcpy(slots, t->slots, t->nr_slots * sizeof(*slots));
	for (i = t->nr_slots; i < nr; i++) {
		slots[i].gen = 1;
		slots[i].next_free = i + 1 < nr ? i + 2 : 0;
	}
	memhp_free(t->slots);
	t->slots = slots;
	t->free_slot = t->nr_slots + 1;
	t->nr_slots = nr;
	return 0;
}

/* Needs a reserved slot. */
static void slot_attach(struct sectab *t, struct sectab_seg *seg)
{
	u32 idx = t->free_slot - 1;

	t->free_slot = t->slots[idx].next_free;
	t->slots[idx].seg = seg;
	seg->handle = slot_handle(t, idx);
}

static void slot_detach(struct sectab *t, struct sectab_seg *seg)
{
	u32 idx = (u32)seg->handle;

	t->slots[idx].seg = NULL;
	t->slots[idx].gen++;
	if (!t->slots[idx].gen)		/* never hand out generation 0 */
		t->slots[idx].gen = 1;
	t->slots[idx].next_free = t->free_slot;
	t->free_slot = idx + 1;
	seg->handle = SECTAB_INVALID;
}

struct sectab_seg *sectab_floor(const struct sectab *t, unsigned long pfn)
{
	struct rb_node *n = t->tree.rb_root.rb_node;
	struct sectab_seg *best = NULL;

	while (n) {
		struct sectab_seg *seg = rb_entry(n, struct sectab_seg, node);

		if (pfn < seg->start) {
			n = n->rb_left;
		} else {
			best = seg;
			n = n->rb_right;
		}
	}
	return best;
}

static void tree_insert(struct sectab *t, struct sectab_seg *seg)
{
	struct rb_node **link = &t->tree.rb_root.rb_node, *parent = NULL;
	bool leftmost = true;

	while (*link) {
		struct sectab_seg *cur = rb_entry(*link, struct sectab_seg,
						  node);

		parent = *link;
		if (seg->start < cur->start) {
			link = &parent->rb_left;
		} else {
			link = &parent->rb_right;
			leftmost = false;
		}
	}
	rb_link_node(&seg->node, parent, link);
	rb_insert_color_cached(&seg->node, &t->tree, leftmost);
}

void sectab_walk_pieces(struct sectab *t, sectab_piece_fn_t fn,
			unsigned long start, unsigned long end)
{
	struct sectab_seg *seg = sectab_floor(t, start);
	unsigned long pos = start;

	if (seg && seg->end <= start)
		seg = sectab_seg_next(seg);
	else if (!seg && !RB_EMPTY_ROOT(&t->tree.rb_root))
		seg = rb_entry(rb_first_cached(&t->tree), struct sectab_seg,
			       node);

	while (pos < end) {
		if (!seg || seg->start >= end) {
			fn(t, pos, end, NULL);
			return;
		}
		if (seg->start > pos) {
			fn(t, pos, seg->start, NULL);
			pos = seg->start;
		}
		fn(t, pos, min(seg->end, end), seg);
		pos = min(seg->end, end);
		seg = sectab_seg_next(seg);
	}
}

int sectab_plug(struct sectab *t, unsigned long pfn, unsigned long npages,
		void *pgs, u64 *handlep)
{
	struct sectab_seg *seg, *prev;
	unsigned long end = pfn + npages;
	int ret;

	if (!npages)
		return -EINVAL;
	if (end < pfn || end > t->p.max_pfn)
		return -ERANGE;
	prev = sectab_floor(t, end - 1);
	if (prev && prev->end > pfn)
		return -EEXIST;

	ret = slot_reserve(t);
	if (ret)
		return ret;
	seg = memhp_zalloc(sizeof(*seg));
	if (!seg)
		return -ENOMEM;
	ret = t->ops->prepare(t, pfn, end, 1);
	if (ret) {
		memhp_free(seg);
		return ret;
	}

	seg->start = pfn;
	seg->end = end;
	seg->pgs = pgs;
	slot_attach(t, seg);
	tree_insert(t, seg);
	t->nr_segs++;
	t->nr_pages += npages;
	t->ops->commit(t, pfn, end);

	if (handlep)
		*handlep = seg->handle;
	return 0;
}

static void *pgs_at(const struct sectab *t, const struct sectab_seg *seg,
		    unsigned long off)
{
	if (!seg->pgs)
		return NULL;
	return (char *)seg->pgs + off * t->p.pg_size;
}

int sectab_unplug(struct sectab *t, unsigned long pfn, unsigned long npages)
{
	unsigned long end = pfn + npages, seg_start, seg_end;
	struct sectab_seg *seg, *tail;
	int ret;

	if (!npages || end < pfn)
		return -EINVAL;
	seg = sectab_floor(t, pfn);
	if (!seg || seg->end <= pfn)
		return -ENOENT;
	if (end > seg->end)
		return -EINVAL;
	seg_start = seg->start;
	seg_end = seg->end;

	if (pfn == seg_start && end == seg_end) {
		/* Whole segment: its handle dies. */
		ret = t->ops->prepare(t, pfn, end, 0);
		if (ret)
			return ret;
		rb_erase_cached(&seg->node, &t->tree);
		slot_detach(t, seg);
		t->nr_segs--;
		t->nr_pages -= npages;
		t->ops->commit(t, pfn, end);
		memhp_free(seg);
		return 0;
	}

	if (pfn == seg_start || end == seg_end) {
		/* Front or back: the segment shrinks, same handle. */
		ret = t->ops->prepare(t, pfn, end, 0);
		if (ret)
			return ret;
		t->nr_pages -= npages;
		if (pfn == seg_start) {
			/* A new key, but the order of the tree is unchanged. */
			seg->pgs = pgs_at(t, seg, npages);
			seg->start = end;
			/* Offsets in the rest changed: indexes may cache them. */
			t->ops->commit(t, pfn, seg_end);
		} else {
			seg->end = pfn;
			t->ops->commit(t, pfn, end);
		}
		return 0;
	}

	/* Middle: [seg_start, pfn) keeps the handle, the tail is new. */
	ret = slot_reserve(t);
	if (ret)
		return ret;
	tail = memhp_zalloc(sizeof(*tail));
	if (!tail)
		return -ENOMEM;
	ret = t->ops->prepare(t, pfn, end, 1);
	if (!ret)
		ret = t->ops->prepare(t, end, seg_end, 1);
	if (ret) {
		memhp_free(tail);
		return ret;
	}
	tail->start = end;
	tail->end = seg_end;
	tail->pgs = pgs_at(t, seg, end - seg_start);
	seg->end = pfn;
	slot_attach(t, tail);
	tree_insert(t, tail);
	t->nr_segs++;
	t->nr_pages -= npages;
	t->ops->commit(t, pfn, seg_end);
	return 0;
}

struct sectab_seg *sectab_find(const struct sectab *t, unsigned long pfn,
			       unsigned long *offp)
{
	unsigned long off;
	struct sectab_seg *seg = t->ops->find(t, pfn, &off);

	if (seg && offp)
		*offp = off;
	return seg;
}

void *sectab_pfn_to_pg(const struct sectab *t, unsigned long pfn)
{
	unsigned long off;
	struct sectab_seg *seg = t->ops->find(t, pfn, &off);

	return seg ? pgs_at(t, seg, off) : NULL;
}

unsigned long sectab_start(const struct sectab *t, u64 h)
{
	struct sectab_seg *seg = sectab_get(t, h);

	return seg ? seg->start : SECTAB_BAD_PFN;
}

unsigned long sectab_end(const struct sectab *t, u64 h)
{
	struct sectab_seg *seg = sectab_get(t, h);

	return seg ? seg->end : SECTAB_BAD_PFN;
}

u64 sectab_first(const struct sectab *t)
{
	struct rb_node *n = rb_first_cached(&t->tree);

	return n ? rb_entry(n, struct sectab_seg, node)->handle : SECTAB_EMPTY;
}

u64 sectab_last(const struct sectab *t)
{
	struct rb_node *n = rb_last(&t->tree.rb_root);

	return n ? rb_entry(n, struct sectab_seg, node)->handle : SECTAB_EMPTY;
}

u64 sectab_next(const struct sectab *t, u64 h)
{
	struct sectab_seg *seg = sectab_get(t, h);
	struct rb_node *n;

	if (!seg)
		return SECTAB_INVALID;
	n = rb_next(&seg->node);
	return n ? rb_entry(n, struct sectab_seg, node)->handle :
		   SECTAB_OVERFLOW;
}

u64 sectab_prev(const struct sectab *t, u64 h)
{
	struct sectab_seg *seg = sectab_get(t, h);
	struct rb_node *n;

	if (!seg)
		return SECTAB_INVALID;
	n = rb_prev(&seg->node);
	return n ? rb_entry(n, struct sectab_seg, node)->handle : SECTAB_EMPTY;
}

unsigned long sectab_nr_segs(const struct sectab *t)
{
	return t->nr_segs;
}

unsigned long sectab_nr_pages(const struct sectab *t)
{
	return t->nr_pages;
}

unsigned long sectab_highest_pfn(const struct sectab *t)
{
	struct rb_node *n = rb_last(&t->tree.rb_root);

	return n ? rb_entry(n, struct sectab_seg, node)->end - 1 :
		   SECTAB_BAD_PFN;
}

size_t sectab_index_bytes(const struct sectab *t)
{
	return t->index_bytes;
}

size_t sectab_desc_bytes(const struct sectab *t)
{
	return t->nr_segs * sizeof(struct sectab_seg) +
	       t->nr_slots * sizeof(struct sectab_slot);
}
