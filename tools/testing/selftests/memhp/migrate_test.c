// SPDX-License-Identifier: GPL-2.0
/*
 * memhp-budget: 80
 *
 * Selftests of /dev/migrate_test (mm/migrate_test_*.c): user memory backed by
 * driver-owned movable pages, migrated by the driver's MIGRATE ioctl and by
 * the kernel (memory offlining) through the driver's movable_operations.
 * It loads the module unless it is loaded, and unloads it if it did. The
 * refusal of hibernation is tested in migrate_test_hibernate.sh's guest,
 * which can hibernate.
 *
 * The DIMM test needs a memhp-vm guest (memhp-qmp, free DIMM slots); the
 * default guest has them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/migrate_test.h>

#include "kselftest_harness.h"
#include "memhp_words.h"
#include "memhp_file.h"
#include "memhp_blocks.h"
#include "memhp_module.h"

#define DEV		"/dev/migrate_test"
#define MEMSYS		"/sys/devices/system/memory"
#define SECTION_SHIFT	27	/* x86-64 SECTION_SIZE_BITS */
#define NO_PFN		(~0ULL)

static size_t psz;

static int do_migrate(int fd, void *addr, size_t len,
		      struct migrate_test_migrate *m)
{
	m->addr = (uintptr_t)addr;
	m->len = len;
	return ioctl(fd, MIGRATE_TEST_IOC_MIGRATE, m) ? -errno : 0;
}

static int query(int fd, void *addr, size_t len, uint64_t *pfns)
{
	struct migrate_test_query q = {
		.addr = (uintptr_t)addr, .len = len, .pfns = (uintptr_t)pfns,
	};

	return ioctl(fd, MIGRATE_TEST_IOC_QUERY, &q) ? -errno : (int)q.populated;
}

static int inject(int fd, void *addr, size_t len, unsigned int kind)
{
	struct migrate_test_inject in = {
		.addr = (uintptr_t)addr, .len = len, .kind = kind,
	};

	return ioctl(fd, MIGRATE_TEST_IOC_INJECT, &in) ? -errno : (int)in.count;
}

static int get_stats(int fd, struct migrate_test_stats *st)
{
	memset(st, 0, sizeof(*st));	/* flags and reserved: in, must be 0 */
	return ioctl(fd, MIGRATE_TEST_IOC_STATS, st) ? -errno : 0;
}

static uint64_t block_size(void)
{
	char s[64];

	if (memhp_read_str(MEMSYS "/block_size_bytes", s, sizeof(s)))
		return 0;
	return strtoull(s, NULL, 16);
}

static bool block_online(long block)
{
	char path[128], s[32];

	snprintf(path, sizeof(path), MEMSYS "/memory%ld/state", block);
	return !memhp_read_str(path, s, sizeof(s)) && !strcmp(s, "online");
}

static int count_in(const uint64_t *pfns, size_t n, uint64_t lo, uint64_t hi)
{
	size_t i;
	int c = 0;

	for (i = 0; i < n; i++)
		if (pfns[i] >= lo && pfns[i] < hi)
			c++;
	return c;
}

FIXTURE(mt)
{
	int fd;
	size_t npages;
	size_t len;
	uint8_t *buf;
	uint64_t *pfns;
	uint64_t *pfns2;
};

FIXTURE_SETUP(mt)
{
	psz = sysconf(_SC_PAGESIZE);
	self->fd = open(DEV, O_RDWR);
	if (self->fd < 0)
		SKIP(return, DEV " missing: load migrate_test.ko (migrate_test.sh)");
	self->npages = 256;
	self->len = self->npages * psz;
	self->buf = mmap(NULL, self->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, 0);
	ASSERT_NE(self->buf, MAP_FAILED);
	self->pfns = calloc(self->npages, 8);
	self->pfns2 = calloc(self->npages, 8);
	ASSERT_NE(self->pfns, NULL);
	ASSERT_NE(self->pfns2, NULL);
}

FIXTURE_TEARDOWN(mt)
{
	if (self->fd < 0)
		return;
	munmap(self->buf, self->len);
	close(self->fd);
	free(self->pfns);
	free(self->pfns2);
}

