// SPDX-License-Identifier: GPL-2.0
/*
 * memhp-budget: 30
 *
 * Hostile use of the modules' mappings: what the rest of the
 * kernel can do to a /dev/migrate_test mapping. Every operation runs in a
 * child under alarm(): a call that does not return within its bound
 * (10 s unless said otherwise; 20 s for the races) is killed (SIGALRM's
 * default action is fatal, which the kernel turns into a group kill like
 * SIGKILL) and the case fails with "did not return within N s". The
 * harness TIMEOUT of each test is the outer bound.
 *
 * Only migrate_test maps memory: buddy_split has no mmap (its arena is
 * reached through ioctls and debugfs only: mm/buddy_split_main.c has no
 * .mmap file operation), so it is covered by hostile_use.sh (unload and
 * readers), not here.
 *
 * Expected (the mapping is VM_PFNMAP, pages inserted with vmf_insert_pfn):
 *   GUP of any kind fails with EFAULT: io_uring IORING_REGISTER_BUFFERS
 *   (FOLL_LONGTERM), O_DIRECT read()/write() on a loop device, vmsplice(),
 *   process_vm_readv/writev with the *remote* iov in the mapping.
 *   Copies work, data intact: buffered read()/write(), process_vm_readv/
 *   writev with the *local* iov in the mapping (the local side is a
 *   copy_to/from_user, no GUP: mm/process_vm_access.c pins the remote
 *   pages only).
 *   fork(): the child shares the pages, also across a MIGRATE.
 *   mremap(): a move works and MIGRATE works at the new address; growing
 *   fails with EFAULT (VM_DONTEXPAND | VM_PFNMAP, mm/mremap.c).
 *   madvise(MADV_PAGEOUT): EINVAL (can_madv_lru_vma()). MADV_DONTNEED: in
 *   6.1, madvise_dontneed_free_valid_vma() refuses VM_PFNMAP with EINVAL;
 *   the test takes the expected result from the VMA's VmFlags (smaps "pf":
 *   EINVAL; otherwise 0, and the data stays since the pages are the
 *   driver's and are mapped again on the next fault).
 *   /proc/self/mem (ptrace's access_remote_vm()): works, through the
 *   driver's vm_ops->access. A process-shared futex in the mapping:
 *   EFAULT (get_futex_key() uses GUP).
 *   munmap/MADV_DONTNEED racing a MIGRATE loop: all return, the data of
 *   the pages still mapped intact.
 *   MIGRATE with failed_addrs inside its own mapping, and every ioctl's
 *   argument struct inside the mapping: correct results.
 * Two cases are regression tests for hangs a GUP-able mapping allowed: a
 * long-term pin of mapped pages on a ZONE_MOVABLE DIMM, and MIGRATE
 * writing failed_addrs into the pages of its own batch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/io_uring.h>
#include <linux/migrate_test.h>

#include "kselftest_harness.h"
#include "memhp_words.h"
#include "memhp_file.h"
#include "memhp_blocks.h"
#include "memhp_module.h"

#define DEV		"/dev/migrate_test"
#define MEMSYS		"/sys/devices/system/memory"
#define NO_PFN		(~0ULL)
#define BOUND		10	/* s: a single operation */
#define RACE_BOUND	20	/* s: a race of two threads */
#define NPAGES		64

static size_t psz;

/* Object x operation pairs that ran / returned within their bound. */
struct hu_counts {
	int ran;
	int in_time;
};

static struct hu_counts *counts;
static pid_t main_pid;

/*
 * The kselftest runner leaves its own descriptors open in the test (3:
 * its status pipe, 4: the log, a reopened /dev/stdout). A child stuck for
 * good would keep them, and a console port opens only once: the next
 * test's runner could not open its log (EBUSY). Close them.
 */
static void __attribute__((constructor)) hu_close_inherited(void)
{
	int fd;

	for (fd = 3; fd < 64; fd++)
		close(fd);
}

