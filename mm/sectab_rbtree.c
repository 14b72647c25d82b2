// SPDX-License-Identifier: GPL-2.0
/*
 * sectab variant SECTAB_RBTREE: the lookup walks the red-black tree of the
 * segment descriptors (NetBSD's UVM_HOTPLUG uvm_physseg_graph). The tree is
 * the one the common code keeps in order anyway, so there is nothing else
 * to maintain. Unlike NetBSD's rb_tree_find_node() the comparison is
 * inlined (no indirect call per level).
 */
#include "sectab_priv.h"

static int sectab_rbtree_init(struct sectab *t)
{
	return 0;
}

static void sectab_rbtree_fini(struct sectab *t)
{
}

static int sectab_rbtree_prepare(struct sectab *t, unsigned long start,
				 unsigned long end, unsigned int new_segs)
{
	return 0;
}

static void sectab_rbtree_commit(struct sectab *t, unsigned long start,
				 unsigned long end)
{
}

struct sectab_seg *sectab_rbtree_find(const struct sectab *t,
				      unsigned long pfn, unsigned long *offp)
{
	const struct rb_node *n = t->tree.rb_root.rb_node;

	while (n) {
		struct sectab_seg *seg = rb_entry(n, struct sectab_seg, node);

		if (pfn < seg->start) {
			n = n->rb_left;
		} else if (pfn >= seg->end) {
			n = n->rb_right;
		} else {
			*offp = pfn - seg->start;
			return seg;
		}
	}
	return NULL;
}

const struct sectab_ops sectab_rbtree_ops = {
	.name = "rbtree",
	.size = sizeof(struct sectab),
	.init = sectab_rbtree_init,
	.fini = sectab_rbtree_fini,
	.prepare = sectab_rbtree_prepare,
	.commit = sectab_rbtree_commit,
	.find = sectab_rbtree_find,
};