/* Pages appear on first touch, zeroed; a private mapping is refused. */
TEST_F(mt, fault_and_mmap_rules)
{
	void *p;

	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns), 0);
	ASSERT_EQ(self->buf[5 * psz + 7], 0);
	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns), 1);
	ASSERT_NE(self->pfns[5], NO_PFN);
	ASSERT_EQ(self->pfns[4], NO_PFN);
	fill(self->buf, self->len, 1);
	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
		  (int)self->npages);
	p = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, 0);
	ASSERT_EQ(p, MAP_FAILED);
	ASSERT_EQ(errno, EINVAL);
}

/* Pattern -> migrate every page -> the pattern is intact, every pfn moved. */
TEST_F_TIMEOUT(mt, pattern_migrate_verify, 60)
{
	struct migrate_test_migrate m = {
		.target = MIGRATE_TEST_TARGET_NODE, .node = -1,
		.flags = MIGRATE_TEST_FORCE,
	};
	size_t i;
	int round;

	fill(self->buf, self->len, 42);
	for (round = 0; round < 3; round++) {
		ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
			  (int)self->npages);
		ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
		ASSERT_EQ(m.migrated, self->npages);
		ASSERT_EQ(m.failed, 0);
		ASSERT_EQ(m.first_error, 0);
		ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns2),
			  (int)self->npages);
		for (i = 0; i < self->npages; i++)
			ASSERT_NE(self->pfns[i], self->pfns2[i]);
		ASSERT_EQ(check(self->buf, self->len, 42), -1);
	}
	/* Without FORCE a page already on "any node" stays put. */
	m.flags = 0;
	ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
	ASSERT_EQ(m.migrated, 0);
	ASSERT_EQ(m.skipped, self->npages);
	/* Unpopulated pages are skipped, not failed. */
	ASSERT_EQ(munmap(self->buf, self->len), 0);
	self->buf = mmap(NULL, self->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, self->len * 4);
	ASSERT_NE(self->buf, MAP_FAILED);
	m.flags = MIGRATE_TEST_FORCE;
	ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
	ASSERT_EQ(m.skipped, self->npages);
	ASSERT_EQ(m.failed, 0);
}

/* Bad requests fail with EINVAL and change nothing. */
TEST_F(mt, bad_input_rejected)
{
	struct migrate_test_migrate m = {
		.target = MIGRATE_TEST_TARGET_NODE, .node = -1,
		.flags = MIGRATE_TEST_FORCE,
	};
	struct migrate_test_migrate bad;
	void *other;

	fill(self->buf, self->len, 7);
	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
		  (int)self->npages);

	bad = m;
	EXPECT_EQ(do_migrate(self->fd, self->buf + 1, psz, &bad), -EINVAL);
	bad = m;
	EXPECT_EQ(do_migrate(self->fd, self->buf, 0, &bad), -EINVAL);
	bad = m;
	EXPECT_EQ(do_migrate(self->fd, self->buf, self->len + psz, &bad),
		  -EINVAL);
	bad = m;
	bad.target = 3;
	EXPECT_EQ(do_migrate(self->fd, self->buf, psz, &bad), -EINVAL);
	bad = m;
	bad.node = 4095;
	EXPECT_EQ(do_migrate(self->fd, self->buf, psz, &bad), -EINVAL);
	bad = m;
	bad.node = -2;
	EXPECT_EQ(do_migrate(self->fd, self->buf, psz, &bad), -EINVAL);
	bad = m;
	bad.target = MIGRATE_TEST_TARGET_RANGE;
	bad.start_pfn = 100;
	bad.end_pfn = 100;
	EXPECT_EQ(do_migrate(self->fd, self->buf, psz, &bad), -EINVAL);
	bad = m;
	bad.target = MIGRATE_TEST_TARGET_AWAY;
	bad.section = 1ULL << 40;
	EXPECT_EQ(do_migrate(self->fd, self->buf, psz, &bad), -EINVAL);
	bad = m;
	bad.flags = 0x80;
	EXPECT_EQ(do_migrate(self->fd, self->buf, psz, &bad), -EINVAL);
	bad = m;
	bad.reserved = 1;
	EXPECT_EQ(do_migrate(self->fd, self->buf, psz, &bad), -EINVAL);
	bad = m;
	bad.batch = MIGRATE_TEST_MAX_BATCH + 1;
	EXPECT_EQ(do_migrate(self->fd, self->buf, psz, &bad), -EINVAL);
	bad = m;
	bad.failed_cap = 4;
	EXPECT_EQ(do_migrate(self->fd, self->buf, psz, &bad), -EINVAL);
	EXPECT_EQ(inject(self->fd, self->buf, psz, 9), -EINVAL);
	EXPECT_EQ(ioctl(self->fd, _IO(MIGRATE_TEST_IOC_MAGIC, 99)), -1);
	EXPECT_EQ(errno, ENOTTY);

	/* Memory that is not a mapping of this fd. */
	other = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(other, MAP_FAILED);
	bad = m;
	EXPECT_EQ(do_migrate(self->fd, other, psz, &bad), -EINVAL);
	munmap(other, psz);

	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns2),
		  (int)self->npages);
	EXPECT_EQ(memcmp(self->pfns, self->pfns2, self->npages * 8), 0);
	EXPECT_EQ(check(self->buf, self->len, 7), -1);
}

