/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memhp_pagemap.h: where a buffer's pages are, from /proc/self/pagemap
 * (which shows page frame numbers to root only).
 */
#ifndef _MEMHP_PAGEMAP_H
#define _MEMHP_PAGEMAP_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
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

#endif /* _MEMHP_PAGEMAP_H */
