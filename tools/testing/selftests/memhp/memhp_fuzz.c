// SPDX-License-Identifier: GPL-2.0
/*
 * memhp_fuzz: hostile input for the sysfs, debugfs and module parameter
 * files and the character devices of the memhp-lab modules.
 *
 *   memhp_fuzz [-s SEED] [-n RANDOM] [-f FILE]... [-d DEVICE]...
 *
 * -f FILE: a file to write. Files without write permission must refuse
 * every write. A writable file must have a validity rule below (by its
 * name); the inputs are a fixed corpus of malformed values (empty, huge,
 * negative, overflowing, non-ASCII, very long, embedded NUL, mutated
 * keywords), RANDOM random byte strings, printable strings and numbers,
 * and partial writes (a value split over two write() calls on one open
 * file). An input the rule says may be valid is not written (valid values
 * change state, e.g. "offline"): only invalid input is tried. Each write
 * must fail with an errno, and the file (or, for write-only files, its
 * witness file) must read back the same afterwards.
 *
 * -d DEVICE: a character device; ioctls with unknown command numbers,
 * wrong sizes and directions, NULL, unmapped and kernel pointers, and
 * out-of-range fields for the devices this program knows (migrate_test,
 * buddy_split). Each must fail with an errno and change nothing.
 *
 * Output: KTAP, one test per file and per device, and the figures (files,
 * inputs per file, ioctls, errnos seen).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/buddy_split.h>
#include <linux/migrate_test.h>

#include "kselftest.h"

#define FUZZ_MAX_INPUT	(64 * 1024)
#define MAX_ERRNO	200
#define MAX_FILES	512
#define MAX_DEVS	16

struct input {
	char *buf;
	size_t len;
	size_t split;	/* > 0: two write() calls, [0, split) and the rest */
};

enum rule_kind {
	RULE_READ_ONLY,		/* every write fails */
	RULE_WORDS,		/* one of the words, optional "\n" */
	RULE_NEVER,		/* no value succeeds in this setup */
	RULE_RESERVE_MB,	/* kstrtoul base 0, <= RAM in MiB */
	RULE_ULONG,		/* kstrtoul base 0, any value */
	RULE_TARGET_SIZE,	/* "host", or memparse size: aligned, <= usable */
	RULE_BENCH_RUN,		/* "LOOKUPS [REPS]" in range */
	RULE_EXCLUDED,
};

struct rule {
	const char *name;
	enum rule_kind kind;
	const char *words[8];
	const char *witness;	/* sibling file read for write-only files */
};

/*
 * The writable files of the modules, with their validity rules from the
 * ABI documents. provoke_warning (sparse_hotplug, selftest_warn=1 only)
 * WARN()s on a true value by design, so it is never written; hold_ref
 * (selftest_refs=1 only) holds a page reference by design.
 */
static const struct rule rules[] = {
	{ "state", RULE_WORDS, { "online", "online_movable", "online_kernel",
				 "offline", "isolate", "release" } },
	{ "policy", RULE_WORDS, { "strict", "fallback" } },
	{ "mode", RULE_WORDS, { "split", "single", "bitmap" } },
	{ "kreclaim_home", RULE_WORDS, { "pinned", "hotplug" } },
	/* Module loaded without ranges=: nothing can be probed or removed. */
	{ "probe", RULE_NEVER, { NULL }, "probed" },
	{ "remove", RULE_NEVER, { NULL }, "probed" },
	{ "unplug_reserve_mb", RULE_RESERVE_MB },
	{ "plug_batch", RULE_ULONG },
	{ "add_batch", RULE_ULONG },
	{ "target_size", RULE_TARGET_SIZE },
	{ "run", RULE_BENCH_RUN, { NULL }, "results" },
	{ "provoke_warning", RULE_EXCLUDED },
	{ "hold_ref", RULE_EXCLUDED },
};

static unsigned long long ram_mb;

static int nr_errnos[MAX_ERRNO];
static unsigned long total_writes, total_skipped_valid, total_ioctls;
static int tests_run, tests_failed;
static unsigned int nr_random = 200;
static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static void count_errno(int e)
{
	nr_errnos[e >= 0 && e < MAX_ERRNO ? e : 0]++;
}

