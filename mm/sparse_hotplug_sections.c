// SPDX-License-Identifier: GPL-2.0
/*
 * sparse_hotplug: memory sections as sysfs objects, with controls.
 *
 * The core exposes memory *blocks* (/sys/devices/system/memory/memoryN, one
 * block is several 128 MiB sections on big machines); this module exposes
 * every present *section*, lets user space act on it, tells why it cannot
 * go away, hot-adds RAM hidden at boot, and logs every block transition:
 *
 *   /sys/kernel/sparse_hotplug/section_size_bytes   hex, like block_size_bytes
 *   /sys/kernel/sparse_hotplug/block_size_bytes
 *   /sys/kernel/sparse_hotplug/probe, remove        hidden RAM (ranges=)
 *   /sys/kernel/sparse_hotplug/probed, ram_check
 *   /sys/kernel/sparse_hotplug/sections/sectionN/
 *	start_pfn nr_pages block state zone nid offline_report
 *   /sys/kernel/debug/sparse_hotplug/sections, events, restarts,
 *	hold_ref (selftest_refs=1), provoke_warning (selftest_warn=1)
 *   tracepoints sparse_hotplug:* (sparse_hotplug_trace.h)
 *
 * Documentation/admin-guide/sparse_hotplug.rst is the user's guide and
 * Documentation/ABI/testing/sysfs-kernel-sparse_hotplug the ABI.
 *
 * Where each part lives (one sparse_hotplug.ko, shared declarations in
 * sparse_hotplug_internal.h):
 * - sparse_hotplug_sections.c (this file): the section objects and their
 *   sysfs attributes, the online/offline route, the set of sections and
 *   the memory bus notifier, the root attributes, debugfs, module init/exit.
 * - sparse_hotplug_isolate.c: isolate/release and the fake-offline part of
 *   the memory notifier; debugfs hold_ref.
 * - sparse_hotplug_report.c: the why-offline-fails classifier behind
 *   offline_report, and the debugfs sections table.
 * - sparse_hotplug_probe.c: hidden RAM (ranges=, probe, remove, probed,
 *   ram_check).
 * - sparse_hotplug_events.c: the event log and the memory notifier.
 *
 * Keeping the set of directories true: values are computed on each read from
 * mem_section and the memmap, so onlining and offlining need no bookkeeping.
 * Hot-add and removal create and delete memory block devices, and we watch
 * those through a notifier on the memory bus (BUS_NOTIFY_ADD_DEVICE and
 * BUS_NOTIFY_DEL_DEVICE). The bus itself (memory_subsys) is not exported, so
 * we find it from one memory block device that exists at load: its sysfs
 * directory node (kernfs) leads to its kobject, the device, and dev->bus.
 *
 * Online/offline route. device_online(), device_offline() and the device
 * hotplug lock are not exported to modules in 6.1, so "online", "offline",
 * "online_movable" and "online_kernel" written to a section's state are
 * written, from the store handler, to the containing block's own
 * /sys/devices/system/memory/memoryN/state by calling that attribute's
 * store directly (see sparse_hp_block_write_state()). The core then does
 * exactly what it does for user space: lock_device_hotplug_sysfs(),
 * device_online()/device_offline() with the zone policy, the memory
 * notifiers and the KOBJ_ONLINE/KOBJ_OFFLINE uevent.
 * lock_device_hotplug_sysfs() answers -ERESTARTNOINTR (and flags a pending
 * signal) when the lock is taken; we must not loop in our store: it holds
 * a kernfs active reference on our own attribute, and a memory removal that
 * holds the device hotplug lock may be waiting in our bus notifier for that
 * reference to drain before it can delete the section's kobject. Returning
 * restart_syscall() drops the reference and restarts the write.
 *
 * Isolation. "isolate" takes a whole online section away from the page
 * allocator the way virtio-mem unplugs a sub-block: alloc_contig_range(
 * MIGRATE_MOVABLE) migrates the movable pages out and hands us every page
 * with a reference; we mark them PageOffline and subtract them from the
 * managed pages. "release" gives them back. Offlining a block whose
 * sections are isolated works as virtio-mem's fake-offline: in
 * MEM_GOING_OFFLINE we drop our reference of each isolated page (PageOffline
 * with refcount 0 is skipped by the core) and, where the core subtracts
 * skipped pages from the managed count too (6.1; not since 6.11, see
 * memhp_going_offline_managed()), add them back first; MEM_CANCEL_OFFLINE
 * undoes that and MEM_OFFLINE forgets the section (its memmap is
 * reinitialized on online).
 *
 * Locking:
 * - sparse_hp_lock (mutex) protects sparse_hp_sections. The bus notifier
 *   runs with the device hotplug lock held (ADD also under mem_hotplug_lock;
 *   6.1's try_remove_memory() deletes the block devices before
 *   mem_hotplug_begin(), 6.12's inside it, so DEL too runs under
 *   mem_hotplug_lock there: no section attribute handler may take
 *   get_online_mems() or anything that waits for it); it takes
 *   sparse_hp_lock and
 *   adds or removes kobjects, so nothing holds sparse_hp_lock for longer than
 *   one section's work (the debugfs table drops it between sections).
 *   Removing a kobject waits for readers and writers of its attributes,
 *   so section attribute handlers never take sparse_hp_lock nor block on
 *   anything memory hotplug holds (they use the restart route above).
 *   Show functions read mem_section flags and struct pages of online
 *   sections racily, as /proc/zoneinfo-style readers do. A section's
 *   memmap is freed only after its block device is deleted, which is
 *   after our DEL handler removed its directory and drained its users.
 * - sparse_hp_isolate_lock (mutex) protects sparse_hp_isolated (section -> state),
 *   the isolated pages and sparse_hp_held_ref. Taken by state stores
 *   (isolate/release, across alloc_contig_range, which needs no hotplug
 *   lock) and by the memory notifier (with mem_hotplug_lock held for
 *   write). Isolate and a concurrent offline exclude each other through
 *   pageblock isolation: the one that isolates the pageblocks second gets
 *   -EBUSY.
 * - sparse_hp_probe_lock (mutex) protects sparse_hp_added (blocks added by probe); held
 *   across add_memory_driver_managed()/offline_and_remove_memory(), which
 *   take the device hotplug lock themselves. probe and remove are root
 *   attributes, never removed by the bus notifier, so blocking there is
 *   safe. No notifier takes sparse_hp_probe_lock. The firmware memory
 *   map ("firmware_memmap" ram_check) is read once, at load, before the
 *   attributes exist: its kset's list_lock (spinlock) only to take each
 *   entry with a reference, the entries' show() after dropping it.
 * - sparse_hp_event_lock (mutex) protects the event ring. Transitions are
 *   serialized by mem_hotplug_lock, so one pending transition suffices.
 * Never hold sparse_hp_lock while calling into memory hotplug.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/kernfs.h>
#include <linux/device.h>
#include <linux/cpu.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/memory.h>
#include <linux/memory_hotplug.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/slab.h>
#include <linux/kmemleak.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/ktime.h>

#include "sparse_hotplug_internal.h"

#define CREATE_TRACE_POINTS
#include "sparse_hotplug_trace.h"

static int notifier_priority;
module_param(notifier_priority, int, 0444);
MODULE_PARM_DESC(notifier_priority,
		 "Priority of the memory notifier (default 0; higher runs first): where its events and vetoes come among other notifiers', e.g. before or after memory-notifier-error-inject's");

static bool selftest_warn;
module_param(selftest_warn, bool, 0444);
MODULE_PARM_DESC(selftest_warn,
		 "Create debugfs sparse_hotplug/provoke_warning, which WARNs when written (tests that the VM runner catches kernel warnings)");

/* One directory of /sys/kernel/sparse_hotplug/sections. */
struct sparse_hp_section {
	struct kobject kobj;
	unsigned long nr;		/* section number */
};

