// SPDX-License-Identifier: GPL-2.0
/*
 * pfn lookup benchmark over the portable section table (mm/sectab*.c):
 * the workloads of NetBSD's tests/sys/uvm/t_uvm_physseg_load.c (Raju and
 * Mathew, "Portable hotplugging", 2017) on all five variants, then sparse
 * layouts of 1 TiB and 16 TiB with holes.
 *
 *   pfn_bench [--out DIR] [--reps R] [--full] [--quick]
 *   pfn_bench --one WORKLOAD VARIANT N      (one pregenerated-mode loop,
 *                                           for callgrind --toggle-collect)
 *
 * Workloads, as in the load test:
 *   fixed-N  32 segments of 8 pages over [0, 1 MiB); N uniformly random
 *            lookups, N = 100 .. 10M (100M with --full);
 *   frag-X   plug [0, 1 MiB) and a second segment (1 MiB, the "64MB" test's
 *            mislabelled 1 MiB, 128 MiB, 256 MiB), unplug a random 1-7 page
 *            chunk every 8 frames, then 10M lookups with the test's address
 *            distribution (its bugs included).
 * Each loop runs in two modes: "pre" (random numbers generated outside the
 * timed loop) and "random" (random() inside it, like the paper), plus a
 * random()-only loop. Variants run interleaved, R times; min/median/max.
 * The NetBSD array holds 32 segments, so the fragmentation runs use an
 * array with a raised capacity ("array*"); NetBSD's could not run them.
 *
 * Writes DIR/pfn_bench.csv and DIR/pfn_memory.csv; prints tables.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sectab.h"

#define PAGE_SHIFT	12
#define ctob(x)		((unsigned long)(x) << PAGE_SHIFT)
#define NVAR		SECTAB_NR_KINDS
#define MAX_REPS	101
#define RING_MAX	BIT(20)		/* pregenerated pfns, cycled */
#define GIB_PAGES	BIT(18)

typedef struct sectab_seg *(*find_fn_t)(const struct sectab *t,
					unsigned long pfn, unsigned long *offp);

/* The lookup address distribution of one load test. */
struct dist {
	unsigned long mod;	/* pa = random() % mod */
	unsigned long below;	/* if (pa < below) */
	unsigned long add;	/*	pa += add */
};

static inline unsigned long dist_pfn(const struct dist *d, unsigned long r)
{
	unsigned long pa = r % d->mod;

	if (pa < d->below)
		pa += d->add;
	return pa >> PAGE_SHIFT;
}

/*
 * The timed loops. Always inlined into one function per variant with a
 * constant find function, so each variant gets a direct call.
 */
static __always_inline unsigned long
loop_pre(find_fn_t find, const struct sectab *t, const unsigned long *ring,
	 unsigned long mask, unsigned long n)
{
	unsigned long i, off = 0, sum = 0;
	struct sectab_seg *seg;

	for (i = 0; i < n; i++) {
		seg = find(t, ring[i & mask], &off);
		sum += (unsigned long)seg + off;
	}
	return sum;
}

static __always_inline unsigned long
loop_random(find_fn_t find, const struct sectab *t, const struct dist *d,
	    unsigned long n)
{
	unsigned long i, off = 0, sum = 0;
	struct sectab_seg *seg;

	for (i = 0; i < n; i++) {
		seg = find(t, dist_pfn(d, random()), &off);
		sum += (unsigned long)seg + off;
	}
	return sum;
}

#define BENCH_LOOPS(kind)						\
static noinline unsigned long				\
bench_loop_pre_##kind(const struct sectab *t, const unsigned long *ring,	\
		      unsigned long mask, unsigned long n)		\
{									\
	return loop_pre(sectab_##kind##_find, t, ring, mask, n);	\
}									\
static noinline unsigned long				\
bench_loop_random_##kind(const struct sectab *t, const struct dist *d,	\
			 unsigned long n)				\
{									\
	return loop_random(sectab_##kind##_find, t, d, n);		\
}

BENCH_LOOPS(array)
BENCH_LOOPS(rbtree)
BENCH_LOOPS(sparse)
BENCH_LOOPS(flat)
BENCH_LOOPS(pfndir)

static unsigned long (*const loops_pre[NVAR])(const struct sectab *,
					      const unsigned long *, unsigned long,
					      unsigned long) = {
	bench_loop_pre_array, bench_loop_pre_rbtree, bench_loop_pre_sparse,
	bench_loop_pre_flat, bench_loop_pre_pfndir,
};

static unsigned long (*const loops_random[NVAR])(const struct sectab *,
						 const struct dist *,
						 unsigned long) = {
	bench_loop_random_array, bench_loop_random_rbtree,
	bench_loop_random_sparse, bench_loop_random_flat,
	bench_loop_random_pfndir,
};

/* The paper's dummy run: random() alone. */
static noinline unsigned long
bench_loop_random_only(const struct dist *d, unsigned long n)
{
	unsigned long i, sum = 0;

	for (i = 0; i < n; i++)
		sum += dist_pfn(d, random());
	return sum;
}

/* Every loop's result goes here, so no loop can be optimised away. */
static unsigned long sink;

/*
 * CPU time of this thread: on a machine shared with other jobs, time spent
 * preempted is not counted (cache interference still is).
 */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "pfn_bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double min, med, max;
};