static void ktap_result(bool ok, const char *fmt, ...)
{
	va_list ap;

	tests_run++;
	if (!ok)
		tests_failed++;
	printf("%s %d ", ok ? "ok" : "not ok", tests_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* ---- validity rules --------------------------------------------------- */

/* The C string the kernel's store sees: up to the first NUL. */
static size_t cstr_len(const struct input *in, size_t off, size_t len)
{
	const char *nul = memchr(in->buf + off, '\0', len);

	return nul ? (size_t)(nul - (in->buf + off)) : len;
}

/* sysfs_streq(): equal, or equal but for one trailing newline. */
static bool streq_nl(const char *s, size_t len, const char *word)
{
	size_t wl = strlen(word);

	if (len && s[len - 1] == '\n')
		len--;
	return len == wl && !memcmp(s, word, wl);
}

/*
 * kstrtoull(): optional '+', radix prefix (base 0), digits, one optional
 * trailing newline, no overflow. Returns true when it parses.
 */
static bool parse_kstrtoull(const char *s, size_t len, unsigned long long *v)
{
	unsigned int base = 10;
	unsigned long long x = 0;
	size_t i = 0, digits = 0;

	if (len && s[len - 1] == '\n')
		len--;
	if (i < len && s[i] == '+')
		i++;
	if (i + 1 < len && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
	    i + 2 < len && isxdigit((unsigned char)s[i + 2])) {
		base = 16;
		i += 2;
	} else if (i < len && s[i] == '0') {
		base = 8;
	}
	for (; i < len; i++, digits++) {
		unsigned int d;
		char c = s[i];

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		if (d >= base)
			return false;
		if (x > (ULLONG_MAX - d) / base)
			return false;
		x = x * base + d;
	}
	*v = x;
	return digits > 0;
}

/*
 * May the kernel's memparse()-based target_size parser accept this?
 * Conservative: any leading-digit value whose digits and suffix could be
 * read as a size that is a multiple of the unit and within the cap counts
 * as valid. Values that overflow 64 bits are invalid (a correct parser
 * must refuse them).
 */
static bool target_size_valid(const char *s, size_t len, const char *dir)
{
	unsigned long long unit = 0, cap = 0, x = 0;
	unsigned long long addr = 0, region = 0, usable = 0, start;
	unsigned int base = 10, shift = 0;
	char path[4096], b[128];
	size_t i = 0;
	FILE *f;

	if (streq_nl(s, len, "host"))
		return true;
	if (!len || !isdigit((unsigned char)s[0]))
		return false;
	snprintf(path, sizeof(path), "%s/unit_size", dir);
	f = fopen(path, "r");
	if (f) {
		if (fgets(b, sizeof(b), f))
			unit = strtoull(b, NULL, 0);
		fclose(f);
	}
	/*
	 * The cap is the usable region in whole units (not requested_size: a
	 * guest target above it is the device's to refuse).
	 */
	snprintf(path, sizeof(path), "%s/region", dir);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llx %llx %llx", &addr, &region, &usable) != 3)
			usable = 0;
		fclose(f);
	}
	if (unit) {
		start = (addr + unit - 1) / unit * unit;
		if (addr + usable > start)
			cap = (addr + usable - start) / unit * unit;
	}
	if (len > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	} else if (s[0] == '0') {
		base = 8;
	}
	for (; i < len; i++) {
		unsigned int d;
		char c = s[i];

		if (isdigit((unsigned char)c))
			d = c - '0';
		else if (base == 16 && isxdigit((unsigned char)c))
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		if (d >= base)
			break;
		if (x > (ULLONG_MAX - d) / base)
			return false;
		x = x * base + d;
	}
	if (i < len && strchr("kKmMgGtTpPeE", s[i])) {
		shift = 10 * (1 + (strchr("kKmMgGtTpPeE", s[i]) -
				   "kKmMgGtTpPeE") / 2);
		i++;
		if (x && (shift >= 64 || x > (ULLONG_MAX >> shift)))
			return false;
		x <<= shift;
	}
	if (i < len && s[i] == '\n')
		i++;
	if (i != len)
		return false;
	return !unit || (x % unit == 0 && x <= cap);
}

/* pfn_lookup run: "LOOKUPS [REPS]", 1..10^8 and 1..31. */
static bool bench_run_valid(const char *s, size_t len)
{
	unsigned long long a, r = 5;
	char tmp[128], *p, *q;

	if (len >= 64)
		return false;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	/* Conservative: anything with two numbers in range may run. */
	p = tmp;
	while (*p && isspace((unsigned char)*p))
		p++;
	if (*p == '+')
		p++;
	if (!isdigit((unsigned char)*p))
		return false;
	a = strtoull(p, &q, 10);
	while (*q && isspace((unsigned char)*q))
		q++;
	if (*q) {
		if (!isdigit((unsigned char)*q) && *q != '+')
			return false;
		r = strtoull(q, &q, 10);
	}
	return a >= 1 && a <= 100000000 && r >= 1 && r <= 31;
}

static bool piece_valid(const struct rule *r, const char *path,
			const char *s, size_t len)
{
	char dir[4096];
	unsigned long long v;
	size_t i;

	switch (r->kind) {
	case RULE_READ_ONLY:
	case RULE_NEVER:
		return false;
	case RULE_WORDS:
		for (i = 0; i < 8 && r->words[i]; i++)
			if (streq_nl(s, len, r->words[i]))
				return true;
		return false;
	case RULE_RESERVE_MB:
		return parse_kstrtoull(s, len, &v) && v <= ram_mb;
	case RULE_ULONG:
		return parse_kstrtoull(s, len, &v);
	case RULE_TARGET_SIZE:
		snprintf(dir, sizeof(dir), "%s", path);
		return target_size_valid(s, len, dirname(dir));
	case RULE_BENCH_RUN:
		return bench_run_valid(s, len);
	default:
		return true;
	}
}

static bool input_valid(const struct rule *r, const char *path,
			const struct input *in)
{
	size_t n;

	if (!in->split) {
		n = cstr_len(in, 0, in->len);
		return piece_valid(r, path, in->buf, n);
	}
	n = cstr_len(in, 0, in->split);
	if (piece_valid(r, path, in->buf, n))
		return true;
	n = cstr_len(in, in->split, in->len - in->split);
	return piece_valid(r, path, in->buf + in->split, n);
}

/* ---- the input corpus ------------------------------------------------- */

static struct input *corpus;
static size_t nr_corpus, cap_corpus;

static void add_input(const char *buf, size_t len, size_t split)
{
	struct input *in;

	if (nr_corpus == cap_corpus) {
		cap_corpus = cap_corpus ? 2 * cap_corpus : 256;
		corpus = realloc(corpus, cap_corpus * sizeof(*corpus));
		if (!corpus)
			exit(1);
	}
	in = &corpus[nr_corpus++];
	in->buf = malloc(len + 1);
	if (!in->buf)
		exit(1);
	memcpy(in->buf, buf, len);
	in->buf[len] = '\0';
	in->len = len;
	in->split = split;
}

static void add_str(const char *s)
{
	add_input(s, strlen(s), 0);
}

static void add_repeat(char c, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);
	char *b = malloc(p + n);

	if (!b)
		exit(1);
	memcpy(b, prefix, p);
	memset(b + p, c, n);
	add_input(b, p + n, 0);
	free(b);
}

static const char * const fixed[] = {
	"", "\n", " ", "\t\n", "\r\n", "\n\n", "-1", "-0", "--1", "+", "-",
	"0x", "0X", "x1", "0xg", "08", "09", "0b101", "0o7", "1e9", "1.5",
	".5", "0xffffffffffffffff", "0x10000000000000000",
	"18446744073709551615", "18446744073709551616",
	"99999999999999999999999999", "-9223372036854775808",
	"4294967296", "-4294967295", "2147483648", "16E", "17E", "99999999P",
	"1 2", "1,2", "1\n2", "\n1", " 1", "1 ", "1\n\n", "1\t", "1x", "12abc",
	"NaN", "inf", "-inf", "true", "false", "y", "n", "on", "off", "null",
	"%s%s%s%s%n", "%x%x%x%x", "${IFS}", "`true`", "$(true)", "../../x",
	"\xff\xfe", "\xc0\x80", "\xef\xbb\xbf", "\x01\x02\x03\x7f",
	"\xe2\x80\x8b", "\xd0\xbe\xd0\xbd", "online\xd0\xbe", "\xc3\xb3nline",
	"host host", "hostx", "HOST", " host", "host ", "host\n\n",
	"0 0", "4096 1 1", "1 0", "1 32", "0 5", "100000001", "1 -1", "-1 5",
	"1 99999999999", "99999999999999999999 1", "1 x", "x 1",
};

