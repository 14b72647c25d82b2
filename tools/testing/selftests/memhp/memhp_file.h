/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memhp_file.h: one-shot reads and writes of sysfs, debugfs and procfs
 * files for the C selftests, returning -errno so that a test can assert
 * the exact error a bad value must get.
 */
#ifndef _MEMHP_FILE_H
#define _MEMHP_FILE_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* One write(2) of @s: 0, or the -errno of open() or write(). */
static inline int memhp_write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* One read(2) into @buf, NUL-terminated, one trailing newline dropped. */
static inline int memhp_read_str(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

#endif /* _MEMHP_FILE_H */
