/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sectab: a table of physical memory segments (page frame ranges) behind one
 * interface, with five interchangeable lookup structures.
 *
 * The interface follows NetBSD's uvm_physseg(9)/uvm_hotplug(9) (plug, unplug,
 * find, first/next/prev/last with "empty", "overflow" and "invalid" results),
 * with two differences: handles are generation-tagged ids, so a handle stays
 * valid while its segment exists (plugging or unplugging other segments never
 * changes what it names) and a stale handle is rejected instead of dangling;
 * and unplug may split a segment in every variant, the array included, as
 * long as the array has a free entry.
 *
 * The variants (enum sectab_kind):
 *   SECTAB_ARRAY   sorted array of at most max_segs (default 32) entries,
 *                  binary search: NetBSD's VM_PSTRAT_BSEARCH baseline.
 *   SECTAB_RBTREE  red-black tree of segments (NetBSD's UVM_HOTPLUG), here
 *                  <linux/rbtree.h> with an inlined comparison.
 *   SECTAB_SPARSE  Linux classic SPARSEMEM_EXTREME: root array -> page of
 *                  128 MiB mem_sections; each section keeps the sorted list
 *                  of the segments that intersect it (sub-section ranges).
 *   SECTAB_FLAT    one segment pointer per pfn up to the highest plugged pfn
 *                  (the vmemmap-like lower bound for a lookup).
 *   SECTAB_PFNDIR  ours: a directory of 16 MiB chunks; an entry is a tagged
 *                  pointer to the one segment covering the whole chunk, or a
 *                  leaf of per-pfn segment pointers with a presence bitmap
 *                  (empty chunks share one empty leaf): holes are answered
 *                  from L1-resident words, hits cost the flat array's loads
 *                  plus the directory word.
 *
 * All the structures index the same segment descriptors, which also sit in
 * an ordered red-black tree (used for overlap checks and iteration).
 *
 * Locking: none. Like uvm_physseg, the caller serialises plug/unplug against
 * each other and against lookups.
 *
 * Portable: compiles unchanged in a kernel module and in user space.
 */
#ifndef _MEMHP_SECTAB_H
#define _MEMHP_SECTAB_H

#include "memhp/portable.h"

enum sectab_kind {
	SECTAB_ARRAY,
	SECTAB_RBTREE,
	SECTAB_SPARSE,
	SECTAB_FLAT,
	SECTAB_PFNDIR,
	SECTAB_NR_KINDS,
};

/* NetBSD's VM_PHYSSEG_MAX on i386 and in t_uvm_physseg_load.c. */
#define SECTAB_ARRAY_MAX_DEFAULT	32U

/* x86-64: MAX_PHYSMEM_BITS 46 with 4 KiB pages. */
#define SECTAB_MAX_PFN_DEFAULT		(1UL << (46 - 12))

/* Classic SPARSEMEM geometry (x86-64: SECTION_SIZE_BITS 27). */
#define SECTAB_SECTION_SHIFT		15	/* pages per section: 2^15 */

/* Our directory: 2^12 pages (16 MiB) per chunk. */
#define SECTAB_PFNDIR_SHIFT		12

/* Handle values that are not segments (uvm_physseg_t INVALID*). */
#define SECTAB_INVALID		((u64)0)
#define SECTAB_EMPTY		((u64)1)	/* no segment there */
#define SECTAB_OVERFLOW		((u64)2)	/* past the last segment */

/* Accessors on an invalid handle return this ((paddr_t)-1 in NetBSD). */
#define SECTAB_BAD_PFN		(~0UL)

/* A segment descriptor: pfns [start, end). Read-only for users. */
struct sectab_seg {
	unsigned long start;
	unsigned long end;
	void *pgs;		/* caller's descriptor array for [start, end) */
	u64 handle;
	struct rb_node node;	/* in the ordered tree, keyed by start */
};

struct sectab_params {
	unsigned long max_pfn;	/* pfns >= max_pfn are refused; 0: default */
	unsigned int max_segs;	/* SECTAB_ARRAY capacity; 0: 32 */
	size_t pg_size;		/* bytes per pgs element (kept on splits) */
};

struct sectab;

const char *sectab_kind_name(enum sectab_kind kind);
int sectab_create(struct sectab **tp, enum sectab_kind kind,
		  const struct sectab_params *params);
void sectab_destroy(struct sectab *t);
enum sectab_kind sectab_get_kind(const struct sectab *t);

/*
 * sectab_plug() adds [pfn, pfn + npages) as a new segment whose descriptor
 * array is @pgs (may be NULL). Returns 0 and the handle in *@handlep (if not
 * NULL), or -EINVAL (npages 0), -ERANGE (beyond max_pfn), -EEXIST (overlaps a
 * plugged page), -ENOSPC (array full), -ENOMEM. On error nothing changes.
 */
int sectab_plug(struct sectab *t, unsigned long pfn, unsigned long npages,
		void *pgs, u64 *handlep);

/*
 * sectab_unplug() removes [pfn, pfn + npages), which must lie in one segment:
 * the whole segment (its handle becomes invalid), its start or end (the
 * handle stays), or its middle (the segment is split; the tail gets a new
 * handle). Returns 0, or -EINVAL (npages 0, or the range leaves the segment),
 * -ENOENT (pfn not plugged), -ENOSPC (array full, middle), -ENOMEM.
 */
int sectab_unplug(struct sectab *t, unsigned long pfn, unsigned long npages);

/* The segment holding @pfn (and the offset in *@offp if not NULL), or NULL. */
struct sectab_seg *sectab_find(const struct sectab *t, unsigned long pfn,
			       unsigned long *offp);
/* PHYS_TO_VM_PAGE(): &pgs[offset] of the segment holding @pfn, or NULL. */
void *sectab_pfn_to_pg(const struct sectab *t, unsigned long pfn);

/* Handles. */
bool sectab_valid(const struct sectab *t, u64 h);
struct sectab_seg *sectab_get(const struct sectab *t, u64 h);
unsigned long sectab_start(const struct sectab *t, u64 h);
unsigned long sectab_end(const struct sectab *t, u64 h);
u64 sectab_first(const struct sectab *t);	/* or SECTAB_EMPTY */
u64 sectab_last(const struct sectab *t);	/* or SECTAB_EMPTY */
u64 sectab_next(const struct sectab *t, u64 h);	/* or OVERFLOW/INVALID */
u64 sectab_prev(const struct sectab *t, u64 h);	/* or EMPTY/INVALID */

unsigned long sectab_nr_segs(const struct sectab *t);
unsigned long sectab_nr_pages(const struct sectab *t);
unsigned long sectab_highest_pfn(const struct sectab *t); /* or BAD_PFN */

/* Bytes of the lookup structure, and of the segment descriptors/handles. */
size_t sectab_index_bytes(const struct sectab *t);
size_t sectab_desc_bytes(const struct sectab *t);

/*
 * Direct lookups, one per variant, for benchmarks (no dispatch). Each takes
 * a table of its own kind and behaves like sectab_find().
 */
struct sectab_seg *sectab_array_find(const struct sectab *t,
				     unsigned long pfn, unsigned long *offp);
struct sectab_seg *sectab_rbtree_find(const struct sectab *t,
				      unsigned long pfn, unsigned long *offp);
struct sectab_seg *sectab_sparse_find(const struct sectab *t,
				      unsigned long pfn, unsigned long *offp);
struct sectab_seg *sectab_flat_find(const struct sectab *t,
				    unsigned long pfn, unsigned long *offp);
struct sectab_seg *sectab_pfndir_find(const struct sectab *t,
				      unsigned long pfn, unsigned long *offp);

#endif /* _MEMHP_SECTAB_H */