static void mutate_word(const char *w)
{
	size_t n = strlen(w), i;
	char b[256];

	if (n + 4 >= sizeof(b))
		return;
	for (i = 0; i < n; i++)
		b[i] = toupper((unsigned char)w[i]);
	add_input(b, n, 0);
	snprintf(b, sizeof(b), " %s", w);
	add_str(b);
	snprintf(b, sizeof(b), "%s ", w);
	add_str(b);
	snprintf(b, sizeof(b), "%sx", w);
	add_str(b);
	snprintf(b, sizeof(b), "%s\n\n", w);
	add_str(b);
	snprintf(b, sizeof(b), "%s\r\n", w);
	add_str(b);
	snprintf(b, sizeof(b), "%s%s", w, w);
	add_str(b);
	snprintf(b, sizeof(b), "%s\t", w);
	add_str(b);
	add_input(w, n - 1, 0);				/* truncated */
	add_input(w + 1, n - 1, 0);
	/* Partial write: the word in two write() calls on one fd. */
	if (n >= 2)
		add_input(w, n, n / 2);
	/* Embedded NUL before the word: the kernel sees "". */
	b[0] = '\0';
	memcpy(b + 1, w, n);
	add_input(b, n + 1, 0);
}

static void build_corpus(void)
{
	static const char printable[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-+.,:/\n";
	char b[128];
	size_t i, j, k;

	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		add_str(fixed[i]);
	add_input("\0", 1, 0);
	add_input("1\0 2", 4, 0);
	add_input("\0\0\0\0", 4, 0);
	for (i = 0; i < ARRAY_SIZE(rules); i++)
		for (j = 0; j < 8 && rules[i].words[j]; j++)
			mutate_word(rules[i].words[j]);
	mutate_word("host");
	/* Partial numbers: "12" + "34", "0x" + "10". */
	add_input("1234", 4, 2);
	add_input("0x10", 4, 2);
	add_input("-123", 4, 1);
	/* Long and huge values. */
	add_repeat('A', 63, "");
	add_repeat('A', 64, "");
	add_repeat('A', 4095, "");
	add_repeat('A', 4096, "");
	add_repeat('A', 5000, "");
	add_repeat('A', FUZZ_MAX_INPUT, "");
	add_repeat('9', 300, "");
	add_repeat('f', 100, "0x");
	add_repeat('0', 4000, "");	/* 0...0 (octal zero: may be valid) */
	add_repeat('7', 40, "0");
	add_repeat('\xff', 4096, "");
	/* Random bytes, random printable strings, random numbers. */
	for (i = 0; i < nr_random; i++) {
		size_t len = 1 + rnd() % 80;

		switch (i % 3) {
		case 0:
			for (k = 0; k < len; k++)
				b[k] = rnd();
			break;
		case 1:
			for (k = 0; k < len; k++)
				b[k] = printable[rnd() % (sizeof(printable) - 1)];
			break;
		default:
			if (rnd() & 1)
				len = snprintf(b, sizeof(b), "%" PRId64, (int64_t)rnd());
			else
				len = snprintf(b, sizeof(b), "%#" PRIx64 "%s", rnd(),
					       (rnd() & 1) ? "\n" : "");
			break;
		}
		add_input(b, len, (rnd() % 8 == 0 && len > 1) ? 1 + rnd() % (len - 1) : 0);
	}
}

/* ---- files ------------------------------------------------------------ */

/* Reads up to 64 KiB; -errno on failure. */
static ssize_t read_all(const char *path, char *buf, size_t cap)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -errno;
	while ((size_t)got < cap - 1) {
		n = read(fd, buf + got, cap - 1 - got);
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (!n)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

static const struct rule *rule_of(const char *path, bool writable)
{
	static const struct rule read_only = { "(read-only)", RULE_READ_ONLY };
	const char *base = strrchr(path, '/');
	size_t i;

	base = base ? base + 1 : path;
	if (!writable)
		return &read_only;
	for (i = 0; i < ARRAY_SIZE(rules); i++)
		if (!strcmp(base, rules[i].name))
			return &rules[i];
	return NULL;
}

/* Returns the bytes written (or -errno of the first failed call). */
static ssize_t write_input(const char *path, const struct input *in)
{
	ssize_t ret, ret2;
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return -errno;
	if (!in->split) {
		ret = write(fd, in->buf, in->len);
		ret = ret < 0 ? -errno : ret;
	} else {
		ret = write(fd, in->buf, in->split);
		ret = ret < 0 ? -errno : ret;
		ret2 = write(fd, in->buf + in->split, in->len - in->split);
		ret2 = ret2 < 0 ? -errno : ret2;
		/* Both halves must fail: report a success of either. */
		if (ret < 0 && ret2 >= 0)
			ret = ret2;
		else if (ret < 0 && ret2 < 0)
			count_errno(-ret2);
	}
	close(fd);
	return ret;
}

static void show_input(const struct input *in, char *out, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < in->len && o + 5 < cap; i++) {
		unsigned char c = in->buf[i];

		if (i == 24) {
			o += snprintf(out + o, cap - o, "...(%zu bytes)", in->len);
			break;
		}
		if (in->split && i == in->split)
			out[o++] = '|';
		if (isprint(c) && c != '\\')
			out[o++] = c;
		else
			o += snprintf(out + o, cap - o, "\\x%02x", c);
	}
	out[o] = '\0';
}

static char before[FUZZ_MAX_INPUT], after[FUZZ_MAX_INPUT];

static void fuzz_file(const char *path)
{
	int file_errnos[MAX_ERRNO] = { 0 };
	unsigned long tried = 0, valid = 0, bad = 0;
	char witness[4096], shown[160], msg[512] = "";
	const struct rule *r;
	const char *check;
	struct stat st;
	bool writable;
	size_t i;
	int e;

	if (stat(path, &st)) {
		ktap_result(false, "%s: stat: %s", path, strerror(errno));
		return;
	}
	writable = st.st_mode & 0222;
	r = rule_of(path, writable);
	if (!r) {
		ktap_result(false, "%s: writable, but memhp_fuzz has no rule for it (add one)",
			    path);
		return;
	}
	if (r->kind == RULE_EXCLUDED) {
		printf("# %s: excluded (WARNs by design on valid input)\n", path);
		return;
	}
	check = path;
	if (r->witness) {
		char *d = strdup(path);

		snprintf(witness, sizeof(witness), "%s/%s", dirname(d), r->witness);
		free(d);
		check = witness;
	}
	if (r->kind == RULE_NEVER) {
		/* The precondition of "never valid": nothing probed. */
		if (read_all(check, before, sizeof(before)) > 0) {
			ktap_result(false, "%s: %s is not empty: cannot fuzz", path, check);
			return;
		}
	}
	for (i = 0; i < nr_corpus; i++) {
		const struct input *in = &corpus[i];
		ssize_t nb, na, ret;

		/* Read-only files get the short inputs only. */
		if (r->kind == RULE_READ_ONLY && (i % 8 || in->len > 64))
			continue;
		if (input_valid(r, path, in)) {
			valid++;
			continue;
		}
		/* Read-only files may change by themselves (statistics). */
		nb = r->kind == RULE_READ_ONLY ? 0 : read_all(check, before, sizeof(before));
		ret = write_input(path, in);
		na = r->kind == RULE_READ_ONLY ? 0 : read_all(check, after, sizeof(after));
		tried++;
		total_writes++;
		if (ret < 0) {
			e = -ret;
			count_errno(e);
			file_errnos[e < MAX_ERRNO ? e : 0]++;
		} else if (in->len == 0 && ret == 0) {
			/* write(fd, "", 0) never reaches the store: no errno. */
			file_errnos[0]++;
		} else {
			show_input(in, shown, sizeof(shown));
			printf("# %s: accepted invalid input \"%s\" (%zd of %zu bytes)\n",
			       path, shown, ret, in->len);
			bad++;
		}
		if (nb != na || (nb > 0 && memcmp(before, after, nb))) {
			show_input(in, shown, sizeof(shown));
			printf("# %s: %s changed after input \"%s\" (write returned %zd)\n",
			       path, check, shown, ret);
			bad++;
		}
		if (bad > 5) {
			printf("# %s: too many failures, next file\n", path);
			break;
		}
	}
	for (e = 0; e < MAX_ERRNO; e++) {
		size_t o = strlen(msg);

		if (file_errnos[e])
			snprintf(msg + o, sizeof(msg) - o, " %s:%d",
				 e ? strerrorname_np(e) : "none", file_errnos[e]);
	}
	total_skipped_valid += valid;
	ktap_result(!bad, "%s (%s): %lu inputs, %lu valid not written; errnos%s",
		    path, r->kind == RULE_READ_ONLY ? "read-only" : r->name,
		    tried, valid, msg);
}

/* ---- ioctls ----------------------------------------------------------- */

struct ioc_case {
	const char *what;
	unsigned long cmd;
	void *arg;
	int want;	/* expected errno, 0: any errno */
};

static void *unmapped_ptr(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return (void *)8;
	munmap(p, 4096);
	return p;
}

static int dev_errnos[MAX_ERRNO];
static unsigned long dev_tried, dev_bad;

static long do_ioctl(int fd, const char *dev, const char *what, unsigned long cmd,
		     void *arg, int want)
{
	long ret = ioctl(fd, cmd, arg);
	int e = errno;

	total_ioctls++;
	dev_tried++;
	if (ret >= 0) {
		printf("# %s: %s (cmd %#lx): succeeded, wanted an errno\n", dev, what, cmd);
		dev_bad++;
		return ret;
	}
	count_errno(e);
	dev_errnos[e < MAX_ERRNO ? e : 0]++;
	if (want && e != want) {
		printf("# %s: %s (cmd %#lx): %s, wanted %s\n", dev, what, cmd,
		       strerrorname_np(e), strerrorname_np(want));
		dev_bad++;
	}
	return -e;
}

/* Random, malformed and near-miss command numbers; @valid ends with 0. */
static void fuzz_cmds(int fd, const char *dev, const unsigned long *valid,
		      unsigned int magic)
{
	unsigned long cmd;
	unsigned int i, nr, dir, size;
	char arg[4096] = { 0 };
	const unsigned long *v;

	/* Every nr of our magic, every direction, sizes 0..300 sampled. */
	for (nr = 0; nr < 256; nr++) {
		for (dir = 0; dir < 4; dir++) {
			size = (nr * 7 + dir * 13) % 300;
			cmd = _IOC(dir, magic, nr, size);
			for (v = valid; *v && *v != cmd; v++)
				;
			if (*v)
				continue;
			do_ioctl(fd, dev, "unknown command", cmd, arg, ENOTTY);
		}
	}
	/* Valid commands with a wrong size or direction. */
	for (v = valid; *v; v++) {
		unsigned long c = *v;

		cmd = _IOC(_IOC_DIR(c), _IOC_TYPE(c), _IOC_NR(c), _IOC_SIZE(c) + 8);
		do_ioctl(fd, dev, "size + 8", cmd, arg, ENOTTY);
		if (_IOC_SIZE(c) >= 8) {
			cmd = _IOC(_IOC_DIR(c), _IOC_TYPE(c), _IOC_NR(c), _IOC_SIZE(c) - 8);
			do_ioctl(fd, dev, "size - 8", cmd, arg, ENOTTY);
		}
		cmd = _IOC(_IOC_DIR(c) ^ 3, _IOC_TYPE(c), _IOC_NR(c), _IOC_SIZE(c));
		if (_IOC_DIR(c) != _IOC_NONE)
			do_ioctl(fd, dev, "direction flipped", cmd, arg, ENOTTY);
	}
	/* Random 32-bit numbers, avoiding the VFS's own ('T', 'f', 'X', 0x94). */
	for (i = 0; i < 500; i++) {
		cmd = (uint32_t)rnd();
		if (strchr("TfX", _IOC_TYPE(cmd)) || _IOC_TYPE(cmd) == 0x94 ||
		    _IOC_TYPE(cmd) == 0x15)
			continue;
		for (v = valid; *v && *v != cmd; v++)
			;
		if (*v)
			continue;
		do_ioctl(fd, dev, "random command", cmd, arg, 0);
	}
}

/* NULL, unmapped, misaligned-end and kernel pointers for commands with data. */
static void fuzz_pointers(int fd, const char *dev, const unsigned long *withdata)
{
	void *kernel_ptr = (void *)0xffff888000000000UL;
	void *unmapped = unmapped_ptr();
	char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const unsigned long *v;

	if (page == MAP_FAILED)
		return;
	/* The second page goes away: a struct straddling the end faults. */
	munmap(page + 4096, 4096);
	for (v = withdata; *v; v++) {
		do_ioctl(fd, dev, "NULL argument", *v, NULL, EFAULT);
		do_ioctl(fd, dev, "unmapped argument", *v, unmapped, EFAULT);
		do_ioctl(fd, dev, "kernel address argument", *v, kernel_ptr, EFAULT);
		do_ioctl(fd, dev, "argument straddling an unmapped page", *v,
			 page + 4096 - 4, EFAULT);
		do_ioctl(fd, dev, "argument -1", *v, (void *)-1L, EFAULT);
	}
	munmap(page, 4096);
}

static void finish_dev(const char *dev)
{
	char msg[512] = "";
	int e;

	for (e = 0; e < MAX_ERRNO; e++) {
		size_t o = strlen(msg);

		if (dev_errnos[e])
			snprintf(msg + o, sizeof(msg) - o, " %s:%d",
				 e ? strerrorname_np(e) : "?", dev_errnos[e]);
	}
	ktap_result(!dev_bad, "%s: %lu malformed ioctls; errnos%s", dev, dev_tried, msg);
}

static void fuzz_migrate_test(int fd, const char *dev)
{
	static const unsigned long valid[] = {
		MIGRATE_TEST_IOC_MIGRATE, MIGRATE_TEST_IOC_QUERY, MIGRATE_TEST_IOC_INJECT,
		MIGRATE_TEST_IOC_STATS, MIGRATE_TEST_IOC_RESET_STATS, 0 };
	static const unsigned long withdata[] = {
		MIGRATE_TEST_IOC_MIGRATE, MIGRATE_TEST_IOC_QUERY, MIGRATE_TEST_IOC_INJECT,
		MIGRATE_TEST_IOC_STATS, 0 };
	const size_t len = 16 * 4096;
	struct migrate_test_migrate m, m0;
	struct migrate_test_inject inj;
	struct migrate_test_query q;
	struct migrate_test_stats st;
	uint64_t pfns[16], pfns2[16];
	unsigned char *map, *other;
	int fd2, i;

	fuzz_cmds(fd, dev, valid, MIGRATE_TEST_IOC_MAGIC);
	fuzz_pointers(fd, dev, withdata);

	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fd2 = open(dev, O_RDWR);
	other = fd2 < 0 ? MAP_FAILED :
		mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	if (map == MAP_FAILED || other == MAP_FAILED) {
		printf("# %s: mmap: %s\n", dev, strerror(errno));
		dev_bad++;
		goto out;
	}
	for (i = 0; i < 16; i++) {
		map[i * 4096] = i + 1;
		other[i * 4096] = i + 1;
	}
	q = (struct migrate_test_query){ .addr = (uintptr_t)map, .len = len,
					 .pfns = (uintptr_t)pfns };
	if (ioctl(fd, MIGRATE_TEST_IOC_QUERY, &q)) {
		printf("# %s: QUERY: %s\n", dev, strerror(errno));
		dev_bad++;
		goto out;
	}
	m0 = (struct migrate_test_migrate){ .addr = (uintptr_t)map, .len = len,
					    .target = MIGRATE_TEST_TARGET_NODE,
					    .node = -1, .flags = MIGRATE_TEST_FORCE };
#define MIG(what, field, value) do {					\
		m = m0;							\
		m.field = value;					\
		do_ioctl(fd, dev, "MIGRATE " what, MIGRATE_TEST_IOC_MIGRATE, &m, EINVAL); \
	} while (0)
	MIG("reserved != 0", reserved, 1);
	MIG("unknown flag", flags, 2);
	MIG("flags ~0", flags, ~0U);
	MIG("batch 65", batch, MIGRATE_TEST_MAX_BATCH + 1);
	MIG("batch ~0", batch, ~0U);
	MIG("timeout 60001 ms", timeout_ms, 60001);
	MIG("failed_cap without failed_addrs", failed_cap, 4);
	MIG("target 3", target, 3);
	MIG("target ~0", target, ~0U);
	MIG("node 1024", node, 1024);
	MIG("node -2", node, -2);
	MIG("node INT_MIN", node, INT32_MIN);
	MIG("addr + 1", addr, (uintptr_t)map + 1);
	MIG("addr 0", addr, 0);
	MIG("addr ~0 & page mask", addr, ~0xfffULL);
	MIG("addr of another file's mapping", addr, (uintptr_t)other);
	MIG("len 0", len, 0);
	MIG("len 4097", len, 4097);
	MIG("len beyond the mapping", len, len + 4096);
	MIG("len wrapping", len, -4096ULL);
	MIG("len ~0", len, ~0ULL);
	m0.target = MIGRATE_TEST_TARGET_RANGE;
	m0.start_pfn = 0x1000;
	m0.end_pfn = 0x2000;
	MIG("range start == end", end_pfn, 0x1000);
	MIG("range start > end", start_pfn, 0x3000);
	MIG("range end ~0", end_pfn, ~0ULL);
	m0.target = MIGRATE_TEST_TARGET_AWAY;
	MIG("away section ~0", section, ~0ULL);
	MIG("away section 1 << 40", section, 1ULL << 40);
#undef MIG
	m = m0;
	m.failed_cap = 4;
	m.failed_addrs = 0xffff888000000000ULL;
	do_ioctl(fd, dev, "MIGRATE failed_addrs kernel address", MIGRATE_TEST_IOC_MIGRATE,
		 &m, EFAULT);
	st = (struct migrate_test_stats){ .flags = 1 };
	do_ioctl(fd, dev, "STATS flags 1", MIGRATE_TEST_IOC_STATS, &st, EINVAL);
	st = (struct migrate_test_stats){ .reserved = 1 };
	do_ioctl(fd, dev, "STATS reserved 1", MIGRATE_TEST_IOC_STATS, &st, EINVAL);
	q = (struct migrate_test_query){ .addr = (uintptr_t)map, .len = len,
					 .pfns = (uintptr_t)pfns2, .flags = 1 };
	do_ioctl(fd, dev, "QUERY flags 1", MIGRATE_TEST_IOC_QUERY, &q, EINVAL);
	q = (struct migrate_test_query){ .addr = (uintptr_t)map, .len = 0,
					 .pfns = (uintptr_t)pfns2 };
	do_ioctl(fd, dev, "QUERY len 0", MIGRATE_TEST_IOC_QUERY, &q, EINVAL);
	q.len = len + 4096;
	do_ioctl(fd, dev, "QUERY beyond the mapping", MIGRATE_TEST_IOC_QUERY, &q, EINVAL);
	q.len = len;
	q.addr = (uintptr_t)other;
	do_ioctl(fd, dev, "QUERY another file's mapping", MIGRATE_TEST_IOC_QUERY, &q, EINVAL);
	q.addr = (uintptr_t)map;
	q.pfns = 0;
	do_ioctl(fd, dev, "QUERY pfns NULL", MIGRATE_TEST_IOC_QUERY, &q, EFAULT);
	q.pfns = (uintptr_t)unmapped_ptr();
	do_ioctl(fd, dev, "QUERY pfns unmapped", MIGRATE_TEST_IOC_QUERY, &q, EFAULT);
	q.pfns = 0xffff888000000000ULL;
	do_ioctl(fd, dev, "QUERY pfns kernel address", MIGRATE_TEST_IOC_QUERY, &q, EFAULT);
	inj = (struct migrate_test_inject){ .addr = (uintptr_t)map, .len = len, .kind = 3 };
	do_ioctl(fd, dev, "INJECT kind 3", MIGRATE_TEST_IOC_INJECT, &inj, EINVAL);
	inj.kind = ~0U;
	do_ioctl(fd, dev, "INJECT kind ~0", MIGRATE_TEST_IOC_INJECT, &inj, EINVAL);
	inj.kind = MIGRATE_TEST_INJECT_CLEAR;
	inj.reserved = 1;
	do_ioctl(fd, dev, "INJECT reserved", MIGRATE_TEST_IOC_INJECT, &inj, EINVAL);
	inj.reserved = 0;
	inj.len = 0;
	do_ioctl(fd, dev, "INJECT len 0", MIGRATE_TEST_IOC_INJECT, &inj, EINVAL);
	inj.len = len;
	inj.addr = (uintptr_t)other;
	do_ioctl(fd, dev, "INJECT another file's mapping", MIGRATE_TEST_IOC_INJECT, &inj,
		 EINVAL);

	/* Nothing moved, nothing lost. */
	q = (struct migrate_test_query){ .addr = (uintptr_t)map, .len = len,
					 .pfns = (uintptr_t)pfns2 };
	if (ioctl(fd, MIGRATE_TEST_IOC_QUERY, &q) || memcmp(pfns, pfns2, sizeof(pfns))) {
		printf("# %s: pages moved by rejected requests\n", dev);
		dev_bad++;
	}
	for (i = 0; i < 16; i++) {
		if (map[i * 4096] != i + 1 || other[i * 4096] != i + 1) {
			printf("# %s: data changed at page %d\n", dev, i);
			dev_bad++;
			break;
		}
	}
out:
	if (map != MAP_FAILED)
		munmap(map, len);
	if (other != MAP_FAILED)
		munmap(other, len);
	if (fd2 >= 0)
		close(fd2);
}

