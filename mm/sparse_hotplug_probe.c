// SPDX-License-Identifier: GPL-2.0
/*
 * sparse_hotplug: hidden RAM. RAM that mem= or memmap= hid at boot and
 * ranges= names is hot-added one memory block at a time by writing its
 * physical address to /sys/kernel/sparse_hotplug/probe, and removed by
 * remove; probed lists what probe added. Unload removes what it can.
 * Design and locking: the top of sparse_hotplug_sections.c.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/mm.h>
#include <linux/memory.h>
#include <linux/memory_hotplug.h>
#include <linux/mutex.h>
#include <linux/list.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/ioport.h>
#include <linux/ktime.h>
#include <linux/overflow.h>
#include <asm/e820/api.h>

#include "sparse_hotplug_internal.h"
#include "sparse_hotplug_trace.h"

static char *ranges;
module_param(ranges, charp, 0444);
MODULE_PARM_DESC(ranges,
		 "Physical RAM hidden at boot (mem=, memmap=) that probe may hot-add: START-END or SIZE@START, comma separated, block aligned (suffixes K M G)");

/* ---- hidden RAM: probe and remove ---------------------------------------- */

#define SPARSE_HP_MAX_RANGES	8

/* [start, end) physical, block aligned; parsed from ranges= at load. */
static struct {
	u64 start, end;
} sparse_hp_ranges[SPARSE_HP_MAX_RANGES];
int sparse_hp_nr_ranges;

/* A block added by probe. */
struct sparse_hp_added {
	struct list_head list;
	u64 phys;
};

/*
 * Protects sparse_hp_added; held across add and remove (see the locking
 * rules at the top of sparse_hotplug_sections.c).
 */
static DEFINE_MUTEX(sparse_hp_probe_lock);
static LIST_HEAD(sparse_hp_added);

/*
 * The resource name lives in /proc/iomem as long as the memory: allocated,
 * and freed at unload only if everything we added was removed.
 */
const char *sparse_hp_resource_name;

/* START-END or SIZE@START, comma separated; memparse() suffixes. */
static int sparse_hp_parse_ranges(char *str)
{
	u64 bs = memory_block_size_bytes();
	char *tok, *p;
	u64 a, b;

	while ((tok = strsep(&str, ","))) {
		if (!*tok)
			continue;
		if (sparse_hp_nr_ranges == SPARSE_HP_MAX_RANGES)
			return -E2BIG;
		a = memparse(tok, &p);
		if (*p == '-') {
			b = memparse(p + 1, &p);
		} else if (*p == '@') {
			u64 size = a;

			a = memparse(p + 1, &p);
			b = a + size;
		} else {
			return -EINVAL;
		}
		if (*p || b <= a || !IS_ALIGNED(a, bs) || !IS_ALIGNED(b, bs))
			return -EINVAL;
		sparse_hp_ranges[sparse_hp_nr_ranges].start = a;
		sparse_hp_ranges[sparse_hp_nr_ranges].end = b;
		sparse_hp_nr_ranges++;
	}
	return 0;
}

/* Module init: ranges=, if given. */
int sparse_hp_parse_ranges_param(void)
{
	char *str;
	int ret;

	if (ranges) {
		str = kstrdup(ranges, GFP_KERNEL);
		if (!str)
			return -ENOMEM;
		ret = sparse_hp_parse_ranges(str);
		kfree(str);
		if (ret) {
			pr_err("ranges=%s: want START-END or SIZE@START, comma separated, %#lx aligned, at most %d\n",
			       ranges, memory_block_size_bytes(), SPARSE_HP_MAX_RANGES);
			return ret;
		}
	}
	return 0;
}

static bool sparse_hp_in_ranges(u64 start, u64 end)
{
	int i;

	for (i = 0; i < sparse_hp_nr_ranges; i++)
		if (start >= sparse_hp_ranges[i].start && end <= sparse_hp_ranges[i].end)
			return true;
	return false;
}