#define to_sparse_hp_section(k) container_of(k, struct sparse_hp_section, kobj)

static struct kobject *sparse_hp_root_kobj;		/* /sys/kernel/sparse_hotplug */
static struct kobject *sparse_hp_sections_kobj;	/* .../sections */
static struct dentry *sparse_hp_debugfs;

/*
 * Protects sparse_hp_sections (section number -> struct sparse_hp_section)
 * and sparse_hp_dying.
 */
DEFINE_MUTEX(sparse_hp_lock);
DEFINE_XARRAY(sparse_hp_sections);
static bool sparse_hp_dying;	/* module exit: add no more directories */

unsigned long sparse_hp_sections_per_block;
memhp_bus_ptr sparse_hp_memory_bus;

/* ---- online/offline through the core's sysfs file ---------------------- */

/* Writes restarted because the device hotplug lock was busy (debugfs). */
static atomic_t sparse_hp_restarts = ATOMIC_INIT(0);

/*
 * Writes @cmd to /sys/devices/system/memory/memory<block>/state: the
 * core's own store of that attribute, with its semantics, locking and
 * uevents (see the top comment). It is called directly, not through the
 * VFS: our caller is itself a write to a sysfs file, and a write through
 * a file would take the sysfs superblock's freeze protection (sb_writers,
 * in kernel_write() and in a write open that misses the dcache) and a
 * kernfs open file's mutex a second time, which lockdep reports as
 * possible recursive locking. The block cannot go away meanwhile: its
 * removal first waits in our bus notifier for this store's active
 * reference on the section attribute.
 * -ERESTARTNOINTR (device hotplug lock busy) becomes restart_syscall().
 */