static void __attribute__((constructor)) hu_counts_init(void)
{
	counts = mmap(NULL, sizeof(*counts), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (counts == MAP_FAILED)
		counts = NULL;
	main_pid = getpid();
}

static void __attribute__((destructor)) hu_counts_print(void)
{
	if (counts && getpid() == main_pid)
		printf("# figures: %d object x operation pairs ran (migrate_test), %d in time\n",
		       counts->ran, counts->in_time);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Codes a bounded child exits with besides an errno (errnos are < 134). */
#define HU_OK		0
#define HU_DATA		200	/* data not intact */
#define HU_RESULT	201	/* wrong result (counters, addresses) */
#define HU_UNEXPECTED	202	/* succeeded where an error was expected */
#define HU_TIMEOUT	(-1)	/* did not return within the bound */
#define HU_DIED		(-2)

/*
 * Runs fn(arg) in a child under alarm(secs); returns what fn returned
 * (0..255), HU_TIMEOUT, or HU_DIED. Counts one object x operation pair.
 */
static int run_bounded(const char *what, int (*fn)(void *), void *arg,
		       unsigned int secs)
{
	double t0 = now();
	char line[512];
	pid_t pid, got;
	FILE *out;
	int status;
	size_t n;

	if (counts)
		__atomic_add_fetch(&counts->ran, 1, __ATOMIC_RELAXED);
	/*
	 * The child writes to a file, copied out once it ended: a child
	 * stuck for good must not hold the runner's output pipe open (the
	 * runner would wait for its end forever).
	 */
	out = tmpfile();
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return HU_DIED;
	if (!pid) {
		if (out) {
			dup2(fileno(out), STDOUT_FILENO);
			dup2(fileno(out), STDERR_FILENO);
		}
		alarm(secs);
		_exit(fn(arg) & 0xff);
	}
	/* Up to the bound (the child's alarm) and 5 s more, then SIGKILL. */
	while (!(got = waitpid(pid, &status, WNOHANG)) && now() - t0 < secs + 5)
		usleep(10000);
	if (!got) {
		kill(pid, SIGKILL);
		while (!(got = waitpid(pid, &status, WNOHANG)) && now() - t0 < secs + 10)
			usleep(10000);
	}
	if (out) {
		fflush(out);
		rewind(out);
		while ((n = fread(line, 1, sizeof(line), out)) > 0)
			fwrite(line, 1, n, stdout);
		fclose(out);
	}
	if (got <= 0) {
		ksft_print_msg("%s: not returned within %u s, alive at %.1f s despite SIGKILL\n",
			       what, secs, now() - t0);
		return HU_TIMEOUT;
	}
	if (WIFSIGNALED(status)) {
		ksft_print_msg("%s: %s after %.1f s (bound %u s)\n", what,
			       WTERMSIG(status) == SIGALRM ?
			       "did not return, killed" : strsignal(WTERMSIG(status)),
			       now() - t0, secs);
		return WTERMSIG(status) == SIGALRM ? HU_TIMEOUT : HU_DIED;
	}
	if (counts)
		__atomic_add_fetch(&counts->in_time, 1, __ATOMIC_RELAXED);
	ksft_print_msg("%s: returned in %.2f s, result %d%s%s\n", what,
		       now() - t0, WEXITSTATUS(status),
		       WEXITSTATUS(status) && WEXITSTATUS(status) < 134 ? " " : "",
		       WEXITSTATUS(status) && WEXITSTATUS(status) < 134 ?
		       strerror(WEXITSTATUS(status)) : "");
	return WEXITSTATUS(status);
}

/* The VmFlags of the mapping that contains @addr, from /proc/self/smaps. */
static int vma_flags(void *addr, char *out, size_t size)
{
	unsigned long lo, hi, a = (unsigned long)addr;
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;

	out[0] = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') &&
		    line[0] != 'V') {
			in = a >= lo && a < hi;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			size_t n = strnlen(line + 8, size - 1);

			memcpy(out, line + 8, n);
			out[n] = 0;
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -ENOENT;
}

#define SEPS	"\t\n "

static bool has_vmflag(void *addr, const char *flag)
{
	char flags[256], *tok, *save;

	if (vma_flags(addr, flags, sizeof(flags)))
		return false;
	for (tok = strtok_r(flags, SEPS, &save); tok;
	     tok = strtok_r(NULL, SEPS, &save))
		if (!strcmp(tok, flag))
			return true;
	return false;
}

FIXTURE(hu)
{
	int fd;
	size_t len;
	uint8_t *buf;
};

FIXTURE_SETUP(hu)
{
	psz = sysconf(_SC_PAGESIZE);
	self->fd = open(DEV, O_RDWR);
	if (self->fd < 0)
		SKIP(return, DEV " missing: migrate_test.ko not loaded");
	self->len = NPAGES * psz;
	self->buf = mmap(NULL, self->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, 0);
	ASSERT_NE(self->buf, MAP_FAILED);
	fill(self->buf, self->len, 1);
}

FIXTURE_TEARDOWN(hu)
{
	if (self->fd < 0)
		return;
	munmap(self->buf, self->len);
	close(self->fd);
}

/* Shared state of one bounded operation (the child works on a copy). */
struct op {
	int fd;
	uint8_t *buf;
	size_t len;
	uint8_t *aux;		/* anonymous, page aligned, len bytes */
	int dfd;		/* O_DIRECT device, or a file */
	int n;
	uint64_t seed;
	bool pfnmap;
};

static uint8_t *anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The contract: the mapping is VM_PFNMAP (smaps VmFlags "pf"). */
TEST_F(hu, mapping_is_pfnmap)
{
	char flags[256];

	ASSERT_EQ(vma_flags(self->buf, flags, sizeof(flags)), 0);
	ksft_print_msg("VmFlags:%s", flags);
	EXPECT_TRUE(has_vmflag(self->buf, "pf"));
}

/* --- GUP: io_uring fixed buffers (FOLL_LONGTERM) --------------------------- */

static int uring_register(void *addr, size_t len)
{
	struct io_uring_params p;
	struct iovec iov = { .iov_base = addr, .iov_len = len };
	int ring, ret = 0;

	memset(&p, 0, sizeof(p));
	ring = syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0)
		return errno;
	if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS,
		    &iov, 1))
		ret = errno;
	else
		syscall(__NR_io_uring_register, ring, IORING_UNREGISTER_BUFFERS,
			NULL, 0);
	close(ring);
	return ret;
}

static int op_uring_anon(void *arg)
{
	struct op *o = arg;

	return uring_register(o->aux, 16 * psz);
}

static int op_uring_map(void *arg)
{
	struct op *o = arg;
	int ret = uring_register(o->buf, 16 * psz);

	if (!ret)
		return HU_UNEXPECTED;
	if (check(o->buf, o->len, o->seed) != -1)
		return HU_DATA;
	return ret;
}

