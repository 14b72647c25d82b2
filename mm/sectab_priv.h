/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sectab internals shared by the common code (sectab.c) and the variants
 * (sectab_<kind>.c). Not for users of the table.
 */
#ifndef _MEMHP_SECTAB_PRIV_H
#define _MEMHP_SECTAB_PRIV_H

#include "sectab.h"

struct sectab_slot {
	struct sectab_seg *seg;		/* NULL: free */
	u32 gen;			/* bumped when freed */
	u32 next_free;			/* free list: index + 1, 0 ends */
};

/*
 * A variant changes its index in two steps around every change of the
 * ordered tree:
 *  - prepare(start, end, new_segs) before it: allocate whatever the variant
 *    needs so that the pfns of [start, end) can afterwards be owned by any
 *    mix of segments, @new_segs more segments in total. It may fail; what it
 *    allocated then stays but changes nothing a lookup can see.
 *  - commit(start, end) after it: make lookups of [start, end) match the
 *    tree. It cannot fail.
 */
struct sectab_ops {
	const char *name;
	size_t size;			/* of the variant's struct */
	int (*init)(struct sectab *t);
	void (*fini)(struct sectab *t);
	int (*prepare)(struct sectab *t, unsigned long start,
		       unsigned long end, unsigned int new_segs);
	void (*commit)(struct sectab *t, unsigned long start,
		       unsigned long end);
	struct sectab_seg *(*find)(const struct sectab *t, unsigned long pfn,
				   unsigned long *offp);
};

/* Every variant's struct starts with this. */
struct sectab {
	const struct sectab_ops *ops;
	enum sectab_kind kind;
	struct sectab_params p;
	struct rb_root_cached tree;	/* all segments, ordered by start */
	unsigned long nr_segs;
	unsigned long nr_pages;
	struct sectab_slot *slots;
	u32 nr_slots;
	u32 free_slot;			/* index + 1 of a free slot, or 0 */
	size_t index_bytes;		/* maintained by the variant */
};

extern const struct sectab_ops sectab_array_ops;
extern const struct sectab_ops sectab_rbtree_ops;
extern const struct sectab_ops sectab_sparse_ops;
extern const struct sectab_ops sectab_flat_ops;
extern const struct sectab_ops sectab_pfndir_ops;

/* The segment with the greatest start <= @pfn, or NULL. */
struct sectab_seg *sectab_floor(const struct sectab *t, unsigned long pfn);

static inline struct sectab_seg *sectab_seg_next(struct sectab_seg *seg)
{
	struct rb_node *n = rb_next(&seg->node);

	return n ? rb_entry(n, struct sectab_seg, node) : NULL;
}

/*
 * Call @fn for consecutive pieces [a, b) covering [start, end): @seg is the
 * segment owning the piece, or NULL for a hole.
 */
typedef void (*sectab_piece_fn_t)(struct sectab *t, unsigned long a,
				unsigned long b, struct sectab_seg *seg);
void sectab_walk_pieces(struct sectab *t, sectab_piece_fn_t fn,
			unsigned long start, unsigned long end);

#endif /* _MEMHP_SECTAB_PRIV_H */
