// SPDX-License-Identifier: GPL-2.0
/*
 * memhp_ptables: put page tables, unmovable kernel pages, on one NUMA node
 * and hold them until SIGUSR1 or SIGTERM.
 *
 *   memhp_ptables NODE COUNT READY_FILE
 *
 * Maps COUNT x 2 MiB of anonymous memory (no THP, so that every 2 MiB
 * needs a page-table page), touches its first page under the default
 * policy (the anon_vma, a slab object, is allocated then), binds the task
 * to NODE (set_mempolicy(MPOL_BIND)) and touches one page in each further
 * 2 MiB: the kernel allocates the page-table pages under the task's
 * policy (GFP_PGTABLE_USER; MPOL_BIND applies to it when NODE has a
 * kernel zone, e.g. ZONE_NORMAL, not when it has only ZONE_MOVABLE).
 * The policy is reset to default before anything else is allocated, so no
 * slab page, which other objects could keep alive after exit, is taken
 * from NODE. Then writes COUNT - 1 (the page tables bound) to READY_FILE
 * and waits; exit frees the page tables. Exit 0, 1 on errors.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/mempolicy.h>

#define STRIDE	(2UL << 20)

int main(int argc, char **argv)
{
	unsigned long nodemask, count, i;
	char *buf;
	sigset_t set;
	FILE *f;
	int node, sig;

	if (argc != 4) {
		fprintf(stderr, "usage: %s NODE COUNT READY_FILE\n", argv[0]);
		return 1;
	}
	node = atoi(argv[1]);
	count = strtoul(argv[2], NULL, 0);
	if (node < 0 || node >= (int)(8 * sizeof(nodemask)) - 1 || count < 2)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);

	buf = mmap(NULL, count * STRIDE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (madvise(buf, count * STRIDE, MADV_NOHUGEPAGE)) {
		perror("madvise");
		return 1;
	}
	buf[0] = 1;
	nodemask = 1UL << node;
	if (syscall(__NR_set_mempolicy, MPOL_BIND, &nodemask, 8 * sizeof(nodemask))) {
		perror("set_mempolicy");
		return 1;
	}
	for (i = 1; i < count; i++)
		buf[i * STRIDE] = 1;
	/* The stores are done here, before the policy is reset. */
	asm volatile("" ::: "memory");
	if (syscall(__NR_set_mempolicy, MPOL_DEFAULT, NULL, 0)) {
		perror("set_mempolicy default");
		return 1;
	}
	printf("# ptables: %lu page-table pages allocated bound to node %d\n", count - 1, node);
	fflush(stdout);
	f = fopen(argv[3], "w");
	if (!f)
		return 1;
	fprintf(f, "%lu\n", count - 1);
	fclose(f);

	if (sigwait(&set, &sig))
		return 1;
	return 0;
}
