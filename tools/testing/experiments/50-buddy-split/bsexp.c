// SPDX-License-Identifier: GPL-2.0
/*
 * bsexp: the buddy_split experiment driver. The same experiment runs against
 * /dev/buddy_split (--dev, in a guest) or against mm/buddy_core.c linked in
 * (--user, anywhere) with the same geometry, so both print the same rows.
 *
 *   bsexp --dev|--user removability [seeds] [ops]   CSV: one row per run
 *   bsexp --dev|--user bench [count]                CSV: ns per alloc/free
 *   bsexp --dev|--user hotadd [repeats]             CSV: hot-add cost
 *   bsexp --user span                               CSV: hot-add vs span
 *   bsexp --user removability-pinned-last [seeds] [ops]
 *        the same with the pinned sections handed out first
 *   bsexp --dev kernelmix MB ROUNDS                 the 70/20/10 mix against
 *        the kernel's allocator (anonymous user memory, held reclaimable and
 *        unmovable kernel pages); prints "ready", holds it all until a line
 *        arrives on stdin (the caller offlines blocks meanwhile)
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/buddy_split.h>

#include "buddy_core.h"

#define NR_SECTIONS	16
#define SECTION_SHIFT	13		/* 32 MiB of 4 KiB pages */
#define PINNED		4
#define MAX_ORDER_W	3		/* workload orders 0..3 */
#define FILL_PCT	60

struct mix {
	const char *name;
	u32 pct[BS_NR_TYPES];
};

static const struct mix mixes[] = {
	{ "70/20/10", { 70, 20, 10 } },
	{ "90/5/5", { 90, 5, 5 } },
	{ "50/30/20", { 50, 30, 20 } },
	{ "30/30/40", { 30, 30, 40 } },
};

struct config {
	const char *name;
	int mode, policy, kr_hotplug;
};

static const struct config configs[] = {
	{ "split+strict", BS_MODE_SPLIT, BS_POLICY_STRICT, 0 },
	{ "split+fallback", BS_MODE_SPLIT, BS_POLICY_FALLBACK, 0 },
	{ "single", BS_MODE_SINGLE, BS_POLICY_STRICT, 0 },
	{ "bitmap", BS_MODE_BITMAP, BS_POLICY_STRICT, 0 },
	{ "split+strict kr@hotplug", BS_MODE_SPLIT, BS_POLICY_STRICT, 1 },
};

static int use_dev;
static int dev_fd = -1;
static struct bs_arena *arena;
static unsigned int nr_sections = NR_SECTIONS, pinned = PINNED;
static unsigned int section_shift = SECTION_SHIFT;

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void sysfs_write(const char *knob, const char *val)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/buddy_split/%s", knob);
	f = fopen(path, "w");
	if (!f || fputs(val, f) < 0 || fclose(f))
		die(path);
}

/*
 * User-space arena: slot i at a descending base, like the module's, added
 * in slot order (pinned first, so LIFO lists hand out hotplug memory first)
 * or, with @pinned_last, hotplug slots first (pinned memory handed out
 * first: the baselines' best case).
 */
static int pinned_last;

static void user_setup(int mode)
{
	unsigned int i, k;

	arena = bs_arena_create(SECTION_SHIFT, nr_sections, mode);
	if (!arena)
		die("bs_arena_create");
	for (k = 0; k < nr_sections; k++) {
		i = pinned_last ? (k + pinned) % nr_sections : k;
		if (bs_section_add(arena, i,
				   (0x80000UL - (i + 1) * (1UL << SECTION_SHIFT)),
				   i >= pinned))
			die("bs_section_add");
	}
}

static void setup(void)
{
	struct buddy_split_info info;

	if (!use_dev) {
		user_setup(BS_MODE_SPLIT);
		return;
	}
	dev_fd = open("/dev/buddy_split", O_RDWR);
	if (dev_fd < 0)
		die("/dev/buddy_split");
	if (ioctl(dev_fd, BUDDY_SPLIT_IOC_INFO, &info))
		die("INFO");
	section_shift = info.section_shift;
	nr_sections = info.nr_sections;
	pinned = info.pinned_sections;
}

