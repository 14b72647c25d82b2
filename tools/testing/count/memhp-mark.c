// SPDX-License-Identifier: GPL-2.0
/*
 * memhp-mark: marks phases for the memhp-count TCG plugin, in a guest.
 *
 *   memhp-mark begin NAME | end NAME
 *   memhp-mark write NAME FILE VALUE	open FILE, then begin, write(2)
 *					(the bare system call), end
 *   memhp-mark run NAME -- CMD...	begin, run CMD and wait, end
 *   memhp-mark selftest N		begin, a loop of N iterations, end;
 *					prints the instructions in between
 *   memhp-mark syms			save the module symbols now (for
 *					phases a program marks itself)
 *
 * The marker is an eight-byte NOP (nopl 0x4d50484d(%rax,%rax,1)) with the
 * operation in %rdi and the name's address in %rsi; real hardware and KVM
 * execute it as a NOP, and without the plugin nothing is counted.
 *
 * With MEMHP_COUNT_SYMS=FILE in the environment, an end appends the
 * kernel's module text symbols of that moment to FILE after the marker,
 * under a line "@phase NAME", then /proc/modules, a line "@module LINE"
 * each: a module's addresses are its own only while it is loaded, so the
 * report resolves a phase's blocks with the symbols and the module extents
 * (address and size) of that phase's end. When /proc/modules reads as it did at the previous end
 * (FILE.modules keeps it), the line is "@phase NAME =": the previous
 * phase's symbols still hold.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memhp_mark.h"

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

/*
 * Whether the loaded modules and their addresses read as in FILE.modules
 * (the last dump's); *now gets /proc/modules for modules_record().
 */
static long modules_read(const char *path, char *state, size_t state_len, char *now,
			 size_t now_len, int *unchanged)
{
	static char last[1 << 16];
	long n;

	snprintf(state, state_len, "%s.modules", path);
	n = read_small("/proc/modules", now, now_len);
	*unchanged = n >= 0 && read_small(state, last, sizeof(last)) == n &&
		     !memcmp(now, last, n);
	return n;
}

/* Append the kernel's module text symbols to OUT. */
static int dump_module_syms(FILE *out)
{
	char line[512], type[4];
	FILE *in = fopen("/proc/kallsyms", "r");

	if (!in) {
		fprintf(stderr, "memhp-mark: /proc/kallsyms: %s\n", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), in))
		if (strchr(line, '[') && sscanf(line, "%*s %3s", type) == 1 &&
		    strchr("tTwW", type[0]))
			fputs(line, out);
	fclose(in);
	return 0;
}

/*
 * Append /proc/modules (MODULES, read with the symbols), each line as
 * "@module LINE": a module's address and size bound its code, so the
 * report credits no address past a module's end to the module.
 */
static void dump_modules(FILE *out, const char *modules)
{
	const char *p = modules, *nl;

	for (; *p; p = nl + 1) {
		nl = strchrnul(p, '\n');
		fprintf(out, "@module %.*s\n", (int)(nl - p), p);
		if (!*nl)
			break;
	}
}

/*
 * After an end: "@phase NAME", the module symbols and /proc/modules, or
 * "@phase NAME =" when the modules are those of the last dump. syms:
 * "@snapshot", the symbols and /proc/modules, always (for phases that a
 * program marks itself).
 */
