// SPDX-License-Identifier: GPL-2.0
/*
 * memhp_pattern: hold memory filled with a pattern while the memory under
 * it is hotplugged, and check that not a byte changed.
 *
 *   memhp_pattern SIZE_MIB FIRST_PFN END_PFN READY_FILE
 *
 * Maps and fills SIZE_MIB of anonymous memory, counts (through
 * /proc/self/pagemap, which shows PFNs to root) how many of its pages lie in
 * [FIRST_PFN, END_PFN), verifies the pattern, creates READY_FILE with that
 * count, then waits for SIGUSR1 (the test offlines memory meanwhile),
 * verifies again, recounts, and exits 0 when every byte is intact.
 * Output: "# " diagnostics, meant to be embedded in a KTAP test.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memhp_pagemap.h"

static uint64_t pattern(size_t i)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ 0xa5a5a5a5a5a5a5a5ULL;
}

static size_t verify(const uint64_t *words, size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++)
		if (words[i] != pattern(i))
			bad++;
	return bad;
}

int main(int argc, char **argv)
{
	size_t size, n, i, bad;
	uint64_t first, end;
	uint64_t *words;
	sigset_t usr1;
	long in;
	FILE *f;
	int sig;

	words = memhp_workload_start(argc, argv, &size, &first, &end, &usr1);
	if (!words)
		return argc != 5 ? 2 : 1;
	n = size / sizeof(*words);
	for (i = 0; i < n; i++)
		words[i] = pattern(i);
	in = count_in_range(words, size, first, end);
	bad = verify(words, n);
	printf("# pattern: %zu MiB written, %ld pages in pfn [%#llx, %#llx), %zu bad words\n",
	       size >> 20, in, (unsigned long long)first,
	       (unsigned long long)end, bad);
	fflush(stdout);
	if (in < 0 || bad)
		return 1;

	f = fopen(argv[4], "w");
	if (!f)
		return 1;
	fprintf(f, "%ld\n", in);
	fclose(f);

	if (sigwait(&usr1, &sig))
		return 1;

	bad = verify(words, n);
	in = count_in_range(words, size, first, end);
	printf("# pattern: after hotplug %zu bad words, %ld pages left in the range\n",
	       bad, in);
	return bad ? 1 : 0;
}
