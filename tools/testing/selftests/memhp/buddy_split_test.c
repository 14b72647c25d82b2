// SPDX-License-Identifier: GPL-2.0
/*
 * memhp-budget: 30
 *
 * Selftests of /dev/buddy_split (mm/buddy_split_main.c + mm/buddy_core.c):
 * the split buddy over real page frames, its ioctls, sysfs knobs and debugfs
 * check. Loads the module itself with a small arena (4 sections of 8 MiB,
 * slot 0 pinned, 1-3 hotplug) unless /dev/buddy_split already exists, and
 * unloads it at exit (which also returns any kernel pages left held).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <linux/buddy_split.h>

#include "kselftest_harness.h"
#include "memhp_file.h"
#include "memhp_module.h"

#define DEV		"/dev/buddy_split"
#define SYSFS		"/sys/class/misc/buddy_split/"
#define DEBUGFS		"/sys/kernel/debug/buddy_split/"
#define PARAMS		"nr_sections=4 section_mb=8 pinned_sections=1"
#define NSEC		4
#define SEC_PAGES	2048
#define TOP		(BUDDY_SPLIT_MAX_ORDER - 1)

static int knob_write(const char *knob, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), SYSFS "%s", knob);
	return memhp_write_str(path, val);
}

static int bs_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static int balloc(int fd, unsigned int type, unsigned int order, uint64_t *pfn)
{
	struct buddy_split_alloc a = { .type = type, .order = order };
	int ret = bs_ioctl(fd, BUDDY_SPLIT_IOC_ALLOC, &a);

	*pfn = a.pfn;
	return ret;
}

static int bfree(int fd, uint64_t pfn)
{
	struct buddy_split_free f = { .pfn = pfn };

	return bs_ioctl(fd, BUDDY_SPLIT_IOC_FREE, &f);
}

static int verdict(int fd, unsigned int nr, int *blocker)
{
	struct buddy_split_section s = {
		.nr = nr, .flags = BUDDY_SPLIT_SECTION_DRY_RUN,
	};
	int ret = bs_ioctl(fd, BUDDY_SPLIT_IOC_SECTION_REMOVE, &s);

	*blocker = s.blocker;
	return ret;
}

FIXTURE(bs) {
	int fd;
};

FIXTURE_SETUP(bs)
{
	struct buddy_split_reset r = { .mode = BUDDY_SPLIT_MODE_SPLIT };
	struct buddy_split_info i;

	self->fd = open(DEV, O_RDWR);
	if (self->fd < 0)
		SKIP(return, DEV ": %s (module not loaded)", strerror(errno));
	if (bs_ioctl(self->fd, BUDDY_SPLIT_IOC_INFO, &i) ||
	    i.nr_sections != NSEC || i.section_shift != 11)
		SKIP(return, "buddy_split loaded with other parameters than " PARAMS);
	ASSERT_EQ(0, knob_write("policy", "strict"));
	ASSERT_EQ(0, knob_write("kreclaim_home", "pinned"));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_RESET, &r));
}

FIXTURE_TEARDOWN(bs)
{
	if (self->fd >= 0) {
		EXPECT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_CHECK, NULL));
		close(self->fd);
	}
}

TEST_F(bs, geometry)
{
	struct buddy_split_info i;

	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_INFO, &i));
	ASSERT_EQ(NSEC, i.nr_sections);
	ASSERT_EQ(NSEC, i.nr_online);
	ASSERT_EQ(11, i.section_shift);
	ASSERT_EQ(1, i.pinned_sections);
	ASSERT_EQ(NSEC * SEC_PAGES, i.online_pages);
	ASSERT_EQ(i.online_pages, i.free_pages);
	ASSERT_EQ(0, i.bitmap_bytes);
}

/* Every type and order, on real frames: aligned, freed, coalesced. */
TEST_F(bs, alloc_free_every_order)
{
	struct buddy_split_info i;
	unsigned int t, o;
	uint64_t pfn;

	for (t = 0; t < BUDDY_SPLIT_NR_TYPES; t++) {
		for (o = 0; o <= TOP; o++) {
			ASSERT_EQ(0, balloc(self->fd, t, o, &pfn));
			ASSERT_EQ(0, pfn & ((1ULL << o) - 1));
			ASSERT_EQ(0, bfree(self->fd, pfn));
			ASSERT_EQ(-ENOENT, bfree(self->fd, pfn));
		}
	}
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_INFO, &i));
	ASSERT_EQ(i.online_pages, i.free_pages);
}