TEST_F_TIMEOUT(hu, io_uring_register_buffers_efault, 60)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };
	int r;

	o.aux = anon(16 * psz);
	ASSERT_NE(o.aux, NULL);
	memset(o.aux, 1, 16 * psz);
	r = run_bounded("io_uring register anonymous (control)", op_uring_anon,
			&o, BOUND);
	if (r)
		SKIP(return, "io_uring unavailable: %s", strerror(r));
	EXPECT_EQ(run_bounded("io_uring register mapping", op_uring_map, &o,
			      BOUND), EFAULT);
	munmap(o.aux, 16 * psz);
}

/*
 * 16 touched pages of the mapping on a 1 GiB ZONE_MOVABLE DIMM,
 * registered as an io_uring fixed buffer (FOLL_LONGTERM). Were the pages
 * GUP-able, the pin would retry migrating them out of ZONE_MOVABLE with
 * -EAGAIN without end; the mapping is VM_PFNMAP, so the pin must fail
 * with EFAULT within 10 s.
 */
#define R2_DIMM		1073741824ULL	/* 1 GiB */
#define R2_PAGES	16
#define WAIT_DELETED \
	"x-memhp-wait-event event=DEVICE_DELETED 'match={\"device\":\"hu-dimm0\"}' timeout=30"

TEST_F_TIMEOUT(hu, io_uring_pin_zone_movable_dimm_efault, 300)
{
	struct migrate_test_migrate m;
	long before[1024], after[1024], added[64];
	uint64_t bs, bpfns, pfns[R2_PAGES];
	struct migrate_test_query q;
	char s[64], policy[32] = "offline";
	int nb, na = 0, nn = 0, i, j, tries, r;
	struct op o = { .fd = self->fd, .buf = self->buf, .len = R2_PAGES * psz,
			.seed = 2 };

	if (access("/dev/virtio-ports/org.memhp.qmp", F_OK))
		SKIP(return, "not in a memhp-vm guest (no QMP relay)");
	ASSERT_EQ(memhp_read_str(MEMSYS "/block_size_bytes", s, sizeof(s)), 0);
	bs = strtoull(s, NULL, 16);
	bpfns = bs / psz;
	memhp_read_str(MEMSYS "/auto_online_blocks", policy, sizeof(policy));
	ASSERT_EQ(memhp_write_str(MEMSYS "/auto_online_blocks", "offline"), 0);
	nb = list_blocks(before, 1024);
	ASSERT_EQ(run_qmp("object-add qom-type=memory-backend-ram id=hu-mem0 size=1073741824"), 0);
	ASSERT_EQ(run_qmp("device_add driver=pc-dimm id=hu-dimm0 memdev=hu-mem0"), 0);
	for (tries = 0; tries < 150; tries++) {
		na = list_blocks(after, 1024);
		if ((uint64_t)(na - nb) == R2_DIMM / bs)
			break;
		usleep(200000);
	}
	for (i = 0; i < na; i++) {
		for (j = 0; j < nb && before[j] != after[i]; j++)
			;
		if (j == nb && nn < 64)
			added[nn++] = after[i];
	}
	memhp_write_str(MEMSYS "/auto_online_blocks", policy);
	ASSERT_EQ((uint64_t)nn, R2_DIMM / bs);
	for (i = 0; i < nn; i++)
		ASSERT_EQ(block_set_state(added[i], "online_movable"), 0);

	/* mmap and touch 16 pages, and make sure they sit on the DIMM. */
	fill(self->buf, R2_PAGES * psz, 2);
	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)self->buf;
	m.len = R2_PAGES * psz;
	m.target = MIGRATE_TEST_TARGET_RANGE;
	m.start_pfn = added[0] * bpfns;
	m.end_pfn = (added[nn - 1] + 1) * bpfns;
	ASSERT_EQ(ioctl(self->fd, MIGRATE_TEST_IOC_MIGRATE, &m), 0);
	memset(&q, 0, sizeof(q));
	q.addr = (uintptr_t)self->buf;
	q.len = R2_PAGES * psz;
	q.pfns = (uintptr_t)pfns;
	ASSERT_EQ(ioctl(self->fd, MIGRATE_TEST_IOC_QUERY, &q), 0);
	ASSERT_EQ(q.populated, R2_PAGES);
	for (i = 0; i < R2_PAGES; i++)
		ASSERT_TRUE(pfns[i] >= m.start_pfn && pfns[i] < m.end_pfn);
	ksft_print_msg("16 pages on the ZONE_MOVABLE DIMM (pfns %#llx..), blocks %ld-%ld\n",
		       (unsigned long long)pfns[0], added[0], added[nn - 1]);

	r = run_bounded("IORING_REGISTER_BUFFERS on ZONE_MOVABLE pages",
			op_uring_map, &o, BOUND);
	EXPECT_EQ(r, EFAULT);
	EXPECT_EQ(check(self->buf, R2_PAGES * psz, 2), -1);

	/* Best effort: take the DIMM out again (the pages move off it). */
	for (i = nn - 1; i >= 0; i--)
		block_set_state(added[i], "offline");
	run_qmp("device_del id=hu-dimm0");
	run_qmp(WAIT_DELETED);
	run_qmp("object-del id=hu-mem0");
	EXPECT_EQ(check(self->buf, R2_PAGES * psz, 2), -1);
}

/* --- GUP: O_DIRECT on a loop device ---------------------------------------- */