static struct stats stats_of(double *v, int n)
{
	struct stats s;

	qsort(v, n, sizeof(*v), cmp_double);
	s.min = v[0];
	s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	s.max = v[n - 1];
	return s;
}

/* --- building the tables --- */

static struct sectab *new_table(enum sectab_kind kind, unsigned int cap)
{
	struct sectab_params p = { .max_segs = cap };
	struct sectab *t;
	int ret;

	ret = sectab_create(&t, kind, &p);
	if (ret)
		die("sectab_create", ret);
	return t;
}

static void plug(struct sectab *t, unsigned long pfn, unsigned long n)
{
	int ret = sectab_plug(t, pfn, n, NULL, NULL);

	if (ret)
		die("sectab_plug", ret);
}

/* The fixed-size tests: 32 x 8 pages over [0, 1 MiB). */
static struct sectab *build_fixed(enum sectab_kind kind)
{
	struct sectab *t = new_table(kind, SECTAB_ARRAY_MAX_DEFAULT);
	unsigned long i;

	for (i = 0; i < 256; i += 8)
		plug(t, i, 8);
	if (sectab_nr_segs(t) != 32)
		die("32 segments", -EINVAL);
	return t;
}

struct frag {
	const char *name;
	unsigned long start, end;	/* the second segment, pfns */
	struct dist d;
};

/* uvm_physseg_1MB, _64MB (really 1 MiB), _128MB, _256MB. */
static const struct frag frags[] = {
	{ "frag-1MB", 256, 512, { ctob(512), ctob(256), ctob(256) } },
	{ "frag-64MB", 512, 768, { ctob(768), ctob(512), ctob(512) } },
	{ "frag-128MB", 256, 32768, { ctob(32768), ctob(256), ctob(256) } },
	/* The test's "if (pa < ctob(VALID_END_PFN_5))" is always true. */
	{ "frag-256MB", 256, 65536, { ctob(65536), ctob(65536), ctob(256) } },
};

/*
 * plug(0, 256); plug(START, END - START); then for every 8th frame unplug a
 * chunk of random() % 7 + 1 pages. The same seed for every variant, so all
 * of them hold the same segments.
 */
static struct sectab *build_frag(enum sectab_kind kind, const struct frag *f,
				 unsigned int seed, double *setup_s)
{
	struct sectab *t = new_table(kind, 4 * (f->end - f->start) / 8 + 64);
	double t0 = now();
	unsigned long pf;
	int ret;

	srandom(seed);
	plug(t, 0, 256);
	plug(t, f->start, f->end - f->start);
	for (pf = f->start; pf < f->end; pf += 8) {
		ret = sectab_unplug(t, pf, random() % 7 + 1);
		if (ret)
			die("sectab_unplug", ret);
	}
	*setup_s = now() - t0;
	return t;
}

/* --- output --- */

static FILE *csv;
static int reps = 5;

static void csv_row(const char *wl, const char *mode, const char *var,
		    unsigned long n, int r, struct stats s, double ratio_base,
		    double ratio_flat)
{
	fprintf(csv, "%s,%s,%s,%lu,%d,%.9f,%.9f,%.9f,%.3f,%.4f,%.4f\n",
		wl, mode, var, n, r, s.min, s.med, s.max,
		s.med * 1e9 / n, ratio_base, ratio_flat);
}

static const char *var_name(enum sectab_kind k, bool raised)
{
	if (k == SECTAB_ARRAY && raised)
		return "array*";
	return sectab_kind_name(k);
}

/*
 * Time every variant (interleaved) and the random()-only loop on the
 * tables @t over @n lookups drawn from @d; print and record the results.
 */
