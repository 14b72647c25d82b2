/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sparse_hotplug internals shared by its files: sparse_hotplug_sections.c
 * (the core: section objects, the set of sections, module init/exit),
 * sparse_hotplug_isolate.c, sparse_hotplug_report.c, sparse_hotplug_probe.c
 * and sparse_hotplug_events.c. The design and the locking rules are at the
 * top of sparse_hotplug_sections.c.
 */
#ifndef _MEMHP_SPARSE_HOTPLUG_INTERNAL_H
#define _MEMHP_SPARSE_HOTPLUG_INTERNAL_H

#include <linux/device.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/memory.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/sysfs.h>
#include <linux/types.h>
#include <linux/xarray.h>
#include <memhp_compat.h>

/* sparse_hotplug_sections.c */
extern struct mutex sparse_hp_lock;
extern struct xarray sparse_hp_sections;
extern unsigned long sparse_hp_sections_per_block;
extern memhp_bus_ptr sparse_hp_memory_bus;
const char *sparse_hp_section_state(unsigned long nr);

static inline unsigned long sparse_hp_block_of(unsigned long nr)
{
	return nr / sparse_hp_sections_per_block;
}

/*
 * The online page at @pfn or NULL. pfn_to_online_page() checks that the
 * section is online and the subsection valid; its memmap is initialized.
 */
static inline struct page *sparse_hp_online_page(unsigned long pfn)
{
	return pfn_to_online_page(pfn);
}

/* sparse_hotplug_isolate.c */
unsigned long sparse_hp_iso_state(unsigned long nr);
int sparse_hp_isolate(unsigned long nr);
int sparse_hp_release(unsigned long nr);
int sparse_hp_isolated_notify(unsigned long action, unsigned long start_pfn,
			      unsigned long nr_pages);
void sparse_hp_release_all(void);
void sparse_hp_hold_ref_drop(void);
void sparse_hp_isolate_debugfs(struct dentry *dir);

/* sparse_hotplug_report.c */
enum sparse_hp_class {
	SPARSE_HP_FREE,
	SPARSE_HP_LRU_ANON,
	SPARSE_HP_LRU_FILE,
	SPARSE_HP_NONLRU_MOVABLE,
	SPARSE_HP_SLAB,
	SPARSE_HP_PAGE_TABLES,
	SPARSE_HP_RESERVED,
	SPARSE_HP_DMA_PINNED,
	SPARSE_HP_GUP_HELD,
	SPARSE_HP_HUGETLB,
	SPARSE_HP_MEMMAP,
	SPARSE_HP_ISOLATED,
	SPARSE_HP_OTHER,
	SPARSE_HP_NR_CLASSES
};

struct sparse_hp_report {
	unsigned long count[SPARSE_HP_NR_CLASSES];
	bool online;
	const char *why;		/* blocked for a reason other than a page */
	bool blocked;			/* by the page below */
	unsigned long pfn;
	enum sparse_hp_class class;
	unsigned long flags;
};

extern const char * const sparse_hp_class_names[SPARSE_HP_NR_CLASSES];
void sparse_hp_section_report(unsigned long nr, struct sparse_hp_report *rep);
int sparse_hp_report_verdict(struct sparse_hp_report *rep, char *buf,
			     size_t size);
void sparse_hp_report_debugfs(struct dentry *dir);

/* sparse_hotplug_probe.c */
extern int sparse_hp_nr_ranges;
extern const char *sparse_hp_resource_name;
extern struct kobj_attribute sparse_hp_probe_attr;
extern struct kobj_attribute sparse_hp_remove_attr;
extern struct kobj_attribute sparse_hp_probed_attr;
extern struct kobj_attribute sparse_hp_ram_check_attr;
int sparse_hp_parse_ranges_param(void);
void sparse_hp_ram_check_init(void);
void sparse_hp_ram_check_exit(void);
const char *sparse_hp_ram_check_name(void);
bool sparse_hp_remove_all(void);

/* sparse_hotplug_events.c */
extern struct notifier_block sparse_hp_memory_nb;
int sparse_hp_events_alloc(void);
void sparse_hp_events_free(void);
void sparse_hp_events_debugfs(struct dentry *dir);

#endif /* _MEMHP_SPARSE_HOTPLUG_INTERNAL_H */
