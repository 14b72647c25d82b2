// SPDX-License-Identifier: GPL-2.0
/*
 * vmreq: one marked plug or unplug of 70-virtio-mem, for instruction
 * counting (make run, under TCG).
 *
 *   vmreq NAME WANT TIMEOUT_S REQUEST_JSON
 *
 * Begins the memhp-count phase NAME, sends REQUEST_JSON (a QMP command
 * object without "id") to the host through the memhp-vm relay port, and
 * waits until the state WANT names is reached; then ends the phase. WANT
 * is a comma-separated list of:
 *   KB        MemTotal is KB kB
 *   blocks=N  N memory blocks exist: memory added or removed offline,
 *             which MemTotal does not see, and the end of a virtio-mem
 *             unplug, whose driver takes the pages it evacuates out of
 *             MemTotal before it offlines and removes their block
 *   ram=B     the "System RAM" ranges of /proc/iomem add up to B bytes:
 *             the end of a removal, whose block devices go before the
 *             memory map and the direct map (arch_remove_memory()) and
 *             its resource after them
 * 80-scale uses it too. The wait blocks on the kernel's uevents (a memory
 * block's add, online, offline or remove) and reads the state when one
 * arrives, again every 10 ms for 200 ms after it (a block's sysfs
 * directory goes after its remove event, its memory after that), and
 * after a second of none (a sub-block change of MemTotal sends no
 * uevent), so the phase holds the kernel's plug or unplug and little of
 * the waiting: a shell polling MemTotal would add instructions in
 * proportion to the wall time. Exit 0 when the state was reached, 1 on a
 * QMP error or timeout, 2 on a usage or system error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "memhp_mark.h"

#define PORT "/dev/virtio-ports/org.memhp.qmp"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long memtotal_kb(void)
{
	char buf[256];
	long kb;
	int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "MemTotal: %ld", &kb) != 1)
		return -1;
	return kb;
}

/* The number of memory blocks (memoryN) in sysfs, or -1. */
static long memory_blocks(void)
{
	DIR *d = opendir("/sys/devices/system/memory");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "memory", 6) && e->d_name[6] >= '0' &&
		    e->d_name[6] <= '9')
			n++;
	closedir(d);
	return n;
}

/* The bytes of the "System RAM" ranges of /proc/iomem (any level), or -1. */
static long long system_ram(void)
{
	FILE *f = fopen("/proc/iomem", "re");
	unsigned long long lo, hi;
	long long sum = 0;
	char line[256];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, ": System RAM") &&
		    sscanf(line, " %llx-%llx", &lo, &hi) == 2 && hi >= lo)
			sum += hi - lo + 1;
	fclose(f);
	return sum ? sum : -1;
}

/* Send the request, read lines until the one with our id; 0 on "return". */
static int qmp(const char *request, double deadline)
{
	char id[32], msg[4096], buf[8192];
	size_t len = 0;
	int fd, ret = 1;

	snprintf(id, sizeof(id), "vmreq-%d", getpid());
	/* REQUEST_JSON is an object: put the id in before its closing brace. */
	len = strlen(request);
	while (len && request[len - 1] != '}')
		len--;
	if (!len || snprintf(msg, sizeof(msg), "%.*s, \"id\": \"%s\"}\n", (int)len - 1,
			     request, id) >= (int)sizeof(msg)) {
		fprintf(stderr, "vmreq: bad request '%s'\n", request);
		return 2;
	}
	/* The port has one opener at a time: wait for our turn. */
	while ((fd = open(PORT, O_RDWR | O_CLOEXEC)) < 0) {
		if (errno != EBUSY || now_s() > deadline) {
			perror("vmreq: " PORT);
			return 2;
		}
		usleep(50000);
	}
	if (write(fd, msg, strlen(msg)) != (ssize_t)strlen(msg)) {
		perror("vmreq: write");
		goto out;
	}
	len = 0;
	while (now_s() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char *nl;
		ssize_t n;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0) {
			usleep(50000);
			continue;
		}
		len += n;
		buf[len] = '\0';
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			if (strstr(buf, id)) {
				ret = strstr(buf, "\"return\"") ? 0 : 1;
				if (ret)
					fprintf(stderr, "vmreq: %s\n", buf);
				goto out;
			}
			len -= nl + 1 - buf;
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1)
			len = 0;	/* a line longer than any answer: drop it */
	}
	fprintf(stderr, "vmreq: no answer from the host relay\n");
out:
	close(fd);
	return ret;
}

struct want {
	long long kb;		/* -1: not asked */
	long long blocks;
	long long ram;
};

/* A decimal number of at least @min, all of [@s, @end); 0, or -1. */
static int number(const char *s, const char *end, long long min, long long *v)
{
	char *stop;

	if (s == end || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoll(s, &stop, 10);
	return errno || stop != end || *v < min ? -1 : 0;
}

/* Parse WANT (see the top of the file) into @w; 0, or -1. */
static int parse_want(const char *arg, struct want *w)
{
	w->kb = -1;
	w->blocks = -1;
	w->ram = -1;
	while (*arg) {
		const char *end = strchrnul(arg, ',');
		long long *field = &w->kb;

		if (!strncmp(arg, "blocks=", 7)) {
			field = &w->blocks;
			arg += 7;
		} else if (!strncmp(arg, "ram=", 4)) {
			field = &w->ram;
			arg += 4;
		}
		if (*field >= 0 || number(arg, end, 1, field))
			return -1;
		if (!*end)
			return 0;
		arg = end + 1;
		if (!*arg)
			return -1;
	}
	return -1;
}

/* Is the state as asked? */
static int reached(const struct want *w)
{
	return (w->kb < 0 || memtotal_kb() == w->kb) &&
	       (w->blocks < 0 || memory_blocks() == w->blocks) &&
	       (w->ram < 0 || system_ram() == w->ram);
}

int main(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	double deadline, recheck_until = 0;
	char *end, ev[8192];
	struct want w;
	long timeout;
	int sk, ret;

	if (argc != 5) {
		fprintf(stderr, "usage: vmreq NAME WANT TIMEOUT_S REQUEST_JSON\n");
		return 2;
	}
	timeout = strtol(argv[3], &end, 10);
	if (parse_want(argv[2], &w) || timeout <= 0 || *end || end == argv[3]) {
		fputs("vmreq: bad WANT (KB,blocks=N,ram=B, each once) or TIMEOUT_S\n", stderr);
		return 2;
	}
	/* Listening before the request: no uevent of it can be missed. */
	sk = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	if (sk < 0 || bind(sk, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("vmreq: uevent socket");
		return 2;
	}
	deadline = now_s() + timeout;
	memhp_mark(MEMHP_MARK_BEGIN, argv[1]);
	ret = qmp(argv[4], deadline);
	while (!ret && !reached(&w)) {
		struct pollfd p = { .fd = sk, .events = POLLIN };
		double now = now_s();

		if (now > deadline) {
			fprintf(stderr, "vmreq: %ld kB,blocks=%ld,ram=%lld, not %s, after %ld s\n",
				memtotal_kb(), memory_blocks(), system_ram(), argv[2], timeout);
			ret = 1;
			break;
		}
		if (poll(&p, 1, now < recheck_until ? 10 : 1000) > 0) {
			while (recv(sk, ev, sizeof(ev), MSG_DONTWAIT) > 0)
				;
			recheck_until = now_s() + 0.2;
		}
	}
	memhp_mark(MEMHP_MARK_END, argv[1]);
	close(sk);
	return ret;
}