/* Into a named section: afterwards every page lies in its pfn range. */
TEST_F_TIMEOUT(mt, migrate_into_section, 120)
{
	struct migrate_test_migrate m = {
		.target = MIGRATE_TEST_TARGET_RANGE,
	};
	uint64_t per_block, sec_pfns = 1ULL << (SECTION_SHIFT - 12);
	long blocks[512], sec;
	int n, i, done = 0;

	per_block = block_size() >> SECTION_SHIFT;
	ASSERT_GT(per_block, 0);
	fill(self->buf, self->len, 99);
	n = list_blocks(blocks, 512);
	/* From the top down: the first online section that takes them all. */
	for (i = n - 1; i > 0 && !done; i--) {
		if (!block_online(blocks[i]))
			continue;
		sec = blocks[i] * per_block;
		m.start_pfn = sec * sec_pfns;
		m.end_pfn = m.start_pfn + sec_pfns;
		ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
		ASSERT_EQ(check(self->buf, self->len, 99), -1);
		ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
			  (int)self->npages);
		ksft_print_msg("section %ld: migrated %llu failed %llu (%d)\n",
			       sec, m.migrated, m.failed, m.first_error);
		if (m.failed)
			continue;
		ASSERT_EQ(count_in(self->pfns, self->npages, m.start_pfn,
				   m.end_pfn), (int)self->npages);
		done = 1;
	}
	ASSERT_TRUE(done);

	/*
	 * Away from that section: none of them is left there. The kernel may
	 * move some itself meanwhile (compaction isolates movable_ops pages
	 * too): those are skipped (already away), or fail with EBUSY while
	 * the core holds them isolated, and a second call takes them (on
	 * 6.12 a first call can leave a few behind).
	 */
	m.target = MIGRATE_TEST_TARGET_AWAY;
	m.section = sec;
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
		ksft_print_msg("away from section %ld: migrated %llu skipped %llu failed %llu\n",
			       sec, m.migrated, m.skipped, m.failed);
		ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
			  (int)self->npages);
		if (!count_in(self->pfns, self->npages, sec * sec_pfns,
			      (sec + 1) * sec_pfns))
			break;
	}
	ASSERT_EQ(count_in(self->pfns, self->npages, sec * sec_pfns,
			   (sec + 1) * sec_pfns), 0);
	ASSERT_EQ(check(self->buf, self->len, 99), -1);
}

