// SPDX-License-Identifier: GPL-2.0
/*
 * pfn_lookup: time pfn -> struct page lookups in the running kernel.
 *
 * Methods, all over the same ring of random pfns drawn uniformly from the
 * pages of the valid memory sections:
 *   pfn_to_page        the kernel's SPARSEMEM_VMEMMAP pfn_to_page() (inline
 *                      arithmetic: vmemmap + pfn), and the same through an
 *                      out-of-line call (what the table lookups pay);
 *   page_to_pfn        the reverse, over the matching struct pages;
 *   pfn_valid          pfn_valid() then pfn_to_page(): the checked lookup;
 *   section            classic SPARSEMEM: __pfn_to_section() through the
 *                      real mem_section roots, valid_section(), then
 *                      __section_mem_map_addr() + pfn;
 *   array .. pfndir    the portable section table (mm/sectab*.c) in its five
 *                      variants, built over the present sections, one
 *                      segment per section, whose pgs is the section's
 *                      memmap, so find() + offset gives the struct page.
 * Every method's result is checked against pfn_to_page() before timing.
 *
 * debugfs (root only), /sys/kernel/debug/pfn_lookup/:
 *   run      write "LOOKUPS [REPS]": 1..100000000 lookups, 1..31 repetitions
 *            (default 5); -EINVAL/-ERANGE on bad input, -EBUSY during a
 *            run, -EINTR if the writer is killed. Blocks while it runs.
 *   results  the last run: ns per lookup (min/median/max) and ratios.
 *   layout   sections, segments and each table's memory.
 *
 * A run holds the file open, so the module cannot be unloaded mid-run.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/sort.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "sectab.h"

#define PFN_BENCH_MAX_LOOKUPS	100000000UL
#define PFN_BENCH_MAX_REPS	31U
#define PFN_BENCH_RING		BIT(20)	/* pregenerated pfns */
#define PFN_BENCH_CHUNK		BIT(16)	/* lookups between resched */

enum pfn_method {
	M_PFN_TO_PAGE,
	M_PFN_TO_PAGE_CALL,
	M_PAGE_TO_PFN,
	M_PFN_VALID,
	M_SECTION,
	M_TABLE,		/* + enum sectab_kind */
	M_NR = M_TABLE + SECTAB_NR_KINDS,
};

static const char *const method_names[M_NR] = {
	[M_PFN_TO_PAGE] = "pfn_to_page",
	[M_PFN_TO_PAGE_CALL] = "pfn_to_page (call)",
	[M_PAGE_TO_PFN] = "page_to_pfn",
	[M_PFN_VALID] = "pfn_valid+pfn_to_page",
	[M_SECTION] = "section (classic)",
	[M_TABLE + SECTAB_ARRAY] = "sectab array",
	[M_TABLE + SECTAB_RBTREE] = "sectab rbtree",
	[M_TABLE + SECTAB_SPARSE] = "sectab sparse",
	[M_TABLE + SECTAB_FLAT] = "sectab flat",
	[M_TABLE + SECTAB_PFNDIR] = "sectab pfndir",
};

struct pfn_result {
	u64 min, med, max;	/* ns for the whole loop */
	unsigned long mismatches;
};

/* Everything below is protected by pfn_lookup_lock. */
static DEFINE_MUTEX(pfn_lookup_lock);
static struct pfn_result results[M_NR];
static unsigned long res_lookups;
static unsigned int res_reps;
static unsigned long nr_sections, nr_pages_present, highest_pfn;
static size_t index_bytes[SECTAB_NR_KINDS];
static size_t desc_bytes[SECTAB_NR_KINDS];
static unsigned long nr_segs[SECTAB_NR_KINDS];

static struct dentry *pfn_lookup_dir;

/* One valid section, for drawing pfns. */
struct pfn_section {
	unsigned long start_pfn;
};

typedef struct sectab_seg *(*find_fn_t)(const struct sectab *t,
					unsigned long pfn, unsigned long *offp);

static unsigned long sum_sink;

static noinline struct page *pfn_to_page_call(unsigned long pfn)
{
	return pfn_to_page(pfn);
}

static __always_inline struct page *section_lookup(unsigned long pfn)
{
	struct mem_section *ms = __pfn_to_section(pfn);

	if (!ms || !valid_section(ms))
		return NULL;
	return __section_mem_map_addr(ms) + pfn;
}

static __always_inline struct page *table_page(find_fn_t find,
					       const struct sectab *t,
					       unsigned long pfn)
{
	unsigned long off;
	struct sectab_seg *seg = find(t, pfn, &off);

	return seg ? (struct page *)seg->pgs + off : NULL;
}