/*
 * Is [start, end) System RAM in the firmware's memory map (e820 as the
 * firmware gave it, before mem= and memmap= trimmed it; what
 * /sys/firmware/memmap shows)? Asked of the table itself, page by page
 * (adjacent RAM entries count as one): reading /sys/firmware/memmap from
 * here, our probe store, would take a second kernfs open file mutex,
 * which lockdep reports as possible recursive locking.
 *
 * Where e820__mapped_raw_any() is exported to the KVM modules only
 * (MEMHP_E820_RAW_FOR_KVM_ONLY), no exported function reads that table
 * (e820__mapped_any() reads the one mem= trimmed): nothing is taken for
 * firmware RAM there, and probe fails with EOPNOTSUPP.
 */
static bool sparse_hp_firmware_ram(u64 start, u64 end)
{
#ifdef MEMHP_E820_RAW_FOR_KVM_ONLY
	return false;
#else
	u64 p;

	for (p = start; p < end; p += PAGE_SIZE)
		if (!e820__mapped_raw_any(p, p + PAGE_SIZE, E820_TYPE_RAM))
			return false;
	return true;
#endif
}

static struct sparse_hp_added *sparse_hp_find_added(u64 phys)
{
	struct sparse_hp_added *a;

	lockdep_assert_held(&sparse_hp_probe_lock);
	list_for_each_entry(a, &sparse_hp_added, list)
		if (a->phys == phys)
			return a;
	return NULL;
}

/*
 * -EINVAL: not block aligned, or no block can start there (the end would
 * wrap past 2^64); -ERANGE: not in ranges=; -EEXIST: added or present
 * already; -ENXIO: not firmware RAM; -EOPNOTSUPP: the firmware's table
 * cannot be read (MEMHP_E820_RAW_FOR_KVM_ONLY); -ENOMEM, or what
 * add_memory_driver_managed() says.
 */
static int sparse_hp_probe(u64 phys)
{
	u64 bs = memory_block_size_bytes();
	struct sparse_hp_added *a;
	u64 end;
	int ret;

	if (!IS_ALIGNED(phys, bs) || check_add_overflow(phys, bs, &end))
		return -EINVAL;
	if (!sparse_hp_in_ranges(phys, end))
		return -ERANGE;
	mutex_lock(&sparse_hp_probe_lock);
	if (sparse_hp_find_added(phys) || present_section_nr(pfn_to_section_nr(PHYS_PFN(phys))) ||
	    region_intersects(phys, bs, IORESOURCE_SYSTEM_RAM, IORES_DESC_NONE) !=
	    REGION_DISJOINT) {
		ret = -EEXIST;
		goto out;
	}
	if (!sparse_hp_firmware_ram(phys, end)) {
#ifdef MEMHP_E820_RAW_FOR_KVM_ONLY
		ret = -EOPNOTSUPP;
#else
		ret = -ENXIO;
#endif
		goto out;
	}
	a = memhp_kzalloc_obj(*a, GFP_KERNEL);
	if (!a) {
		ret = -ENOMEM;
		goto out;
	}
	/* Onlines inside the call if auto_online_blocks says so. */
	ret = add_memory_driver_managed(memory_add_physaddr_to_nid(phys), phys,
					bs, sparse_hp_resource_name, MHP_NONE);
	if (ret) {
		kfree(a);
		goto out;
	}
	a->phys = phys;
	list_add_tail(&a->list, &sparse_hp_added);
out:
	mutex_unlock(&sparse_hp_probe_lock);
	return ret;
}

static int sparse_hp_remove(u64 phys)
{
	struct sparse_hp_added *a;
	int ret;

	if (!IS_ALIGNED(phys, memory_block_size_bytes()))
		return -EINVAL;
	mutex_lock(&sparse_hp_probe_lock);
	a = sparse_hp_find_added(phys);
	if (!a) {
		ret = -ENOENT;
		goto out;
	}
	ret = offline_and_remove_memory(phys, memory_block_size_bytes());
	if (!ret) {
		list_del(&a->list);
		kfree(a);
	}
out:
	mutex_unlock(&sparse_hp_probe_lock);
	return ret;
}