/* Injected failures: data intact, the failed list exactly the injected. */
TEST_F_TIMEOUT(mt, injected_failures_roll_back, 60)
{
	static const int nomem[] = { 3, 10 }, held[] = { 20, 21, 200 };
	struct migrate_test_migrate m = {
		.target = MIGRATE_TEST_TARGET_NODE, .node = -1,
		.flags = MIGRATE_TEST_FORCE, .timeout_ms = 20,
	};
	uint64_t failed[16], expect[5];
	size_t i, j;
	int k = 0;

	fill(self->buf, self->len, 5);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(inject(self->fd, self->buf + nomem[i] * psz, psz,
				 MIGRATE_TEST_INJECT_ALLOC_FAIL), 1);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(inject(self->fd, self->buf + held[i] * psz, psz,
				 MIGRATE_TEST_INJECT_HOLD_REF), 1);
	expect[k++] = (uintptr_t)(self->buf + 3 * psz);
	expect[k++] = (uintptr_t)(self->buf + 10 * psz);
	expect[k++] = (uintptr_t)(self->buf + 20 * psz);
	expect[k++] = (uintptr_t)(self->buf + 21 * psz);
	expect[k++] = (uintptr_t)(self->buf + 200 * psz);

	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
		  (int)self->npages);
	m.failed_addrs = (uintptr_t)failed;
	m.failed_cap = 16;
	ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
	EXPECT_EQ(m.failed, 5);
	EXPECT_EQ(m.migrated, self->npages - 5);
	EXPECT_EQ(m.first_error, -ENOMEM);
	/* Reported in address order within a batch; sort to compare. */
	for (i = 1; i < 5; i++)
		for (j = i; j > 0 && failed[j - 1] > failed[j]; j--) {
			uint64_t t = failed[j];

			failed[j] = failed[j - 1];
			failed[j - 1] = t;
		}
	for (i = 0; i < 5; i++)
		EXPECT_EQ(failed[i], expect[i]);
	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns2),
		  (int)self->npages);
	for (i = 0; i < self->npages; i++) {
		bool f = i == 3 || i == 10 || i == 20 || i == 21 || i == 200;

		/* Failed pages stayed where they were, the others moved. */
		EXPECT_EQ(f, self->pfns[i] == self->pfns2[i]);
	}
	EXPECT_EQ(check(self->buf, self->len, 5), -1);

	/* Only the reference timeout: first error ETIMEDOUT. */
	ASSERT_EQ(inject(self->fd, self->buf, 16 * psz,
			 MIGRATE_TEST_INJECT_CLEAR), 2);
	ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
	EXPECT_EQ(m.failed, 3);
	EXPECT_EQ(m.first_error, -ETIMEDOUT);
	EXPECT_EQ(check(self->buf, self->len, 5), -1);

	/* Cleared: everything moves again. */
	ASSERT_EQ(inject(self->fd, self->buf, self->len,
			 MIGRATE_TEST_INJECT_CLEAR), 3);
	ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
	EXPECT_EQ(m.failed, 0);
	EXPECT_EQ(m.migrated, self->npages);
	EXPECT_EQ(check(self->buf, self->len, 5), -1);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

struct blocker {
	int fd;
	uint8_t *page;
	uint64_t value;		/* read by the toucher */
	uint64_t t_touch, t_done, t_release;
};

/* 200 ms into the migration: read the page (it must block). */
static void *toucher_fn(void *arg)
{
	struct blocker *b = arg;

	usleep(200000);
	b->t_touch = mono_ms();
	b->value = __atomic_load_n((uint64_t *)b->page, __ATOMIC_RELAXED);
	b->t_done = mono_ms();
	return NULL;
}

/* 600 ms into the migration: drop the reference it is waiting for. */
static void *releaser_fn(void *arg)
{
	struct blocker *b = arg;

	usleep(600000);
	b->t_release = mono_ms();
	inject(b->fd, b->page, psz, MIGRATE_TEST_INJECT_CLEAR);
	return NULL;
}

/*
 * An access during a page's migration blocks and resumes on the new page:
 * the migration waits for an injected reference, a reader faults meanwhile
 * and must wait until the reference is dropped and the copy committed.
 */
TEST_F_TIMEOUT(mt, access_blocks_until_migrated, 60)
{
	struct migrate_test_migrate m = {
		.target = MIGRATE_TEST_TARGET_NODE, .node = -1,
		.flags = MIGRATE_TEST_FORCE, .timeout_ms = 5000,
	};
	struct migrate_test_stats st0, st1;
	struct blocker b = { .fd = self->fd, .page = self->buf };
	pthread_t toucher, releaser;
	uint64_t pfn0, pfn1, t0;

	fill(self->buf, psz, 3);
	ASSERT_EQ(query(self->fd, self->buf, psz, &pfn0), 1);
	ASSERT_EQ(inject(self->fd, self->buf, psz,
			 MIGRATE_TEST_INJECT_HOLD_REF), 1);
	ASSERT_EQ(get_stats(self->fd, &st0), 0);
	ASSERT_EQ(pthread_create(&toucher, NULL, toucher_fn, &b), 0);
	ASSERT_EQ(pthread_create(&releaser, NULL, releaser_fn, &b), 0);
	t0 = mono_ms();
	ASSERT_EQ(do_migrate(self->fd, self->buf, psz, &m), 0);
	pthread_join(toucher, NULL);
	pthread_join(releaser, NULL);
	ASSERT_EQ(get_stats(self->fd, &st1), 0);
	ksft_print_msg("migrate %llu ms, read %llu-%llu ms, ref dropped %llu ms\n",
		       (unsigned long long)(mono_ms() - t0),
		       (unsigned long long)(b.t_touch - t0),
		       (unsigned long long)(b.t_done - t0),
		       (unsigned long long)(b.t_release - t0));
	EXPECT_EQ(m.migrated, 1);
	EXPECT_EQ(m.failed, 0);
	EXPECT_EQ(b.value, word_of(3, 0));
	/* It blocked until the reference went and resumed only after. */
	EXPECT_GE(b.t_done, b.t_release);
	EXPECT_GE(st1.fault_waits - st0.fault_waits, 1);
	ASSERT_EQ(query(self->fd, self->buf, psz, &pfn1), 1);
	EXPECT_NE(pfn0, pfn1);
	EXPECT_EQ(check(self->buf, psz, 3), -1);
}