/*
 * The timed loops: lookups [from, from + n) of the ring. One function per
 * method, the table ones with a constant (so direct) find call.
 */
#define PFN_LOOP(name, expr)						\
static noinline unsigned long loop_##name(const struct sectab *t,	\
					  const unsigned long *ring,	\
					  struct page *const *pages,	\
					  unsigned long from,		\
					  unsigned long n)		\
{									\
	unsigned long i, sum = 0;					\
									\
	for (i = from; i < from + n; i++) {				\
		unsigned long pfn = ring[i & (PFN_BENCH_RING - 1)];	\
		struct page *page = pages[i & (PFN_BENCH_RING - 1)];	\
									\
		sum += (unsigned long)(expr);				\
	}								\
	return sum;							\
}

PFN_LOOP(pfn_to_page, ((void)page, (void)t, pfn_to_page(pfn)))
PFN_LOOP(pfn_to_page_call, ((void)page, (void)t, pfn_to_page_call(pfn)))
PFN_LOOP(page_to_pfn, ((void)pfn, (void)t, page_to_pfn(page)))
PFN_LOOP(pfn_valid, ((void)page, (void)t,
		     pfn_valid(pfn) ? pfn_to_page(pfn) : NULL))
PFN_LOOP(section, ((void)page, (void)t, section_lookup(pfn)))
PFN_LOOP(array, ((void)page, table_page(sectab_array_find, t, pfn)))
PFN_LOOP(rbtree, ((void)page, table_page(sectab_rbtree_find, t, pfn)))
PFN_LOOP(sparse, ((void)page, table_page(sectab_sparse_find, t, pfn)))
PFN_LOOP(flat, ((void)page, table_page(sectab_flat_find, t, pfn)))
PFN_LOOP(pfndir, ((void)page, table_page(sectab_pfndir_find, t, pfn)))

typedef unsigned long (*loop_fn_t)(const struct sectab *t,
				   const unsigned long *ring,
				   struct page *const *pages,
				   unsigned long from, unsigned long n);

static const loop_fn_t loops[M_NR] = {
	[M_PFN_TO_PAGE] = loop_pfn_to_page,
	[M_PFN_TO_PAGE_CALL] = loop_pfn_to_page_call,
	[M_PAGE_TO_PFN] = loop_page_to_pfn,
	[M_PFN_VALID] = loop_pfn_valid,
	[M_SECTION] = loop_section,
	[M_TABLE + SECTAB_ARRAY] = loop_array,
	[M_TABLE + SECTAB_RBTREE] = loop_rbtree,
	[M_TABLE + SECTAB_SPARSE] = loop_sparse,
	[M_TABLE + SECTAB_FLAT] = loop_flat,
	[M_TABLE + SECTAB_PFNDIR] = loop_pfndir,
};

/* The result of one lookup by @m, for the correctness check. */
static struct page *lookup_one(int m, struct sectab *const *tabs,
			       unsigned long pfn, struct page *page)
{
	switch (m) {
	case M_PFN_TO_PAGE:
		return pfn_to_page(pfn);
	case M_PFN_TO_PAGE_CALL:
		return pfn_to_page_call(pfn);
	case M_PAGE_TO_PFN:
		return pfn_to_page(page_to_pfn(page));
	case M_PFN_VALID:
		return pfn_valid(pfn) ? pfn_to_page(pfn) : NULL;
	case M_SECTION:
		return section_lookup(pfn);
	default:
		return sectab_pfn_to_pg(tabs[m - M_TABLE], pfn);
	}
}

/* The valid sections (SECTION_HAS_MEM_MAP), in order. */
static unsigned long collect_sections(struct pfn_section *secs,
				      unsigned long max)
{
	unsigned long nr, n = 0;

	for (nr = 0; nr < NR_MEM_SECTIONS; nr++) {
		struct mem_section *ms;

		if (!mem_section[SECTION_NR_TO_ROOT(nr)]) {
			nr |= SECTIONS_PER_ROOT - 1;	/* skip the root */
			continue;
		}
		ms = __nr_to_section(nr);
		if (!ms || !valid_section(ms))
			continue;
		if (secs && n < max)
			secs[n].start_pfn = section_nr_to_pfn(nr);
		n++;
	}
	return n;
}

static void destroy_tables(struct sectab **tabs)
{
	int k;

	for (k = 0; k < SECTAB_NR_KINDS; k++) {
		sectab_destroy(tabs[k]);
		tabs[k] = NULL;
	}
}