static char loopdev[64];
static char loopfile[64];

/* An O_DIRECT fd of a 1 MiB loop device (a block device always pins). */
static int odirect_open(void)
{
	char cmd[160];
	FILE *p;
	int fd;

	snprintf(loopfile, sizeof(loopfile), "/tmp/hostile_use.loop.XXXXXX");
	fd = mkstemp(loopfile);
	if (fd < 0)
		return -1;
	if (ftruncate(fd, 1 << 20)) {
		close(fd);
		return -1;
	}
	close(fd);
	/* /dev/loop-control exists only once the loop module is loaded. */
	snprintf(cmd, sizeof(cmd),
		 "modprobe -q loop; losetup -f --show %s 2>/dev/null", loopfile);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (!fgets(loopdev, sizeof(loopdev), p))
		loopdev[0] = 0;
	pclose(p);
	loopdev[strcspn(loopdev, "\n")] = 0;
	if (!loopdev[0])
		return -1;
	return open(loopdev, O_RDWR | O_DIRECT);
}

static void odirect_close(int fd)
{
	char cmd[160];

	if (fd >= 0)
		close(fd);
	if (loopdev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d %s", loopdev);
		if (system(cmd))
			ksft_print_msg("losetup -d %s failed\n", loopdev);
	}
	if (loopfile[0])
		unlink(loopfile);
}

static int op_odirect_anon(void *arg)
{
	struct op *o = arg;

	fill(o->aux, 4 * psz, 9);
	if (pwrite(o->dfd, o->aux, 4 * psz, 0) != (ssize_t)(4 * psz))
		return errno;
	memset(o->aux, 0, 4 * psz);
	if (pread(o->dfd, o->aux, 4 * psz, 0) != (ssize_t)(4 * psz))
		return errno;
	return check(o->aux, 4 * psz, 9) == -1 ? HU_OK : HU_DATA;
}

static int op_odirect_read(void *arg)
{
	struct op *o = arg;
	ssize_t n = pread(o->dfd, o->buf, 4 * psz, 0);
	int err = errno;

	if (n >= 0)
		return HU_UNEXPECTED;
	if (check(o->buf, o->len, o->seed) != -1)
		return HU_DATA;
	return err;
}

static int op_odirect_write(void *arg)
{
	struct op *o = arg;
	ssize_t n = pwrite(o->dfd, o->buf, 4 * psz, 0);
	int err = errno;

	if (n >= 0)
		return HU_UNEXPECTED;
	if (check(o->buf, o->len, o->seed) != -1)
		return HU_DATA;
	return err;
}

TEST_F_TIMEOUT(hu, odirect_read_write_efault, 60)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	o.aux = anon(4 * psz);
	ASSERT_NE(o.aux, NULL);
	o.dfd = odirect_open();
	if (o.dfd < 0) {
		odirect_close(o.dfd);
		SKIP(return, "no loop device for O_DIRECT (losetup)");
	}
	ASSERT_EQ(run_bounded("O_DIRECT write+read, anonymous buffer (control)",
			      op_odirect_anon, &o, BOUND), 0);
	EXPECT_EQ(run_bounded("O_DIRECT read() into the mapping",
			      op_odirect_read, &o, BOUND), EFAULT);
	EXPECT_EQ(run_bounded("O_DIRECT write() from the mapping",
			      op_odirect_write, &o, BOUND), EFAULT);
	odirect_close(o.dfd);
	munmap(o.aux, 4 * psz);
}

/* --- copies: buffered read()/write() --------------------------------------- */

static int op_buffered(void *arg)
{
	struct op *o = arg;
	char path[] = "/tmp/hostile_use.buf.XXXXXX";
	int fd = mkstemp(path), ret = HU_OK;

	if (fd < 0)
		return errno;
	unlink(path);
	/* write() from the mapping, read() back into another part of it. */
	if (pwrite(fd, o->buf, 8 * psz, 0) != (ssize_t)(8 * psz) ||
	    pread(fd, o->buf + 16 * psz, 8 * psz, 0) != (ssize_t)(8 * psz))
		ret = errno ? errno : EIO;
	else if (check(o->buf + 16 * psz, 8 * psz, o->seed) != -1 ||
		 check(o->buf, 8 * psz, o->seed) != -1)
		ret = HU_DATA;
	close(fd);
	return ret;
}

TEST_F(hu, buffered_read_write_copy)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	EXPECT_EQ(run_bounded("buffered write() from / read() into the mapping",
			      op_buffered, &o, BOUND), 0);
}

/* --- ptrace's path: /proc/self/mem (access_remote_vm -> vm_ops->access) ----- */

/*
 * GUP refuses the mapping, so /proc/PID/mem, ptrace(PEEKDATA) and gdb go
 * through the driver's vm_ops->access: reads see the data, writes land.
 */
static int op_proc_mem(void *arg)
{
	struct op *o = arg;
	uint64_t w, want = word_of(o->seed, 3), mark = 0x5eed5eed5eed5eedULL;
	int fd = open("/proc/self/mem", O_RDWR), ret = HU_OK;

	if (fd < 0)
		return errno;
	if (pread(fd, &w, 8, (off_t)(uintptr_t)(o->buf + 24)) != 8)
		ret = errno ? errno : EIO;
	else if (w != want)
		ret = HU_DATA;
	else if (pwrite(fd, &mark, 8, (off_t)(uintptr_t)(o->buf + psz + 8)) != 8)
		ret = errno ? errno : EIO;
	else if (((uint64_t *)(o->buf + psz))[1] != mark)
		ret = HU_DATA;
	close(fd);
	return ret;
}