#define WRITERS		8
#define WPAGES		4

struct writer {
	pthread_t thread;
	uint64_t *words;
	size_t nwords;
	uint64_t last;		/* last value written */
	long bad;		/* read-after-write mismatches */
	int *stop;
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	uint64_t k;

	for (k = 1; !__atomic_load_n(w->stop, __ATOMIC_RELAXED); k++) {
		size_t i = k % w->nwords;

		__atomic_store_n(&w->words[i], k, __ATOMIC_RELAXED);
		if (__atomic_load_n(&w->words[i], __ATOMIC_RELAXED) != k)
			w->bad++;
	}
	w->last = k - 1;
	return NULL;
}

/* 8 writers run during 1000 migrations; afterwards every word is checked. */
TEST_F_TIMEOUT(mt, writers_during_migrations, 180)
{
	struct migrate_test_migrate m = {
		.target = MIGRATE_TEST_TARGET_NODE, .node = -1,
		.flags = MIGRATE_TEST_FORCE,
	};
	size_t wlen = WRITERS * WPAGES * psz;
	struct migrate_test_stats st0, st1;
	struct writer w[WRITERS];
	int stop = 0;
	uint64_t moved = 0, k, want;
	int t, i;
	size_t j;

	memset(self->buf, 0, wlen);
	ASSERT_EQ(get_stats(self->fd, &st0), 0);
	for (t = 0; t < WRITERS; t++) {
		w[t].words = (uint64_t *)(self->buf + t * WPAGES * psz);
		w[t].nwords = WPAGES * psz / 8;
		w[t].bad = 0;
		w[t].stop = &stop;
		ASSERT_EQ(pthread_create(&w[t].thread, NULL, writer_fn, &w[t]),
			  0);
	}
	for (i = 0; i < 1000; i++) {
		ASSERT_EQ(do_migrate(self->fd, self->buf, wlen, &m), 0);
		ASSERT_EQ(m.failed, 0);
		moved += m.migrated;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (t = 0; t < WRITERS; t++)
		pthread_join(w[t].thread, NULL);
	ASSERT_EQ(get_stats(self->fd, &st1), 0);
	ksft_print_msg("1000 migrations moved %llu pages; faults waited %llu, refaulted %llu\n",
		       (unsigned long long)moved,
		       (unsigned long long)(st1.fault_waits - st0.fault_waits),
		       (unsigned long long)(st1.fault_retries - st0.fault_retries));
	ASSERT_EQ(moved, 1000ULL * WRITERS * WPAGES);
	for (t = 0; t < WRITERS; t++) {
		ksft_print_msg("writer %d: %llu writes\n", t,
			       (unsigned long long)w[t].last);
		EXPECT_EQ(w[t].bad, 0);
		ASSERT_GT(w[t].last, w[t].nwords);
		/* Word j holds the last k <= last with k % nwords == j. */
		for (j = 0; j < w[t].nwords; j++) {
			k = w[t].last;
			want = k - ((k % w[t].nwords) + w[t].nwords - j) %
				   w[t].nwords;
			ASSERT_EQ(w[t].words[j], want);
		}
	}
	ksft_print_msg("figures: 1000 migrations moved %llu pages, %d writers, %zu KiB verified\n",
		       (unsigned long long)moved, WRITERS,
		       (size_t)WRITERS * WPAGES * psz / 1024);
}

#define KPF_LRU		5

/*
 * Only free and LRU pages in the block (from /proc/kpagecount and
 * /proc/kpageflags): offlining can then succeed, and a failed attempt will
 * not dump an unmovable page into the kernel log.
 */
static bool block_movable(long block, uint64_t bpfns)
{
	size_t sz = bpfns * 8;
	uint64_t *cnt = malloc(sz), *flg = malloc(sz), i;
	int fc = open("/proc/kpagecount", O_RDONLY);
	int ff = open("/proc/kpageflags", O_RDONLY);
	bool ok = cnt && flg && fc >= 0 && ff >= 0 &&
		  pread(fc, cnt, sz, block * sz) == (ssize_t)sz &&
		  pread(ff, flg, sz, block * sz) == (ssize_t)sz;

	for (i = 0; ok && i < bpfns; i++)
		if (cnt[i] && !(flg[i] & (1ULL << KPF_LRU)))
			ok = false;
	if (fc >= 0)
		close(fc);
	if (ff >= 0)
		close(ff);
	free(cnt);
	free(flg);
	return ok;
}

static void on_alarm(int sig)
{
}

/* Write a block's state, giving up after @secs (offlining retries). */
static int block_set_state_timeout(long block, const char *state, int secs)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	int ret;

	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART: write gets EINTR */
	alarm(secs);
	ret = block_set_state(block, state);
	alarm(0);
	return ret;
}