static void run_workload(const char *wl, struct sectab **t, bool raised,
			 const struct dist *d, unsigned long n, int r,
			 unsigned int seed)
{
	static double pre[NVAR][MAX_REPS], rnd[NVAR][MAX_REPS];
	static double ronly[MAX_REPS];
	unsigned long ring_n = n < RING_MAX ? n : RING_MAX, mask, i;
	struct stats sp[NVAR], sr[NVAR], so;
	unsigned long *ring;
	int k, rep;

	/* A power of two so the loop can wrap with a mask. */
	for (mask = 1; mask < ring_n; mask <<= 1)
		;
	ring = malloc(mask * sizeof(*ring));
	if (!ring)
		die("ring", -ENOMEM);
	srandom(seed);
	for (i = 0; i < mask; i++)
		ring[i] = dist_pfn(d, random());
	mask--;

	for (rep = 0; rep < r; rep++) {
		double t0;

		for (k = 0; k < NVAR; k++) {
			t0 = now();
			sink += loops_pre[k](t[k], ring, mask, n);
			pre[k][rep] = now() - t0;
		}
		for (k = 0; k < NVAR; k++) {
			srandom(seed + rep);
			t0 = now();
			sink += loops_random[k](t[k], d, n);
			rnd[k][rep] = now() - t0;
		}
		srandom(seed + rep);
		t0 = now();
		sink += bench_loop_random_only(d, n);
		ronly[rep] = now() - t0;
	}
	free(ring);

	for (k = 0; k < NVAR; k++) {
		sp[k] = stats_of(pre[k], r);
		sr[k] = stats_of(rnd[k], r);
	}
	so = stats_of(ronly, r);

	printf("%-11s %10lu  %-7s", wl, n, "");
	for (k = 0; k < NVAR; k++)
		printf(" %8.2f", sp[k].med * 1e9 / n);
	printf("  | %6.2f", so.med * 1e9 / n);
	for (k = 0; k < NVAR; k++)
		printf(" %6.2f", sr[k].med * 1e9 / n);
	printf("\n");

	for (k = 0; k < NVAR; k++) {
		csv_row(wl, "pre", var_name(k, raised), n, r, sp[k],
			sp[k].med / sp[SECTAB_ARRAY].med,
			sp[k].med / sp[SECTAB_FLAT].med);
		csv_row(wl, "random", var_name(k, raised), n, r, sr[k],
			sr[k].med / sr[SECTAB_ARRAY].med,
			sr[k].med / sr[SECTAB_FLAT].med);
	}
	csv_row(wl, "random-only", "-", n, r, so, 0, 0);
	fflush(csv);
	fflush(stdout);
}

static void header(const char *what)
{
	int k;

	printf("\n%s: median ns per lookup\n", what);
	printf("%-11s %10s  %-7s", "workload", "lookups", "");
	for (k = 0; k < NVAR; k++)
		printf(" %8s", sectab_kind_name(k));
	printf("  | %6s", "rnd()");
	for (k = 0; k < NVAR; k++)
		printf(" %6.6s", sectab_kind_name(k));
	printf("\n%-11s %10s  %-7s %44s  | %s\n", "", "", "",
	       "random numbers generated outside the loop",
	       "random() inside the loop (paper's method)");
}

/* --- large sparse layouts --- */

struct layout {
	const char *name;
	unsigned long ram_gib;
};

static const struct layout layouts[] = {
	{ "sparse-1TiB", 1024 },
	{ "sparse-16TiB", 16384 },
};

/*
 * The OLS 2005 paper's machine with 100 DIMM slots: [0, 3 GiB) below the
 * PCI hole, then 100 DIMMs from 4 GiB, each followed by a hole half its
 * size (address space about 1.5x the RAM).
 */
static unsigned long layout_segs(const struct layout *l,
				 unsigned long *start, unsigned long *len)
{
	unsigned long dimm = (l->ram_gib - 3) * GIB_PAGES / 100;
	unsigned long base = 4 * GIB_PAGES, i;

	dimm &= ~((1UL << SECTAB_SECTION_SHIFT) - 1);
	start[0] = 0;
	len[0] = 3 * GIB_PAGES;
	for (i = 1; i <= 100; i++) {
		start[i] = base;
		len[i] = dimm;
		base += dimm + dimm / 2;
	}
	return 101;
}

static void write_memory_row(const char *wl, const char *var,
			     unsigned long ram_pages, size_t index,
			     size_t desc, bool computed)
{
	double gib = (double)ram_pages / GIB_PAGES;

	printf("%-13s %-8s %14zu %10zu %12.1f%s\n", wl, var, index, desc,
	       (index + desc) / gib, computed ? "  (computed)" : "");
	fprintf(csv, "%s,memory,%s,%lu,0,0,0,0,0,%zu,%zu\n", wl, var,
		ram_pages, index, desc);
}