TEST_F(hu, proc_self_mem_read_write)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	EXPECT_EQ(run_bounded("/proc/self/mem read and write of the mapping",
			      op_proc_mem, &o, BOUND), 0);
}

/* --- GUP: a process-shared futex in the mapping -------------------------------- */

/* get_futex_key() pins the page with GUP: EFAULT, at once. */
static int op_futex(void *arg)
{
	struct op *o = arg;
	uint32_t *uaddr = (uint32_t *)(o->buf + 2 * psz);

	if (syscall(SYS_futex, uaddr, 1 /* FUTEX_WAKE */, 1, NULL, NULL, 0) >= 0)
		return HU_UNEXPECTED;
	return errno;
}

TEST_F(hu, shared_futex_efault)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len };

	EXPECT_EQ(run_bounded("FUTEX_WAKE (process-shared) in the mapping",
			      op_futex, &o, BOUND), EFAULT);
}

/* --- GUP: vmsplice ----------------------------------------------------------- */

static int op_vmsplice(void *arg)
{
	struct op *o = arg;
	struct iovec iov = { .iov_base = o->buf, .iov_len = 4 * psz };
	int p[2], err;
	ssize_t n;

	if (pipe(p))
		return errno;
	n = vmsplice(p[1], &iov, 1, 0);
	err = errno;
	close(p[0]);
	close(p[1]);
	if (n >= 0)
		return HU_UNEXPECTED;
	return check(o->buf, o->len, o->seed) == -1 ? err : HU_DATA;
}

TEST_F(hu, vmsplice_efault)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	EXPECT_EQ(run_bounded("vmsplice() of the mapping into a pipe",
			      op_vmsplice, &o, BOUND), EFAULT);
}

/* --- process_vm_readv/writev ---------------------------------------------- */

/* Remote (this process's own mm: pinned with GUP) iov in the mapping. */
static int op_pvm_remote(void *arg)
{
	struct op *o = arg;
	struct iovec local = { .iov_base = o->aux, .iov_len = 4 * psz };
	struct iovec remote = { .iov_base = o->buf, .iov_len = 4 * psz };
	ssize_t n;
	int err;

	if (o->n)
		n = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
	else
		n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	err = errno;
	if (n >= 0)
		return HU_UNEXPECTED;
	return check(o->buf, o->len, o->seed) == -1 ? err : HU_DATA;
}

/* Local iov (a copy_to/from_user) in the mapping: works. */
static int op_pvm_local(void *arg)
{
	struct op *o = arg;
	struct iovec local = { .iov_base = o->buf + 32 * psz, .iov_len = 4 * psz };
	struct iovec remote = { .iov_base = o->aux, .iov_len = 4 * psz };
	ssize_t n;

	if (o->n) {
		fill(o->buf + 32 * psz, 4 * psz, 33);
		n = process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
		if (n != (ssize_t)(4 * psz))
			return n < 0 ? errno : EIO;
		return check(o->aux, 4 * psz, 33) == -1 ? HU_OK : HU_DATA;
	}
	fill(o->aux, 4 * psz, 34);
	n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n != (ssize_t)(4 * psz))
		return n < 0 ? errno : EIO;
	return check(o->buf + 32 * psz, 4 * psz, 34) == -1 ? HU_OK : HU_DATA;
}

TEST_F(hu, process_vm_readv_writev)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	o.aux = anon(4 * psz);
	ASSERT_NE(o.aux, NULL);
	memset(o.aux, 7, 4 * psz);
	o.n = 0;
	EXPECT_EQ(run_bounded("process_vm_readv, remote iov in the mapping",
			      op_pvm_remote, &o, BOUND), EFAULT);
	o.n = 1;
	EXPECT_EQ(run_bounded("process_vm_writev, remote iov in the mapping",
			      op_pvm_remote, &o, BOUND), EFAULT);
	o.n = 0;
	EXPECT_EQ(run_bounded("process_vm_readv, local iov in the mapping (copy)",
			      op_pvm_local, &o, BOUND), 0);
	o.n = 1;
	EXPECT_EQ(run_bounded("process_vm_writev, local iov in the mapping (copy)",
			      op_pvm_local, &o, BOUND), 0);
	munmap(o.aux, 4 * psz);
}

/* --- fork ---------------------------------------------------------------- */

static int migrate_all(int fd, void *addr, size_t len,
		       struct migrate_test_migrate *m)
{
	memset(m, 0, sizeof(*m));
	m->addr = (uintptr_t)addr;
	m->len = len;
	m->target = MIGRATE_TEST_TARGET_NODE;
	m->node = -1;
	m->flags = MIGRATE_TEST_FORCE;
	return ioctl(fd, MIGRATE_TEST_IOC_MIGRATE, m) ? errno : 0;
}

/*
 * o->n == 0: the child reads the parent's data and writes seed 5; with
 * o->n == 1 a MIGRATE of every page runs between fork and the child's
 * access.
 */
