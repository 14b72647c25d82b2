// SPDX-License-Identifier: GPL-2.0
/*
 * memhp-copybench: the cost of two ways to copy memory, in a guest.
 *
 *   memhp-copybench [MIB]		(default 64)
 *
 * Copies MIB MiB twice, page by page, between two buffers touched
 * beforehand: once with "rep movsb" (what copy_mc_enhanced_fast_string()
 * uses, the migration copy of folio_mc_copy() on CPUs with ERMS) and once
 * with eight 8-byte moves per 64 bytes (what copy_page_regs() does).
 * Each copy is a memhp-mark phase (copy-rep-movsb, copy-movq), so under
 * memhp-vm --count it gets its instruction count; the wall time of each is
 * printed in milliseconds. Under TCG the two differ in how many guest
 * instructions they execute and in what each costs to emulate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memhp_mark.h"

#define PAGE		4096

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void copy_rep_movsb(char *dst, const char *src)
{
	unsigned long n = PAGE;

	asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

static void copy_movq(char *dst, const char *src)
{
	unsigned long *d = (unsigned long *)dst;
	const unsigned long *s = (const unsigned long *)src;

	for (int i = 0; i < PAGE / 8; i += 8) {
		asm volatile("" : : : "memory");	/* keep the loop as written */
		d[i] = s[i];
		d[i + 1] = s[i + 1];
		d[i + 2] = s[i + 2];
		d[i + 3] = s[i + 3];
		d[i + 4] = s[i + 4];
		d[i + 5] = s[i + 5];
		d[i + 6] = s[i + 6];
		d[i + 7] = s[i + 7];
	}
}

static double run(const char *name, void (*copy)(char *, const char *), char *dst,
		  const char *src, size_t bytes)
{
	double t0, t1;

	t0 = now_ms();
	memhp_mark(MEMHP_MARK_BEGIN, name);
	for (size_t off = 0; off < bytes; off += PAGE)
		copy(dst + off, src + off);
	memhp_mark(MEMHP_MARK_END, name);
	t1 = now_ms();
	return t1 - t0;
}

int main(int argc, char **argv)
{
	unsigned long mib = 64;
	size_t bytes;
	char *src, *dst, *e = "";
	double ms_rep, ms_movq;

	if (argc == 2)
		mib = strtoul(argv[1], &e, 0);
	if (argc > 2 || (argc == 2 && (!mib || *e || mib > 4096))) {
		fprintf(stderr, "usage: memhp-copybench [MIB, 1..4096]\n");
		return 2;
	}
	bytes = mib << 20;
	src = aligned_alloc(PAGE, bytes);
	dst = aligned_alloc(PAGE, bytes);
	if (!src || !dst) {
		perror("memhp-copybench");
		return 1;
	}
	memset(src, 0x5a, bytes);
	memset(dst, 0, bytes);
	ms_rep = run("copy-rep-movsb", copy_rep_movsb, dst, src, bytes);
	if (memcmp(dst, src, bytes)) {
		fprintf(stderr, "memhp-copybench: rep movsb copy differs\n");
		return 1;
	}
	memset(dst, 0, bytes);
	ms_movq = run("copy-movq", copy_movq, dst, src, bytes);
	if (memcmp(dst, src, bytes)) {
		fprintf(stderr, "memhp-copybench: movq copy differs\n");
		return 1;
	}
	printf("copy %lu MiB page by page: rep movsb %.1f ms, 8-byte moves %.1f ms (%.2fx)\n",
	       mib, ms_rep, ms_movq, ms_rep / ms_movq);
	return 0;
}