/* Bad input: a clear errno and nothing changes. */
TEST_F(bs, bad_inputs)
{
	struct buddy_split_workload w = {
		.seed = 1, .ops = 10, .mix = { 50, 49, 0 },
	};
	struct buddy_split_section s = { .nr = NSEC };
	struct buddy_split_reset r = { .mode = 3 };
	struct buddy_split_bench b = { .count = 0 };
	struct buddy_split_hold h = { .type = 0, .pages = 1 };
	struct buddy_split_info i0, i1;
	char buf[64];
	uint64_t pfn;

	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_INFO, &i0));
	ASSERT_EQ(-EINVAL, balloc(self->fd, 3, 0, &pfn));
	ASSERT_EQ(-EINVAL, balloc(self->fd, 0, BUDDY_SPLIT_MAX_ORDER, &pfn));
	ASSERT_EQ(-ENOENT, bfree(self->fd, 0));
	ASSERT_EQ(-ENOENT, bfree(self->fd, ~0ULL));
	ASSERT_EQ(-EINVAL, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_WORKLOAD, &w));
	ASSERT_EQ(-EINVAL, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_SECTION_REMOVE, &s));
	s.nr = 1;
	s.flags = 0x2;
	ASSERT_EQ(-EINVAL, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_SECTION_REMOVE, &s));
	s.flags = 0;
	s.reserved = 1;
	ASSERT_EQ(-EINVAL, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_SECTION_REMOVE, &s));
	s.reserved = 0;
	ASSERT_EQ(-EBUSY, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_SECTION_ADD, &s));
	ASSERT_EQ(-EINVAL, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_RESET, &r));
	ASSERT_EQ(-EINVAL, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_BENCH, &b));
	b.count = 1;
	b.target = 2;
	ASSERT_EQ(-EINVAL, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_BENCH, &b));
	ASSERT_EQ(-EINVAL, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_KERNEL_HOLD, &h));
	ASSERT_EQ(-ENOTTY, bs_ioctl(self->fd, _IO(BUDDY_SPLIT_IOC_MAGIC, 0x7f), NULL));
	ASSERT_EQ(-EINVAL, knob_write("policy", "bogus"));
	ASSERT_EQ(-EINVAL, knob_write("mode", "buddy"));
	ASSERT_EQ(-EINVAL, knob_write("kreclaim_home", "user"));
	ASSERT_EQ(0, memhp_read_str(SYSFS "policy", buf, sizeof(buf)));
	ASSERT_STREQ("strict", buf);
	ASSERT_EQ(0, memhp_read_str(SYSFS "mode", buf, sizeof(buf)));
	ASSERT_STREQ("split", buf);
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_INFO, &i1));
	ASSERT_EQ(0, memcmp(&i0, &i1, sizeof(i0)));
}

/* Strict keeps pinned pages out of hotplug sections; fallback does not. */
TEST_F(bs, strict_then_fallback)
{
	unsigned int nr, busy = 0;
	int blocker;
	uint64_t pfn;

	/* The pinned section holds two top blocks. */
	ASSERT_EQ(0, balloc(self->fd, BUDDY_SPLIT_KERNEL_NONRECLAIMABLE, TOP, &pfn));
	ASSERT_EQ(0, balloc(self->fd, BUDDY_SPLIT_KERNEL_NONRECLAIMABLE, TOP, &pfn));
	ASSERT_EQ(-ENOMEM, balloc(self->fd, BUDDY_SPLIT_KERNEL_NONRECLAIMABLE, 0, &pfn));
	for (nr = 1; nr < NSEC; nr++)
		ASSERT_EQ(0, verdict(self->fd, nr, &blocker));
	ASSERT_EQ(-EBUSY, verdict(self->fd, 0, &blocker));
	ASSERT_EQ(BUDDY_SPLIT_KERNEL_NONRECLAIMABLE, blocker);
	ASSERT_EQ(0, knob_write("policy", "fallback"));
	ASSERT_EQ(0, balloc(self->fd, BUDDY_SPLIT_KERNEL_NONRECLAIMABLE, 0, &pfn));
	for (nr = 1; nr < NSEC; nr++) {
		if (verdict(self->fd, nr, &blocker) == -EBUSY) {
			ASSERT_EQ(BUDDY_SPLIT_KERNEL_NONRECLAIMABLE, blocker);
			busy++;
		}
	}
	ASSERT_EQ(1, busy);
}