/* Offline a memory block holding driver pages: they move, data survives. */
TEST_F_TIMEOUT(mt, offline_block_with_driver_pages, 180)
{
	struct migrate_test_migrate m = {
		.target = MIGRATE_TEST_TARGET_RANGE,
	};
	uint64_t bs = block_size(), bpfns;
	struct migrate_test_stats st0, st1;
	long blocks[512], b = -1;
	int n, i, ret, tried = 0;

	ASSERT_GT(bs, 0);
	bpfns = bs / psz;
	fill(self->buf, self->len, 11);
	n = list_blocks(blocks, 512);
	for (i = n - 1; i > 0 && b < 0 && tried < 12; i--) {
		if (!block_online(blocks[i]) || !block_movable(blocks[i], bpfns))
			continue;
		m.start_pfn = blocks[i] * bpfns;
		m.end_pfn = m.start_pfn + bpfns;
		ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
		if (m.failed)
			continue;
		ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
			  (int)self->npages);
		ASSERT_EQ(count_in(self->pfns, self->npages, m.start_pfn,
				   m.end_pfn), (int)self->npages);
		tried++;
		ASSERT_EQ(get_stats(self->fd, &st0), 0);
		ret = block_set_state_timeout(blocks[i], "offline", 30);
		ksft_print_msg("block %ld holds all %zu pages; offline: %s\n",
			       blocks[i], self->npages,
			       ret ? strerror(-ret) : "ok");
		if (!ret)
			b = blocks[i];
	}
	ASSERT_GE(b, 0) TH_LOG("no block with driver pages could be offlined");
	ASSERT_EQ(get_stats(self->fd, &st1), 0);
	ksft_print_msg("offline via driver: %llu isolated %llu moved %llu refused\n",
		       (unsigned long long)(st1.core_isolated - st0.core_isolated),
		       (unsigned long long)(st1.core_migrated - st0.core_migrated),
		       (unsigned long long)(st1.core_eagain - st0.core_eagain));
	EXPECT_GE(st1.core_migrated - st0.core_migrated, self->npages);
	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
		  (int)self->npages);
	EXPECT_EQ(count_in(self->pfns, self->npages, b * bpfns,
			   (b + 1) * bpfns), 0);
	EXPECT_EQ(check(self->buf, self->len, 11), -1);
	EXPECT_EQ(block_set_state(b, "online"), 0);
	EXPECT_EQ(check(self->buf, self->len, 11), -1);
}

#define WAIT_DELETED \
	"x-memhp-wait-event event=DEVICE_DELETED 'match={\"device\":\"mt-dimm0\"}' timeout=60"

/*
 * Compaction (/proc/sys/vm/compact_memory) moves driver pages through the
 * driver's callbacks, and they come out intact.
 *
 * Where compaction works is not a free choice: its free scanner walks down
 * from the top of the zone and takes free pages only from movable
 * pageblocks that are partly in use (suitable_migration_target() refuses a
 * whole free block), its migration scanner walks up from the bottom, and
 * the run ends where they meet. In a freshly booted guest nearly every
 * block above the kernel image is wholly free, so the scanners meet just
 * above it, and driver pages placed anywhere higher are never looked at
 * (nothing isolated, run after run). So the test makes the layout
 * itself: one driver page in each of 256 consecutive pageblocks. Every one
 * of those blocks is then a target with 511 free pages, far more than the
 * movable pages below them, so the scanners meet inside the spread and the
 * driver pages below the meeting point are moved into the holes above it.
 */
#define SPREAD_BASE_MB	256
#define SPREAD_BLOCK_MB	2	/* pageblock_order 9 with 4 KiB pages */
#define SPREAD_SKIP_MAX	256	/* the spread stays below 1.25 GiB */

