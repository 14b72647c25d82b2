// SPDX-License-Identifier: GPL-2.0
/*
 * tb-stale: PID 1 of an initramfs that shows QEMU TCG running code that a
 * re-plugged DIMM no longer holds. repro.py is the host side; the two
 * talk over the serial console: the guest prints "tb-stale: ready N" and
 * waits for a line, the host does what step N needs over QMP and answers.
 *
 *   ready 1: the host adds DIMM d1 (128 MiB) on a new backend m1.
 *   step 1:  in every page of d1 this process gets, write
 *            "mov $1, %eax; ret" at 0x100 and call it.
 *   step 2:  control, still d1: at 0x200 write a function returning 6,
 *            call it, rewrite it to return 7, call it again.
 *   ready 2: the block is offline; the host removes d1 and m1 and adds d2
 *            on a new backend m2 of the same size (or, in its control, on
 *            m1 again).
 *   step 3:  in d2, at 0x100 (where d1 had code), write a function
 *            returning 2 and call it.
 *   step 4:  in d2, at 0x300 (where d1 had none), write 4, call, rewrite
 *            to 5, call again.
 *
 * A call that returns another value than the one just written ran a
 * translation of code that memory no longer holds. Every step prints a
 * line (tools/testing/stale-code/tb-replug.c's format), then the guest
 * powers off. Errors print "tb-stale: error: ..." and power off too.
 *
 *   gcc -static -O2 -Wall -Werror -o tb-stale tb-stale.c
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define DIMM_SIZE	(128UL << 20)	/* repro.py's DIMM_MIB */
#define MAP_SIZE	(192UL << 20)	/* more than the DIMM: fills ZONE_MOVABLE */
#define PAGE		4096UL
#define MEM		"/sys/devices/system/memory"
#define WAIT_BLOCK_S	60

struct count {
	unsigned long pages, same, other, re_same, re_other;
	unsigned int first_other, re_first;
};

static _Noreturn void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	printf("tb-stale: error: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %d: %s)\n", errno, strerror(errno));
	power_off();
}

/* The kernel gives PID 1 no devtmpfs in an initramfs: mount what we use. */
static void setup_console(void)
{
	struct termios t;
	int fd;

	mkdir("/dev", 0755);
	mkdir("/proc", 0555);
	mkdir("/sys", 0555);
	if (mount("devtmpfs", "/dev", "devtmpfs", 0, NULL) && errno != EBUSY)
		exit(1);	/* no console to say so: the kernel panics */
	fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		exit(1);
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Whole lines from the host, not echoed into the output it parses. */
	if (!tcgetattr(0, &t)) {
		t.c_lflag |= ICANON;
		t.c_lflag &= ~(ECHO | ECHONL);
		tcsetattr(0, TCSANOW, &t);
	}
	if (mount("proc", "/proc", "proc", 0, NULL))
		die("mount /proc");
	if (mount("sysfs", "/sys", "sysfs", 0, NULL))
		die("mount /sys");
}

/* Say "ready N" and block until the host answers with a line. */
static void ask_host(int n)
{
	char line[64];

	printf("tb-stale: ready %d\n", n);
	if (!fgets(line, sizeof(line), stdin))
		die("no answer from the host");
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret;

	if (fd < 0)
		return -1;
	ret = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return ret;
}