/* Removal reclaims user pages; the section comes back with SECTION_ADD. */
TEST_F(bs, remove_reclaims_user_pages)
{
	struct buddy_split_section s = { .nr = 1 };
	struct buddy_split_info i;
	unsigned int nr;
	int blocker;
	uint64_t pfn;

	for (nr = 0; nr < 3 * SEC_PAGES / 8; nr++)
		ASSERT_EQ(0, balloc(self->fd, BUDDY_SPLIT_USER_RECLAIMABLE, 3, &pfn));
	ASSERT_EQ(0, balloc(self->fd, BUDDY_SPLIT_KERNEL_RECLAIMABLE, 0, &pfn));
	for (nr = 1; nr < NSEC; nr++)
		ASSERT_EQ(0, verdict(self->fd, nr, &blocker));
	ASSERT_EQ(-EBUSY, verdict(self->fd, 0, &blocker));
	ASSERT_EQ(BUDDY_SPLIT_KERNEL_RECLAIMABLE, blocker);
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_SECTION_REMOVE, &s));
	ASSERT_EQ(-1, s.blocker);
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_INFO, &i));
	ASSERT_EQ(NSEC - 1, i.nr_online);
	ASSERT_EQ(SEC_PAGES, i.reclaimed_pages);
	ASSERT_EQ(-ENOENT, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_SECTION_REMOVE, &s));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_CHECK, NULL));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_SECTION_ADD, &s));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_INFO, &i));
	ASSERT_EQ(NSEC, i.nr_online);
}

TEST_F(bs, workload_and_debugfs)
{
	struct buddy_split_workload w = {
		.seed = 3, .ops = 20000, .max_order = 3,
		.mix = { 70, 20, 10 }, .lifetime = { 1000, 1000, 1000 },
	};
	char buf[64];

	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_WORKLOAD, &w));
	ASSERT_GT(w.allocs[0], 0);
	ASSERT_GT(w.frees, 0);
	ASSERT_GE(NSEC * SEC_PAGES, w.live_pages[0] + w.live_pages[1] +
		  w.live_pages[2]);
	if (memhp_read_str(DEBUGFS "check", buf, sizeof(buf))) {
		TH_LOG("debugfs not mounted: check via ioctl only");
		return;
	}
	ASSERT_STREQ("ok", buf);
}

/* The same experiment in the bitmap baseline, switched through sysfs. */
TEST_F(bs, bitmap_mode)
{
	struct buddy_split_workload w = {
		.seed = 4, .ops = 5000, .max_order = 3,
		.mix = { 70, 20, 10 }, .lifetime = { 500, 500, 500 },
	};
	struct buddy_split_section s = { .nr = NSEC - 1 };
	struct buddy_split_info i;

	ASSERT_EQ(0, knob_write("mode", "bitmap"));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_INFO, &i));
	ASSERT_EQ(BUDDY_SPLIT_MODE_BITMAP, i.mode);
	ASSERT_GT(i.bitmap_bytes, 0);
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_WORKLOAD, &w));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_CHECK, NULL));
	ASSERT_EQ(0, knob_write("mode", "single"));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_SECTION_REMOVE, &s));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_SECTION_ADD, &s));
	ASSERT_EQ(0, knob_write("mode", "split"));
}

TEST_F(bs, bench_arena_and_kernel)
{
	struct buddy_split_bench b = { .count = 1000, .seed = 1 };

	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_BENCH, &b));
	ASSERT_EQ(1000, b.done);
	b.target = BUDDY_SPLIT_BENCH_KERNEL;
	b.order = 2;
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_BENCH, &b));
	ASSERT_EQ(1000, b.done);
}

TEST_F(bs, kernel_hold_release)
{
	struct buddy_split_hold h = {
		.type = BUDDY_SPLIT_KERNEL_NONRECLAIMABLE, .pages = 256,
	};

	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_KERNEL_HOLD, &h));
	ASSERT_EQ(256, h.pages);
	h.type = BUDDY_SPLIT_KERNEL_RECLAIMABLE;
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_KERNEL_HOLD, &h));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_KERNEL_RELEASE, NULL));
}

/* A fatal signal stops a long WORKLOAD; the arena stays consistent. */
TEST_F(bs, workload_killed_midway)
{
	struct buddy_split_workload w = {
		.seed = 5, .ops = 100000000, .max_order = 3,
		.mix = { 70, 20, 10 }, .lifetime = { 1000, 1000, 1000 },
	};
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		ioctl(self->fd, BUDDY_SPLIT_IOC_WORKLOAD, &w);
		_exit(0);
	}
	sleep(1);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_CHECK, NULL));
}

/* Held kernel pages left behind: unloading the module returns them. */
TEST_F(bs, kernel_hold_left_for_unload)
{
	struct buddy_split_hold h = {
		.type = BUDDY_SPLIT_KERNEL_NONRECLAIMABLE, .pages = 128,
	};

	ASSERT_EQ(0, bs_ioctl(self->fd, BUDDY_SPLIT_IOC_KERNEL_HOLD, &h));
	ASSERT_EQ(128, h.pages);
}

MEMHP_SELFTEST_MODULE("buddy_split", "mm/buddy_split.ko", DEV, PARAMS);

TEST_HARNESS_MAIN