static void reset(const struct config *c)
{
	if (use_dev) {
		struct buddy_split_reset r = { .mode = c->mode };

		sysfs_write("policy", bs_policy_name(c->policy));
		sysfs_write("kreclaim_home", c->kr_hotplug ? "hotplug" : "pinned");
		if (ioctl(dev_fd, BUDDY_SPLIT_IOC_RESET, &r))
			die("RESET");
		return;
	}
	if (pinned_last) {
		/* bs_arena_reset() re-adds in slot order: rebuild instead. */
		bs_arena_destroy(arena);
		user_setup(c->mode);
	} else if (bs_arena_reset(arena, c->mode)) {
		die("reset");
	}
	if (bs_set_policy(arena, c->policy) ||
	    bs_set_kreclaim_home(arena, c->kr_hotplug ? BS_AREA_HOTPLUG :
				 BS_AREA_PINNED))
		die("reset");
}

static void workload(struct buddy_split_workload *w)
{
	struct bs_workload bw;
	struct bs_workload_result r;
	u64 t0;
	int t;

	if (use_dev) {
		if (ioctl(dev_fd, BUDDY_SPLIT_IOC_WORKLOAD, w))
			die("WORKLOAD");
		return;
	}
	bw.seed = w->seed;
	bw.ops = w->ops;
	bw.max_order = w->max_order;
	for (t = 0; t < BS_NR_TYPES; t++) {
		bw.mix[t] = w->mix[t];
		bw.lifetime[t] = w->lifetime[t];
	}
	t0 = now_ns();
	if (bs_workload_run(arena, &bw, &r, NULL, NULL))
		die("bs_workload_run");
	w->ns = now_ns() - t0;
	for (t = 0; t < BS_NR_TYPES; t++) {
		w->allocs[t] = r.allocs[t];
		w->fails[t] = r.fails[t];
		w->live_pages[t] = r.live_pages[t];
	}
	w->frees = r.frees;
}

/* Removal verdict of slot @nr: 0 removable, else the blocking type + 1. */
static int verdict(unsigned int nr)
{
	int blocker = -1, ret;

	if (use_dev) {
		struct buddy_split_section s = {
			.nr = nr, .flags = BUDDY_SPLIT_SECTION_DRY_RUN,
		};

		ret = ioctl(dev_fd, BUDDY_SPLIT_IOC_SECTION_REMOVE, &s);
		if (ret && errno != EBUSY)
			die("SECTION_REMOVE");
		blocker = s.blocker;
	} else {
		bs_section_check(arena, nr, &blocker);
	}
	return blocker + 1;
}

static void check_arena(void)
{
	char msg[160];

	if (use_dev) {
		if (ioctl(dev_fd, BUDDY_SPLIT_IOC_CHECK))
			die("CHECK");
	} else if (bs_check(arena, msg, sizeof(msg))) {
		fprintf(stderr, "bs_check: %s\n", msg);
		exit(1);
	}
}

