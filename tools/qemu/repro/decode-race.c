// SPDX-License-Identifier: GPL-2.0
/*
 * decode-race: PID 1 of a guest that changes the memory map on one vCPU
 * while the other vCPU keeps filling its TLB, to reproduce a QEMU TCG
 * abort in iotlb_to_section() (or in ramblock_ptr(), or a segfault in
 * the dispatch lookup) without any module or test suite.
 *
 * vCPU 1: a child maps 16 MiB of anonymous memory, writes one byte per
 * page and unmaps it, for ever: every write is a guest page fault and a
 * TLB fill in QEMU.
 * vCPU 0: for every PCI device that decodes memory or I/O, and is not a
 * bridge, clears both decode bits in its command register and sets them
 * again, as Linux does around BAR sizing at boot (__pci_read_base());
 * each write changes the guest's memory map (a memory transaction in
 * QEMU). decode_race.toggles=N on the kernel command line is the number
 * of rounds over the devices.
 *
 * Prints "decode-race: devices N", "decode-race: toggles N" every 1000
 * rounds and "decode-race: done N" at the end, then powers off. A line
 * "decode-race: error ..." says what could not be done.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <unistd.h>

#define MAX_DEVS	64
#define TOUCH_BYTES	(16UL << 20)
#define PCI_COMMAND	4
#define DECODE_ENABLE	3	/* PCI_COMMAND_IO | PCI_COMMAND_MEMORY */

static void say(const char *fmt, unsigned long n)
{
	printf("decode-race: ");
	printf(fmt, n);
	printf("\n");
	fflush(stdout);
}

static void stop(void)
{
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

static void fail(const char *what)
{
	printf("decode-race: error %s: %s\n", what, strerror(errno));
	fflush(stdout);
	stop();
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fail("sched_setaffinity");
}

static void toucher(void)
{
	unsigned long i;
	char *p;

	pin(1);
	for (;;) {
		p = mmap(NULL, TOUCH_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			fail("mmap");
		for (i = 0; i < TOUCH_BYTES; i += 4096)
			p[i] = 1;
		munmap(p, TOUCH_BYTES);
	}
}

static unsigned long cmdline_toggles(void)
{
	char buf[4096], *s = NULL;
	FILE *f = fopen("/proc/cmdline", "r");

	if (!f)
		fail("open /proc/cmdline");
	if (fgets(buf, sizeof(buf), f))
		s = strstr(buf, "decode_race.toggles=");
	fclose(f);
	if (!s) {
		errno = EINVAL;
		fail("no decode_race.toggles= on the kernel command line");
	}
	return strtoul(s + strlen("decode_race.toggles="), NULL, 10);
}

/* The config space of every non-bridge PCI device with decode enabled. */
static int open_devices(int *fds)
{
	char path[512];
	unsigned char cfg[12];
	struct dirent *e;
	int n = 0, fd;
	DIR *d = opendir("/sys/bus/pci/devices");

	if (!d)
		fail("opendir /sys/bus/pci/devices");
	while ((e = readdir(d)) && n < MAX_DEVS) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config",
			 e->d_name);
		fd = open(path, O_RDWR);
		if (fd < 0)
			fail(path);
		if (pread(fd, cfg, sizeof(cfg), 0) != sizeof(cfg))
			fail("read config space");
		/* cfg[11]: class; 0x06: bridges (host, ISA, PCI). */
		if (cfg[11] == 0x06 || !(cfg[PCI_COMMAND] & DECODE_ENABLE)) {
			close(fd);
			continue;
		}
		fds[n++] = fd;
	}
	closedir(d);
	return n;
}

int main(void)
{
	int fds[MAX_DEVS], n, i;
	unsigned long round, toggles;
	unsigned char cmd[2], off[2];
	pid_t child;

	if (mount("proc", "/proc", "proc", 0, NULL) ||
	    mount("sysfs", "/sys", "sysfs", 0, NULL))
		fail("mount");
	toggles = cmdline_toggles();
	n = open_devices(fds);
	say("devices %lu", n);
	if (!n) {
		errno = ENODEV;
		fail("no PCI device decodes memory or I/O");
	}
	child = fork();
	if (child < 0)
		fail("fork");
	if (!child)
		toucher();
	pin(0);
	for (round = 1; round <= toggles; round++) {
		for (i = 0; i < n; i++) {
			if (pread(fds[i], cmd, 2, PCI_COMMAND) != 2)
				fail("read command");
			off[0] = cmd[0] & ~DECODE_ENABLE;
			off[1] = cmd[1];
			if (pwrite(fds[i], off, 2, PCI_COMMAND) != 2 ||
			    pwrite(fds[i], cmd, 2, PCI_COMMAND) != 2)
				fail("write command");
		}
		if (!(round % 1000))
			say("toggles %lu", round);
	}
	kill(child, SIGKILL);
	say("done %lu", toggles);
	stop();
	return 0;
}
