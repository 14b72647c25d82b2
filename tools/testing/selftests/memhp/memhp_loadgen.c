// SPDX-License-Identifier: GPL-2.0
/*
 * memhp_loadgen: keep one of the memhp-lab modules busy, for the unload
 * and soak tests.
 *
 *   memhp_loadgen migrate MIB [READY_FILE]   migrate_test: fill MIB of
 *       driver pages with a pattern, then MIGRATE (forced, any node) in a
 *       loop; at the end every byte is checked.
 *   memhp_loadgen buddy [READY_FILE]         buddy_split: WORKLOAD ioctls
 *       (10000 steps each) in a loop, CHECK at the end.
 *   memhp_loadgen hold PAGES                 buddy_split: KERNEL_HOLD PAGES
 *       pages and exit (they stay held until KERNEL_RELEASE or unload).
 *   memhp_loadgen once-migrate MIB / once-buddy   one round, then exit.
 *   memhp_loadgen inject-hold MIB START_PFN END_PFN READY_FILE
 *       migrate_test fault injection: fill MIB of driver pages, migrate
 *       them into pfns [START_PFN, END_PFN), inject HOLD_REF on the first
 *       16 (their migration, also the kernel's, fails while held; each
 *       refusal waits up to ~10 ms, so few pages keep an offline attempt
 *       short) and create READY_FILE. SIGUSR1: INJECT_CLEAR, then READY_FILE.cleared.
 *       SIGTERM: check every byte, count the pages still in the range.
 *
 * LOADGEN_PAUSE_MS in the environment: a pause between two calls.
 * The loops run until SIGTERM or SIGINT, then finish the current call,
 * verify, print one "# " line of figures and exit 0 when nothing was lost.
 * READY_FILE is created once the first call has completed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/buddy_split.h>
#include <linux/migrate_test.h>

/* SIGTERM and SIGINT are blocked and polled between calls. */
static int stop_requested(void)
{
	sigset_t pending;

	sigpending(&pending);
	return sigismember(&pending, SIGTERM) || sigismember(&pending, SIGINT);
}

static void ready(const char *path)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "w");
	if (f)
		fclose(f);
}

static uint64_t word(size_t i)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ 0x5a5a5a5a5a5a5a5aULL;
}