static int build_tables(struct sectab **tabs, const struct pfn_section *secs,
			unsigned long n)
{
	struct sectab_params p = {
		.max_pfn = secs[n - 1].start_pfn + PAGES_PER_SECTION,
		.max_segs = max_t(unsigned long, n, SECTAB_ARRAY_MAX_DEFAULT),
		.pg_size = sizeof(struct page),
	};
	unsigned long i;
	int k, ret;

	for (k = 0; k < SECTAB_NR_KINDS; k++) {
		ret = sectab_create(&tabs[k], k, &p);
		if (ret)
			goto err;
		for (i = 0; i < n; i++) {
			ret = sectab_plug(tabs[k], secs[i].start_pfn,
					  PAGES_PER_SECTION,
					  pfn_to_page(secs[i].start_pfn), NULL);
			if (ret)
				goto err;
		}
	}
	return 0;
err:
	destroy_tables(tabs);
	return ret;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Time @m once over @n lookups; -EINTR if the caller is being killed. */
static int time_one(int m, struct sectab *t, const unsigned long *ring,
		    struct page *const *pages, unsigned long n, u64 *ns)
{
	unsigned long done, sum = 0;
	u64 t0 = ktime_get_ns();

	for (done = 0; done < n; done += PFN_BENCH_CHUNK) {
		sum += loops[m](t, ring, pages, done,
				min(PFN_BENCH_CHUNK, n - done));
		cond_resched();
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	*ns = ktime_get_ns() - t0;
	WRITE_ONCE(sum_sink, sum_sink + sum);
	return 0;
}

static int pfn_lookup_run(unsigned long lookups, unsigned int reps)
{
	struct sectab *tabs[SECTAB_NR_KINDS] = { };
	static u64 times[M_NR][PFN_BENCH_MAX_REPS];
	static struct pfn_result res[M_NR];	/* published on success */
	struct page **pages = NULL;
	unsigned long *ring = NULL;
	struct pfn_section *secs;
	unsigned long n, i;
	unsigned int r;
	int m, ret;

	n = collect_sections(NULL, 0);
	if (!n)
		return -ENODEV;
	secs = kvcalloc(n, sizeof(*secs), GFP_KERNEL);
	if (!secs)
		return -ENOMEM;
	n = min(n, collect_sections(secs, n));

	ret = build_tables(tabs, secs, n);
	if (ret)
		goto out;
	ring = vmalloc(array_size(PFN_BENCH_RING, sizeof(*ring)));
	pages = vmalloc(array_size(PFN_BENCH_RING, sizeof(*pages)));
	if (!ring || !pages) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < PFN_BENCH_RING; i++) {
		ring[i] = secs[get_random_u32() % n].start_pfn +
			  get_random_u32() % PAGES_PER_SECTION;
		pages[i] = pfn_to_page(ring[i]);
	}

	/* Every method must find the right struct page. */
	for (m = 0; m < M_NR; m++) {
		res[m].mismatches = 0;
		for (i = 0; i < PFN_BENCH_RING; i += 7)
			if (lookup_one(m, tabs, ring[i], pages[i]) != pages[i])
				res[m].mismatches++;
		if (res[m].mismatches)
			pr_warn("%s: %lu wrong struct pages\n",
				method_names[m], res[m].mismatches);
	}

	/* Interleaved: every repetition runs every method once. */
	for (r = 0; r < reps; r++) {
		for (m = 0; m < M_NR; m++) {
			struct sectab *t = m >= M_TABLE ? tabs[m - M_TABLE] :
							  NULL;

			ret = time_one(m, t, ring, pages, lookups, &times[m][r]);
			if (ret)
				goto out;
		}
	}
	for (m = 0; m < M_NR; m++) {
		sort(times[m], reps, sizeof(u64), cmp_u64, NULL);
		res[m].min = times[m][0];
		res[m].med = times[m][reps / 2];
		res[m].max = times[m][reps - 1];
	}
	/* Complete: publish (a failed or killed run leaves the last one). */
	memcpy(results, res, sizeof(results));
	for (m = 0; m < SECTAB_NR_KINDS; m++) {
		index_bytes[m] = sectab_index_bytes(tabs[m]);
		desc_bytes[m] = sectab_desc_bytes(tabs[m]);
		nr_segs[m] = sectab_nr_segs(tabs[m]);
	}
	res_lookups = lookups;
	res_reps = reps;
	nr_sections = n;
	nr_pages_present = n * PAGES_PER_SECTION;
	highest_pfn = secs[n - 1].start_pfn + PAGES_PER_SECTION - 1;
	pr_info("%lu lookups x %u over %lu sections: pfn_to_page %llu ns, pfndir %llu ns, rbtree %llu ns (medians)\n",
		lookups, reps, n, results[M_PFN_TO_PAGE].med,
		results[M_TABLE + SECTAB_PFNDIR].med,
		results[M_TABLE + SECTAB_RBTREE].med);
out:
	vfree(pages);
	vfree(ring);
	destroy_tables(tabs);
	kvfree(secs);
	return ret;
}

static ssize_t run_write(struct file *file, const char __user *ubuf,
			 size_t count, loff_t *ppos)
{
	unsigned long lookups;
	unsigned int reps = 5;
	char buf[64], *p, *tok;
	int ret;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	p = strim(buf);

	tok = strsep(&p, " \t");
	if (!tok || kstrtoul(tok, 10, &lookups))
		return -EINVAL;
	if (p) {
		p = skip_spaces(p);
		if (kstrtouint(p, 10, &reps))
			return -EINVAL;
	}
	if (!lookups || lookups > PFN_BENCH_MAX_LOOKUPS || !reps ||
	    reps > PFN_BENCH_MAX_REPS)
		return -ERANGE;

	if (!mutex_trylock(&pfn_lookup_lock))
		return -EBUSY;
	ret = pfn_lookup_run(lookups, reps);
	mutex_unlock(&pfn_lookup_lock);
	return ret ? ret : count;
}

static const struct file_operations run_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = run_write,
	.llseek = noop_llseek,
};