static int op_fork(void *arg)
{
	struct op *o = arg;
	struct migrate_test_migrate m;
	int go[2], status, ret;
	char c = 0;
	pid_t pid;

	if (pipe(go))
		return errno;
	pid = fork();
	if (pid < 0)
		return errno;
	if (!pid) {
		if (read(go[0], &c, 1) != 1)
			_exit(EIO);
		if (check(o->buf, o->len, o->seed) != -1)
			_exit(HU_DATA);
		fill(o->buf, 8 * psz, 5);
		_exit(HU_OK);
	}
	if (o->n) {
		ret = migrate_all(o->fd, o->buf, o->len, &m);
		if (ret || m.migrated != o->len / psz)
			ksft_print_msg("MIGRATE between fork and access: %s, %llu migrated\n",
				       strerror(ret), (unsigned long long)m.migrated);
		if (ret)
			return ret;
		if (m.migrated != o->len / psz)
			return HU_RESULT;
	}
	if (write(go[1], &c, 1) != 1)
		return errno;
	if (waitpid(pid, &status, 0) < 0)
		return errno;
	if (!WIFEXITED(status))
		return HU_RESULT;
	if (WEXITSTATUS(status))
		return WEXITSTATUS(status);
	if (check(o->buf, 8 * psz, 5) != -1)
		return HU_DATA;
	return check(o->buf + 8 * psz, o->len - 8 * psz, o->seed + 8 * psz / 8) == -1 ?
		HU_OK : HU_DATA;
}

TEST_F(hu, fork_child_shares_pages)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	EXPECT_EQ(run_bounded("fork: child reads and writes the shared pages",
			      op_fork, &o, BOUND), 0);
	fill(self->buf, self->len, 1);
	o.n = 1;
	EXPECT_EQ(run_bounded("fork: MIGRATE between fork and the child's access",
			      op_fork, &o, BOUND), 0);
}

/* --- mremap ---------------------------------------------------------------- */

static int op_mremap_move(void *arg)
{
	struct op *o = arg;
	struct migrate_test_migrate m;
	void *dst, *p;
	int ret;

	/* A free range to move to. */
	dst = mmap(NULL, o->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dst == MAP_FAILED)
		return errno;
	p = mremap(o->buf, o->len, o->len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (p == MAP_FAILED)
		return errno;
	if (check(p, o->len, o->seed) != -1)
		return HU_DATA;
	ret = migrate_all(o->fd, p, o->len, &m);
	if (ret)
		return ret;
	if (m.migrated != o->len / psz || m.failed)
		return HU_RESULT;
	if (check(p, o->len, o->seed) != -1)
		return HU_DATA;
	/* The old address is unmapped: MIGRATE there fails. */
	if (!migrate_all(o->fd, o->buf, o->len, &m))
		return HU_UNEXPECTED;
	return HU_OK;
}

static int op_mremap_grow(void *arg)
{
	struct op *o = arg;
	void *p = mremap(o->buf, o->len, 2 * o->len, MREMAP_MAYMOVE);

	if (p != MAP_FAILED)
		return HU_UNEXPECTED;
	return check(o->buf, o->len, o->seed) == -1 ? errno : HU_DATA;
}

TEST_F(hu, mremap_move_then_migrate)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	EXPECT_EQ(run_bounded("mremap move, then MIGRATE at the new address",
			      op_mremap_move, &o, BOUND), 0);
}

TEST_F(hu, mremap_grow_efault)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	EXPECT_EQ(run_bounded("mremap growing the mapping", op_mremap_grow,
			      &o, BOUND), EFAULT);
}

/* --- madvise --------------------------------------------------------------- */

static int op_madvise(void *arg)
{
	struct op *o = arg;

	if (madvise(o->buf, o->len, o->n))
		return check(o->buf, o->len, o->seed) == -1 ? errno : HU_DATA;
	return check(o->buf, o->len, o->seed) == -1 ? HU_OK : HU_DATA;
}

TEST_F(hu, madvise_dontneed)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1, .n = MADV_DONTNEED };
	bool pf = has_vmflag(self->buf, "pf");

	/* 6.1 refuses MADV_DONTNEED on VM_PFNMAP (see the header). */
	ksft_print_msg("VM_PFNMAP %s: expecting %s\n", pf ? "set" : "clear",
		       pf ? "EINVAL" : "success, data intact");
	EXPECT_EQ(run_bounded("madvise(MADV_DONTNEED)", op_madvise, &o, BOUND),
		  pf ? EINVAL : 0);
}

TEST_F(hu, madvise_pageout_einval)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1, .n = MADV_PAGEOUT };

	EXPECT_EQ(run_bounded("madvise(MADV_PAGEOUT)", op_madvise, &o, BOUND),
		  EINVAL);
}

/* --- munmap / MADV_DONTNEED racing a MIGRATE loop ---------------------------- */

struct race {
	struct op *o;
	int stop;		/* __atomic */
	long loops, errors;
};

static void *migrate_loop(void *arg)
{
	struct race *r = arg;
	struct migrate_test_migrate m;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		if (migrate_all(r->o->fd, r->o->buf, r->o->len, &m))
			r->errors++;
		r->loops++;
	}
	return NULL;
}