/*
 * Why the block at @phys cannot be offlined, into @buf (empty if it can,
 * as far as the offline report sees). Used at unload, where a page held
 * in ZONE_MOVABLE would make offline_pages() retry until a signal that
 * rmmod never gets.
 */
static void sparse_hp_block_blocked(u64 phys, char *buf, size_t size)
{
	unsigned long nr = pfn_to_section_nr(PHYS_PFN(phys));
	unsigned long i;
	struct sparse_hp_report *rep;

	buf[0] = '\0';
	rep = memhp_kmalloc_obj(*rep, GFP_KERNEL);
	if (!rep)
		return;
	for (i = nr; i < nr + sparse_hp_sections_per_block && !buf[0]; i++) {
		sparse_hp_section_report(i, rep);
		if (rep->online && (rep->blocked || rep->why))
			sparse_hp_report_verdict(rep, buf, size);
	}
	kfree(rep);
}

/*
 * Unload: remove what we added. A block the offline report calls blocked,
 * or whose removal fails, stays added as System RAM: an exit function
 * cannot fail rmmod. Nothing of it refers to the module afterwards: the
 * notifiers are gone, its isolated sections are given back by
 * sparse_hp_release_all(), and the resource's name is kstrdup_const()'s heap
 * copy (a module's literal is not kernel rodata), which then stays
 * allocated on purpose (see sparse_hotplug_exit()). The blocks that stay
 * are listed in one warning, after a line each saying why.
 */
bool sparse_hp_remove_all(void)
{
	struct sparse_hp_added *a, *tmp;
	char why[128], stays[160] = "";
	int ret, n = 0, listed = 0, len = 0;

	mutex_lock(&sparse_hp_probe_lock);
	list_for_each_entry_safe(a, tmp, &sparse_hp_added, list) {
		sparse_hp_block_blocked(a->phys, why, sizeof(why));
		if (why[0]) {
			pr_warn("memory block at %#llx stays added: %s\n", a->phys, why);
		} else {
			ret = offline_and_remove_memory(a->phys,
							memory_block_size_bytes());
			if (!ret) {
				list_del(&a->list);
				kfree(a);
				continue;
			}
			pr_warn("memory block at %#llx stays added: offline_and_remove_memory: %d\n",
				a->phys, ret);
		}
		n++;
		/* The first few in probe order, then "...": one line. */
		if (len < sizeof(stays) - 24) {
			len += scnprintf(stays + len, sizeof(stays) - len, " %#llx",
					 a->phys);
			listed++;
		}
		list_del(&a->list);
		kfree(a);
	}
	if (n)
		pr_warn("%d memory block(s) stay added as System RAM (sparse_hotplug):%s%s\n",
			n, stays, listed < n ? " ..." : "");
	mutex_unlock(&sparse_hp_probe_lock);
	return !n;
}

static ssize_t sparse_hp_hidden_ram_store(const char *buf, size_t count, bool add)
{
	u64 t0 = ktime_get_ns();
	u64 phys;
	int ret;

	ret = kstrtou64(buf, 0, &phys);
	if (ret)
		return ret;
	ret = add ? sparse_hp_probe(phys) : sparse_hp_remove(phys);
	trace_hidden_ram(add, phys, ret, ktime_get_ns() - t0);
	return ret ? ret : count;
}

static ssize_t probe_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	return sparse_hp_hidden_ram_store(buf, count, true);
}

static ssize_t remove_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	return sparse_hp_hidden_ram_store(buf, count, false);
}

/* The blocks probe added, one physical address a line. */
static ssize_t probed_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	struct sparse_hp_added *a;
	int len = 0;

	mutex_lock(&sparse_hp_probe_lock);
	list_for_each_entry(a, &sparse_hp_added, list)
		len += sysfs_emit_at(buf, len, "%#llx\n", a->phys);
	mutex_unlock(&sparse_hp_probe_lock);
	return len;
}

struct kobj_attribute sparse_hp_probe_attr = __ATTR_WO(probe);
struct kobj_attribute sparse_hp_remove_attr = __ATTR_WO(remove);
struct kobj_attribute sparse_hp_probed_attr = __ATTR_RO(probed);