static int sparse_hp_block_write_state(unsigned long block, const char *cmd)
{
	const struct attribute_group *const *grp;
	struct device_attribute *state = NULL;
	struct attribute *const *attr;
	size_t len = strlen(cmd);
	struct device *dev;
	char name[32];
	ssize_t n;

	snprintf(name, sizeof(name), "memory%lu", block);
	dev = bus_find_device_by_name(sparse_hp_memory_bus, NULL, name);
	if (!dev)
		return -ENODEV;
	for (grp = dev->groups; grp && *grp && !state; grp++)
		for (attr = (*grp)->attrs; attr && *attr; attr++)
			if (!strcmp((*attr)->name, "state")) {
				state = container_of(*attr, struct device_attribute, attr);
				break;
			}
	n = state && state->store ? state->store(dev, state, cmd, len) : -ENODEV;
	put_device(dev);
	if (n == -ERESTARTNOINTR) {
		atomic_inc(&sparse_hp_restarts);
		return restart_syscall();
	}
	if (n < 0)
		return n;
	return n == len ? 0 : -EIO;
}

/* ---- per-section attributes ------------------------------------------ */

static ssize_t start_pfn_show(struct kobject *kobj, struct kobj_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%#lx\n", section_nr_to_pfn(to_sparse_hp_section(kobj)->nr));
}

/* Pages of the section with a memmap: subsections count for hot-added ones. */
static ssize_t nr_pages_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	unsigned long pfn = section_nr_to_pfn(to_sparse_hp_section(kobj)->nr);
	unsigned long end = pfn + PAGES_PER_SECTION;
	unsigned long nr = 0;

	for (; pfn < end; pfn += PAGES_PER_SUBSECTION)
		if (pfn_valid(pfn))
			nr += PAGES_PER_SUBSECTION;
	return sysfs_emit(buf, "%lu\n", nr);
}

static ssize_t block_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%lu\n", sparse_hp_block_of(to_sparse_hp_section(kobj)->nr));
}

const char *sparse_hp_section_state(unsigned long nr)
{
	struct mem_section *ms = __nr_to_section(nr);

	if (!ms || !present_section(ms))
		return "removed";
	if (!online_section(ms))
		return "offline";
	return sparse_hp_iso_state(nr) ? "isolated" : "online";
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%s\n", sparse_hp_section_state(to_sparse_hp_section(kobj)->nr));
}

enum {
	SPARSE_HP_CMD_ONLINE,
	SPARSE_HP_CMD_ONLINE_MOVABLE,
	SPARSE_HP_CMD_ONLINE_KERNEL,
	SPARSE_HP_CMD_OFFLINE,
	SPARSE_HP_CMD_ISOLATE,
	SPARSE_HP_CMD_RELEASE,
};

static const char * const sparse_hp_state_cmds[] = {
	[SPARSE_HP_CMD_ONLINE]		= "online",
	[SPARSE_HP_CMD_ONLINE_MOVABLE]	= "online_movable",
	[SPARSE_HP_CMD_ONLINE_KERNEL]		= "online_kernel",
	[SPARSE_HP_CMD_OFFLINE]		= "offline",
	[SPARSE_HP_CMD_ISOLATE]		= "isolate",
	[SPARSE_HP_CMD_RELEASE]		= "release",
};

/*
 * online, online_movable, online_kernel, offline: the containing block,
 * through the core (errors are the core's: -EINVAL when already in that
 * state or the zone is not allowed, -EBUSY/-EINTR when offlining fails).
 * isolate, release: this section only. Anything else: -EINVAL.
 */