/* o->n == 0: munmap the upper half; 1: MADV_DONTNEED it, 100 times. */
static int op_race(void *arg)
{
	struct op *o = arg;
	struct race r = { .o = o };
	size_t half = o->len / 2;
	pthread_t t;
	int i, bad;

	bad = pthread_create(&t, NULL, migrate_loop, &r);
	if (bad)
		return bad;
	usleep(200000);
	if (!o->n) {
		if (munmap(o->buf + half, half))
			bad = errno;
	} else {
		for (i = 0; i < 100; i++)
			if (madvise(o->buf + half, half, MADV_DONTNEED) &&
			    !(o->pfnmap && errno == EINVAL))
				bad = errno;
	}
	usleep(200000);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	ksft_print_msg("%ld MIGRATE calls, %ld failed, during the %s\n",
		       r.loops, r.errors, o->n ? "MADV_DONTNEEDs" : "munmap");
	if (bad)
		return bad;
	if (check(o->buf, half, o->seed) != -1)
		return HU_DATA;
	if (o->n && check(o->buf + half, half, o->seed + half / 8) != -1)
		return HU_DATA;
	return r.loops ? HU_OK : HU_RESULT;
}

TEST_F_TIMEOUT(hu, munmap_races_migrate, 60)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	EXPECT_EQ(run_bounded("munmap racing a MIGRATE loop", op_race, &o,
			      RACE_BOUND), 0);
}

TEST_F_TIMEOUT(hu, madvise_dontneed_races_migrate, 60)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1, .n = 1 };

	o.pfnmap = has_vmflag(self->buf, "pf");
	EXPECT_EQ(run_bounded("MADV_DONTNEED racing a MIGRATE loop", op_race,
			      &o, RACE_BOUND), 0);
}

/* --- ioctl arguments inside the mapping -------------------------------------- */

static void inject(int fd, void *addr, size_t len, unsigned int kind)
{
	struct migrate_test_inject in;

	memset(&in, 0, sizeof(in));
	in.addr = (uintptr_t)addr;
	in.len = len;
	in.kind = kind;
	ioctl(fd, MIGRATE_TEST_IOC_INJECT, &in);
}

/*
 * failed_addrs inside the mapping: INJECT ALLOC_FAIL on pages 0-1, MIGRATE
 * pages 0-1 (FORCE, batch 2) with failed_addrs at page 1 of the same
 * mapping (o->n = 1), or at a page outside the batch (o->n = 5): both
 * pages fail, their addresses are written there, the rest is intact.
 */
static int op_failed_addrs(void *arg)
{
	struct op *o = arg;
	struct migrate_test_migrate m;
	uint64_t *out = (uint64_t *)(o->buf + o->n * psz);
	struct migrate_test_inject in;
	int ret;

	memset(&in, 0, sizeof(in));
	in.addr = (uintptr_t)o->buf;
	in.len = 2 * psz;
	in.kind = MIGRATE_TEST_INJECT_ALLOC_FAIL;
	if (ioctl(o->fd, MIGRATE_TEST_IOC_INJECT, &in))
		return errno;
	if (in.count != 2)
		return HU_RESULT;
	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)o->buf;
	m.len = 2 * psz;
	m.target = MIGRATE_TEST_TARGET_NODE;
	m.node = -1;
	m.flags = MIGRATE_TEST_FORCE;
	m.batch = 2;
	m.failed_cap = 2;
	m.failed_addrs = (uintptr_t)out;
	ret = ioctl(o->fd, MIGRATE_TEST_IOC_MIGRATE, &m) ? errno : 0;
	inject(o->fd, o->buf, 2 * psz, MIGRATE_TEST_INJECT_CLEAR);
	if (ret)
		return ret;
	ksft_print_msg("migrated %llu failed %llu first_error %d; failed_addrs %#llx %#llx (%p)\n",
		       (unsigned long long)m.migrated, (unsigned long long)m.failed,
		       m.first_error, (unsigned long long)out[0],
		       (unsigned long long)out[1], o->buf);
	if (m.migrated || m.failed != 2 || m.first_error >= 0 ||
	    out[0] != (uintptr_t)o->buf || out[1] != (uintptr_t)(o->buf + psz))
		return HU_RESULT;
	/* Everything but the 16 bytes written is intact. */
	if (check(o->buf, o->n * psz, o->seed) != -1 ||
	    check(o->buf + o->n * psz + 16, o->len - o->n * psz - 16,
		  o->seed + (o->n * psz + 16) / 8) != -1)
		return HU_DATA;
	return HU_OK;
}

TEST_F_TIMEOUT(hu, failed_addrs_in_own_batch, 60)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1, .n = 1 };

	EXPECT_EQ(run_bounded("MIGRATE, failed_addrs at page 1 of its own batch",
			      op_failed_addrs, &o, BOUND), 0);
}

TEST_F_TIMEOUT(hu, failed_addrs_in_same_mapping, 60)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1, .n = 5 };

	EXPECT_EQ(run_bounded("MIGRATE, failed_addrs at page 5 of the mapping",
			      op_failed_addrs, &o, BOUND), 0);
}

/* MIGRATE's struct at page 2, migrating pages 0-3 (its own page too). */
static int op_migrate_arg(void *arg)
{
	struct op *o = arg;
	struct migrate_test_migrate *m = (void *)(o->buf + 2 * psz);
	size_t off = 2 * psz + sizeof(*m);

	memset(m, 0, sizeof(*m));
	m->addr = (uintptr_t)o->buf;
	m->len = 4 * psz;
	m->target = MIGRATE_TEST_TARGET_NODE;
	m->node = -1;
	m->flags = MIGRATE_TEST_FORCE;
	if (ioctl(o->fd, MIGRATE_TEST_IOC_MIGRATE, m))
		return errno;
	ksft_print_msg("MIGRATE (struct in page 2): migrated %llu failed %llu skipped %llu\n",
		       (unsigned long long)m->migrated, (unsigned long long)m->failed,
		       (unsigned long long)m->skipped);
	if (m->migrated != 4 || m->failed || m->skipped)
		return HU_RESULT;
	if (check(o->buf, 2 * psz, o->seed) != -1 ||
	    check(o->buf + off, o->len - off, o->seed + off / 8) != -1)
		return HU_DATA;
	return HU_OK;
}