static void fuzz_buddy_split(int fd, const char *dev)
{
	static const unsigned long valid[] = {
		BUDDY_SPLIT_IOC_ALLOC, BUDDY_SPLIT_IOC_FREE, BUDDY_SPLIT_IOC_WORKLOAD,
		BUDDY_SPLIT_IOC_SECTION_REMOVE, BUDDY_SPLIT_IOC_SECTION_ADD,
		BUDDY_SPLIT_IOC_RESET, BUDDY_SPLIT_IOC_BENCH, BUDDY_SPLIT_IOC_INFO,
		BUDDY_SPLIT_IOC_CHECK, BUDDY_SPLIT_IOC_KERNEL_HOLD,
		BUDDY_SPLIT_IOC_KERNEL_RELEASE, 0 };
	static const unsigned long withdata[] = {
		BUDDY_SPLIT_IOC_ALLOC, BUDDY_SPLIT_IOC_FREE, BUDDY_SPLIT_IOC_WORKLOAD,
		BUDDY_SPLIT_IOC_SECTION_REMOVE, BUDDY_SPLIT_IOC_SECTION_ADD,
		BUDDY_SPLIT_IOC_RESET, BUDDY_SPLIT_IOC_BENCH, BUDDY_SPLIT_IOC_INFO,
		BUDDY_SPLIT_IOC_KERNEL_HOLD, 0 };
	struct buddy_split_info info0, info1;
	struct buddy_split_workload w, w0;
	struct buddy_split_section s;
	struct buddy_split_alloc a;
	struct buddy_split_free f = { 0 };
	struct buddy_split_reset r;
	struct buddy_split_bench b;
	struct buddy_split_hold h;
	uint64_t pfn;
	int i;

	fuzz_cmds(fd, dev, valid, BUDDY_SPLIT_IOC_MAGIC);
	fuzz_pointers(fd, dev, withdata);
	if (ioctl(fd, BUDDY_SPLIT_IOC_INFO, &info0)) {
		printf("# %s: INFO: %s\n", dev, strerror(errno));
		dev_bad++;
		return;
	}
	/* One live block, so that frees of its inner pages can be tried. */
	a = (struct buddy_split_alloc){ .type = 0, .order = 3 };
	if (ioctl(fd, BUDDY_SPLIT_IOC_ALLOC, &a)) {
		printf("# %s: ALLOC order 3: %s\n", dev, strerror(errno));
		dev_bad++;
		return;
	}
	pfn = a.pfn;
	if (ioctl(fd, BUDDY_SPLIT_IOC_INFO, &info0))
		dev_bad++;
	a = (struct buddy_split_alloc){ .type = BUDDY_SPLIT_NR_TYPES };
	do_ioctl(fd, dev, "ALLOC type 3", BUDDY_SPLIT_IOC_ALLOC, &a, EINVAL);
	a = (struct buddy_split_alloc){ .type = ~0U };
	do_ioctl(fd, dev, "ALLOC type ~0", BUDDY_SPLIT_IOC_ALLOC, &a, EINVAL);
	a = (struct buddy_split_alloc){ .order = BUDDY_SPLIT_MAX_ORDER };
	do_ioctl(fd, dev, "ALLOC order 11", BUDDY_SPLIT_IOC_ALLOC, &a, EINVAL);
	a = (struct buddy_split_alloc){ .order = ~0U };
	do_ioctl(fd, dev, "ALLOC order ~0", BUDDY_SPLIT_IOC_ALLOC, &a, EINVAL);
	a = (struct buddy_split_alloc){ .flags = 1 };
	do_ioctl(fd, dev, "ALLOC flags 1", BUDDY_SPLIT_IOC_ALLOC, &a, EINVAL);
	a = (struct buddy_split_alloc){ .reserved = 1 };
	do_ioctl(fd, dev, "ALLOC reserved 1", BUDDY_SPLIT_IOC_ALLOC, &a, EINVAL);
	f = (struct buddy_split_free){ .pfn = pfn, .flags = 1 };
	do_ioctl(fd, dev, "FREE flags 1", BUDDY_SPLIT_IOC_FREE, &f, EINVAL);
	f.flags = 0;
	for (i = 1; i < 8; i++) {
		f.pfn = pfn + i;
		do_ioctl(fd, dev, "FREE inside a live block", BUDDY_SPLIT_IOC_FREE, &f, ENOENT);
	}
	f.pfn = pfn + 8;
	do_ioctl(fd, dev, "FREE just after a live block", BUDDY_SPLIT_IOC_FREE, &f, 0);
	f.pfn = 0;
	do_ioctl(fd, dev, "FREE pfn 0", BUDDY_SPLIT_IOC_FREE, &f, ENOENT);
	f.pfn = ~0ULL;
	do_ioctl(fd, dev, "FREE pfn ~0", BUDDY_SPLIT_IOC_FREE, &f, ENOENT);
	for (i = 0; i < 50; i++) {
		f.pfn = rnd() >> (rnd() % 64);
		if (f.pfn == pfn)
			continue;
		do_ioctl(fd, dev, "FREE random pfn", BUDDY_SPLIT_IOC_FREE, &f, 0);
	}
	w0 = (struct buddy_split_workload){ .seed = 1, .ops = 10, .max_order = 3,
					    .mix = { 50, 30, 20 } };
#define WL(what, field, value) do {					\
		w = w0;							\
		w.field = value;					\
		do_ioctl(fd, dev, "WORKLOAD " what, BUDDY_SPLIT_IOC_WORKLOAD, &w, EINVAL); \
	} while (0)
	WL("ops 0", ops, 0);
	WL("ops 10^8 + 1", ops, 100000001);
	WL("ops ~0", ops, ~0U);
	WL("max_order 11", max_order, BUDDY_SPLIT_MAX_ORDER);
	WL("max_order ~0", max_order, ~0U);
	WL("mix sum 99", mix[0], 49);
	WL("flags 1", flags, 1);
	WL("reserved 1", reserved, 1);
	WL("mix sum 101", mix[0], 51);
	WL("mix sum wrapping 2^32 + 100", mix[0], 0xffffffffU - 49);
	WL("lifetime 2^30 + 1", lifetime[1], (1U << 30) + 1);
	WL("lifetime ~0", lifetime[2], ~0U);
