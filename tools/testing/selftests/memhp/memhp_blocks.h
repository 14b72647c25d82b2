/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memhp_blocks.h: memory blocks and QMP for the C selftests: list the
 * present blocks, set a block's state, run a memhp-qmp command.
 */
#ifndef _MEMHP_BLOCKS_H
#define _MEMHP_BLOCKS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memhp_file.h"

#define MEMHP_MEMSYS	"/sys/devices/system/memory"

/* memhp-qmp with @args, output discarded: system()'s status. */
static inline int run_qmp(const char *args)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "memhp-qmp %s >/dev/null", args);
	return system(cmd);
}

/* The present memory blocks, sorted; returns how many. */
static inline int list_blocks(long *out, int max)
{
	DIR *d = opendir(MEMHP_MEMSYS);
	struct dirent *e;
	int n = 0, i, j;
	long t;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max)
		if (!strncmp(e->d_name, "memory", 6) && e->d_name[6] >= '0' &&
		    e->d_name[6] <= '9')
			out[n++] = atol(e->d_name + 6);
	closedir(d);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && out[j - 1] > out[j]; j--) {
			t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

/* Write @state to memory@block/state: 0 or -errno. */
static inline int block_set_state(long block, const char *state)
{
	char path[128];

	snprintf(path, sizeof(path), MEMHP_MEMSYS "/memory%ld/state", block);
	return memhp_write_str(path, state);
}

#endif /* _MEMHP_BLOCKS_H */