TEST_F_TIMEOUT(mt, compaction_moves_driver_pages, 120)
{
	struct migrate_test_migrate m = {
		.target = MIGRATE_TEST_TARGET_RANGE,
	};
	uint64_t lo = ((uint64_t)SPREAD_BASE_MB << 20) / psz;
	uint64_t blk = ((uint64_t)SPREAD_BLOCK_MB << 20) / psz;
	struct migrate_test_stats st0, st1;
	uint64_t b = 0, skipped = 0;
	int runs, moved;
	size_t i;

	fill(self->buf, self->len, 23);
	/*
	 * A block that cannot give a page (one with unmovable pages, after
	 * earlier tests or runs) is passed over: the next one is used.
	 */
	for (i = 0; i < self->npages; i++, b++) {
		for (;;) {
			m.start_pfn = lo + b * blk;
			m.end_pfn = m.start_pfn + blk;
			ASSERT_EQ(do_migrate(self->fd, self->buf + i * psz, psz,
					     &m), 0);
			if (!m.failed || skipped == SPREAD_SKIP_MAX)
				break;
			skipped++;
			b++;
		}
		ASSERT_EQ(m.failed, 0);
	}
	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
		  (int)self->npages);
	for (i = 1; i < self->npages; i++)
		ASSERT_LT((self->pfns[i - 1] - lo) / blk,
			  (self->pfns[i] - lo) / blk);
	if (skipped)
		ksft_print_msg("%llu blocks could not take a page: skipped\n",
			       (unsigned long long)skipped);
	ASSERT_EQ(get_stats(self->fd, &st0), 0);
	/* Other movable pages can take the holes first: allow a few runs. */
	for (runs = 1; runs <= 3; runs++) {
		ASSERT_EQ(memhp_write_str("/proc/sys/vm/compact_memory", "1"), 0);
		ASSERT_EQ(get_stats(self->fd, &st1), 0);
		ASSERT_EQ(check(self->buf, self->len, 23), -1);
		if (st1.core_migrated > st0.core_migrated)
			break;
	}
	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns2),
		  (int)self->npages);
	for (i = 0, moved = 0; i < self->npages; i++)
		moved += self->pfns2[i] != self->pfns[i];
	ksft_print_msg("compaction, %d run(s): %llu isolated, %llu moved, %llu refused; "
		       "%d of %zu driver pages have a new pfn\n",
		       runs,
		       (unsigned long long)(st1.core_isolated - st0.core_isolated),
		       (unsigned long long)(st1.core_migrated - st0.core_migrated),
		       (unsigned long long)(st1.core_eagain - st0.core_eagain),
		       moved, self->npages);
	EXPECT_GT(st1.core_migrated - st0.core_migrated, 0);
	EXPECT_GT(moved, 0);
	EXPECT_EQ(check(self->buf, self->len, 23), -1);
}

/*
 * Driver pages on a hot-added ACPI DIMM: offline moves them out, device_del
 * removes the DIMM, and the data is intact at every step.
 */