#undef WL
	s = (struct buddy_split_section){ .nr = info0.nr_sections };
	do_ioctl(fd, dev, "SECTION_REMOVE nr == sections", BUDDY_SPLIT_IOC_SECTION_REMOVE,
		 &s, EINVAL);
	do_ioctl(fd, dev, "SECTION_ADD nr == sections", BUDDY_SPLIT_IOC_SECTION_ADD, &s,
		 EINVAL);
	s = (struct buddy_split_section){ .nr = ~0U };
	do_ioctl(fd, dev, "SECTION_REMOVE nr ~0", BUDDY_SPLIT_IOC_SECTION_REMOVE, &s, EINVAL);
	s = (struct buddy_split_section){ .nr = 0, .reserved = 1 };
	do_ioctl(fd, dev, "SECTION_REMOVE reserved", BUDDY_SPLIT_IOC_SECTION_REMOVE, &s,
		 EINVAL);
	s = (struct buddy_split_section){ .nr = 0, .flags = 2 };
	do_ioctl(fd, dev, "SECTION_REMOVE unknown flag", BUDDY_SPLIT_IOC_SECTION_REMOVE, &s,
		 EINVAL);
	s = (struct buddy_split_section){ .nr = 0, .flags = BUDDY_SPLIT_SECTION_DRY_RUN };
	do_ioctl(fd, dev, "SECTION_ADD with DRY_RUN", BUDDY_SPLIT_IOC_SECTION_ADD, &s,
		 EINVAL);
	r = (struct buddy_split_reset){ .mode = 3 };
	do_ioctl(fd, dev, "RESET mode 3", BUDDY_SPLIT_IOC_RESET, &r, EINVAL);
	r = (struct buddy_split_reset){ .mode = 0, .reserved = 1 };
	do_ioctl(fd, dev, "RESET reserved", BUDDY_SPLIT_IOC_RESET, &r, EINVAL);
	b = (struct buddy_split_bench){ .target = 2, .count = 1 };
	do_ioctl(fd, dev, "BENCH target 2", BUDDY_SPLIT_IOC_BENCH, &b, EINVAL);
	b = (struct buddy_split_bench){ .count = 0 };
	do_ioctl(fd, dev, "BENCH count 0", BUDDY_SPLIT_IOC_BENCH, &b, EINVAL);
	b = (struct buddy_split_bench){ .count = (1 << 20) + 1 };
	do_ioctl(fd, dev, "BENCH count 2^20 + 1", BUDDY_SPLIT_IOC_BENCH, &b, EINVAL);
	b = (struct buddy_split_bench){ .count = 1, .order = BUDDY_SPLIT_MAX_ORDER };
	do_ioctl(fd, dev, "BENCH order 11", BUDDY_SPLIT_IOC_BENCH, &b, EINVAL);
	b = (struct buddy_split_bench){ .count = 1, .reserved = 1 };
	do_ioctl(fd, dev, "BENCH reserved", BUDDY_SPLIT_IOC_BENCH, &b, EINVAL);
	b = (struct buddy_split_bench){ .count = 1, .type = 3 };
	do_ioctl(fd, dev, "BENCH arena type 3", BUDDY_SPLIT_IOC_BENCH, &b, EINVAL);
	b = (struct buddy_split_bench){ .target = BUDDY_SPLIT_BENCH_KERNEL,
					.count = 1 << 20, .order = 10 };
	do_ioctl(fd, dev, "BENCH kernel 2^30 pages", BUDDY_SPLIT_IOC_BENCH, &b, EINVAL);
	h = (struct buddy_split_hold){ .type = BUDDY_SPLIT_USER_RECLAIMABLE, .pages = 1 };
	do_ioctl(fd, dev, "KERNEL_HOLD user type", BUDDY_SPLIT_IOC_KERNEL_HOLD, &h, EINVAL);
	h = (struct buddy_split_hold){ .type = 7, .pages = 1 };
	do_ioctl(fd, dev, "KERNEL_HOLD type 7", BUDDY_SPLIT_IOC_KERNEL_HOLD, &h, EINVAL);
	h = (struct buddy_split_hold){ .type = BUDDY_SPLIT_KERNEL_RECLAIMABLE, .pages = 0 };
	do_ioctl(fd, dev, "KERNEL_HOLD 0 pages", BUDDY_SPLIT_IOC_KERNEL_HOLD, &h, EINVAL);
	h.pages = ~0ULL;
	do_ioctl(fd, dev, "KERNEL_HOLD ~0 pages", BUDDY_SPLIT_IOC_KERNEL_HOLD, &h, EINVAL);
	h.pages = 1;
	h.reserved = 1;
	do_ioctl(fd, dev, "KERNEL_HOLD reserved", BUDDY_SPLIT_IOC_KERNEL_HOLD, &h, EINVAL);

	/* Nothing changed: same counts, invariants hold, the block frees once. */
	if (ioctl(fd, BUDDY_SPLIT_IOC_INFO, &info1) ||
	    info1.free_pages != info0.free_pages ||
	    info1.online_pages != info0.online_pages ||
	    info1.nr_online != info0.nr_online || info1.mode != info0.mode) {
		printf("# %s: arena changed: free %llu -> %llu, online %llu -> %llu\n", dev,
		       (unsigned long long)info0.free_pages,
		       (unsigned long long)info1.free_pages,
		       (unsigned long long)info0.online_pages,
		       (unsigned long long)info1.online_pages);
		dev_bad++;
	}
	if (ioctl(fd, BUDDY_SPLIT_IOC_CHECK)) {
		printf("# %s: CHECK after the fuzzing: %s\n", dev, strerror(errno));
		dev_bad++;
	}
	f.pfn = pfn;
	if (ioctl(fd, BUDDY_SPLIT_IOC_FREE, &f)) {
		printf("# %s: FREE of the live block: %s\n", dev, strerror(errno));
		dev_bad++;
	}
	do_ioctl(fd, dev, "FREE twice", BUDDY_SPLIT_IOC_FREE, &f, ENOENT);
	if (ioctl(fd, BUDDY_SPLIT_IOC_CHECK)) {
		printf("# %s: CHECK after the free: %s\n", dev, strerror(errno));
		dev_bad++;
	}
}

