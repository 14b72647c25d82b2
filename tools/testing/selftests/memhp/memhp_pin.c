// SPDX-License-Identifier: GPL-2.0
/*
 * memhp_pin: pin (FOLL_PIN | FOLL_LONGTERM, as DMA would) one page of
 * anonymous memory that lies in a given pfn range, with io_uring fixed
 * buffers, and hold it until SIGUSR1 or SIGTERM.
 *
 *   memhp_pin [--vmsplice] [--node N] SIZE_MIB FIRST_PFN END_PFN READY_FILE
 *
 * --vmsplice holds the page with a plain reference instead (FOLL_GET:
 * vmsplice() into a pipe nobody reads). That is not a pin: the page may
 * stay in ZONE_MOVABLE, where offlining then retries its migration until
 * a signal, holding the device hotplug lock all along.
 *
 * --node N binds only the buffer to node N (mbind(MPOL_BIND) on the
 * mapping), not the task: `numactl --membind` would also put the task's
 * own kernel allocations there when N has a kernel zone (page tables from
 * exec on), and those unmovable pages would block offlining first.
 *
 * Faults in SIZE_MIB of anonymous memory (no THP), finds through
 * /proc/self/pagemap (root sees PFNs) a page in [FIRST_PFN, END_PFN),
 * registers it as an io_uring fixed buffer, unmaps the rest, writes the
 * page's pfn (hex) to READY_FILE and waits. Exit 0 after the signal, 2 if
 * no page landed in the range, 1 on errors. A longterm pin is never taken
 * in ZONE_MOVABLE (GUP migrates the page out first): put the range in a
 * block onlined to a kernel zone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include <linux/mempolicy.h>

#define PAGEMAP_PFN_MASK	0x007fffffffffffffULL	/* bits 0-54 */
#define PAGEMAP_PRESENT		0x8000000000000000ULL	/* bit 63 */

int main(int argc, char **argv)
{
	long page_size = sysconf(_SC_PAGESIZE);
	struct io_uring_params params;
	size_t size, pages, i, found = (size_t)-1;
	uint64_t first, end, entry, pfn = 0;
	struct iovec iov;
	sigset_t set;
	char *buf;
	FILE *f;
	int fd, ring, sig, pipefd[2], splice = 0, node = -1;
	unsigned long nodemask;

	while (argc > 1 && !strncmp(argv[1], "--", 2)) {
		if (!strcmp(argv[1], "--vmsplice")) {
			splice = 1;
		} else if (!strcmp(argv[1], "--node") && argc > 2) {
			node = atoi(argv[2]);
			argv++;
			argc--;
		} else {
			break;
		}
		argv++;
		argc--;
	}
	if (argc != 5 || node >= (int)(8 * sizeof(nodemask)) - 1) {
		fprintf(stderr,
			"usage: %s [--vmsplice] [--node N] SIZE_MIB FIRST_PFN END_PFN READY_FILE\n",
			argv[0]);
		return 1;
	}
	size = strtoull(argv[1], NULL, 0) << 20;
	first = strtoull(argv[2], NULL, 0);
	end = strtoull(argv[3], NULL, 0);
	pages = size / page_size;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);

	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	madvise(buf, size, MADV_NOHUGEPAGE);
	if (node >= 0) {
		nodemask = 1UL << node;
		if (syscall(__NR_mbind, buf, size, MPOL_BIND, &nodemask,
			    8 * sizeof(nodemask), 0)) {
			perror("mbind");
			return 1;
		}
	}
	for (i = 0; i < pages; i++)
		buf[i * page_size] = (char)i;

	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0) {
		perror("pagemap");
		return 1;
	}
	for (i = 0; i < pages; i++) {
		if (pread(fd, &entry, sizeof(entry),
			  ((uintptr_t)buf / page_size + i) * sizeof(entry)) != sizeof(entry))
			break;
		pfn = entry & PAGEMAP_PFN_MASK;
		if ((entry & PAGEMAP_PRESENT) && pfn >= first && pfn < end) {
			found = i;
			break;
		}
	}
	close(fd);
	if (found == (size_t)-1) {
		printf("# pin: none of %zu pages in pfn [%#llx, %#llx)\n", pages,
		       (unsigned long long)first, (unsigned long long)end);
		return 2;
	}

	iov.iov_base = buf + found * page_size;
	iov.iov_len = page_size;
	if (splice) {
		ring = -1;
		if (pipe(pipefd) || vmsplice(pipefd[1], &iov, 1, 0) != page_size) {
			perror("vmsplice");
			return 1;
		}
	} else {
		memset(&params, 0, sizeof(params));
		ring = syscall(__NR_io_uring_setup, 1, &params);
		if (ring < 0) {
			perror("io_uring_setup");
			return 1;
		}
		if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1)) {
			perror("io_uring_register");
			return 1;
		}
	}
	/* Only the pinned page stays mapped. */
	if (found)
		munmap(buf, found * page_size);
	if (found + 1 < pages)
		munmap(buf + (found + 1) * page_size, (pages - found - 1) * page_size);

	printf("# pin: pfn %#llx %s (page %zu of %zu)\n", (unsigned long long)pfn,
	       splice ? "held by vmsplice" : "pinned", found, pages);
	fflush(stdout);
	f = fopen(argv[4], "w");
	if (!f)
		return 1;
	fprintf(f, "%#llx\n", (unsigned long long)pfn);
	fclose(f);

	if (sigwait(&set, &sig))
		return 1;
	if (ring >= 0)
		close(ring);
	return 0;
}
