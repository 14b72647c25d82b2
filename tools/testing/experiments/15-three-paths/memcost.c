// SPDX-License-Identifier: GPL-2.0
/*
 * memcost: time writing and reading a small anonymous buffer, to compare
 * the memory of one NUMA node with another's (run it under
 * numactl --membind=N).
 *
 *   memcost KIB
 *
 * Maps KIB KiB, then times: the first write of every word (page faults,
 * the kernel zeroing each page, then the stores), a second write, and a
 * read of every word (checked against what was written). Prints one CSV
 * line: kib,pages,on_node,node,touch_ms,rewrite_ms,read_ms,bad
 * where on_node is how many of the pages lie on `node`, the node of the
 * first page (move_pages(2) with no target nodes reports where each is).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Every store before it done, every load after it done again. */
static inline void barrier(void)
{
	asm volatile("" ::: "memory");
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	size_t kib, size, n, i, pages, bad = 0, on = 0;
	long psz = sysconf(_SC_PAGESIZE);
	double t0, touch, rewrite, rd;
	uint64_t *w;
	uint64_t sum = 0;
	void **addrs;
	int *status;

	kib = argc == 2 ? strtoul(argv[1], NULL, 0) : 0;
	if (!kib) {
		fprintf(stderr, "usage: memcost KIB\n");
		return 2;
	}
	size = kib << 10;
	n = size / sizeof(*w);
	pages = (size + psz - 1) / psz;
	w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (w == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	barrier();
	t0 = now_ms();
	for (i = 0; i < n; i++)
		w[i] = i * 0x9e3779b97f4a7c15ULL;
	barrier();
	touch = now_ms() - t0;
	t0 = now_ms();
	for (i = 0; i < n; i++)
		w[i] = i ^ 0xa5a5a5a5a5a5a5a5ULL;
	barrier();
	rewrite = now_ms() - t0;
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		uint64_t v = w[i];

		sum += v;
		if (v != (i ^ 0xa5a5a5a5a5a5a5a5ULL))
			bad++;
	}
	rd = now_ms() - t0;

	addrs = calloc(pages, sizeof(*addrs));
	status = calloc(pages, sizeof(*status));
	if (!addrs || !status)
		return 1;
	for (i = 0; i < pages; i++)
		addrs[i] = (char *)w + i * psz;
	if (syscall(SYS_move_pages, 0, pages, addrs, NULL, status, 0)) {
		perror("move_pages");
		return 1;
	}
	for (i = 0; i < pages; i++)
		on += status[i] == status[0];
	printf("%zu,%zu,%zu,%d,%.3f,%.3f,%.3f,%zu\n", kib, pages, on, status[0],
	       touch, rewrite, rd, bad);
	fprintf(stderr, "# memcost: sum %llx\n", (unsigned long long)sum);
	return bad ? 1 : 0;
}
