/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memhp_module.h: a C selftest loads the module it tests by itself, so it
 * runs with no wrapper script, and unloads it at exit if it loaded it.
 *
 *   MEMHP_SELFTEST_MODULE("buddy_split", "mm/buddy_split.ko",
 *			   "/dev/buddy_split", "params");
 *
 * Nothing is loaded when the device already exists. The module is the one
 * built for the running kernel, build/modules/$(uname -r)/<ko>, looked for
 * under $MEMHP_TOP (set in memhp-vm guests), then relative to the test
 * binary in build/selftests/. It also makes stdout line-buffered: the
 * harness ends each test's child with _exit(), which drops whatever
 * ksft_print_msg() left in a full buffer when stdout is a pipe.
 */
#ifndef _MEMHP_MODULE_H
#define _MEMHP_MODULE_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "kselftest.h"

struct memhp_module {
	const char *name;	/* for delete_module() */
	const char *ko;		/* path in build/modules/<release>/ */
	const char *dev;	/* present when the module is loaded */
	const char *params;
	bool loaded_here;
};

/* 0 when loaded (by us or already), -1 when the file is not there. */
static inline int memhp_module_try(struct memhp_module *m, const char *top)
{
	char path[PATH_MAX];
	struct utsname u;
	int fd, ret;

	if (uname(&u))
		return -1;
	snprintf(path, sizeof(path), "%s/build/modules/%s/%s", top, u.release,
		 m->ko);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = syscall(SYS_finit_module, fd, m->params, 0);
	close(fd);
	if (ret && errno != EEXIST) {
		ksft_print_msg("load %s: %s\n", path, strerror(errno));
		return -1;
	}
	m->loaded_here = !ret;
	return 0;
}

/* Loads the module unless its device exists; true if we loaded it. */
static inline bool memhp_module_load(struct memhp_module *m)
{
	const char *top = getenv("MEMHP_TOP");
	char exe[PATH_MAX], dir[PATH_MAX + 8], *slash;
	ssize_t n;

	if (!access(m->dev, F_OK))
		return false;
	if (top && !memhp_module_try(m, top))
		return m->loaded_here;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return false;
	*slash = 0;
	snprintf(dir, sizeof(dir), "%s/../..", exe);	/* build/selftests/ -> top */
	return !memhp_module_try(m, dir) && m->loaded_here;
}

static inline void memhp_module_unload(struct memhp_module *m)
{
	if (m->loaded_here && syscall(SYS_delete_module, m->name, O_NONBLOCK))
		ksft_print_msg("rmmod %s: %s\n", m->name, strerror(errno));
}

#define MEMHP_SELFTEST_MODULE(_name, _ko, _dev, _params)			\
static struct memhp_module memhp_selftest_module = {			\
	.name = (_name), .ko = (_ko), .dev = (_dev), .params = (_params),	\
};									\
static void memhp_selftest_module_exit(void)				\
{									\
	memhp_module_unload(&memhp_selftest_module);			\
}									\
static void __attribute__((constructor)) memhp_selftest_module_init(void) \
{									\
	/* Test children _exit(): a buffered ksft_print_msg() would be lost. */ \
	setvbuf(stdout, NULL, _IOLBF, 0);				\
	if (memhp_module_load(&memhp_selftest_module))			\
		atexit(memhp_selftest_module_exit);			\
}

#endif /* _MEMHP_MODULE_H */
