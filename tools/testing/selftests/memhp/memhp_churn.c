// SPDX-License-Identifier: GPL-2.0
/*
 * memhp_churn: a memory workload that keeps rewriting and checking its
 * data while memory is hotplugged (or isolated) under it.
 *
 *   memhp_churn SIZE_MIB FIRST_PFN END_PFN READY_FILE
 *
 * Maps SIZE_MIB of anonymous memory and loops: fill it with a pattern
 * that depends on the pass, sum it (checksum), sum it again and compare
 * with the sum computed from the pattern, counting every word that differs
 * from the pattern too. After the first pass it writes
 * to READY_FILE how many of its pages lie in [FIRST_PFN, END_PFN)
 * (/proc/self/pagemap, root only). On SIGUSR1 it finishes the pass and
 * prints passes, checksum mismatches, bad words and the pages left in the
 * range; exit 0 when every pass verified.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memhp_pagemap.h"

/* SIGUSR1 is blocked and polled once a pass. */
static int stop_requested(void)
{
	sigset_t pending;

	return !sigpending(&pending) && sigismember(&pending, SIGUSR1);
}

static uint64_t pattern(size_t i, uint64_t pass)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ (pass * 0xc2b2ae3d27d4eb4fULL);
}

int main(int argc, char **argv)
{
	uint64_t first, end, pass, expect, sum, mismatches = 0, bad = 0;
	size_t size, n, i;
	uint64_t *words;
	long in;
	sigset_t usr1;
	FILE *f;
	int stop = 0;

	words = memhp_workload_start(argc, argv, &size, &first, &end, &usr1);
	if (!words)
		return argc != 5 ? 2 : 1;
	n = size / sizeof(*words);
	for (pass = 0; !stop; pass++) {
		expect = 0;
		for (i = 0; i < n; i++) {
			words[i] = pattern(i, pass);
			expect += words[i] ^ i;
		}
		/* Read back from memory, not from what the compiler knows. */
		asm volatile("" ::: "memory");
		sum = 0;
		for (i = 0; i < n; i++) {
			sum += words[i] ^ i;
			if (words[i] != pattern(i, pass))
				bad++;
		}
		if (sum != expect)
			mismatches++;
		if (pass >= 1)
			stop = stop_requested();
		if (pass == 0) {
			in = count_in_range(words, size, first, end);
			printf("# churn: %zu MiB, %ld pages in pfn [%#llx, %#llx)\n",
			       size >> 20, in, (unsigned long long)first,
			       (unsigned long long)end);
			fflush(stdout);
			f = fopen(argv[4], "w");
			if (!f)
				return 1;
			fprintf(f, "%ld\n", in);
			fclose(f);
		}
	}
	in = count_in_range(words, size, first, end);
	printf("# churn: %llu passes, %llu checksum mismatches, %llu bad words, %ld pages left\n",
	       (unsigned long long)pass, (unsigned long long)mismatches,
	       (unsigned long long)bad, in);
	return mismatches || bad ? 1 : 0;
}
