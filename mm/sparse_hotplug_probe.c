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
#include <linux/kernfs.h>
#include <linux/gfp.h>
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
 * How probe tells that a block is firmware RAM (ram_check): System RAM in
 * the memory map as the firmware gave it, before mem= and memmap= trimmed
 * the kernel's own (e820 on x86), read from one of two places:
 *
 * - "e820": the firmware's e820 table itself, through
 *   e820__mapped_raw_any(), where it is exported to every module
 *   (MEMHP_HAVE_E820_RAW_EXPORT);
 * - "firmware_memmap": elsewhere (it may be exported to the KVM modules
 *   only), the memory map the kernel keeps for kexec and shows in
 *   /sys/firmware/memmap (drivers/firmware/memmap.c,
 *   CONFIG_FIRMWARE_MEMMAP; on x86 made from e820_table_kexec: the
 *   firmware's table less what the kernel reserved at boot, untrimmed by
 *   mem=), its System RAM entries read in-kernel at load
 *   (sparse_hp_fw_memmap_snapshot(), sparse_hp_fw_ram);
 * - "none": neither (the memmap kset not found, or unreadable, at load);
 *   probe then fails with EOPNOTSUPP.
 *
 * Chosen at load; read-only afterwards, so read without a lock.
 */
enum sparse_hp_ram_check {
	SPARSE_HP_RAM_CHECK_NONE,
	SPARSE_HP_RAM_CHECK_E820,
	SPARSE_HP_RAM_CHECK_FW_MEMMAP,
};

static const char * const sparse_hp_ram_check_names[] = {
	[SPARSE_HP_RAM_CHECK_NONE]	= "none",
	[SPARSE_HP_RAM_CHECK_E820]	= "e820",
	[SPARSE_HP_RAM_CHECK_FW_MEMMAP]	= "firmware_memmap",
};

static enum sparse_hp_ram_check sparse_hp_ram_check;

/* [start, end], inclusive as the firmware map keeps it. */
struct sparse_hp_fw_range {
	u64 start, end;
};

/*
 * "firmware_memmap": the hidden RAM of /sys/firmware/memmap as the module
 * found it at load, and how many ranges: the memory blocks of its System
 * RAM entries that no System RAM resource held then
 * (sparse_hp_fw_hidden()). A snapshot, not the live map: removing memory
 * edits the map (try_remove_memory() calls firmware_map_remove() for the
 * removed range, driver-managed memory included), so after probe's own
 * remove of a block that an entry matched exactly the live map would no
 * longer call that hidden RAM RAM. A memory device's range is never in
 * it: one present at load held its range (a System RAM resource), one
 * plugged later added its entry after the snapshot. The map itself keeps
 * such a removal until reboot: a later load of the module, like kexec,
 * no longer sees a block whose entry probe's remove deleted. Written at
 * load, read-only afterwards.
 */
static struct sparse_hp_fw_range *sparse_hp_fw_ram;
static unsigned int sparse_hp_fw_nr_ram;

static int sparse_hp_fw_memmap_snapshot(struct kset *kset);

/*
 * Finds /sys/firmware/memmap: drivers/firmware/memmap.c makes it with
 * kset_create_and_add() under firmware_kobj, never removes it, and adds
 * one kobject per map entry to it. As for the memory bus
 * (sparse_hp_find_memory_bus()), a sysfs directory's kernfs node carries
 * its kobject. Returns the kset with a reference, or NULL.
 */
static struct kset *sparse_hp_find_fw_memmap(void)
{
	struct kobject *kobj = NULL;
	struct kernfs_node *kn;

	if (!firmware_kobj)
		return NULL;
	kn = kernfs_find_and_get(firmware_kobj->sd, "memmap");
	if (!kn)
		return NULL;
	if (kernfs_type(kn) == KERNFS_DIR && kn->priv)
		kobj = kobject_get_unless_zero(kn->priv);
	kernfs_put(kn);
	return kobj ? to_kset(kobj) : NULL;
}

/* Module init: choose the RAM check. Always succeeds. */
void sparse_hp_ram_check_init(void)
{
	struct kset *kset;
	int ret;

	sparse_hp_ram_check = SPARSE_HP_RAM_CHECK_NONE;
	if (memhp_e820_raw_exported) {
		sparse_hp_ram_check = SPARSE_HP_RAM_CHECK_E820;
		return;
	}
	kset = sparse_hp_find_fw_memmap();
	if (!kset)
		return;
	ret = sparse_hp_fw_memmap_snapshot(kset);
	kset_put(kset);
	if (ret) {
		pr_warn("firmware memory map unreadable (%d): probe answers EOPNOTSUPP\n", ret);
		return;
	}
	sparse_hp_ram_check = SPARSE_HP_RAM_CHECK_FW_MEMMAP;
}

const char *sparse_hp_ram_check_name(void)
{
	return sparse_hp_ram_check_names[sparse_hp_ram_check];
}

