// SPDX-License-Identifier: GPL-2.0
/*
 * tb-replug: run a tiny function written into every page of a physical
 * range, and say which function ran.
 *
 *   tb-replug VALUE PFN_LO PFN_HI MIB [OFFSET]
 *
 * Maps MIB MiB of anonymous read-write-execute memory and touches it.
 * For every page whose frame (/proc/self/pagemap; needs root) lies in
 * [PFN_LO, PFN_HI), writes "mov $VALUE, %eax; ret" at OFFSET (default
 * 0x100) and calls it. Prints how many such pages there were, how many
 * calls returned VALUE and how many returned something else (and the
 * first such value): a call that returns another value ran code that is
 * no longer in memory, a translation the emulator kept.
 *
 * With OFFSET, the function is then written again returning VALUE + 1
 * and called again, in the same page: what a module loader does when it
 * puts new code where other code ran. Printed as "rewritten: returned
 * VALUE+1: N, returned another value: M".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CODE_OFFSET	0x100

/* Write "mov $value, %eax; ret" at code and call it. */
static unsigned int run_at(uint8_t *code, unsigned int value)
{
	code[0] = 0xb8;		/* mov $imm32, %eax */
	memcpy(code + 1, &value, 4);
	code[5] = 0xc3;		/* ret */
	__builtin___clear_cache((char *)code, (char *)code + 6);
	return ((unsigned int (*)(void))code)();
}

static int parse(const char *s, unsigned long long *v)
{
	char *e;

	errno = 0;
	*v = strtoull(s, &e, 0);
	return errno || *e || e == s ? -1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long long value, lo, hi, mib, in_range = 0, same = 0, other = 0;
	unsigned long long offset = CODE_OFFSET, re_same = 0, re_other = 0;
	long psz = sysconf(_SC_PAGESIZE);
	unsigned int first_other = 0, re_first = 0;
	int rewrite = argc == 6;
	size_t len, i;
	uint8_t *buf;
	int fd;

	if ((argc != 5 && argc != 6) || parse(argv[1], &value) || value > 0x7ffffffe ||
	    parse(argv[2], &lo) || parse(argv[3], &hi) || lo >= hi ||
	    parse(argv[4], &mib) || !mib || mib > 65536 ||
	    (rewrite && (parse(argv[5], &offset) || offset > (unsigned long long)psz - 6))) {
		fprintf(stderr, "usage: tb-replug VALUE PFN_LO PFN_HI MIB [OFFSET]\n");
		return 2;
	}
	len = mib << 20;
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED) {
		perror("tb-replug: mmap");
		return 1;
	}
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0) {
		perror("tb-replug: /proc/self/pagemap");
		return 1;
	}
	for (i = 0; i < len / psz; i++) {
		uint8_t *page = buf + i * psz;
		unsigned long long pfn;
		unsigned int ret;
		uint64_t ent;

		page[0] = 1;	/* present, and written by us */
		if (pread(fd, &ent, sizeof(ent), ((uintptr_t)page / psz) * sizeof(ent)) !=
		    sizeof(ent)) {
			perror("tb-replug: pagemap read");
			return 1;
		}
		if (!(ent & (1ULL << 63)))
			continue;
		pfn = ent & ((1ULL << 55) - 1);
		if (!pfn) {
			fprintf(stderr, "tb-replug: pagemap shows no frame numbers (not root?)\n");
			return 1;
		}
		if (pfn < lo || pfn >= hi)
			continue;
		in_range++;
		ret = run_at(page + offset, value);
		if (ret == value) {
			same++;
		} else {
			if (!other)
				first_other = ret;
			other++;
		}
		if (!rewrite)
			continue;
		ret = run_at(page + offset, value + 1);
		if (ret == value + 1) {
			re_same++;
		} else {
			if (!re_other)
				re_first = ret;
			re_other++;
		}
	}
	printf("pages in range %llu, returned %llu: %llu, returned another value: %llu",
	       in_range, value, same, other);
	if (other)
		printf(" (first %u)", first_other);
	if (rewrite) {
		printf("; rewritten: returned %llu: %llu, returned another value: %llu",
		       value + 1, re_same, re_other);
		if (re_other)
			printf(" (first %u)", re_first);
	}
	printf("\n");
	return 0;
}
