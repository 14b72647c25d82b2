/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memhp_pagemap.h: where a buffer's pages are, from /proc/self/pagemap
 * (which shows page frame numbers to root only), and the common start of
 * the workloads that watch a pfn range (memhp_pattern, memhp_churn).
 */
#ifndef _MEMHP_PAGEMAP_H
#define _MEMHP_PAGEMAP_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGEMAP_PFN_MASK	0x007fffffffffffffULL	/* bits 0-54 */
#define PAGEMAP_PRESENT		0x8000000000000000ULL	/* bit 63 */

/*
 * How many pages of [buf, buf + size) are present at a pfn in [first, end),
 * or -errno.
 */
static inline long count_in_range(const void *buf, size_t size,
				  uint64_t first, uint64_t end)
{
	long page_size = sysconf(_SC_PAGESIZE), in = 0;
	size_t pages = size / page_size, i;
	uint64_t *entries;
	int fd;

	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -errno;
	entries = malloc(pages * sizeof(*entries));
	if (!entries) {
		close(fd);
		return -ENOMEM;
	}
	if (pread(fd, entries, pages * sizeof(*entries),
		  (uintptr_t)buf / page_size * sizeof(*entries)) !=
	    (ssize_t)(pages * sizeof(*entries))) {
		free(entries);
		close(fd);
		return -EIO;
	}
	for (i = 0; i < pages; i++) {
		uint64_t pfn = entries[i] & PAGEMAP_PFN_MASK;

		if ((entries[i] & PAGEMAP_PRESENT) && pfn >= first && pfn < end)
			in++;
	}
	free(entries);
	close(fd);
	return in;
}

/*
 * The workloads' command line, SIZE_MIB FIRST_PFN END_PFN READY_FILE:
 * parses it, blocks SIGUSR1 (the stop request, left pending for the
 * workload to take) and maps SIZE_MIB of populated anonymous memory.
 * Returns the mapping, or NULL after printing why.
 */
static inline uint64_t *memhp_workload_start(int argc, char **argv,
					     size_t *size, uint64_t *first,
					     uint64_t *end, sigset_t *usr1)
{
	void *words;

	if (argc != 5) {
		fprintf(stderr, "usage: %s SIZE_MIB FIRST_PFN END_PFN READY_FILE\n",
			argv[0]);
		return NULL;
	}
	*size = strtoull(argv[1], NULL, 0) << 20;
	*first = strtoull(argv[2], NULL, 0);
	*end = strtoull(argv[3], NULL, 0);
	sigemptyset(usr1);
	sigaddset(usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, usr1, NULL);

	words = mmap(NULL, *size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (words == MAP_FAILED) {
		perror("mmap");
		return NULL;
	}
	return words;
}

#endif /* _MEMHP_PAGEMAP_H */