/* Module exit, and init's error path. */
void sparse_hp_ram_check_exit(void)
{
	kfree(sparse_hp_fw_ram);
	sparse_hp_fw_ram = NULL;
	sparse_hp_fw_nr_ram = 0;
}

/*
 * Shows attribute @name of the firmware map entry @kobj into @buf, a page,
 * NUL-terminated. Its kobj_type's sysfs_ops->show is what a read of
 * /sys/firmware/memmap/N/@name calls; called directly, at load, it needs
 * no file of ours open and no path lookup. It reads only the entry, which
 * the caller's reference on @kobj keeps alive. -EIO: no such
 * attribute, or an empty or overlong value.
 */
static int sparse_hp_fw_entry_show(struct kobject *kobj, const char *name,
				   char *buf)
{
	const struct kobj_type *ktype = get_ktype(kobj);
	const struct attribute_group **grp;
	struct attribute *const *attr;
	ssize_t len;

	if (!ktype || !ktype->sysfs_ops || !ktype->sysfs_ops->show ||
	    !ktype->default_groups)
		return -EIO;
	for (grp = ktype->default_groups; *grp; grp++)
		for (attr = (*grp)->attrs; attr && *attr; attr++) {
			if (strcmp((*attr)->name, name))
				continue;
			len = ktype->sysfs_ops->show(kobj, *attr, buf);
			if (len <= 0 || len >= PAGE_SIZE)
				return -EIO;
			buf[len] = '\0';
			return 0;
		}
	return -EIO;
}

/*
 * Reads the firmware map entry @kobj, using @buf (a page): 1 if it is
 * System RAM (its range then in @r), 0 if of another type, -EIO if
 * unreadable.
 */
static int sparse_hp_fw_entry_ram(struct kobject *kobj, char *buf,
				  struct sparse_hp_fw_range *r)
{
	if (sparse_hp_fw_entry_show(kobj, "type", buf))
		return -EIO;
	if (!sysfs_streq(buf, "System RAM"))
		return 0;
	if (sparse_hp_fw_entry_show(kobj, "start", buf) ||
	    kstrtou64(buf, 0, &r->start) ||
	    sparse_hp_fw_entry_show(kobj, "end", buf) ||
	    kstrtou64(buf, 0, &r->end) || r->end < r->start)
		return -EIO;
	return 1;
}

/* Is [start, end) covered by @nr inclusive ranges (overlapping or not)? */
static bool sparse_hp_fw_covered(const struct sparse_hp_fw_range *r,
				 unsigned int nr, u64 start, u64 end)
{
	u64 cur = start;
	unsigned int i;

	while (cur < end) {
		for (i = 0; i < nr; i++)
			if (r[i].start <= cur && cur <= r[i].end)
				break;
		if (i == nr)
			return false;
		if (r[i].end == U64_MAX)
			return true;
		/* Grows on each pass: r[i].end >= cur. */
		cur = r[i].end + 1;
	}
	return true;
}

/*
 * The memory blocks of the @nr inclusive ranges @r that no System RAM
 * resource intersects now (boot RAM, a memory device's, a block that an
 * earlier load of this module left online all do), merged where adjacent,
 * into @out, at most @cap of them (a NULL @out only counts). Returns the
 * number of ranges found. A memory hot-add between a count and a fill can
 * only split or shrink what is hidden: past @cap ranges are dropped, so
 * the snapshot may miss hidden RAM (probe: ENXIO), never claim more.
 */
static unsigned int sparse_hp_fw_hidden(const struct sparse_hp_fw_range *r,
					unsigned int nr,
					struct sparse_hp_fw_range *out,
					unsigned int cap)
{
	u64 bs = memory_block_size_bytes();
	unsigned int i, n = 0;
	u64 b, next = 0;

	for (i = 0; i < nr; i++) {
		if (r[i].start > U64_MAX - (bs - 1))
			continue;
		for (b = ALIGN(r[i].start, bs); b <= r[i].end && r[i].end - b >= bs - 1;
		     b += bs) {
			if (region_intersects(b, bs, IORESOURCE_SYSTEM_RAM,
					      IORES_DESC_NONE) == REGION_DISJOINT) {
				if (!n || b != next) {
					if (out && n < cap)
						out[n].start = b;
					n++;
				}
				if (out && n <= cap)
					out[n - 1].end = b + bs - 1;
				next = b + bs;
			}
			if (b > U64_MAX - bs)
				break;
		}
	}
	return n;
}

/* Retries when a hot-add outgrew the snapshot between count and take. */
#define SPARSE_HP_FW_TRIES	4

/*
 * Takes the System RAM entries of the firmware memory map the kernel keeps
 * (/sys/firmware/memmap, the kset @kset) into sparse_hp_fw_ram, at load.
 * Entries come and go with memory hot-add and removal. The kset's list_lock (a spinlock) guards its
 * list: under it each entry is taken with a reference, so that it
 * outlives a concurrent removal, and it is read and put after the lock is
 * dropped (show() is another file's code, free to sleep).
 * 0, or -ENOMEM; -EIO: an entry could not be read; -EAGAIN: the map
 * kept growing while it was taken.
 */
