// SPDX-License-Identifier: GPL-2.0
/*
 * mtbench: page migration throughput in one guest run, three ways:
 *   memcpy      copy of the same amount of data (the floor: no migration)
 *   move_pages  move_pages(2) of anonymous memory between nodes 0 and 1
 *   migrate_test  MIGRATE ioctl of /dev/migrate_test pages between nodes
 *               0 and 1, at several batch sizes
 * Each method moves the buffer back and forth ROUNDS times; one CSV line
 * per move (method,batch,round,to_node,pages,ns,touch_ns) goes to stdout;
 * touch_ns is the time to read one word of every page afterwards (the
 * driver's pages are unmapped by a move and fault back in on access). With
 * --hist FILE the driver's per-page blocked-window histogram of every
 * batch size is written to FILE (method,batch,bucket_lo_ns,count).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/mempolicy.h>
#include <linux/migrate_test.h>

#include "memhp_mark.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static size_t psz;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "mtbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fill(uint64_t *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		w[i] = i * 0x9E3779B97F4A7C15ULL;
}

static void verify(const uint64_t *w, size_t n, const char *who)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (w[i] != i * 0x9E3779B97F4A7C15ULL) {
			fprintf(stderr, "mtbench: %s: data lost at word %zu\n",
				who, i);
			exit(1);
		}
}

/* Read one word of every page: the cost of (re)mapping after a move. */
static uint64_t sink;

static uint64_t touch(const char *buf, size_t npages)
{
	uint64_t t = now_ns(), sum = 0;
	size_t i;

	for (i = 0; i < npages; i++)
		sum += __atomic_load_n((const uint64_t *)(buf + i * psz),
				       __ATOMIC_RELAXED);
	__atomic_store_n(&sink, sum, __ATOMIC_RELAXED);
	return now_ns() - t;
}

struct mp {			/* move_pages(2) on anonymous memory */
	char *buf;
	void **pages;
	int *nodes, *status;
	long retried;
};

static void mp_setup(struct mp *mp, size_t npages)
{
	size_t len = npages * psz, i;

	mp->pages = calloc(npages, sizeof(void *));
	mp->nodes = calloc(npages, sizeof(int));
	mp->status = calloc(npages, sizeof(int));
	mp->buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mp->buf == MAP_FAILED || !mp->pages || !mp->nodes || !mp->status)
		die("mmap");
	/* 4 KiB pages, like the driver's: no transparent huge pages. */
	if (madvise(mp->buf, len, MADV_NOHUGEPAGE))
		die("madvise");
	fill((uint64_t *)mp->buf, len / 8);
	for (i = 0; i < npages; i++)
		mp->pages[i] = mp->buf + i * psz;
}

static void mp_move(struct mp *mp, size_t npages, int r, int to)
{
	uint64_t t, tt;
	size_t i;
	int tries;
	long ret;

	for (i = 0; i < npages; i++)
		mp->nodes[i] = to;
	t = now_ns();
	/*
	 * Pages that failed transiently (-EBUSY: not on an LRU list yet) make
	 * move_pages() return how many did not move, and leave the later
	 * status entries unset: move them all again (pages already there
	 * cost a lookup only).
	 */
	for (tries = 0; tries < 10; tries++) {
		memhp_mark(MEMHP_MARK_BEGIN, "move_pages");
		ret = syscall(SYS_move_pages, 0, npages, mp->pages, mp->nodes,
			      mp->status, MPOL_MF_MOVE);
		memhp_mark(MEMHP_MARK_END, "move_pages");
		if (ret < 0)
			die("move_pages");
		for (i = 0; i < npages && mp->status[i] == to; i++)
			;
		if (!ret && i == npages)
			break;
		mp->retried++;
	}
	t = now_ns() - t;
	for (i = 0; i < npages; i++)
		if (mp->status[i] != to) {
			fprintf(stderr, "mtbench: page %zu on %d, not %d\n",
				i, mp->status[i], to);
			exit(1);
		}
	tt = touch(mp->buf, npages);
	if (r >= 0)
		printf("move_pages,0,%d,%d,%zu,%llu,%llu\n", r, to, npages,
		       (unsigned long long)t, (unsigned long long)tt);
}

