// SPDX-License-Identifier: GPL-2.0
/*
 * fill MIB FIFO: touch MIB MiB of private anonymous memory (a distinct
 * value per page, so nothing is shared or zero), say "ready" on FIFO and
 * hold the memory until killed. 80-scale offlines blocks under it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long mib = argc == 3 ? strtol(argv[1], NULL, 10) : 0;
	size_t len, i, page = sysconf(_SC_PAGESIZE);
	FILE *f;
	char *p;

	if (mib <= 0) {
		fprintf(stderr, "usage: fill MIB FIFO\n");
		return 2;
	}
	len = (size_t)mib << 20;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("fill: mmap");
		return 1;
	}
	for (i = 0; i < len; i += page)
		*(size_t *)(p + i) = i / page + 1;
	f = fopen(argv[2], "w");
	if (!f || fputs("ready\n", f) == EOF || fclose(f)) {
		perror("fill: fifo");
		return 1;
	}
	for (;;)
		pause();
}
