// SPDX-License-Identifier: GPL-2.0
/*
 * Hibernation and /dev/migrate_test (mm/migrate_test_*.c): where the
 * module's pages are balloon pages, which hibernation does not save, the
 * module refuses PM_HIBERNATION_PREPARE while any exists.
 *
 * Run by migrate_test_hibernate.sh, whose guest can hibernate: upstream
 * virtio_mem refuses PM_HIBERNATION_PREPARE itself ("hibernation is not
 * supported", EPERM) whenever it drives a device, as it does in the
 * default guest, so that guest boots with module_blacklist=virtio_mem.
 * Opening /dev/snapshot for reading sends PM_HIBERNATION_PREPARE
 * (snapshot_open()) and freezes nothing; its close sends
 * PM_POST_HIBERNATION. Nothing here hibernates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "memhp_module.h"

#define DEV		"/dev/migrate_test"
#define SNAPSHOT	"/dev/snapshot"
/* migrate_test's pr_warn() in mtest_pm_notify(), after its pr_fmt prefix */
#define REFUSAL		"migrate_test: hibernation refused: "

/* A /proc/vmstat counter, or -1. */
static long vmstat_value(const char *name)
{
	char line[128];
	size_t n = strlen(name);
	long v = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ' ') {
			v = atol(line + n + 1);
			break;
		}
	fclose(f);
	return v;
}

/* /dev/kmsg positioned after every record logged so far, or -1. */
static int kmsg_open_end(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The page count of the first refusal logged on @fd since kmsg_open_end(),
 * or -1 if there is none. A record is "prefix;text\n".
 */
static long long kmsg_refusal(int fd)
{
	char rec[1024], *text, *p;
	ssize_t n;

	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)	/* overwritten: read on */
			continue;
		if (n <= 0)
			return -1;
		rec[n] = 0;
		text = strchr(rec, ';');
		if (!text)
			continue;
		p = strstr(text + 1, REFUSAL);
		if (p) {
			ksft_print_msg("kernel log: %s", p);
			return atoll(p + strlen(REFUSAL));
		}
	}
}

/* 0 if /dev/snapshot opens for reading (and is closed again), else errno. */
static int snapshot_try(void)
{
	int fd = open(SNAPSHOT, O_RDONLY);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

TEST(hibernation_refused_while_balloon_pages)
{
	long b0, b1, psz = sysconf(_SC_PAGESIZE);
	long long pages;
	int fd, kmsg, err, before;
	char *buf;

	fd = open(DEV, O_RDWR);
	if (fd < 0)
		SKIP(return, DEV " missing");
	/* None of our pages yet: the guest must be able to hibernate. */
	before = snapshot_try();
	buf = mmap(NULL, psz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(buf, MAP_FAILED);
	/* An event count is exact at every read (nr_balloon_pages lags). */
	b0 = vmstat_value("balloon_inflate");
	buf[0] = 1;
	b1 = vmstat_value("balloon_inflate");
	if (b0 < 0 || b1 <= b0) {
		munmap(buf, psz);
		close(fd);
		if (b0 < 0)
			SKIP(return, "%s",
			     "no balloon_inflate in /proc/vmstat: no balloon pages, hibernation saves ours");
		SKIP(return, "%s",
		     "our page did not count in balloon_inflate: not a balloon page, hibernation saves it");
	}
	ksft_print_msg("a page of " DEV " counted in balloon_inflate (%ld -> %ld): balloon pages\n",
		       b0, b1);
	/* A refusal of the guest's (upstream virtio_mem's) would hide ours. */
	ASSERT_EQ(before, 0)
		TH_LOG("%s with none of our pages: %s: the guest cannot hibernate",
		       SNAPSHOT, strerror(before));

	kmsg = kmsg_open_end();
	ASSERT_GE(kmsg, 0) TH_LOG("/dev/kmsg: %s", strerror(errno));
	err = snapshot_try();
	pages = kmsg_refusal(kmsg);
	close(kmsg);
	EXPECT_EQ(err, EBUSY) TH_LOG(SNAPSHOT " with a balloon page of ours: %s",
				     err ? strerror(err) : "opened");
	/* Another user of /dev/snapshot also gets EBUSY, without this. */
	EXPECT_GE(pages, 1) TH_LOG("no \"" REFUSAL "\" in the kernel log");
	munmap(buf, psz);
	close(fd);

	/* No page left: accepted. */
	err = snapshot_try();
	EXPECT_EQ(err, 0) TH_LOG(SNAPSHOT " with no page of ours: %s", strerror(err));
}

/*
 * Load the module before the test (unless it is loaded) and unload it
 * after it: the harness runs each test in a child that leaves with
 * _exit(), so only the parent runs the atexit handler.
 */
MEMHP_SELFTEST_MODULE("migrate_test", "mm/migrate_test.ko", DEV, "");

TEST_HARNESS_MAIN