static ssize_t state_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	unsigned long nr = to_sparse_hp_section(kobj)->nr;
	u64 t0 = ktime_get_ns();
	int cmd, ret;

	cmd = sysfs_match_string(sparse_hp_state_cmds, buf);
	if (cmd < 0)
		return -EINVAL;
	switch (cmd) {
	case SPARSE_HP_CMD_ISOLATE:
		ret = sparse_hp_isolate(nr);
		break;
	case SPARSE_HP_CMD_RELEASE:
		ret = sparse_hp_release(nr);
		break;
	default:
		ret = sparse_hp_block_write_state(sparse_hp_block_of(nr),
						  sparse_hp_state_cmds[cmd]);
		break;
	}
	if (ret != -ERESTARTNOINTR)
		trace_section_control(nr, sparse_hp_state_cmds[cmd], ret,
				      ktime_get_ns() - t0);
	return ret ? ret : count;
}

/*
 * The zones of the section's online pages, space separated in address
 * order ("DMA DMA32" for the first section of a PC), or "none" when the
 * section is offline.
 */
static ssize_t zone_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	unsigned long pfn = section_nr_to_pfn(to_sparse_hp_section(kobj)->nr);
	unsigned long end = pfn + PAGES_PER_SECTION;
	struct zone *last = NULL;
	int len = 0;

	for (; pfn < end; pfn += pageblock_nr_pages) {
		struct page *page = sparse_hp_online_page(pfn);
		struct zone *zone;

		if (!page)
			continue;
		zone = page_zone(page);
		if (zone == last)
			continue;
		len += sysfs_emit_at(buf, len, "%s%s", len ? " " : "", zone->name);
		last = zone;
	}
	if (!len)
		return sysfs_emit(buf, "none\n");
	return len + sysfs_emit_at(buf, len, "\n");
}

/*
 * The node: from the memmap when online; an offline section's memmap may be
 * uninitialized (poisoned), so ask the firmware tables for the address.
 */
static ssize_t nid_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf)
{
	unsigned long pfn = section_nr_to_pfn(to_sparse_hp_section(kobj)->nr);
	unsigned long end = pfn + PAGES_PER_SECTION;

	for (; pfn < end; pfn += pageblock_nr_pages) {
		struct page *page = sparse_hp_online_page(pfn);

		if (page)
			return sysfs_emit(buf, "%d\n", page_to_nid(page));
	}
	pfn = section_nr_to_pfn(to_sparse_hp_section(kobj)->nr);
	return sysfs_emit(buf, "%d\n", memory_add_physaddr_to_nid(PFN_PHYS(pfn)));
}

/* One "class count" line per class, then "verdict ...". */
static ssize_t offline_report_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct sparse_hp_report *rep;
	char verdict[128];
	int i, len = 0;

	rep = memhp_kmalloc_obj(*rep, GFP_KERNEL);
	if (!rep)
		return -ENOMEM;
	sparse_hp_section_report(to_sparse_hp_section(kobj)->nr, rep);
	for (i = 0; i < SPARSE_HP_NR_CLASSES; i++)
		len += sysfs_emit_at(buf, len, "%s %lu\n", sparse_hp_class_names[i],
				     rep->count[i]);
	sparse_hp_report_verdict(rep, verdict, sizeof(verdict));
	len += sysfs_emit_at(buf, len, "verdict %s\n", verdict);
	kfree(rep);
	return len;
}

static struct kobj_attribute start_pfn_attr = __ATTR_RO(start_pfn);
static struct kobj_attribute nr_pages_attr = __ATTR_RO(nr_pages);
static struct kobj_attribute block_attr = __ATTR_RO(block);
static struct kobj_attribute state_attr = __ATTR_RW(state);
static struct kobj_attribute zone_attr = __ATTR_RO(zone);
static struct kobj_attribute nid_attr = __ATTR_RO(nid);
static struct kobj_attribute offline_report_attr = __ATTR_RO(offline_report);