/* QUERY's struct at page 1, its pfns[] at page 2; compared with anon. */
static int op_query_arg(void *arg)
{
	struct op *o = arg;
	struct migrate_test_query *q = (void *)(o->buf + psz);
	uint64_t *pfns = (uint64_t *)(o->buf + 2 * psz);
	struct migrate_test_query aq;
	uint64_t apfns[8];
	int i;

	memset(&aq, 0, sizeof(aq));
	aq.addr = (uintptr_t)o->buf;
	aq.len = 8 * psz;
	aq.pfns = (uintptr_t)apfns;
	if (ioctl(o->fd, MIGRATE_TEST_IOC_QUERY, &aq))
		return errno;
	memset(q, 0, sizeof(*q));
	q->addr = (uintptr_t)o->buf;
	q->len = 8 * psz;
	q->pfns = (uintptr_t)pfns;
	if (ioctl(o->fd, MIGRATE_TEST_IOC_QUERY, q))
		return errno;
	if (q->populated != 8 || aq.populated != 8)
		return HU_RESULT;
	for (i = 0; i < 8; i++)
		if (pfns[i] != apfns[i] || pfns[i] == NO_PFN)
			return HU_RESULT;
	return check(o->buf, psz, o->seed) == -1 ? HU_OK : HU_DATA;
}

/*
 * INJECT's struct at page 1: ALLOC_FAIL on pages 0-3 (count 4), a MIGRATE
 * of them fails 4, CLEAR (struct in the mapping again), a MIGRATE moves 4.
 */
static int op_inject_arg(void *arg)
{
	struct op *o = arg;
	struct migrate_test_inject *in = (void *)(o->buf + psz);
	struct migrate_test_migrate m;
	int ret;

	memset(in, 0, sizeof(*in));
	in->addr = (uintptr_t)o->buf;
	in->len = 4 * psz;
	in->kind = MIGRATE_TEST_INJECT_ALLOC_FAIL;
	if (ioctl(o->fd, MIGRATE_TEST_IOC_INJECT, in))
		return errno;
	if (in->count != 4)
		return HU_RESULT;
	ret = migrate_all(o->fd, o->buf, 4 * psz, &m);
	memset(in, 0, sizeof(*in));
	in->addr = (uintptr_t)o->buf;
	in->len = 4 * psz;
	in->kind = MIGRATE_TEST_INJECT_CLEAR;
	if (ioctl(o->fd, MIGRATE_TEST_IOC_INJECT, in))
		return errno;
	ksft_print_msg("INJECT (struct in page 1): failed %llu while injected; CLEAR count %llu\n",
		       (unsigned long long)m.failed, (unsigned long long)in->count);
	if (ret)
		return ret;
	if (m.failed != 4 || in->count != 4)
		return HU_RESULT;
	ret = migrate_all(o->fd, o->buf, 4 * psz, &m);
	if (ret)
		return ret;
	return m.migrated == 4 && !m.failed ? HU_OK : HU_RESULT;
}

/* STATS's struct across the boundary of pages 3 and 4. */
static int op_stats_arg(void *arg)
{
	struct op *o = arg;
	struct migrate_test_stats *st, ast;

	st = (void *)(o->buf + 4 * psz - 192);
	memset(&ast, 0, sizeof(ast));
	if (ioctl(o->fd, MIGRATE_TEST_IOC_STATS, &ast))
		return errno;
	memset(st, 0, sizeof(*st));
	if (ioctl(o->fd, MIGRATE_TEST_IOC_STATS, st))
		return errno;
	ksft_print_msg("STATS (struct across pages 3-4): pages %llu (before %llu), faults %llu\n",
		       (unsigned long long)st->pages, (unsigned long long)ast.pages,
		       (unsigned long long)st->faults);
	/* This mapping's pages are alive; counters only grow. */
	if (st->pages < o->len / psz || st->faults < ast.faults ||
	    st->allocated < ast.allocated || st->migrated < ast.migrated)
		return HU_RESULT;
	return HU_OK;
}

TEST_F_TIMEOUT(hu, ioctl_args_in_mapping, 120)
{
	struct op o = { .fd = self->fd, .buf = self->buf, .len = self->len,
			.seed = 1 };

	EXPECT_EQ(run_bounded("MIGRATE, argument struct in a page it migrates",
			      op_migrate_arg, &o, BOUND), 0);
	EXPECT_EQ(run_bounded("QUERY, struct and pfns[] in the mapping",
			      op_query_arg, &o, BOUND), 0);
	EXPECT_EQ(run_bounded("INJECT, struct in the mapping", op_inject_arg,
			      &o, BOUND), 0);
	EXPECT_EQ(run_bounded("STATS, struct across two pages of the mapping",
			      op_stats_arg, &o, BOUND), 0);
}

MEMHP_SELFTEST_MODULE("migrate_test", "mm/migrate_test.ko", DEV, "");

TEST_HARNESS_MAIN
