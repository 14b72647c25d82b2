/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Portable cores: code that compiles unchanged into a kernel module and into
 * a user-space unit test (the method of the NetBSD uvm_physseg paper: test
 * kernel code in user space).
 *
 * Portable sources include only this header. In the kernel it pulls in the
 * real <linux/...> headers; in user space the same <linux/list.h>,
 * <linux/rbtree.h>, <linux/kernel.h>, ... come from linux-source-6.1's
 * tools/include (extracted to build/ksrc/ by tools/setup.sh, never copied
 * into this repository), and tools/lib/rbtree.c is linked in.
 *
 * The few things that differ (allocation, warnings) get a memhp_ name here.
 */
#ifndef _MEMHP_PORTABLE_H
#define _MEMHP_PORTABLE_H

#ifdef __KERNEL__

#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/errno.h>
#include <linux/list.h>
#include <linux/rbtree.h>
#include <linux/bitops.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/bug.h>

/* Zeroed memory that may be large: vmalloc-backed when it must be. */
static inline void *memhp_zalloc(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

static inline void memhp_free(const void *p)
{
	kvfree(p);
}

#define memhp_warn_on(cond)	WARN_ON_ONCE(cond)

#else /* !__KERNEL__ */

#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/rbtree.h>
#include <linux/bitops.h>
#include <linux/log2.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void *memhp_zalloc(size_t size)
{
	return calloc(1, size);
}

static inline void memhp_free(const void *p)
{
	free((void *)p);
}

/* Like WARN_ON_ONCE(): evaluates to the condition; reports every time. */
#define memhp_warn_on(cond) ({						\
	int __memhp_c = !!(cond);					\
	if (__memhp_c)							\
		fprintf(stderr, "WARNING: %s:%d: %s\n",		\
			__FILE__, __LINE__, #cond);			\
	__memhp_c;							\
})

#endif /* __KERNEL__ */

#endif /* _MEMHP_PORTABLE_H */