static struct attribute *sparse_hp_section_attrs[] = {
	&start_pfn_attr.attr,
	&nr_pages_attr.attr,
	&block_attr.attr,
	&state_attr.attr,
	&zone_attr.attr,
	&nid_attr.attr,
	&offline_report_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(sparse_hp_section);

static void sparse_hp_section_release(struct kobject *kobj)
{
	kfree(to_sparse_hp_section(kobj));
}

static const struct kobj_type sparse_hp_section_ktype = {
	.release	= sparse_hp_section_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= sparse_hp_section_groups,
};

/* ---- the set of sections --------------------------------------------- */

static int sparse_hp_add_section(unsigned long nr)
{
	struct sparse_hp_section *sec;
	int ret;

	lockdep_assert_held(&sparse_hp_lock);
	if (xa_load(&sparse_hp_sections, nr))
		return 0;

	sec = memhp_kzalloc_obj(*sec, GFP_KERNEL);
	if (!sec)
		return -ENOMEM;
	sec->nr = nr;
	ret = kobject_init_and_add(&sec->kobj, &sparse_hp_section_ktype,
				   sparse_hp_sections_kobj, "section%lu", nr);
	if (ret)
		goto out_put;
	ret = xa_err(xa_store(&sparse_hp_sections, nr, sec, GFP_KERNEL));
	if (ret)
		goto out_put;
	kobject_uevent(&sec->kobj, KOBJ_ADD);
	return 0;

out_put:
	kobject_put(&sec->kobj);	/* frees sec through the release */
	return ret;
}

static void sparse_hp_del_section(unsigned long nr)
{
	struct sparse_hp_section *sec;

	lockdep_assert_held(&sparse_hp_lock);
	sec = xa_erase(&sparse_hp_sections, nr);
	if (sec)
		kobject_put(&sec->kobj);
}

/* Adds the present sections of [first, first + nr). */
static int sparse_hp_add_present(unsigned long first, unsigned long nr)
{
	unsigned long i;
	int ret;

	lockdep_assert_held(&sparse_hp_lock);
	for (i = first; i < first + nr && i < NR_MEM_SECTIONS; i++) {
		if (!present_section_nr(i))
			continue;
		ret = sparse_hp_add_section(i);
		if (ret)
			return ret;
	}
	return 0;
}

/* Adds every present section; roots never allocated are skipped whole. */
static int sparse_hp_scan_all(void)
{
	unsigned long nr;
	int ret;

	lockdep_assert_held(&sparse_hp_lock);
	for (nr = 0; nr < NR_MEM_SECTIONS; nr += SECTIONS_PER_ROOT) {
		if (!mem_section || !mem_section[SECTION_NR_TO_ROOT(nr)])
			continue;
		ret = sparse_hp_add_present(nr, SECTIONS_PER_ROOT);
		if (ret)
			return ret;
		cond_resched();
	}
	return 0;
}

static unsigned long sparse_hp_count_sections(void)
{
	struct sparse_hp_section *sec;
	unsigned long nr, count = 0;

	xa_for_each(&sparse_hp_sections, nr, sec)
		count++;
	return count;
}

static void sparse_hp_del_all(void)
{
	struct sparse_hp_section *sec;
	unsigned long nr;

	mutex_lock(&sparse_hp_lock);
	xa_for_each(&sparse_hp_sections, nr, sec)
		sparse_hp_del_section(nr);
	mutex_unlock(&sparse_hp_lock);
}

/*
 * Memory block devices come and go with hot-add and removal. Sections are
 * already present when a block device is added and still present when it
 * is deleted (the memmap is torn down afterwards).
 */
static int sparse_hp_memory_bus_notify(struct notifier_block *nb,
				       unsigned long action, void *data)
{
	struct device *dev = data;
	unsigned long first = dev->id * sparse_hp_sections_per_block;
	unsigned long i;

	switch (action) {
	case BUS_NOTIFY_ADD_DEVICE:
		mutex_lock(&sparse_hp_lock);
		if (!sparse_hp_dying &&
		    sparse_hp_add_present(first, sparse_hp_sections_per_block))
			pr_warn("no sysfs directories for block %u: out of memory\n",
				dev->id);
		mutex_unlock(&sparse_hp_lock);
		break;
	case BUS_NOTIFY_DEL_DEVICE:
		mutex_lock(&sparse_hp_lock);
		for (i = first; i < first + sparse_hp_sections_per_block; i++)
			sparse_hp_del_section(i);
		mutex_unlock(&sparse_hp_lock);
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block sparse_hp_memory_bus_nb = {
	.notifier_call = sparse_hp_memory_bus_notify,
};

/*
 * Finds the memory bus through the first present section's block device:
 * /sys/devices/system is the grandparent of CPU 0's device, and each
 * directory's kernfs node carries its kobject. Boot memory blocks are not
 * removed while we look (their removal needs an ACPI eject of boot RAM).
 */
static memhp_bus_ptr sparse_hp_find_memory_bus(void)
{
	memhp_bus_ptr bus = NULL;
	struct kernfs_node *memory_kn, *block_kn;
	struct device *cpu0 = get_cpu_device(0);
	char name[32];
	unsigned long nr;

	if (!cpu0 || !cpu0->kobj.parent || !cpu0->kobj.parent->parent)
		return NULL;
	for (nr = 0; nr < NR_MEM_SECTIONS; nr++)
		if (present_section_nr(nr))
			break;
	if (nr == NR_MEM_SECTIONS)
		return NULL;
	snprintf(name, sizeof(name), "memory%lu", sparse_hp_block_of(nr));

	memory_kn = kernfs_find_and_get(cpu0->kobj.parent->parent->sd, "memory");
	if (!memory_kn)
		return NULL;
	block_kn = kernfs_find_and_get(memory_kn, name);
	kernfs_put(memory_kn);
	if (!block_kn)
		return NULL;
	if (kernfs_type(block_kn) == KERNFS_DIR && block_kn->priv) {
		struct device *dev = kobj_to_dev(block_kn->priv);

		if (dev->bus && !strcmp(dev->bus->name, "memory"))
			bus = dev->bus;
	}
	kernfs_put(block_kn);
	return bus;
}

/* ---- root attributes --------------------------------------------------- */

static ssize_t section_size_bytes_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lx\n", PAGES_PER_SECTION << PAGE_SHIFT);
}

static ssize_t block_size_bytes_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lx\n", memory_block_size_bytes());
}

static struct kobj_attribute section_size_bytes_attr = __ATTR_RO(section_size_bytes);
static struct kobj_attribute block_size_bytes_attr = __ATTR_RO(block_size_bytes);

static struct attribute *sparse_hp_root_attrs[] = {
	&section_size_bytes_attr.attr,
	&block_size_bytes_attr.attr,
	&sparse_hp_probe_attr.attr,
	&sparse_hp_remove_attr.attr,
	&sparse_hp_probed_attr.attr,
	&sparse_hp_ram_check_attr.attr,
	NULL,
};

static const struct attribute_group sparse_hp_root_group = {
	.attrs = sparse_hp_root_attrs,
};

/* ---- debugfs ------------------------------------------------------------ */

static ssize_t sparse_hp_provoke_warning_write(struct file *file,
					       const char __user *ubuf,
					       size_t count, loff_t *ppos)
{
	bool val;
	int ret;

	ret = kstrtobool_from_user(ubuf, count, &val);
	if (ret)
		return ret;
	WARN(val, "sparse_hotplug: warning provoked on request through debugfs\n");
	return count;
}

static const struct file_operations sparse_hp_provoke_warning_fops = {
	.owner	= THIS_MODULE,
	.write	= sparse_hp_provoke_warning_write,
	.llseek	= noop_llseek,
};

/* ---- module ------------------------------------------------------------- */

static int __init sparse_hotplug_init(void)
{
	int ret;

	sparse_hp_sections_per_block = memory_block_size_bytes() >> SECTION_SIZE_BITS;
	if (!sparse_hp_sections_per_block)
		return -EINVAL;

	ret = sparse_hp_parse_ranges_param();
	if (ret)
		return ret;
	sparse_hp_ram_check_init();

	sparse_hp_memory_bus = sparse_hp_find_memory_bus();
	if (!sparse_hp_memory_bus) {
		pr_err("memory block devices not found in /sys/devices/system/memory\n");
		ret = -ENODEV;
		goto out_ram_check;
	}

	ret = sparse_hp_events_alloc();
	sparse_hp_resource_name = kstrdup_const("System RAM (sparse_hotplug)",
						GFP_KERNEL);
	if (ret || !sparse_hp_resource_name) {
		ret = -ENOMEM;
		goto out_free;
	}

	sparse_hp_memory_nb.priority = notifier_priority;
	ret = register_memory_notifier(&sparse_hp_memory_nb);
	if (ret)
		goto out_free;

	ret = -ENOMEM;
	sparse_hp_root_kobj = kobject_create_and_add("sparse_hotplug", kernel_kobj);
	if (!sparse_hp_root_kobj)
		goto out_unregister_memory;
	sparse_hp_sections_kobj = kobject_create_and_add("sections", sparse_hp_root_kobj);
	if (!sparse_hp_sections_kobj)
		goto out_put_root;

	/*
	 * Watch first, then scan: a block added in between is seen twice,
	 * which sparse_hp_add_section() tolerates.
	 */
	ret = bus_register_notifier(sparse_hp_memory_bus, &sparse_hp_memory_bus_nb);
	if (ret)
		goto out_put_sections;
	mutex_lock(&sparse_hp_lock);
	ret = sparse_hp_scan_all();
	mutex_unlock(&sparse_hp_lock);
	if (ret)
		goto out_unregister_bus;
	ret = sysfs_create_group(sparse_hp_root_kobj, &sparse_hp_root_group);
	if (ret)
		goto out_unregister_bus;

	sparse_hp_debugfs = debugfs_create_dir("sparse_hotplug", NULL);
	sparse_hp_report_debugfs(sparse_hp_debugfs);
	sparse_hp_events_debugfs(sparse_hp_debugfs);
	debugfs_create_atomic_t("restarts", 0400, sparse_hp_debugfs, &sparse_hp_restarts);
	if (selftest_warn)
		debugfs_create_file("provoke_warning", 0200, sparse_hp_debugfs, NULL,
				    &sparse_hp_provoke_warning_fops);
	sparse_hp_isolate_debugfs(sparse_hp_debugfs);

	pr_info("%lu sections of %lu MiB, %lu per memory block, %d hidden RAM range(s), RAM check %s\n",
		sparse_hp_count_sections(),
		(PAGES_PER_SECTION << PAGE_SHIFT) >> 20, sparse_hp_sections_per_block,
		sparse_hp_nr_ranges, sparse_hp_ram_check_name());
	return 0;

out_unregister_bus:
	bus_unregister_notifier(sparse_hp_memory_bus, &sparse_hp_memory_bus_nb);
	sparse_hp_del_all();
out_put_sections:
	kobject_put(sparse_hp_sections_kobj);
out_put_root:
	kobject_put(sparse_hp_root_kobj);
out_unregister_memory:
	unregister_memory_notifier(&sparse_hp_memory_nb);
out_free:
	kfree_const(sparse_hp_resource_name);
	sparse_hp_events_free();
out_ram_check:
	sparse_hp_ram_check_exit();
	return ret;
}

/*
 * Teardown order: debugfs readers and probe/remove writers are drained
 * first, then what probe added is removed (our notifiers still watch),
 * then the section directories go (draining isolate/release writers),
 * isolated sections are given back, and only then the memory notifier,
 * which an offline of an isolated section still needs, is unregistered.
 */
static void __exit sparse_hotplug_exit(void)
{
	bool all_removed;

	debugfs_remove_recursive(sparse_hp_debugfs);
	/* A held test reference would make a probed block's removal fail. */
	sparse_hp_hold_ref_drop();
	sysfs_remove_group(sparse_hp_root_kobj, &sparse_hp_root_group);
	all_removed = sparse_hp_remove_all();
	/*
	 * Directories go before the bus notifier: until they are gone, a
	 * block removal waits in BUS_NOTIFY_DEL_DEVICE for their readers, so
	 * no reader classifies a memmap that is being freed. Blocks added
	 * meanwhile get no directory (sparse_hp_dying).
	 */
	mutex_lock(&sparse_hp_lock);
	sparse_hp_dying = true;
	mutex_unlock(&sparse_hp_lock);
	sparse_hp_del_all();
	bus_unregister_notifier(sparse_hp_memory_bus, &sparse_hp_memory_bus_nb);
	xa_destroy(&sparse_hp_sections);
	sparse_hp_release_all();
	unregister_memory_notifier(&sparse_hp_memory_nb);
	kobject_put(sparse_hp_sections_kobj);
	kobject_put(sparse_hp_root_kobj);
	sparse_hp_events_free();
	sparse_hp_ram_check_exit();
	/*
	 * Else /proc/iomem still names memory we could not remove: the name
	 * stays, and kmemleak is told it is kept on purpose (a later removal
	 * drops the last pointer to it).
	 */
	if (all_removed)
		kfree_const(sparse_hp_resource_name);
	else
		kmemleak_not_leak(sparse_hp_resource_name);
}

module_init(sparse_hotplug_init);
module_exit(sparse_hotplug_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("memhp-lab");
MODULE_DESCRIPTION("Memory sections as sysfs objects: state, controls, offline report, hidden RAM probe, event log");