static void mp_done(struct mp *mp, size_t npages)
{
	if (mp->retried)
		fprintf(stderr, "mtbench: move_pages retried %ld times\n",
			mp->retried);
	verify((uint64_t *)mp->buf, npages * psz / 8, "move_pages");
	munmap(mp->buf, npages * psz);
	free(mp->pages);
	free(mp->nodes);
	free(mp->status);
}

/* Memory block -> node, from /sys/devices/system/node/node<N>/memory<B>. */
static int *block_node;
static long nblocks;
static uint64_t block_pfns;

static void load_block_nodes(void)
{
	char path[128], name[64];
	FILE *f;
	DIR *d;
	struct dirent *e;
	int n;
	long b;

	f = fopen("/sys/devices/system/memory/block_size_bytes", "r");
	if (!f || fscanf(f, "%lx", &b) != 1)
		die("block_size_bytes");
	fclose(f);
	block_pfns = b / psz;
	nblocks = 1 << 16;
	block_node = malloc(nblocks * sizeof(int));
	if (!block_node)
		die("malloc");
	memset(block_node, 0xff, nblocks * sizeof(int));
	for (n = 0; n < 64; n++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", n);
		d = opendir(path);
		if (!d)
			continue;
		while ((e = readdir(d))) {
			if (sscanf(e->d_name, "memory%ld%63s", &b, name) == 1 &&
			    b >= 0 && b < nblocks)
				block_node[b] = n;
		}
		closedir(d);
	}
}

/* Every page of the mapping is on @node (checked through QUERY). */
static void check_nodes(int fd, void *buf, size_t npages, int node)
{
	struct migrate_test_query q = { 0 };
	uint64_t *pfns = calloc(npages, 8);
	size_t i;
	long b;

	if (!pfns)
		die("calloc");
	q.addr = (uintptr_t)buf;
	q.len = npages * psz;
	q.pfns = (uintptr_t)pfns;
	if (ioctl(fd, MIGRATE_TEST_IOC_QUERY, &q))
		die("QUERY");
	for (i = 0; i < npages; i++) {
		b = pfns[i] / block_pfns;
		if (b >= nblocks || block_node[b] != node) {
			fprintf(stderr, "mtbench: page %zu (pfn %#llx) not on node %d\n",
				i, (unsigned long long)pfns[i], node);
			exit(1);
		}
	}
	free(pfns);
}

struct drv {			/* the migrate_test MIGRATE ioctl */
	unsigned int batch;
	char phase[32];		/* memhp-count phase: migrate_test-b<batch> */
	int fd;
	char *buf;
	uint64_t hist[MIGRATE_TEST_HIST_BUCKETS];
};

static void drv_setup(struct drv *d, size_t npages, unsigned int batch)
{
	d->batch = batch;
	snprintf(d->phase, sizeof(d->phase), "migrate_test-b%u", batch);
	memset(d->hist, 0, sizeof(d->hist));
	d->fd = open("/dev/migrate_test", O_RDWR);
	if (d->fd < 0)
		die("/dev/migrate_test");
	d->buf = mmap(NULL, npages * psz, PROT_READ | PROT_WRITE, MAP_SHARED,
		      d->fd, 0);
	if (d->buf == MAP_FAILED)
		die("mmap /dev/migrate_test");
	fill((uint64_t *)d->buf, npages * psz / 8);
}