static unsigned long block_size(void)
{
	char buf[32] = "";
	int fd = open(MEM "/block_size_bytes", O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		die("read " MEM "/block_size_bytes");
	close(fd);
	return strtoul(buf, NULL, 16);
}

/*
 * memhp_default_state=offline leaves a hot-added DIMM's blocks offline
 * and boot memory is all online, so the offline blocks are the DIMM's.
 * ACPI adds them asynchronously after device_add: poll. Returns the
 * number of blocks found, the lowest and the highest.
 */
static int offline_blocks(unsigned long *first, unsigned long *last)
{
	DIR *d = opendir(MEM);
	struct dirent *e;
	char path[300], state[16];
	int n = 0, fd;

	if (!d)
		die("opendir " MEM);
	while ((e = readdir(d))) {
		unsigned long nr;
		ssize_t len;

		if (sscanf(e->d_name, "memory%lu", &nr) != 1)
			continue;
		snprintf(path, sizeof(path), MEM "/%s/state", e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		len = read(fd, state, sizeof(state) - 1);
		close(fd);
		if (len <= 0 || strncmp(state, "offline", 7))
			continue;
		if (!n || nr < *first)
			*first = nr;
		if (!n || nr > *last)
			*last = nr;
		n++;
	}
	closedir(d);
	return n;
}

/* Wait for the new DIMM's blocks, set them to state; its frames: [lo, hi). */
static void dimm_blocks(const char *state, unsigned long *lo, unsigned long *hi)
{
	unsigned long bs = block_size(), want = DIMM_SIZE / bs, first = 0, last = 0, nr;
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	char path[64];
	int i;

	for (i = 0; offline_blocks(&first, &last) < (int)want; i++) {
		if (i == WAIT_BLOCK_S * 10)
			die("no offline memory block of the DIMM after %d s", WAIT_BLOCK_S);
		nanosleep(&ts, NULL);
	}
	if (last - first + 1 != want)
		die("offline blocks %lu-%lu, expected %lu", first, last, want);
	for (nr = first; nr <= last; nr++) {
		snprintf(path, sizeof(path), MEM "/memory%lu/state", nr);
		if (write_file(path, state))
			die("%s > %s", state, path);
	}
	*lo = first * bs / PAGE;
	*hi = (last + 1) * bs / PAGE;
	printf("tb-stale: DIMM at memory%lu-memory%lu, pfns 0x%lx-0x%lx, %s\n",
	       first, last, *lo, *hi - 1, state);
}

static void set_blocks(unsigned long lo, unsigned long hi, const char *state)
{
	unsigned long bs = block_size(), nr;
	char path[64];

	for (nr = lo * PAGE / bs; nr < hi * PAGE / bs; nr++) {
		snprintf(path, sizeof(path), MEM "/memory%lu/state", nr);
		if (write_file(path, state))
			die("%s > %s", state, path);
	}
}

/* Write "mov $value, %eax; ret" at code and call it. */
static unsigned int run_at(uint8_t *code, unsigned int value)
{
	code[0] = 0xb8;		/* mov $imm32, %eax */
	memcpy(code + 1, &value, 4);
	code[5] = 0xc3;		/* ret */
	__builtin___clear_cache((char *)code, (char *)code + 6);
	return ((unsigned int (*)(void))code)();
}

/*
 * For each page of buf in frames [lo, hi): write and call a function
 * returning value at offset; with rewrite, write it again returning
 * value + 1 and call it again. Prints the step's line; returns the number
 * of calls that returned another value.
 */
static unsigned long step(const char *name, uint8_t *buf, unsigned long lo,
			  unsigned long hi, unsigned long offset, unsigned int value,
			  int rewrite)
{
	struct count c = { 0 };
	unsigned long i;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		die("open /proc/self/pagemap");
	for (i = 0; i < MAP_SIZE / PAGE; i++) {
		uint8_t *page = buf + i * PAGE;
		unsigned int ret;
		uint64_t ent, pfn;

		if (pread(fd, &ent, sizeof(ent), (uintptr_t)page / PAGE * sizeof(ent)) !=
		    sizeof(ent))
			die("read pagemap");
		pfn = ent & ((1ULL << 55) - 1);
		if (!(ent & (1ULL << 63)) || pfn < lo || pfn >= hi)
			continue;
		c.pages++;
		ret = run_at(page + offset, value);
		if (ret == value)
			c.same++;
		else if (!c.other++)
			c.first_other = ret;
		if (!rewrite)
			continue;
		ret = run_at(page + offset, value + 1);
		if (ret == value + 1)
			c.re_same++;
		else if (!c.re_other++)
			c.re_first = ret;
	}
	close(fd);
	if (!c.pages)
		die("%s: no page of the DIMM in the mapping", name);
	printf("tb-stale: %s, offset 0x%lx: pages in range %lu, ", name, offset, c.pages);
	printf("returned %u: %lu, returned another value: %lu", value, c.same, c.other);
	if (c.other)
		printf(" (first %u)", c.first_other);
	if (rewrite) {
		printf("; rewritten: returned %u: %lu, returned another value: %lu",
		       value + 1, c.re_same, c.re_other);
		if (c.re_other)
			printf(" (first %u)", c.re_first);
	}
	printf("\n");
	return c.other + c.re_other;
}

/*
 * Anonymous RWX memory, populated: anonymous pages come from ZONE_MOVABLE
 * first, and the DIMM is all of it, so most of the DIMM's pages are ours.
 */
static uint8_t *map_memory(void)
{
	void *buf = mmap(NULL, MAP_SIZE, PROT_READ | PROT_WRITE | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (buf == MAP_FAILED)
		die("mmap");
	return buf;
}

int main(void)
{
	unsigned long lo, hi, control, stale;
	uint8_t *buf;

	setup_console();
	ask_host(1);
	dimm_blocks("online_movable", &lo, &hi);
	buf = map_memory();
	control = step("step 1 (d1)", buf, lo, hi, 0x100, 1, 0);
	control += step("step 2 (d1, control)", buf, lo, hi, 0x200, 6, 1);
	/* Free our pages so that offlining has nothing to migrate. */
	munmap(buf, MAP_SIZE);
	set_blocks(lo, hi, "offline");
	ask_host(2);
	dimm_blocks("online_movable", &lo, &hi);
	buf = map_memory();
	stale = step("step 3 (d2)", buf, lo, hi, 0x100, 2, 0);
	stale += step("step 4 (d2)", buf, lo, hi, 0x300, 4, 1);
	if (control)
		printf("tb-stale: result: the control ran stale code\n");
	else if (stale)
		printf("tb-stale: result: stale code ran in the new DIMM: %lu calls\n", stale);
	else
		printf("tb-stale: result: no stale code\n");
	power_off();
}