static void removability(unsigned int seeds, u32 ops)
{
	unsigned long pages = (unsigned long)nr_sections << section_shift;
	/* Orders 0..3 with probabilities 1/2, 1/4, 1/8, 1/8: 2.5 pages. */
	u32 life = pages * FILL_PCT / 100 * 2 / 5;
	unsigned int m, c, s, nr;

	fputs("config,mix,seed,hotplug,removable,blocked_kr,blocked_knr,", stdout);
	fputs("allocs_u,allocs_kr,allocs_knr,fails_u,fails_kr,fails_knr,", stdout);
	puts("live_u,live_kr,live_knr,ns");
	for (m = 0; m < ARRAY_SIZE(mixes); m++) {
		for (c = 0; c < ARRAY_SIZE(configs); c++) {
			for (s = 0; s < seeds; s++) {
				struct buddy_split_workload w = {
					.seed = 1000 + s, .ops = ops,
					.max_order = MAX_ORDER_W,
				};
				unsigned int hot = 0, ok = 0, b[4] = {};
				int t;

				for (t = 0; t < BS_NR_TYPES; t++) {
					w.mix[t] = mixes[m].pct[t];
					w.lifetime[t] = life;
				}
				reset(&configs[c]);
				workload(&w);
				check_arena();
				for (nr = pinned; nr < nr_sections; nr++) {
					int v = verdict(nr);

					hot++;
					b[v]++;
					ok += !v;
				}
				printf("%s,%s,%u,%u,%u,%u,%u,",
				       configs[c].name, mixes[m].name, 1000 + s,
				       hot, ok, b[2], b[3]);
				printf("%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
				       (unsigned long long)w.allocs[0],
				       (unsigned long long)w.allocs[1],
				       (unsigned long long)w.allocs[2],
				       (unsigned long long)w.fails[0],
				       (unsigned long long)w.fails[1],
				       (unsigned long long)w.fails[2],
				       (unsigned long long)w.live_pages[0],
				       (unsigned long long)w.live_pages[1],
				       (unsigned long long)w.live_pages[2],
				       (unsigned long long)w.ns);
				fflush(stdout);
			}
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

#define REPS	7

/* One timed alloc-all / free-all-shuffled round; ns in @ns[0..1]. */
static u64 bench_once(int target, unsigned int order, u64 count, u64 seed,
		      u64 *ns)
{
	unsigned long *pfns, i, got;
	u64 t0;

	if (use_dev) {
		struct buddy_split_bench b = {
			.target = target, .order = order, .count = count,
			.seed = seed,
		};

		if (ioctl(dev_fd, BUDDY_SPLIT_IOC_BENCH, &b))
			die("BENCH");
		ns[0] = b.alloc_ns;
		ns[1] = b.free_ns;
		return b.done;
	}
	pfns = calloc(count, sizeof(*pfns));
	if (!pfns)
		die("calloc");
	t0 = now_ns();
	for (got = 0; got < count; got++)
		if (bs_alloc(arena, 0, order, &pfns[got]))
			break;
	ns[0] = now_ns() - t0;
	for (i = got; i > 1; i--) {
		unsigned long j = bs_rand_below(&seed, i), t = pfns[i - 1];

		pfns[i - 1] = pfns[j];
		pfns[j] = t;
	}
	t0 = now_ns();
	for (i = 0; i < got; i++)
		bs_free(arena, pfns[i]);
	ns[1] = now_ns() - t0;
	free(pfns);
	return got;
}

/*
 * Repetitions go round-robin over the allocators, forwards and backwards,
 * so that a burst of load on the (shared, emulated) machine or a cold start
 * after another cell hits them all alike; medians per cell.
 */
static void bench(u64 count)
{
	static const unsigned int orders[] = { 0, 3 };
	static const int cells[] = { 0, 2, 3, -1 };	/* split, single, bitmap, kernel */
	u64 a[ARRAY_SIZE(cells)][ARRAY_SIZE(orders)][REPS];
	u64 f[ARRAY_SIZE(cells)][ARRAY_SIZE(orders)][REPS];
	u64 done[ARRAY_SIZE(cells)][ARRAY_SIZE(orders)];
	unsigned int c, k, o, r, nc = ARRAY_SIZE(cells) - !use_dev;

	for (r = 0; r < REPS; r++) {
		for (k = 0; k < nc; k++) {
			/* Odd rounds run the cells backwards: no fixed order. */
			const struct config *cf;

			c = r & 1 ? nc - 1 - k : k;
			cf = cells[c] < 0 ? NULL : &configs[cells[c]];

			for (o = 0; o < ARRAY_SIZE(orders); o++) {
				u64 ns[2];

				if (cf)
					reset(cf);
				done[c][o] = bench_once(cf ? BUDDY_SPLIT_BENCH_ARENA :
							BUDDY_SPLIT_BENCH_KERNEL,
							orders[o], count >> orders[o],
							7 + r, ns);
				if (!done[c][o])
					die("no block allocated");
				a[c][o][r] = ns[0] / done[c][o];
				f[c][o][r] = ns[1] / done[c][o];
			}
		}
	}
	printf("allocator,order,count,alloc_ns_per_op,free_ns_per_op\n");
	for (c = 0; c < nc; c++) {
		for (o = 0; o < ARRAY_SIZE(orders); o++) {
			qsort(a[c][o], REPS, sizeof(u64), cmp_u64);
			qsort(f[c][o], REPS, sizeof(u64), cmp_u64);
			printf("%s,%u,%llu,%llu,%llu\n",
			       cells[c] < 0 ? "kernel" : c ? configs[cells[c]].name : "split",
			       orders[o], (unsigned long long)done[c][o],
			       (unsigned long long)a[c][o][REPS / 2],
			       (unsigned long long)f[c][o][REPS / 2]);
		}
	}
}

/* Remove the lowest section (an edge of the span) and hot-add it again. */
static void hotadd(unsigned int reps)
{
	static const int cfs[] = { 0, 3 };	/* split, bitmap */
	unsigned int c, r, nr = nr_sections - 1;

	printf("mode,rep,remove_ns,add_ns,bitmap_reallocs,bitmap_bytes,meta_bytes\n");
	for (c = 0; c < ARRAY_SIZE(cfs); c++) {
		reset(&configs[cfs[c]]);
		for (r = 0; r < reps; r++) {
			struct buddy_split_section s = { .nr = nr };
			struct buddy_split_info info = {};
			u64 rm_ns, add_ns, t0;
			size_t maps = 0;
			int blocker;

			if (use_dev) {
				if (ioctl(dev_fd, BUDDY_SPLIT_IOC_SECTION_REMOVE, &s))
					die("SECTION_REMOVE");
				rm_ns = s.ns;
				if (ioctl(dev_fd, BUDDY_SPLIT_IOC_SECTION_ADD, &s))
					die("SECTION_ADD");
				add_ns = s.ns;
				if (ioctl(dev_fd, BUDDY_SPLIT_IOC_INFO, &info))
					die("INFO");
			} else {
				unsigned long base = arena->sections[nr].base_pfn;

				t0 = now_ns();
				if (bs_section_remove(arena, nr, &blocker))
					die("bs_section_remove");
				rm_ns = now_ns() - t0;
				t0 = now_ns();
				if (bs_section_add(arena, nr, base, true))
					die("bs_section_add");
				add_ns = now_ns() - t0;
				info.meta_bytes = bs_metadata_bytes(arena, &maps);
				info.bitmap_bytes = maps;
				info.bitmap_reallocs = arena->stats.bitmap_reallocs;
			}
			check_arena();
			printf("%s,%u,%llu,%llu,%llu,%llu,%llu\n",
			       bs_mode_name(configs[cfs[c]].mode), r,
			       (unsigned long long)rm_ns,
			       (unsigned long long)add_ns,
			       (unsigned long long)info.bitmap_reallocs,
			       (unsigned long long)info.bitmap_bytes,
			       (unsigned long long)info.meta_bytes);
		}
	}
}

/*
 * User space only: hot-add one section just above a span of @gib GiB that
 * is already covered (two sections at its ends): the bitmap buddy must
 * reallocate and copy maps covering the whole span, the split buddy only
 * sets up the new section's descriptors.
 */
static void span(void)
{
	static const unsigned int gibs[] = { 1, 4, 16, 64, 256 };
	unsigned long spp = 1UL << SECTION_SHIFT;
	unsigned int g, m, r;

	printf("mode,span_gib,add_ns,bitmap_bytes,meta_bytes\n");
	for (g = 0; g < ARRAY_SIZE(gibs); g++) {
		unsigned long top = (unsigned long)gibs[g] << (30 - 12);

		for (m = 0; m < 2; m++) {
			int mode = m ? BS_MODE_BITMAP : BS_MODE_SPLIT;
			u64 ns[REPS];
			size_t maps = 0, meta = 0;

			/* Round 0 warms the allocator up and is not counted. */
			for (r = 0; r <= REPS; r++) {
				struct bs_arena *a;
				u64 t0;

				a = bs_arena_create(SECTION_SHIFT, 3, mode);
				if (!a || bs_section_add(a, 0, 0, false) ||
				    bs_section_add(a, 1, top - spp, false))
					die("setup");
				t0 = now_ns();
				if (bs_section_add(a, 2, top, true))
					die("bs_section_add");
				if (r)
					ns[r - 1] = now_ns() - t0;
				meta = bs_metadata_bytes(a, &maps);
				bs_arena_destroy(a);
			}
			qsort(ns, REPS, sizeof(u64), cmp_u64);
			printf("%s,%u,%llu,%zu,%zu\n", bs_mode_name(mode),
			       gibs[g], (unsigned long long)ns[REPS / 2],
			       maps, meta);
		}
	}
}

static void kernelmix(unsigned long mb, unsigned int rounds)
{
	char line[16];
	unsigned long chunk[BS_NR_TYPES], t;
	char *user;
	unsigned int r;

	for (t = 0; t < BS_NR_TYPES; t++)
		chunk[t] = (mb << 20) / 4096 * mixes[0].pct[t] / 100 / rounds;
	user = mmap(NULL, chunk[0] * rounds * 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (user == MAP_FAILED)
		die("mmap");
	/* Interleave the three types round by round, like the workload. */
	for (r = 0; r < rounds; r++) {
		memset(user + r * chunk[0] * 4096, 0x5a, chunk[0] * 4096);
		for (t = 1; t < BS_NR_TYPES; t++) {
			struct buddy_split_hold h = {
				.type = t, .pages = chunk[t],
			};

			if (ioctl(dev_fd, BUDDY_SPLIT_IOC_KERNEL_HOLD, &h))
				die("KERNEL_HOLD");
			if (h.pages != chunk[t])
				fprintf(stderr, "held %llu of %lu pages\n",
					(unsigned long long)h.pages, chunk[t]);
		}
	}
	/* The caller offlines blocks now; a line on stdin ends it. */
	puts("ready");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	if (ioctl(dev_fd, BUDDY_SPLIT_IOC_KERNEL_RELEASE))
		die("KERNEL_RELEASE");
	munmap(user, chunk[0] * rounds * 4096);
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 3)
		goto usage;
	if (!strcmp(argv[1], "--dev"))
		use_dev = 1;
	else if (strcmp(argv[1], "--user"))
		goto usage;
	cmd = argv[2];
	if (!strcmp(cmd, "span") && !use_dev) {
		span();
		return 0;
	}
	setup();
	if (!strcmp(cmd, "removability-pinned-last") && !use_dev) {
		pinned_last = 1;
		cmd = "removability";
		bs_arena_destroy(arena);
		user_setup(BS_MODE_SPLIT);
	}
	if (!strcmp(cmd, "removability")) {
		removability(argc > 3 ? atoi(argv[3]) : 10,
			     argc > 4 ? atoi(argv[4]) : 125000);
		return 0;
	}
	if (!strcmp(cmd, "bench")) {
		bench(argc > 3 ? atoll(argv[3]) : 32768);
		return 0;
	}
	if (!strcmp(cmd, "kernelmix") && use_dev && argc > 4) {
		kernelmix(atol(argv[3]), atoi(argv[4]));
		return 0;
	}
	if (!strcmp(cmd, "hotadd")) {
		hotadd(argc > 3 ? atoi(argv[3]) : 5);
		return 0;
	}
usage:
	fprintf(stderr, "usage: bsexp --dev|--user CMD [args] (see the header)\n");
	return 2;
}