/* x.yy from a total of @ns over @n operations. */
static void seq_ns(struct seq_file *s, u64 ns, unsigned long n)
{
	u64 c = div64_u64(ns * 100, n);

	seq_printf(s, " %8llu.%02llu", div_u64(c, 100), c % 100);
}

static void seq_ratio(struct seq_file *s, u64 a, u64 b)
{
	u64 c = b ? div64_u64(a * 100, b) : 0;

	seq_printf(s, " %6llu.%02llu", div_u64(c, 100), c % 100);
}

static int results_show(struct seq_file *s, void *unused)
{
	int m;

	mutex_lock(&pfn_lookup_lock);
	if (!res_lookups) {
		seq_puts(s, "no run yet: echo LOOKUPS [REPS] > run\n");
		goto out;
	}
	seq_printf(s, "# %lu lookups x %u repetitions, %lu sections (%lu pages), highest pfn %#lx\n",
		   res_lookups, res_reps, nr_sections, nr_pages_present,
		   highest_pfn);
	seq_printf(s, "%-22s %11s %11s %11s %9s %9s %10s\n", "method",
		   "min ns", "median ns", "max ns", "/p2p", "/flat",
		   "wrong");
	for (m = 0; m < M_NR; m++) {
		seq_printf(s, "%-22s", method_names[m]);
		seq_ns(s, results[m].min, res_lookups);
		seq_ns(s, results[m].med, res_lookups);
		seq_ns(s, results[m].max, res_lookups);
		seq_ratio(s, results[m].med, results[M_PFN_TO_PAGE].med);
		seq_ratio(s, results[m].med,
			  results[M_TABLE + SECTAB_FLAT].med);
		seq_printf(s, " %10lu\n", results[m].mismatches);
	}
out:
	mutex_unlock(&pfn_lookup_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(results);

static int layout_show(struct seq_file *s, void *unused)
{
	int k;

	mutex_lock(&pfn_lookup_lock);
	seq_printf(s, "valid sections now: %lu (%lu pages per section)\n",
		   collect_sections(NULL, 0), PAGES_PER_SECTION);
	if (res_lookups) {
		seq_printf(s, "%-8s %8s %12s %12s\n", "table", "segments",
			   "index bytes", "desc bytes");
		for (k = 0; k < SECTAB_NR_KINDS; k++)
			seq_printf(s, "%-8s %8lu %12zu %12zu\n",
				   sectab_kind_name(k), nr_segs[k],
				   index_bytes[k], desc_bytes[k]);
	}
	mutex_unlock(&pfn_lookup_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(layout);

static int __init pfn_lookup_init(void)
{
	pfn_lookup_dir = debugfs_create_dir("pfn_lookup", NULL);
	if (IS_ERR(pfn_lookup_dir))
		return PTR_ERR(pfn_lookup_dir);
	debugfs_create_file("run", 0200, pfn_lookup_dir, NULL, &run_fops);
	debugfs_create_file("results", 0400, pfn_lookup_dir, NULL,
			    &results_fops);
	debugfs_create_file("layout", 0400, pfn_lookup_dir, NULL,
			    &layout_fops);
	return 0;
}

static void __exit pfn_lookup_exit(void)
{
	debugfs_remove_recursive(pfn_lookup_dir);
}

module_init(pfn_lookup_init);
module_exit(pfn_lookup_exit);
MODULE_DESCRIPTION("pfn -> struct page lookup benchmark: vmemmap, mem_section, section tables");
MODULE_LICENSE("GPL");