static int run_migrate(size_t mib, const char *ready_file, int once)
{
	size_t len = mib << 20, n = len / sizeof(uint64_t), i, bad = 0;
	const char *pause = getenv("LOADGEN_PAUSE_MS");
	struct migrate_test_migrate m;
	unsigned long calls = 0, moved = 0, failed = 0;
	uint64_t *p;
	int fd;

	fd = open("/dev/migrate_test", O_RDWR);
	if (fd < 0) {
		printf("# loadgen: /dev/migrate_test: %s\n", strerror(errno));
		return 1;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		printf("# loadgen: mmap: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++)
		p[i] = word(i);
	do {
		memset(&m, 0, sizeof(m));
		m.addr = (uintptr_t)p;
		m.len = len;
		m.target = MIGRATE_TEST_TARGET_NODE;
		m.node = -1;
		m.flags = MIGRATE_TEST_FORCE;
		if (ioctl(fd, MIGRATE_TEST_IOC_MIGRATE, &m) && errno != EINTR) {
			printf("# loadgen: MIGRATE: %s\n", strerror(errno));
			bad++;
			break;
		}
		calls++;
		moved += m.migrated;
		failed += m.failed;
		/* Touch a page per call: faults race the next migration. */
		p[(calls * 512) % n] ^= 0;
		if (calls == 1)
			ready(ready_file);
		if (pause && !once)
			usleep(atoi(pause) * 1000);
	} while (!stop_requested() && !once);
	for (i = 0; i < n; i++)
		if (p[i] != word(i))
			bad++;
	printf("# loadgen migrate: %lu calls, %lu pages moved, %lu failed,",
	       calls, moved, failed);
	printf(" %zu MiB verified, %zu bad words\n", mib, bad);
	munmap(p, len);
	close(fd);
	return bad ? 1 : 0;
}

static int run_buddy(const char *ready_file, int once)
{
	struct buddy_split_reset reset = { 0 };
	struct buddy_split_workload w;
	struct buddy_split_info info;
	unsigned long calls = 0, allocs = 0, fails = 0;
	int fd, ret = 0, t;

	fd = open("/dev/buddy_split", O_RDWR);
	if (fd < 0) {
		printf("# loadgen: /dev/buddy_split: %s\n", strerror(errno));
		return 1;
	}
	do {
		memset(&w, 0, sizeof(w));
		w.seed = calls + 1;
		w.ops = 10000;
		w.max_order = 5;
		w.mix[0] = 60;
		w.mix[1] = 25;
		w.mix[2] = 15;
		w.lifetime[0] = 200;
		w.lifetime[1] = 400;
		w.lifetime[2] = 800;
		if (ioctl(fd, BUDDY_SPLIT_IOC_WORKLOAD, &w)) {
			if (errno == EINTR)
				break;
			printf("# loadgen: WORKLOAD: %s\n", strerror(errno));
			ret = 1;
			break;
		}
		calls++;
		for (t = 0; t < BUDDY_SPLIT_NR_TYPES; t++) {
			allocs += w.allocs[t];
			fails += w.fails[t];
		}
		/* A workload leaves its live blocks: start the next one afresh. */
		if (ioctl(fd, BUDDY_SPLIT_IOC_INFO, &info))
			info.mode = ~0U;
		reset.mode = info.mode;
		if (ioctl(fd, BUDDY_SPLIT_IOC_RESET, &reset)) {
			printf("# loadgen: INFO/RESET: %s\n", strerror(errno));
			ret = 1;
			break;
		}
		if (calls == 1)
			ready(ready_file);
	} while (!stop_requested() && !once);
	if (ioctl(fd, BUDDY_SPLIT_IOC_CHECK)) {
		printf("# loadgen: CHECK: %s\n", strerror(errno));
		ret = 1;
	}
	printf("# loadgen buddy: %lu workloads, %lu allocations, %lu failed, invariants %s\n",
	       calls, allocs, fails, ret ? "BROKEN" : "ok");
	close(fd);
	return ret;
}

static int run_inject_hold(size_t mib, unsigned long long start,
			   unsigned long long end, const char *ready_file)
{
	size_t len = mib << 20, n = len / sizeof(uint64_t), npages = len >> 12, i, bad = 0;
	struct migrate_test_migrate m = { 0 };
	struct migrate_test_inject inj = { 0 };
	struct migrate_test_query q = { 0 };
	char cleared[4096];
	unsigned long in_range = 0;
	uint64_t *p, *pfns;
	sigset_t set;
	int fd, sig;

	fd = open("/dev/migrate_test", O_RDWR);
	p = fd < 0 ? MAP_FAILED :
	    mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	pfns = calloc(npages, sizeof(*pfns));
	if (p == MAP_FAILED || !pfns) {
		printf("# loadgen: /dev/migrate_test: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++)
		p[i] = word(i);
	m.addr = (uintptr_t)p;
	m.len = len;
	m.target = MIGRATE_TEST_TARGET_RANGE;
	m.start_pfn = start;
	m.end_pfn = end;
	m.flags = MIGRATE_TEST_FORCE;
	if (ioctl(fd, MIGRATE_TEST_IOC_MIGRATE, &m)) {
		printf("# loadgen: MIGRATE into the range: %s\n", strerror(errno));
		return 1;
	}
	inj.addr = (uintptr_t)p;
	inj.len = len < 16 * 4096 ? len : 16 * 4096;
	inj.kind = MIGRATE_TEST_INJECT_HOLD_REF;
	if (ioctl(fd, MIGRATE_TEST_IOC_INJECT, &inj)) {
		printf("# loadgen: INJECT HOLD_REF: %s\n", strerror(errno));
		return 1;
	}
	printf("# loadgen inject-hold: %llu of %zu pages migrated into the range,",
	       (unsigned long long)m.migrated, npages);
	printf(" %llu references held\n", (unsigned long long)inj.count);
	ready(ready_file);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	while (!sigwait(&set, &sig) && sig == SIGUSR1) {
		inj.kind = MIGRATE_TEST_INJECT_CLEAR;
		if (ioctl(fd, MIGRATE_TEST_IOC_INJECT, &inj))
			printf("# loadgen: INJECT CLEAR: %s\n", strerror(errno));
		printf("# loadgen inject-hold: %llu injections cleared\n",
		       (unsigned long long)inj.count);
		snprintf(cleared, sizeof(cleared), "%s.cleared", ready_file);
		ready(cleared);
	}
	for (i = 0; i < n; i++)
		if (p[i] != word(i))
			bad++;
	q.addr = (uintptr_t)p;
	q.len = len;
	q.pfns = (uintptr_t)pfns;
	if (ioctl(fd, MIGRATE_TEST_IOC_QUERY, &q))
		bad++;
	for (i = 0; i < npages; i++)
		in_range += pfns[i] >= start && pfns[i] < end;
	printf("# loadgen inject-hold: %lu pages still in the range,", in_range);
	printf(" %zu MiB verified, %zu bad words\n", mib, bad);
	return bad ? 1 : 0;
}

static int run_hold(unsigned long long pages)
{
	struct buddy_split_hold h = { .type = BUDDY_SPLIT_KERNEL_NONRECLAIMABLE,
				      .pages = pages };
	int fd = open("/dev/buddy_split", O_RDWR);

	if (fd < 0 || ioctl(fd, BUDDY_SPLIT_IOC_KERNEL_HOLD, &h)) {
		printf("# loadgen: KERNEL_HOLD: %s\n", strerror(errno));
		return 1;
	}
	printf("# loadgen hold: %llu pages held\n", (unsigned long long)h.pages);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "migrate"))
		return run_migrate(strtoul(argv[2], NULL, 0), argc > 3 ? argv[3] : NULL, 0);
	if (argc >= 3 && !strcmp(argv[1], "once-migrate"))
		return run_migrate(strtoul(argv[2], NULL, 0), NULL, 1);
	if (argc >= 2 && !strcmp(argv[1], "buddy"))
		return run_buddy(argc > 2 ? argv[2] : NULL, 0);
	if (argc >= 2 && !strcmp(argv[1], "once-buddy"))
		return run_buddy(NULL, 1);
	if (argc >= 6 && !strcmp(argv[1], "inject-hold"))
		return run_inject_hold(strtoul(argv[2], NULL, 0), strtoull(argv[3], NULL, 0),
				       strtoull(argv[4], NULL, 0), argv[5]);
	if (argc >= 3 && !strcmp(argv[1], "hold"))
		return run_hold(strtoull(argv[2], NULL, 0));
	fprintf(stderr,
		"usage: %s migrate MIB [READY] | buddy [READY] | hold PAGES | once-migrate MIB\n"
		"       | once-buddy | inject-hold MIB START_PFN END_PFN READY\n", argv[0]);
	return 2;
}