TEST_F_TIMEOUT(mt, dimm_offline_and_device_del, 300)
{
	struct migrate_test_migrate m = {
		.target = MIGRATE_TEST_TARGET_RANGE,
	};
	uint64_t bs = block_size(), bpfns, dimm = 256ULL << 20;
	struct migrate_test_stats st0, st1;
	long before[512], after[512], added[64], b;
	int nb, na, nn = 0, i, j, tries;
	char args[256];

	if (access("/dev/virtio-ports/org.memhp.qmp", F_OK))
		SKIP(return, "not in a memhp-vm guest (no QMP relay)");
	ASSERT_GT(bs, 0);
	bpfns = bs / psz;
	ASSERT_EQ(memhp_write_str(MEMSYS "/auto_online_blocks", "offline"), 0);
	/* Populate first: faults prefer ZONE_MOVABLE, i.e. the new DIMM. */
	fill(self->buf, self->len, 77);
	nb = list_blocks(before, 512);
	snprintf(args, sizeof(args),
		 "object-add qom-type=memory-backend-ram id=mt-mem0 size=%llu",
		 (unsigned long long)dimm);
	ASSERT_EQ(run_qmp(args), 0);
	ASSERT_EQ(run_qmp("device_add driver=pc-dimm id=mt-dimm0 memdev=mt-mem0"),
		  0);
	for (tries = 0; tries < 150; tries++) {
		na = list_blocks(after, 512);
		if ((uint64_t)(na - nb) == dimm / bs)
			break;
		usleep(200000);
	}
	for (i = 0; i < na; i++) {
		for (j = 0; j < nb && before[j] != after[i]; j++)
			;
		if (j == nb)
			added[nn++] = after[i];
	}
	ASSERT_EQ((uint64_t)nn, dimm / bs);
	for (i = 0; i < nn; i++)
		ASSERT_EQ(block_set_state(added[i], "online_movable"), 0);

	m.start_pfn = added[0] * bpfns;
	m.end_pfn = (added[nn - 1] + 1) * bpfns;
	ASSERT_EQ(do_migrate(self->fd, self->buf, self->len, &m), 0);
	ASSERT_EQ(m.migrated, self->npages)
		TH_LOG("pfns %#llx-%#llx: skipped %llu failed %llu error %d",
		       (unsigned long long)m.start_pfn,
		       (unsigned long long)m.end_pfn, m.skipped, m.failed,
		       m.first_error);
	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
		  (int)self->npages);
	ASSERT_EQ(count_in(self->pfns, self->npages, m.start_pfn, m.end_pfn),
		  (int)self->npages);
	ksft_print_msg("all %zu pages on the DIMM (pfns %#llx-%#llx)\n",
		       self->npages, (unsigned long long)m.start_pfn,
		       (unsigned long long)m.end_pfn);
	ASSERT_EQ(check(self->buf, self->len, 77), -1);

	ASSERT_EQ(get_stats(self->fd, &st0), 0);
	for (i = 0; i < nn; i++) {
		b = added[i];
		ASSERT_EQ(block_set_state(b, "offline"), 0);
	}
	ASSERT_EQ(get_stats(self->fd, &st1), 0);
	EXPECT_GE(st1.core_migrated - st0.core_migrated, self->npages);
	ASSERT_EQ(query(self->fd, self->buf, self->len, self->pfns),
		  (int)self->npages);
	EXPECT_EQ(count_in(self->pfns, self->npages, m.start_pfn, m.end_pfn),
		  0);
	ASSERT_EQ(check(self->buf, self->len, 77), -1);

	ASSERT_EQ(run_qmp("device_del id=mt-dimm0"), 0);
	ASSERT_EQ(run_qmp(WAIT_DELETED), 0);
	ASSERT_EQ(run_qmp("object-del id=mt-mem0"), 0);
	na = list_blocks(after, 512);
	EXPECT_EQ(na, nb);
	ASSERT_EQ(check(self->buf, self->len, 77), -1);
}

/* The module cannot go while a mapping (without any open fd) remains. */
TEST(unload_refused_while_mapped)
{
	int p[2], fd, status;
	pid_t pid;
	char c;

	fd = open(DEV, O_RDWR);
	if (fd < 0)
		SKIP(return, DEV " missing");
	close(fd);
	ASSERT_EQ(pipe(p), 0);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		char *b;

		fd = open(DEV, O_RDWR);
		b = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (b == MAP_FAILED)
			_exit(1);
		b[0] = 1;
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ(read(p[0], &c, 1), 1);
	EXPECT_NE(syscall(SYS_delete_module, "migrate_test", O_NONBLOCK), 0);
	EXPECT_TRUE(errno == EWOULDBLOCK || errno == EBUSY);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ASSERT_EQ(access(DEV, F_OK), 0);
}

/*
 * Last (a fixture registered after "mt" runs after it): every earlier test
 * closed its file, so no driver page is left.
 */
FIXTURE(last)
{
	int unused;
};

FIXTURE_SETUP(last)
{
}

FIXTURE_TEARDOWN(last)
{
}

TEST_F(last, no_pages_left)
{
	struct migrate_test_stats st;
	int fd = open(DEV, O_RDWR);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(get_stats(fd, &st), 0);
	close(fd);
	ksft_print_msg("pages allocated %llu, freed %llu, alive %llu\n",
		       (unsigned long long)st.allocated,
		       (unsigned long long)st.freed,
		       (unsigned long long)st.pages);
	EXPECT_EQ(st.pages, 0);
}

/*
 * Load the module before the tests (unless it is loaded) and unload it
 * after them: the harness runs each test in a child that leaves with
 * _exit(), so only the parent runs the atexit handler.
 */
MEMHP_SELFTEST_MODULE("migrate_test", "mm/migrate_test.ko", DEV, "");

TEST_HARNESS_MAIN