static int sparse_hp_fw_memmap_snapshot(struct kset *kset)
{
	struct sparse_hp_fw_range *ram = NULL, *hidden;
	unsigned int nr_hidden;
	struct kobject **objs = NULL, *k;
	unsigned int n, cap, i, nr_ram = 0, tries;
	bool full;
	char *buf;
	int ret;

	for (tries = 0; tries < SPARSE_HP_FW_TRIES; tries++) {
		cap = 0;
		spin_lock(&kset->list_lock);
		list_for_each_entry(k, &kset->list, entry)
			cap++;
		spin_unlock(&kset->list_lock);
		/* Room for a few hot-adds between the count and the take. */
		cap += 4;
		objs = kcalloc(cap, sizeof(*objs), GFP_KERNEL);
		if (!objs)
			return -ENOMEM;
		n = 0;
		full = false;
		spin_lock(&kset->list_lock);
		list_for_each_entry(k, &kset->list, entry) {
			if (n == cap) {
				full = true;
				break;
			}
			/* Zero: being released, i.e. removed from the map. */
			if (kobject_get_unless_zero(k))
				objs[n++] = k;
		}
		spin_unlock(&kset->list_lock);
		if (!full)
			break;
		for (i = 0; i < n; i++)
			kobject_put(objs[i]);
		kfree(objs);
		objs = NULL;
	}
	if (!objs)
		return -EAGAIN;

	ret = -ENOMEM;
	buf = (char *)__get_free_page(GFP_KERNEL);
	ram = kcalloc(n ? n : 1, sizeof(*ram), GFP_KERNEL);
	if (!buf || !ram)
		goto out;
	for (i = 0; i < n; i++) {
		ret = sparse_hp_fw_entry_ram(objs[i], buf, &ram[nr_ram]);
		if (ret < 0) {
			pr_warn_once("firmware memory map entry %s unreadable\n",
				     kobject_name(objs[i]));
			goto out;
		}
		nr_ram += ret;
	}
	ret = -ENOMEM;
	nr_hidden = sparse_hp_fw_hidden(ram, nr_ram, NULL, 0);
	hidden = kcalloc(nr_hidden ? nr_hidden : 1, sizeof(*hidden), GFP_KERNEL);
	if (!hidden)
		goto out;
	nr_hidden = min(nr_hidden, sparse_hp_fw_hidden(ram, nr_ram, hidden, nr_hidden));
	sparse_hp_fw_ram = hidden;
	sparse_hp_fw_nr_ram = nr_hidden;
	ret = 0;
out:
	for (i = 0; i < n; i++)
		kobject_put(objs[i]);
	kfree(objs);
	kfree(ram);
	free_page((unsigned long)buf);
	return ret;
}

/*
 * Is [start, end) System RAM in the firmware's e820 table ("e820")?
 * Asked of the table page by page, so that adjacent RAM entries count as
 * one. 1: RAM; 0: not RAM; -EOPNOTSUPP where the lookup is not exported
 * to us (never chosen there).
 */
static int sparse_hp_e820_ram(u64 start, u64 end)
{
#ifdef MEMHP_HAVE_E820_RAW_EXPORT
	u64 p;

	for (p = start; p < end; p += PAGE_SIZE)
		if (!e820__mapped_raw_any(p, p + PAGE_SIZE, E820_TYPE_RAM))
			return 0;
	return 1;
#else
	return -EOPNOTSUPP;
#endif
}

/*
 * Is [start, end) System RAM in the firmware's memory map, by the
 * ram_check chosen at load? 1: RAM; 0: not RAM; -EOPNOTSUPP: "none".
 */
static int sparse_hp_firmware_ram(u64 start, u64 end)
{
	switch (sparse_hp_ram_check) {
	case SPARSE_HP_RAM_CHECK_E820:
		return sparse_hp_e820_ram(start, end);
	case SPARSE_HP_RAM_CHECK_FW_MEMMAP:
		return sparse_hp_fw_covered(sparse_hp_fw_ram, sparse_hp_fw_nr_ram, start, end);
	default:
		return -EOPNOTSUPP;
	}
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
 * already; -ENXIO: not firmware RAM; -EOPNOTSUPP: ram_check is "none";
 * -ENOMEM, or what add_memory_driver_managed() says.
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
	ret = sparse_hp_firmware_ram(phys, end);
	if (ret <= 0) {
		if (!ret)
			ret = -ENXIO;
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

/* How probe tells firmware RAM: e820, firmware_memmap or none. */
static ssize_t ram_check_show(struct kobject *kobj, struct kobj_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%s\n", sparse_hp_ram_check_name());
}

struct kobj_attribute sparse_hp_probe_attr = __ATTR_WO(probe);
struct kobj_attribute sparse_hp_remove_attr = __ATTR_WO(remove);
struct kobj_attribute sparse_hp_probed_attr = __ATTR_RO(probed);
struct kobj_attribute sparse_hp_ram_check_attr = __ATTR_RO(ram_check);