static void run_layouts(int r, unsigned int seed)
{
	static unsigned long start[101], len[101];
	const unsigned long n = 10000000;
	unsigned long nseg, i, j, ram = 0, highest;
	struct sectab *t[NVAR];
	unsigned long *cum;
	size_t l;
	int k;

	for (l = 0; l < ARRAY_SIZE(layouts); l++) {
		double ts[NVAR];

		nseg = layout_segs(&layouts[l], start, len);
		for (ram = 0, i = 0; i < nseg; i++)
			ram += len[i];
		highest = start[nseg - 1] + len[nseg - 1];

		for (k = 0; k < NVAR; k++) {
			double t0 = now();

			if (k == SECTAB_FLAT) {
				/* 8 bytes per pfn of the address space. */
				t[k] = NULL;
				continue;
			}
			t[k] = new_table(k, 128);
			for (i = 0; i < nseg; i++)
				plug(t[k], start[i], len[i]);
			ts[k] = now() - t0;
		}
		printf("\n%s: %lu segments, %lu GiB RAM, highest pfn %#lx; build ms:",
		       layouts[l].name, nseg, ram / GIB_PAGES, highest - 1);
		for (k = 0; k < NVAR; k++)
			if (t[k])
				printf(" %s %.2f", var_name(k, true),
				       ts[k] * 1e3);
		printf("\n");

		/* Lookups: uniformly over the present pages (all hit). */
		cum = malloc(nseg * sizeof(*cum));
		if (!cum)
			die("cum", -ENOMEM);
		for (i = 0, j = 0; i < nseg; i++) {
			j += len[i];
			cum[i] = j;
		}
		{
			static double v[NVAR][MAX_REPS];
			unsigned long *ring = malloc(RING_MAX * sizeof(*ring));
			struct stats s[NVAR];
			int rep;

			if (!ring)
				die("ring", -ENOMEM);
			srandom(seed);
			for (i = 0; i < RING_MAX; i++) {
				unsigned long x = ((unsigned long)random() << 31 ^
						   random()) % ram;

				for (j = 0; cum[j] <= x; j++)
					;
				ring[i] = start[j] + len[j] - (cum[j] - x);
			}
			for (rep = 0; rep < r; rep++) {
				for (k = 0; k < NVAR; k++) {
					double t0;

					if (!t[k])
						continue;
					t0 = now();
					sink += loops_pre[k](t[k], ring,
							     RING_MAX - 1, n);
					v[k][rep] = now() - t0;
				}
			}
			printf("%-13s lookups, median ns:", layouts[l].name);
			for (k = 0; k < NVAR; k++) {
				if (!t[k]) {
					printf(" %s n/a", sectab_kind_name(k));
					continue;
				}
				s[k] = stats_of(v[k], r);
				printf(" %s %.2f", var_name(k, true),
				       s[k].med * 1e9 / n);
			}
			printf("\n");
			for (k = 0; k < NVAR; k++) {
				if (!t[k])
					continue;
				csv_row(layouts[l].name, "pre",
					var_name(k, true), n, r, s[k],
					s[k].med / s[SECTAB_ARRAY].med, 0);
			}
			free(ring);
		}
		free(cum);

		printf("%-13s %-8s %14s %10s %12s\n", "memory", "variant",
		       "index bytes", "desc bytes", "bytes/GiB");
		for (k = 0; k < NVAR; k++) {
			if (!t[k]) {
				write_memory_row(layouts[l].name, "flat", ram,
						 highest * sizeof(void *),
						 nseg * sizeof(struct sectab_seg),
						 true);
				continue;
			}
			write_memory_row(layouts[l].name, var_name(k, true),
					 ram, sectab_index_bytes(t[k]),
					 sectab_desc_bytes(t[k]), false);
			sectab_destroy(t[k]);
		}
	}
}

/* --- main --- */

static int run_one(const char *wl, const char *var, unsigned long n)
{
	struct dist fixed = { ctob(256), 0, 0 };
	const struct dist *d = &fixed;
	struct sectab *t = NULL;
	unsigned long mask, i;
	double setup;
	unsigned long *ring;
	size_t f;
	int k;

	for (k = 0; k < NVAR; k++)
		if (!strcmp(var, sectab_kind_name(k)))
			break;
	if (k == NVAR)
		return 2;
	if (!strcmp(wl, "fixed")) {
		t = build_fixed(k);
	} else {
		for (f = 0; f < ARRAY_SIZE(frags); f++)
			if (!strcmp(wl, frags[f].name))
				break;
		if (f == ARRAY_SIZE(frags))
			return 2;
		t = build_frag(k, &frags[f], 1, &setup);
		d = &frags[f].d;
	}
	for (mask = 1; mask < n && mask < RING_MAX; mask <<= 1)
		;
	ring = malloc(mask * sizeof(*ring));
	if (!ring)
		die("ring", -ENOMEM);
	srandom(2);
	for (i = 0; i < mask; i++)
		ring[i] = dist_pfn(d, random());
	sink += loops_pre[k](t, ring, mask - 1, n);
	free(ring);
	sectab_destroy(t);
	return 0;
}

