// SPDX-License-Identifier: GPL-2.0
/*
 * sparse_hotplug: memory sections as sysfs objects.
 *
 * The core exposes memory *blocks* (/sys/devices/system/memory/memoryN, one
 * block is several 128 MiB sections on big machines); this module exposes
 * every present *section*:
 *
 *   /sys/kernel/sparse_hotplug/section_size_bytes   hex, like block_size_bytes
 *   /sys/kernel/sparse_hotplug/block_size_bytes
 *   /sys/kernel/sparse_hotplug/sections/sectionN/
 *	start_pfn nr_pages block state zone nid
 *
 * Keeping the set of directories true: values are computed on each read from
 * mem_section and the memmap, so onlining and offlining need no bookkeeping.
 * Hot-add and removal create and delete memory block devices, and we watch
 * those through a notifier on the memory bus (BUS_NOTIFY_ADD_DEVICE and
 * BUS_NOTIFY_DEL_DEVICE). The bus itself (memory_subsys) is not exported, so
 * we find it from one memory block device that exists at load: its sysfs
 * directory node (kernfs) leads to its kobject, the device, and dev->bus.
 *
 * Locking: shp_lock (a mutex) protects shp_sections. The bus notifier runs
 * with the device hotplug lock and mem_hotplug_lock held; it takes shp_lock
 * and adds or removes kobjects. Removing a kobject waits for readers of its
 * attributes, so attribute show() functions must never take shp_lock or
 * anything that memory hotplug holds (get_online_mems(), the device hotplug
 * lock): they only read mem_section flags and struct pages of online
 * sections, racily, which is what /proc/zoneinfo-style readers do too.
 * A section's memmap is freed only after its block device is deleted, which
 * is after our DEL handler removed its directory and drained its readers.
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
#include <linux/debugfs.h>

static bool selftest_warn;
module_param(selftest_warn, bool, 0444);
MODULE_PARM_DESC(selftest_warn,
		 "Create debugfs sparse_hotplug/provoke_warning, which WARNs when written (tests that the VM runner catches kernel warnings)");

/* One directory of /sys/kernel/sparse_hotplug/sections. */
struct shp_section {
	struct kobject kobj;
	unsigned long nr;		/* section number */
};

#define to_shp_section(k) container_of(k, struct shp_section, kobj)

static struct kobject *shp_root_kobj;		/* /sys/kernel/sparse_hotplug */
static struct kobject *shp_sections_kobj;	/* .../sections */
static struct dentry *shp_debugfs;

/* Protects shp_sections (section number -> struct shp_section). */
static DEFINE_MUTEX(shp_lock);
static DEFINE_XARRAY(shp_sections);

static unsigned long shp_sections_per_block;
static struct bus_type *shp_memory_bus;

static unsigned long shp_block_of(unsigned long nr)
{
	return nr / shp_sections_per_block;
}

/*
 * The online page at @pfn or NULL. pfn_to_online_page() checks that the
 * section is online and the subsection valid; its memmap is initialized.
 */
static struct page *shp_online_page(unsigned long pfn)
{
	return pfn_to_online_page(pfn);
}

/* ---- per-section attributes ------------------------------------------ */

static ssize_t start_pfn_show(struct kobject *kobj, struct kobj_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%#lx\n", section_nr_to_pfn(to_shp_section(kobj)->nr));
}

/* Pages of the section with a memmap: subsections count for hot-added ones. */
static ssize_t nr_pages_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	unsigned long pfn = section_nr_to_pfn(to_shp_section(kobj)->nr);
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
	return sysfs_emit(buf, "%lu\n", shp_block_of(to_shp_section(kobj)->nr));
}

static ssize_t state_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	struct mem_section *ms = __nr_to_section(to_shp_section(kobj)->nr);

	if (!ms || !present_section(ms))
		return sysfs_emit(buf, "removed\n");
	return sysfs_emit(buf, "%s\n", online_section(ms) ? "online" : "offline");
}

/*
 * The zones of the section's online pages, space separated in address
 * order ("DMA DMA32" for the first section of a PC), or "none" when the
 * section is offline.
 */