static void fuzz_device(const char *dev)
{
	const char *base = strrchr(dev, '/');
	int fd;

	base = base ? base + 1 : dev;
	dev_tried = 0;
	dev_bad = 0;
	memset(dev_errnos, 0, sizeof(dev_errnos));
	fd = open(dev, O_RDWR);
	if (fd < 0) {
		ktap_result(false, "%s: open: %s", dev, strerror(errno));
		return;
	}
	if (!strcmp(base, "migrate_test")) {
		fuzz_migrate_test(fd, dev);
	} else if (!strcmp(base, "buddy_split")) {
		fuzz_buddy_split(fd, dev);
	} else {
		static const unsigned long none[] = { 0 };

		/* Unknown device: random commands only (any errno). */
		fuzz_cmds(fd, dev, none, 0);
	}
	close(fd);
	finish_dev(dev);
}

static unsigned long long meminfo_kb(const char *field)
{
	char line[256];
	unsigned long long v = 0;
	size_t n = strlen(field);
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = strtoull(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	const char *files[MAX_FILES], *devs[MAX_DEVS];
	int nr_files = 0, nr_devs = 0, opt, i, e;
	uint64_t seed = time(NULL);

	while ((opt = getopt(argc, argv, "s:n:f:d:")) != -1) {
		switch (opt) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			nr_random = strtoul(optarg, NULL, 0);
			break;
		case 'f':
			if (nr_files < MAX_FILES)
				files[nr_files++] = optarg;
			break;
		case 'd':
			if (nr_devs < MAX_DEVS)
				devs[nr_devs++] = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-s SEED] [-n N] [-f FILE]... [-d DEV]...\n",
				argv[0]);
			return 2;
		}
	}
	rng_state = seed ? seed : 1;
	ram_mb = meminfo_kb("MemTotal") / 1024;
	build_corpus();
	printf("TAP version 13\n");
	printf("1..%d\n", nr_files + nr_devs);
	printf("# seed %" PRIu64 " (-s to repeat); corpus %zu inputs (%u random)\n",
	       seed, nr_corpus, nr_random);
	for (i = 0; i < nr_files; i++) {
		if (rule_of(files[i], true) && rule_of(files[i], true)->kind == RULE_EXCLUDED) {
			ktap_result(true, "%s # SKIP excluded: WARNs by design on valid input",
				    files[i]);
			continue;
		}
		fuzz_file(files[i]);
	}
	for (i = 0; i < nr_devs; i++)
		fuzz_device(devs[i]);
	printf("# figures: %d files, %zu inputs per file (corpus), %lu writes tried,",
	       nr_files, nr_corpus, total_writes);
	printf(" %lu valid inputs not written, %lu ioctls tried\n",
	       total_skipped_valid, total_ioctls);
	printf("# errnos seen:");
	for (e = 0; e < MAX_ERRNO; e++)
		if (nr_errnos[e])
			printf(" %s:%d", e ? strerrorname_np(e) : "?", nr_errnos[e]);
	printf("\n");
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       tests_run - tests_failed, tests_failed);
	return tests_failed ? 1 : 0;
}