int main(int argc, char **argv)
{
	static const unsigned long fixed_n[] = {
		100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
	};
	struct dist fixed = { ctob(256), 0, 0 };
	const char *out = ".";
	struct sectab *t[NVAR];
	bool full = false, quick = false;
	unsigned int seed = 20170103;
	char path[4096];
	size_t i, f;
	int k;

	for (i = 1; i < (size_t)argc; i++) {
		if (!strcmp(argv[i], "--out") && i + 1 < (size_t)argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--reps") && i + 1 < (size_t)argc) {
			reps = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--full")) {
			full = true;
		} else if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "--one") && i + 3 < (size_t)argc) {
			return run_one(argv[i + 1], argv[i + 2],
				       strtoul(argv[i + 3], NULL, 0));
		} else {
			fprintf(stderr, "usage: %s [--out DIR] [--reps R] [--full] [--quick]\n"
				"       %s --one WORKLOAD VARIANT N\n",
				argv[0], argv[0]);
			return 2;
		}
	}
	if (reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "--reps: 1..%d\n", MAX_REPS);
		return 2;
	}

	snprintf(path, sizeof(path), "%s/pfn_bench.csv", out);
	csv = fopen(path, "w");
	if (!csv) {
		perror(path);
		return 1;
	}
	fputs("workload,mode,variant,lookups,reps,min_s,median_s,max_s,", csv);
	fputs("ns_per_lookup,ratio_vs_array,ratio_vs_flat\n", csv);

	/* 1. The fixed-size load tests. */
	header("fixed: 32 segments x 8 pages over [0, 1 MiB)");
	for (k = 0; k < NVAR; k++)
		t[k] = build_fixed(k);
	for (i = 0; i < ARRAY_SIZE(fixed_n); i++) {
		unsigned long n = fixed_n[i];
		int r = n <= 100000 ? 21 : reps;

		if (n > 10000000 && !full)
			continue;
		if (n > 1000000 && quick)
			continue;
		if (n > 10000000)
			r = reps < 3 ? reps : 3;
		run_workload("fixed", t, false, &fixed, n, r, seed + i);
	}
	for (k = 0; k < NVAR; k++)
		sectab_destroy(t[k]);

	/* 2. The fragmentation load tests (array* = capacity raised). */
	header("fragmentation: unplug 1-7 pages every 8 frames, then lookups");
	for (f = 0; f < ARRAY_SIZE(frags); f++) {
		double setup[NVAR];

		for (k = 0; k < NVAR; k++)
			t[k] = build_frag(k, &frags[f], seed + 100 + f,
					  &setup[k]);
		run_workload(frags[f].name, t, true, &frags[f].d,
			     quick ? 1000000 : 10000000, reps, seed + 200 + f);
		printf("%-11s %10lu segments; setup (plug + unplug loop) ms:",
		       frags[f].name, sectab_nr_segs(t[0]));
		for (k = 0; k < NVAR; k++)
			printf(" %s %.1f", sectab_kind_name(k), setup[k] * 1e3);
		printf("\n");
		for (k = 0; k < NVAR; k++) {
			fprintf(csv, "%s,setup,%s,%lu,1,%.9f,%.9f,%.9f,0,0,0\n",
				frags[f].name, var_name(k, true),
				sectab_nr_segs(t[k]), setup[k], setup[k],
				setup[k]);
		}
		if (f == ARRAY_SIZE(frags) - 1) {
			printf("\n%-13s %-8s %14s %10s %12s\n", "memory",
			       "variant", "index bytes", "desc bytes",
			       "bytes/GiB");
			for (k = 0; k < NVAR; k++)
				write_memory_row(frags[f].name,
						 var_name(k, true),
						 sectab_nr_pages(t[k]),
						 sectab_index_bytes(t[k]),
						 sectab_desc_bytes(t[k]), false);
		}
		for (k = 0; k < NVAR; k++)
			sectab_destroy(t[k]);
	}

	/* 3. Beyond the paper: 1 TiB and 16 TiB with holes. */
	run_layouts(reps < 3 ? reps : 3, seed + 300);

	fclose(csv);
	printf("\nsink %lx\n", sink & 0xf);
	return 0;
}