static ssize_t zone_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	unsigned long pfn = section_nr_to_pfn(to_shp_section(kobj)->nr);
	unsigned long end = pfn + PAGES_PER_SECTION;
	struct zone *last = NULL;
	int len = 0;

	for (; pfn < end; pfn += pageblock_nr_pages) {
		struct page *page = shp_online_page(pfn);
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
	unsigned long pfn = section_nr_to_pfn(to_shp_section(kobj)->nr);
	unsigned long end = pfn + PAGES_PER_SECTION;

	for (; pfn < end; pfn += pageblock_nr_pages) {
		struct page *page = shp_online_page(pfn);

		if (page)
			return sysfs_emit(buf, "%d\n", page_to_nid(page));
	}
	pfn = section_nr_to_pfn(to_shp_section(kobj)->nr);
	return sysfs_emit(buf, "%d\n", memory_add_physaddr_to_nid(PFN_PHYS(pfn)));
}

static struct kobj_attribute start_pfn_attr = __ATTR_RO(start_pfn);
static struct kobj_attribute nr_pages_attr = __ATTR_RO(nr_pages);
static struct kobj_attribute block_attr = __ATTR_RO(block);
static struct kobj_attribute state_attr = __ATTR_RO(state);
static struct kobj_attribute zone_attr = __ATTR_RO(zone);
static struct kobj_attribute nid_attr = __ATTR_RO(nid);