static void drv_move(struct drv *d, size_t npages, int r, int to)
{
	struct migrate_test_stats st0 = { 0 }, st1 = { 0 };
	struct migrate_test_migrate m;
	uint64_t t, tt;
	int i, ret;

	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)d->buf;
	m.len = npages * psz;
	m.target = MIGRATE_TEST_TARGET_NODE;
	m.node = to;
	m.batch = d->batch;
	if (ioctl(d->fd, MIGRATE_TEST_IOC_STATS, &st0))
		die("STATS");
	t = now_ns();
	memhp_mark(MEMHP_MARK_BEGIN, d->phase);
	ret = ioctl(d->fd, MIGRATE_TEST_IOC_MIGRATE, &m);
	memhp_mark(MEMHP_MARK_END, d->phase);
	t = now_ns() - t;
	if (ret)
		die("MIGRATE");
	if (ioctl(d->fd, MIGRATE_TEST_IOC_STATS, &st1))
		die("STATS");
	if (m.failed) {
		fprintf(stderr, "mtbench: %llu pages failed (%d)\n",
			(unsigned long long)m.failed, m.first_error);
		exit(1);
	}
	/* Round -1 may find pages already on node 0. */
	if (r >= 0 && m.migrated != npages) {
		fprintf(stderr, "mtbench: migrated %llu of %zu\n",
			(unsigned long long)m.migrated, npages);
		exit(1);
	}
	tt = touch(d->buf, npages);
	check_nodes(d->fd, d->buf, npages, to);
	if (r < 0)
		return;
	for (i = 0; i < MIGRATE_TEST_HIST_BUCKETS; i++)
		d->hist[i] += st1.hist_ns[i] - st0.hist_ns[i];
	printf("migrate_test,%u,%d,%d,%zu,%llu,%llu\n", d->batch, r, to,
	       npages, (unsigned long long)t, (unsigned long long)tt);
}

static void drv_done(struct drv *d, size_t npages, FILE *hist)
{
	int i;

	verify((uint64_t *)d->buf, npages * psz / 8, "migrate_test");
	for (i = 0; hist && i < MIGRATE_TEST_HIST_BUCKETS; i++)
		if (d->hist[i])
			fprintf(hist, "migrate_test,%u,%llu,%llu\n", d->batch,
				1ULL << i, (unsigned long long)d->hist[i]);
	munmap(d->buf, npages * psz);
	close(d->fd);
}

static void memcpy_move(char *a, char *b, size_t npages, int r)
{
	uint64_t t = now_ns();

	memcpy(r & 1 ? a : b, r & 1 ? b : a, npages * psz);
	t = now_ns() - t;
	printf("memcpy,0,%d,-1,%zu,%llu,0\n", r, npages, (unsigned long long)t);
}

int main(int argc, char **argv)
{
	static const unsigned int batches[] = { 1, 8, 32, 64 };
#define NB	ARRAY_SIZE(batches)
	struct drv drv[NB];
	size_t npages = 8192;
	int rounds = 6, i, r, to;
	FILE *hist = NULL;
	struct mp mp = { 0 };
	char *a, *b;

	psz = sysconf(_SC_PAGESIZE);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pages") && i + 1 < argc) {
			npages = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--hist") && i + 1 < argc) {
			hist = fopen(argv[++i], "w");
			if (!hist)
				die(argv[i]);
		} else {
			fprintf(stderr,
				"usage: mtbench [--pages N] [--rounds R] [--hist FILE]\n");
			return 2;
		}
	}
	load_block_nodes();
	if (hist)
		fprintf(hist, "method,batch,bucket_lo_ns,count\n");
	printf("method,batch,round,to_node,pages,ns,touch_ns\n");

	/*
	 * All methods in turn within each round, so that a change of the
	 * host's load (the guest is emulated) hits every method alike.
	 */
	a = malloc(npages * psz);
	b = malloc(npages * psz);
	if (!a || !b)
		die("malloc");
	memset(a, 1, npages * psz);
	memset(b, 2, npages * psz);
	mp_setup(&mp, npages);
	for (i = 0; i < NB; i++)
		drv_setup(&drv[i], npages, batches[i]);
	for (r = -1; r < rounds; r++) {
		to = (r + 1) & 1;	/* round -1 puts everything on node 0 */
		if (r >= 0)
			memcpy_move(a, b, npages, r);
		mp_move(&mp, npages, r, to);
		for (i = 0; i < NB; i++)
			drv_move(&drv[(i + r + NB) % NB], npages, r, to);
	}
	mp_done(&mp, npages);
	for (i = 0; i < NB; i++)
		drv_done(&drv[i], npages, hist);
	free(a);
	free(b);
	if (hist)
		fclose(hist);
	return 0;
}