static int save_module_syms(const char *header, const char *name)
{
	const char *path = getenv("MEMHP_COUNT_SYMS");
	static char now[1 << 16];
	char state[4096];
	int unchanged, ret;
	long n;
	FILE *out;

	if (!path || !*path)
		return 0;
	n = modules_read(path, state, sizeof(state), now, sizeof(now), &unchanged);
	out = fopen(path, "a");
	if (!out) {
		fprintf(stderr, "memhp-mark: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (name && unchanged) {
		fprintf(out, "%s %s =\n", header, name);
		return fclose(out) ? -1 : 0;
	}
	if (name)
		fprintf(out, "%s %s\n", header, name);
	else
		fprintf(out, "%s\n", header);
	ret = dump_module_syms(out);
	if (!ret && n >= 0)
		dump_modules(out, now);
	if (fclose(out))
		ret = -1;
	if (!ret && n >= 0) {
		/* Recorded only once the dump is complete. */
		out = fopen(state, "w");
		if (out) {
			fwrite(now, 1, n, out);
			fclose(out);
		}
	}
	return ret;
}

/* After an end marker: the phase's module symbols, a warning if not saved. */
static void phase_syms(const char *name)
{
	if (save_module_syms("@phase", name))
		fprintf(stderr, "memhp-mark: warning: module symbols of %s not saved\n", name);
}

static int end(const char *name)
{
	memhp_mark(MEMHP_MARK_END, name);
	phase_syms(name);
	return 0;
}

/* N iterations of dec/jnz between the markers: 2 * N + 3 instructions. */
static unsigned long marked_loop(unsigned long n)
{
	static const char name[] = "memhp-mark-selftest";

	asm volatile("mov $1, %%edi\n\t"
		     "mov %[name], %%rsi\n\t"
		     MEMHP_MARK_INSN
		     "mov %[n], %%rcx\n"
		     "1:\tdec %%rcx\n\t"
		     "jnz 1b\n\t"
		     "mov $2, %%edi\n\t"
		     "mov %[name], %%rsi\n\t"
		     MEMHP_MARK_INSN
		     : : [n] "r"(n), [name] "r"(name) : "rcx", "rdi", "rsi", "memory", "cc");
	return 2 * n + 3;
}

static int print_usage(void)
{
	fprintf(stderr, "usage: memhp-mark begin NAME | end NAME | write NAME FILE VALUE |\n"
		"       writeall NAME VALUE FILE... | run NAME -- CMD... | selftest N | syms\n");
	return 2;
}

static int check_name(const char *name)
{
	size_t len = strlen(name);

	if (!len || len > MEMHP_MARK_NAME_MAX ||
	    strspn(name, MEMHP_MARK_NAME_CHARS) != len) {
		fprintf(stderr, "memhp-mark: a name has 1 to %d characters of [%s]\n",
			MEMHP_MARK_NAME_MAX, MEMHP_MARK_NAME_CHARS);
		return -1;
	}
	return 0;
}

/*
 * Stay on this CPU, so that both markers of a phase run on one vCPU and
 * its figures are that vCPU's (the scheduler could move the process away
 * and back between them). Best effort: a failure leaves it unpinned.
 */
static void pin_here(void)
{
	int cpu = sched_getcpu();
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static int do_write(const char *name, const char *file, const char *value)
{
	size_t len = strlen(value);
	ssize_t ret;
	int fd;

	fd = open(file, O_WRONLY);
	if (fd < 0) {
		fprintf(stderr, "memhp-mark: %s: %s\n", file, strerror(errno));
		return 1;
	}
	pin_here();
	/* Nothing but the system call between the markers: no libc, no PLT. */
	memhp_mark(MEMHP_MARK_BEGIN, name);
	asm volatile("syscall" : "=a"(ret) : "0"((long)SYS_write), "D"((long)fd), "S"(value),
		     "d"(len) : "rcx", "r11", "memory");
	memhp_mark(MEMHP_MARK_END, name);
	phase_syms(name);
	close(fd);
	if (ret != (ssize_t)len) {
		fprintf(stderr, "memhp-mark: write %s to %s: %s\n", value, file,
			ret < 0 ? strerror((int)-ret) : "short write");
		return 1;
	}
	return 0;
}

/*
 * VALUE to each of @nr FILES, all inside one phase: every file is opened
 * first, so the phase holds the writes' system calls (and the loop) only.
 * 80-scale onlines and offlines all blocks of a device so.
 */
static int do_writeall(const char *name, const char *value, char **files, int nr)
{
	size_t len = strlen(value);
	int *fd, i, bad = 0, ret = 0;
	ssize_t *res;

	fd = calloc(nr, sizeof(*fd));
	res = calloc(nr, sizeof(*res));
	if (!fd || !res) {
		fprintf(stderr, "memhp-mark: out of memory\n");
		free(fd);
		free(res);
		return 1;
	}
	for (i = 0; i < nr; i++) {
		fd[i] = open(files[i], O_WRONLY | O_CLOEXEC);
		if (fd[i] < 0) {
			fprintf(stderr, "memhp-mark: %s: %s\n", files[i], strerror(errno));
			ret = 1;
			goto out;
		}
	}
	pin_here();
	memhp_mark(MEMHP_MARK_BEGIN, name);
	for (i = 0; i < nr; i++)
		asm volatile("syscall" : "=a"(res[i]) : "0"((long)SYS_write), "D"((long)fd[i]),
			     "S"(value), "d"(len) : "rcx", "r11", "memory");
	memhp_mark(MEMHP_MARK_END, name);
	phase_syms(name);
	for (i = 0; i < nr; i++) {
		if (res[i] == (ssize_t)len)
			continue;
		if (!bad++)
			fprintf(stderr, "memhp-mark: write %s to %s: %s\n", value, files[i],
				res[i] < 0 ? strerror((int)-res[i]) : "short write");
		ret = 1;
	}
	if (bad > 1)
		fprintf(stderr, "memhp-mark: %d of %d writes failed\n", bad, nr);
out:
	while (i-- > 0)
		close(fd[i]);
	free(fd);
	free(res);
	return ret;
}

static int do_run(const char *name, char **argv)
{
	int status, err;
	pid_t pid, w;

	memhp_mark(MEMHP_MARK_BEGIN, name);
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
	while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	err = errno;
	end(name);
	if (w < 0) {
		fprintf(stderr, "memhp-mark: waitpid: %s\n", strerror(err));
		return 1;
	}
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
	if (argc == 2 && !strcmp(argv[1], "syms"))
		return save_module_syms("@snapshot", NULL) ? 1 : 0;
	if (argc < 3)
		return print_usage();
	if (check_name(argv[2]))
		return 2;
	if (argc == 3 && !strcmp(argv[1], "begin")) {
		memhp_mark(MEMHP_MARK_BEGIN, argv[2]);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "end"))
		return end(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "write"))
		return do_write(argv[2], argv[3], argv[4]);
	if (argc >= 5 && !strcmp(argv[1], "writeall"))
		return do_writeall(argv[2], argv[3], argv + 4, argc - 4);
	if (argc >= 5 && !strcmp(argv[1], "run") && !strcmp(argv[3], "--"))
		return do_run(argv[2], argv + 4);
	return print_usage();
}
