// SPDX-License-Identifier: GPL-2.0
/*
 * memhp-mark: marks phases for the memhp-count TCG plugin, in a guest.
 *
 *   memhp-mark begin NAME | end NAME
 *   memhp-mark write NAME FILE VALUE	open FILE, then begin, write, end
 *   memhp-mark run NAME -- CMD...	begin, run CMD and wait, end
 *   memhp-mark selftest N		begin, a loop of N iterations, end;
 *					prints the instructions in between
 *
 * The marker is an eight-byte NOP (nopl 0x4d50484d(%rax,%rax,1)) with the
 * operation in %rdi and the name's address in %rsi; real hardware and KVM
 * execute it as a NOP, and without the plugin nothing is counted.
 *
 * With MEMHP_COUNT_SYMS=FILE in the environment, an end appends the
 * kernel's module text symbols of that moment to FILE after the marker,
 * under a line "@phase NAME": a module's addresses are its own only while
 * it is loaded, so the report resolves a phase's blocks with the symbols of
 * that phase's end. When /proc/modules reads as it did at the previous end
 * (FILE.modules keeps it), the line is "@phase NAME =": the previous
 * phase's symbols still hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memhp_mark.h"

#define MARK_BEGIN	MEMHP_MARK_BEGIN
#define MARK_END	MEMHP_MARK_END
#define NAME_MAX_LEN	MEMHP_MARK_NAME_MAX
/* The plugin writes names into JSON and the symbol file into lines. */
#define NAME_CHARS	MEMHP_MARK_NAME_CHARS
#define MARK_INSN	MEMHP_MARK_INSN
#define mark		memhp_mark

/* The text of small file PATH, NUL-terminated, in BUF; its length or -1. */
static long read_small(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n == size - 1 ? -1 : (long)n;
}

/* Whether the loaded modules and their addresses are those of the last end. */
static int modules_unchanged(const char *path)
{
	static char now[1 << 16], last[1 << 16];
	char state[4096];
	long n;
	FILE *f;

	snprintf(state, sizeof(state), "%s.modules", path);
	n = read_small("/proc/modules", now, sizeof(now));
	if (n < 0)
		return 0;
	if (read_small(state, last, sizeof(last)) == n && !memcmp(now, last, n))
		return 1;
	f = fopen(state, "w");
	if (f) {
		fwrite(now, 1, n, f);
		fclose(f);
	}
	return 0;
}

static int save_module_syms(const char *name)
{
	const char *path = getenv("MEMHP_COUNT_SYMS");
	char line[512], type[4];
	FILE *in, *out;

	if (!path || !*path)
		return 0;
	if (modules_unchanged(path)) {
		out = fopen(path, "a");
		if (!out)
			return -1;
		fprintf(out, "@phase %s =\n", name);
		return fclose(out) ? -1 : 0;
	}
	in = fopen("/proc/kallsyms", "r");
	out = fopen(path, "a");
	if (!in || !out) {
		fprintf(stderr, "memhp-mark: %s: %s\n", in ? path : "/proc/kallsyms",
			strerror(errno));
		if (in)
			fclose(in);
		if (out)
			fclose(out);
		return -1;
	}
	fprintf(out, "@phase %s\n", name);
	while (fgets(line, sizeof(line), in))
		if (strchr(line, '[') && sscanf(line, "%*s %3s", type) == 1 &&
		    strchr("tTwW", type[0]))
			fputs(line, out);
	fclose(in);
	return fclose(out) ? -1 : 0;
}

static int end(const char *name)
{
	mark(MARK_END, name);
	return save_module_syms(name);
}

/* N iterations of dec/jnz between the markers: 2 * N + 3 instructions. */
static unsigned long marked_loop(unsigned long n)
{
	static const char name[] = "memhp-mark-selftest";

	asm volatile("mov $1, %%edi\n\t"
		     "mov %[name], %%rsi\n\t"
		     MARK_INSN
		     "mov %[n], %%rcx\n"
		     "1:\tdec %%rcx\n\t"
		     "jnz 1b\n\t"
		     "mov $2, %%edi\n\t"
		     "mov %[name], %%rsi\n\t"
		     MARK_INSN
		     : : [n] "r"(n), [name] "r"(name) : "rcx", "rdi", "rsi", "memory", "cc");
	return 2 * n + 3;
}

static int print_usage(void)
{
	fprintf(stderr, "usage: memhp-mark begin NAME | end NAME | write NAME FILE VALUE |\n"
		"       run NAME -- CMD... | selftest N\n");
	return 2;
}

static int check_name(const char *name)
{
	size_t len = strlen(name);

	if (!len || len > NAME_MAX_LEN ||
	    strspn(name, NAME_CHARS) != len) {
		fprintf(stderr, "memhp-mark: a name has 1 to %d characters of [%s]\n",
			NAME_MAX_LEN, NAME_CHARS);
		return -1;
	}
	return 0;
}

static int do_write(const char *name, const char *file, const char *value)
{
	size_t len = strlen(value);
	ssize_t ret;
	int fd, err;

	fd = open(file, O_WRONLY);
	if (fd < 0) {
		fprintf(stderr, "memhp-mark: %s: %s\n", file, strerror(errno));
		return 1;
	}
	mark(MARK_BEGIN, name);
	ret = write(fd, value, len);
	err = errno;
	if (end(name))
		return 1;
	close(fd);
	if (ret != (ssize_t)len) {
		fprintf(stderr, "memhp-mark: write %s to %s: %s\n", value, file,
			ret < 0 ? strerror(err) : "short write");
		return 1;
	}
	return 0;
}

static int do_run(const char *name, char **argv)
{
	int status;
	pid_t pid;

	mark(MARK_BEGIN, name);
	pid = fork();
	if (pid < 0) {
		perror("memhp-mark: fork");
		end(name);
		return 1;
	}
	if (!pid) {
		execvp(argv[0], argv);
		fprintf(stderr, "memhp-mark: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (end(name))
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "selftest")) {
		char *e;
		unsigned long n = strtoul(argv[2], &e, 0);

		if (*e || !n || n > (1UL << 40)) {
			fprintf(stderr, "memhp-mark: selftest N: N from 1 to 2^40\n");
			return 2;
		}
		printf("%lu\n", marked_loop(n));
		return 0;
	}
	if (argc < 3)
		return print_usage();
	if (check_name(argv[2]))
		return 2;
	if (argc == 3 && !strcmp(argv[1], "begin")) {
		mark(MARK_BEGIN, argv[2]);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "end"))
		return end(argv[2]) ? 1 : 0;
	if (argc == 5 && !strcmp(argv[1], "write"))
		return do_write(argv[2], argv[3], argv[4]);
	if (argc >= 5 && !strcmp(argv[1], "run") && !strcmp(argv[3], "--"))
		return do_run(argv[2], argv + 4);
	return print_usage();
}