static struct attribute *shp_section_attrs[] = {
	&start_pfn_attr.attr,
	&nr_pages_attr.attr,
	&block_attr.attr,
	&state_attr.attr,
	&zone_attr.attr,
	&nid_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(shp_section);

static void shp_section_release(struct kobject *kobj)
{
	kfree(to_shp_section(kobj));
}

static const struct kobj_type shp_section_ktype = {
	.release	= shp_section_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= shp_section_groups,
};

/* ---- the set of sections --------------------------------------------- */

static int shp_add_section(unsigned long nr)
{
	struct shp_section *sec;
	int ret;

	lockdep_assert_held(&shp_lock);
	if (xa_load(&shp_sections, nr))
		return 0;

	sec = kzalloc(sizeof(*sec), GFP_KERNEL);
	if (!sec)
		return -ENOMEM;
	sec->nr = nr;
	ret = kobject_init_and_add(&sec->kobj, &shp_section_ktype,
				   shp_sections_kobj, "section%lu", nr);
	if (ret)
		goto out_put;
	ret = xa_err(xa_store(&shp_sections, nr, sec, GFP_KERNEL));
	if (ret)
		goto out_put;
	kobject_uevent(&sec->kobj, KOBJ_ADD);
	return 0;

out_put:
	kobject_put(&sec->kobj);	/* frees sec through the release */
	return ret;
}

static void shp_del_section(unsigned long nr)
{
	struct shp_section *sec;

	lockdep_assert_held(&shp_lock);
	sec = xa_erase(&shp_sections, nr);
	if (sec)
		kobject_put(&sec->kobj);
}

/* Adds the present sections of [first, first + nr). */
static int shp_add_present(unsigned long first, unsigned long nr)
{
	unsigned long i;
	int ret;

	lockdep_assert_held(&shp_lock);
	for (i = first; i < first + nr && i < NR_MEM_SECTIONS; i++) {
		if (!present_section_nr(i))
			continue;
		ret = shp_add_section(i);
		if (ret)
			return ret;
	}
	return 0;
}

/* Adds every present section; roots never allocated are skipped whole. */
static int shp_scan_all(void)
{
	unsigned long nr;
	int ret;

	lockdep_assert_held(&shp_lock);
	for (nr = 0; nr < NR_MEM_SECTIONS; nr += SECTIONS_PER_ROOT) {
		if (!mem_section || !mem_section[SECTION_NR_TO_ROOT(nr)])
			continue;
		ret = shp_add_present(nr, SECTIONS_PER_ROOT);
		if (ret)
			return ret;
		cond_resched();
	}
	return 0;
}

static unsigned long shp_count_sections(void)
{
	struct shp_section *sec;
	unsigned long nr, count = 0;

	xa_for_each(&shp_sections, nr, sec)
		count++;
	return count;
}

static void shp_del_all(void)
{
	struct shp_section *sec;
	unsigned long nr;

	mutex_lock(&shp_lock);
	xa_for_each(&shp_sections, nr, sec)
		shp_del_section(nr);
	mutex_unlock(&shp_lock);
}

/*
 * Memory block devices come and go with hot-add and removal. Sections are
 * already present when a block device is added and still present when it
 * is deleted (the memmap is torn down afterwards).
 */
static int shp_memory_bus_notify(struct notifier_block *nb,
				 unsigned long action, void *data)
{
	struct device *dev = data;
	unsigned long first = dev->id * shp_sections_per_block;
	unsigned long i;

	switch (action) {
	case BUS_NOTIFY_ADD_DEVICE:
		mutex_lock(&shp_lock);
		if (shp_add_present(first, shp_sections_per_block))
			pr_warn("no sysfs directories for block %u: out of memory\n",
				dev->id);
		mutex_unlock(&shp_lock);
		break;
	case BUS_NOTIFY_DEL_DEVICE:
		mutex_lock(&shp_lock);
		for (i = first; i < first + shp_sections_per_block; i++)
			shp_del_section(i);
		mutex_unlock(&shp_lock);
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block shp_memory_bus_nb = {
	.notifier_call = shp_memory_bus_notify,
};

/*
 * Finds the memory bus through the first present section's block device:
 * /sys/devices/system is the grandparent of CPU 0's device, and each
 * directory's kernfs node carries its kobject. Boot memory blocks are not
 * removed while we look (their removal needs an ACPI eject of boot RAM).
 */
static struct bus_type *shp_find_memory_bus(void)
{
	struct kernfs_node *memory_kn, *block_kn;
	struct bus_type *bus = NULL;
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
	snprintf(name, sizeof(name), "memory%lu", shp_block_of(nr));

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

static struct attribute *shp_root_attrs[] = {
	&section_size_bytes_attr.attr,
	&block_size_bytes_attr.attr,
	NULL,
};

static const struct attribute_group shp_root_group = {
	.attrs = shp_root_attrs,
};

/* ---- debugfs ------------------------------------------------------------ */

static ssize_t shp_provoke_warning_write(struct file *file,
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

static const struct file_operations shp_provoke_warning_fops = {
	.owner	= THIS_MODULE,
	.write	= shp_provoke_warning_write,
	.llseek	= noop_llseek,
};

/* ---- module ------------------------------------------------------------- */

static int __init sparse_hotplug_init(void)
{
	int ret;

	shp_sections_per_block = memory_block_size_bytes() >> SECTION_SIZE_BITS;
	if (!shp_sections_per_block)
		return -EINVAL;

	shp_memory_bus = shp_find_memory_bus();
	if (!shp_memory_bus) {
		pr_err("memory block devices not found in /sys/devices/system/memory\n");
		return -ENODEV;
	}

	shp_root_kobj = kobject_create_and_add("sparse_hotplug", kernel_kobj);
	if (!shp_root_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(shp_root_kobj, &shp_root_group);
	if (ret)
		goto out_put_root;
	shp_sections_kobj = kobject_create_and_add("sections", shp_root_kobj);
	if (!shp_sections_kobj) {
		ret = -ENOMEM;
		goto out_put_root;
	}

	/*
	 * Watch first, then scan: a block added in between is seen twice,
	 * which shp_add_section() tolerates.
	 */
	ret = bus_register_notifier(shp_memory_bus, &shp_memory_bus_nb);
	if (ret)
		goto out_put_sections;
	mutex_lock(&shp_lock);
	ret = shp_scan_all();
	mutex_unlock(&shp_lock);
	if (ret)
		goto out_unregister;

	shp_debugfs = debugfs_create_dir("sparse_hotplug", NULL);
	if (selftest_warn)
		debugfs_create_file("provoke_warning", 0200, shp_debugfs, NULL,
				    &shp_provoke_warning_fops);

	pr_info("%lu sections of %lu MiB, %lu per memory block\n",
		shp_count_sections(),
		(PAGES_PER_SECTION << PAGE_SHIFT) >> 20, shp_sections_per_block);
	return 0;

out_unregister:
	bus_unregister_notifier(shp_memory_bus, &shp_memory_bus_nb);
	shp_del_all();
out_put_sections:
	kobject_put(shp_sections_kobj);
out_put_root:
	kobject_put(shp_root_kobj);
	return ret;
}

static void __exit sparse_hotplug_exit(void)
{
	debugfs_remove_recursive(shp_debugfs);
	bus_unregister_notifier(shp_memory_bus, &shp_memory_bus_nb);
	shp_del_all();
	xa_destroy(&shp_sections);
	kobject_put(shp_sections_kobj);
	kobject_put(shp_root_kobj);
}

module_init(sparse_hotplug_init);
module_exit(sparse_hotplug_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("memhp-lab");
MODULE_DESCRIPTION("Memory sections as sysfs objects: state, zone, node, block");
