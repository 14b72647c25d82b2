// SPDX-License-Identifier: GPL-2.0
/*
 * buddy_split: the OLS 2005 "Hotplug Memory Redux" allocator (a bitmap-free
 * buddy with free areas split by reclaim type, global HOTPLUG/PINNED lists
 * and a run-time fallback policy) over an arena of real page frames.
 *
 * At load the module takes nr_sections (8) naturally aligned chunks of
 * section_mb (16) MiB from the kernel with alloc_contig_range() (ZONE_MOVABLE
 * first, then ZONE_NORMAL, then ZONE_DMA32, highest pfns first); slots
 * 0..pinned_sections-1 (2) are "pinned" (non-removable), the others
 * "hotplug".
 * buddy_core.c manages the frames with its own descriptors per section; the
 * frames stay allocated to this module until unload, which always returns
 * every one of them (removing a section only takes it out of the allocator).
 *
 *   /dev/buddy_split                 ioctls, <linux/buddy_split.h>
 *   /sys/class/misc/buddy_split/     policy, mode, kreclaim_home (rw), geometry (ro)
 *   /sys/kernel/debug/buddy_split/   sections, free_lists, stats, check
 *
 * For the real-kernel comparison KERNEL_HOLD takes pages from the kernel's
 * own allocator (unmovable or reclaimable) and holds them until released.
 *
 * Locking: buddy_split_lock (a mutex) serialises every access to the arena,
 * from ioctls, sysfs and debugfs; long operations (WORKLOAD, BENCH) hold it
 * and reschedule every 1024 steps, stopping on a fatal signal.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/uaccess.h>
#include <linux/mutex.h>
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <linux/memory_hotplug.h>
#include <linux/memory.h>
#include <linux/spinlock.h>
#include <linux/jiffies.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/ktime.h>
#include <linux/sched/signal.h>
#include <linux/buddy_split.h>
#include <memhp_compat.h>

#include "buddy_core.h"

static_assert(BUDDY_SPLIT_MAX_ORDER == BS_MAX_ORDER);
static_assert(BUDDY_SPLIT_NR_TYPES == BS_NR_TYPES);
static_assert(BUDDY_SPLIT_KERNEL_NONRECLAIMABLE == BS_KERNEL_NONRECLAIMABLE);
static_assert(BUDDY_SPLIT_MODE_BITMAP == BS_MODE_BITMAP);
static_assert(BUDDY_SPLIT_POLICY_FALLBACK == BS_POLICY_FALLBACK);

static unsigned int nr_sections = 8;
module_param(nr_sections, uint, 0444);
MODULE_PARM_DESC(nr_sections, "Arena sections taken from the kernel (1..256, default 8)");

static unsigned int section_mb = 16;
module_param(section_mb, uint, 0444);
MODULE_PARM_DESC(section_mb, "Section size in MiB, a power of two, 4..1024 (default 16)");

static unsigned int pinned_sections = 2;
module_param(pinned_sections, uint, 0444);
MODULE_PARM_DESC(pinned_sections, "Slots 0..N-1 are pinned, the rest hotplug (default 2)");

static DEFINE_MUTEX(buddy_split_lock);
static struct bs_arena *bs_split_arena;	/* protected by buddy_split_lock */
static unsigned long *bs_chunk_pfn;	/* base pfn of each slot's frames */
static unsigned long bs_chunk_pages;	/* pages per slot */
/*
 * The frames of a slot are one unmovable allocation until unload, and
 * bs_take_chunk() prefers ZONE_MOVABLE. offline_pages() trusts ZONE_MOVABLE
 * to hold only movable pages (has_unmovable_pages() does not look there),
 * isolates such a block and would then retry migrating until a signal:
 * our frames never move. bs_memory_notify() therefore refuses
 * MEM_GOING_OFFLINE of a block that overlaps a slot (notifier_from_errno(),
 * as virtio_mem does), and that offline fails with -EBUSY at once.
 *
 * bs_chunk_lock protects bs_chunk_pfn[], bs_offlining and bs_taint against
 * the notifier. bs_take_chunk() publishes a slot's pfn before
 * alloc_contig_range() starts on it, so an offline that isolates the range
 * after that finds the slot when it notifies. An offline that isolated the
 * range first makes alloc_contig_range() fail, and that failure ends with
 * undo_isolate_page_range() over the whole range (6.1 and 6.12), which
 * also un-isolates the offline's pageblocks: test_pages_isolated() would
 * then fail for that offline until a signal. Hence:
 *  - bs_offlining: the range between an offline's MEM_GOING_OFFLINE and
 *    its MEM_OFFLINE/MEM_CANCEL_OFFLINE (offlines are serialized by
 *    mem_hotplug_lock: one at a time); bs_take_chunk() skips candidates that
 *    overlap it, so it never undoes the isolation of an offline that is
 *    past its notifier;
 *  - bs_taint: the span of the candidates whose alloc_contig_range()
 *    failed, for BS_TAINT_SECS after the last failure; an offline that
 *    isolated before and notifies after such a failure is refused once
 *    (-EBUSY) and the taint cleared. Between its isolation and its
 *    MEM_GOING_OFFLINE an offline does next to nothing, so the window is
 *    far shorter; an offline meeting a stale taint gets one needless EBUSY.
 * A slot is cleared only after its frames are free again.
 */
static DEFINE_SPINLOCK(bs_chunk_lock);
static unsigned long bs_offlining[2];	/* [start, end) pfns, or 0, 0 */
static unsigned long bs_taint[2];	/* [start, end) pfns, or 0, 0 */
static unsigned long bs_taint_until;	/* jiffies */
#define BS_TAINT_SECS	10
static struct dentry *bs_debug_dir;
static LIST_HEAD(bs_held_pages);	/* KERNEL_HOLD pages, by page->lru */
static unsigned long bs_nr_held;	/* protected by buddy_split_lock */

static unsigned long bs_arena_section_pages(void)
{
	return bs_section_pages(bs_split_arena);
}

/* May [pfn, pfn + n) of @zone be asked of alloc_contig_range()? */
static bool bs_chunk_usable(struct zone *zone, unsigned long pfn,
			    unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i += pageblock_nr_pages) {
		struct page *page = pfn_to_online_page(pfn + i);

		if (!page || page_zone(page) != zone || PageReserved(page) ||
		    PageHuge(page))
			return false;
	}
	return true;
}

static bool bs_overlaps(const unsigned long *r, unsigned long pfn,
			unsigned long n)
{
	return r[0] < pfn + n && pfn < r[1];
}

static void bs_set_chunk(unsigned int slot, unsigned long pfn)
{
	spin_lock(&bs_chunk_lock);
	bs_chunk_pfn[slot] = pfn;
	spin_unlock(&bs_chunk_lock);
}

/* Publish @pfn for @slot unless an offline in flight overlaps it. */
static bool bs_publish_chunk(unsigned int slot, unsigned long pfn,
			     unsigned long n)
{
	bool ok;

	spin_lock(&bs_chunk_lock);
	ok = !bs_overlaps(bs_offlining, pfn, n);
	if (ok)
		bs_chunk_pfn[slot] = pfn;
	spin_unlock(&bs_chunk_lock);
	return ok;
}

/* alloc_contig_range() failed on [pfn, pfn + n): unpublish, taint. */
static void bs_fail_chunk(unsigned int slot, unsigned long pfn,
			  unsigned long n)
{
	spin_lock(&bs_chunk_lock);
	bs_chunk_pfn[slot] = 0;
	if (bs_taint[0] == bs_taint[1]) {
		bs_taint[0] = pfn;
		bs_taint[1] = pfn + n;
	} else {
		bs_taint[0] = min(bs_taint[0], pfn);
		bs_taint[1] = max(bs_taint[1], pfn + n);
	}
	bs_taint_until = jiffies + BS_TAINT_SECS * HZ;
	spin_unlock(&bs_chunk_lock);
}

/* Take one aligned chunk of @n pages from the kernel for @slot; 0 or -errno. */
static int bs_take_chunk(unsigned int slot, unsigned long n)
{
	static const enum zone_type order[] = {
		ZONE_MOVABLE, ZONE_NORMAL, ZONE_DMA32,
	};
	unsigned int i;
	int nid;

	for (i = 0; i < ARRAY_SIZE(order); i++) {
		for_each_online_node(nid) {
			struct zone *zone = &NODE_DATA(nid)->node_zones[order[i]];
			unsigned long start, pfn;

			if (!populated_zone(zone))
				continue;
			start = ALIGN(zone->zone_start_pfn, n);
			pfn = ALIGN_DOWN(zone_end_pfn(zone), n);
			while (pfn >= start + n) {
				pfn -= n;
				if (fatal_signal_pending(current))
					return -EINTR;
				if (!bs_chunk_usable(zone, pfn, n))
					continue;
				if (!bs_publish_chunk(slot, pfn, n))
					continue;	/* see bs_chunk_lock */
				if (!memhp_alloc_contig_range(pfn, pfn + n,
							      GFP_KERNEL | __GFP_NOWARN))
					return 0;
				bs_fail_chunk(slot, pfn, n);
				cond_resched();
			}
		}
	}
	return -ENOMEM;
}

static void bs_release_chunks(void)
{
	unsigned int i;

	for (i = 0; i < nr_sections; i++) {
		if (bs_chunk_pfn[i])
			free_contig_range(bs_chunk_pfn[i], bs_chunk_pages);
		bs_set_chunk(i, 0);
	}
}

static int bs_tick(void *arg)
{
	cond_resched();
	return fatal_signal_pending(current);
}

static long bs_ioctl_alloc(void __user *uarg)
{
	struct buddy_split_alloc a;
	unsigned long pfn;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved || a.type >= BS_NR_TYPES ||
	    a.order >= BS_MAX_ORDER)
		return -EINVAL;
	ret = bs_alloc(bs_split_arena, a.type, a.order, &pfn);
	if (ret)
		return ret;
	a.pfn = pfn;
	if (copy_to_user(uarg, &a, sizeof(a))) {
		bs_free(bs_split_arena, pfn);
		return -EFAULT;
	}
	return 0;
}

static long bs_ioctl_free(void __user *uarg)
{
	struct buddy_split_free f;

	if (copy_from_user(&f, uarg, sizeof(f)))
		return -EFAULT;
	if (f.flags)
		return -EINVAL;
	return bs_free(bs_split_arena, f.pfn);
}

static long bs_ioctl_workload(void __user *uarg)
{
	struct buddy_split_workload u;
	struct bs_workload_result res;
	struct bs_workload w;
	u64 t0;
	int ret, t;

	if (copy_from_user(&u, uarg, sizeof(u)))
		return -EFAULT;
	if (u.flags || u.reserved)
		return -EINVAL;
	w.seed = u.seed;
	w.ops = u.ops;
	w.max_order = u.max_order;
	for (t = 0; t < BS_NR_TYPES; t++) {
		w.mix[t] = u.mix[t];
		w.lifetime[t] = u.lifetime[t];
	}
	ret = bs_workload_valid(&w);
	if (ret)
		return ret;
	t0 = ktime_get_ns();
	ret = bs_workload_run(bs_split_arena, &w, &res, bs_tick, NULL);
	u.ns = ktime_get_ns() - t0;
	if (ret)
		return ret;
	for (t = 0; t < BS_NR_TYPES; t++) {
		u.allocs[t] = res.allocs[t];
		u.fails[t] = res.fails[t];
		u.live_pages[t] = res.live_pages[t];
	}
	u.frees = res.frees;
	return copy_to_user(uarg, &u, sizeof(u)) ? -EFAULT : 0;
}

static long bs_ioctl_section(void __user *uarg, bool add)
{
	struct buddy_split_section s;
	int ret, blocker = -1;
	u64 t0;

	if (copy_from_user(&s, uarg, sizeof(s)))
		return -EFAULT;
	if (s.reserved || s.nr >= nr_sections ||
	    (s.flags & ~BUDDY_SPLIT_SECTION_DRY_RUN) ||
	    (add && s.flags))
		return -EINVAL;
	t0 = ktime_get_ns();
	if (add)
		ret = bs_section_add(bs_split_arena, s.nr, bs_chunk_pfn[s.nr],
				     s.nr >= pinned_sections);
	else if (s.flags & BUDDY_SPLIT_SECTION_DRY_RUN)
		ret = bs_section_check(bs_split_arena, s.nr, &blocker);
	else
		ret = bs_section_remove(bs_split_arena, s.nr, &blocker);
	s.ns = ktime_get_ns() - t0;
	s.blocker = blocker;
	if (ret && ret != -EBUSY)
		return ret;
	if (copy_to_user(uarg, &s, sizeof(s)))
		return -EFAULT;
	return ret;
}

static long bs_ioctl_reset(void __user *uarg)
{
	struct buddy_split_reset r;

	if (copy_from_user(&r, uarg, sizeof(r)))
		return -EFAULT;
	if (r.reserved || r.mode >= BS_NR_MODES)
		return -EINVAL;
	return bs_arena_reset(bs_split_arena, r.mode);
}

static int bs_bench_kernel(struct buddy_split_bench *b)
{
	struct page **pages;
	u64 seed = b->seed, t0;
	unsigned long i, got;

	if ((b->count << b->order) > totalram_pages() / 4)
		return -EINVAL;
	pages = kvmalloc_array(b->count, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	t0 = ktime_get_ns();
	for (got = 0; got < b->count; got++) {
		pages[got] = alloc_pages(GFP_KERNEL | __GFP_NOWARN, b->order);
		if (!pages[got])
			break;
	}
	b->alloc_ns = ktime_get_ns() - t0;
	for (i = got; i > 1; i--) {
		unsigned long j = bs_rand_below(&seed, i);

		swap(pages[i - 1], pages[j]);
	}
	t0 = ktime_get_ns();
	for (i = 0; i < got; i++)
		__free_pages(pages[i], b->order);
	b->free_ns = ktime_get_ns() - t0;
	b->done = got;
	kvfree(pages);
	return 0;
}

/* The arena side mirrors bs_bench() with the two phases timed apart. */
static int bs_bench_arena(struct buddy_split_bench *b)
{
	unsigned long *pfns, i, got, bad = 0;
	u64 seed = b->seed, t0;

	if (b->type >= BS_NR_TYPES)
		return -EINVAL;
	pfns = kvmalloc_array(b->count, sizeof(*pfns), GFP_KERNEL);
	if (!pfns)
		return -ENOMEM;
	t0 = ktime_get_ns();
	for (got = 0; got < b->count; got++)
		if (bs_alloc(bs_split_arena, b->type, b->order, &pfns[got]))
			break;
	b->alloc_ns = ktime_get_ns() - t0;
	for (i = got; i > 1; i--) {
		unsigned long j = bs_rand_below(&seed, i);

		swap(pfns[i - 1], pfns[j]);
	}
	t0 = ktime_get_ns();
	for (i = 0; i < got; i++)
		bad += !!bs_free(bs_split_arena, pfns[i]);
	b->free_ns = ktime_get_ns() - t0;
	b->done = got;
	kvfree(pfns);
	return bad ? -EUCLEAN : 0;
}

static long bs_ioctl_bench(void __user *uarg)
{
	struct buddy_split_bench b;
	int ret;

	if (copy_from_user(&b, uarg, sizeof(b)))
		return -EFAULT;
	if (b.reserved || b.target > BUDDY_SPLIT_BENCH_KERNEL ||
	    b.order >= BS_MAX_ORDER || !b.count || b.count > (1 << 20))
		return -EINVAL;
	if (b.target == BUDDY_SPLIT_BENCH_KERNEL)
		ret = bs_bench_kernel(&b);
	else
		ret = bs_bench_arena(&b);
	if (ret)
		return ret;
	return copy_to_user(uarg, &b, sizeof(b)) ? -EFAULT : 0;
}

static long bs_ioctl_info(void __user *uarg)
{
	struct buddy_split_info i = {};
	size_t maps;

	i.nr_sections = nr_sections;
	i.nr_online = bs_split_arena->nr_sorted;
	i.section_shift = bs_split_arena->section_shift;
	i.mode = bs_split_arena->mode;
	i.policy = bs_split_arena->policy;
	i.pinned_sections = min(pinned_sections, nr_sections);
	i.online_pages = bs_online_pages(bs_split_arena);
	i.free_pages = bs_free_pages(bs_split_arena);
	i.meta_bytes = bs_metadata_bytes(bs_split_arena, &maps);
	i.bitmap_bytes = maps;
	i.bitmap_reallocs = bs_split_arena->stats.bitmap_reallocs;
	i.reclaimed_pages = bs_split_arena->stats.reclaimed_pages;
	return copy_to_user(uarg, &i, sizeof(i)) ? -EFAULT : 0;
}

static long bs_ioctl_check(void)
{
	char msg[160];
	int ret = bs_check(bs_split_arena, msg, sizeof(msg));

	if (ret)
		pr_err("invariant check failed: %s\n", msg);
	return ret;
}

static void bs_release_held(void)
{
	struct page *page, *next;

	list_for_each_entry_safe(page, next, &bs_held_pages, lru) {
		list_del(&page->lru);
		__free_page(page);
	}
	bs_nr_held = 0;
}

static long bs_ioctl_hold(void __user *uarg)
{
	struct buddy_split_hold h;
	gfp_t gfp = GFP_KERNEL | __GFP_NOWARN;
	u64 got;

	if (copy_from_user(&h, uarg, sizeof(h)))
		return -EFAULT;
	if (h.reserved || (h.type != BS_KERNEL_RECLAIMABLE &&
			   h.type != BS_KERNEL_NONRECLAIMABLE))
		return -EINVAL;
	if (!h.pages || h.pages > totalram_pages() / 4 ||
	    bs_nr_held + h.pages > totalram_pages() / 4)
		return -EINVAL;
	if (h.type == BS_KERNEL_RECLAIMABLE)
		gfp |= __GFP_RECLAIMABLE;
	for (got = 0; got < h.pages; got++) {
		struct page *page = alloc_page(gfp);

		if (!page)
			break;
		list_add_tail(&page->lru, &bs_held_pages);
		bs_nr_held++;
		if (!(got & 1023)) {
			cond_resched();
			if (fatal_signal_pending(current))
				break;
		}
	}
	h.pages = got;
	return copy_to_user(uarg, &h, sizeof(h)) ? -EFAULT : 0;
}

static long buddy_split_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	long ret;

	mutex_lock(&buddy_split_lock);
	switch (cmd) {
	case BUDDY_SPLIT_IOC_ALLOC:
		ret = bs_ioctl_alloc(uarg);
		break;
	case BUDDY_SPLIT_IOC_FREE:
		ret = bs_ioctl_free(uarg);
		break;
	case BUDDY_SPLIT_IOC_WORKLOAD:
		ret = bs_ioctl_workload(uarg);
		break;
	case BUDDY_SPLIT_IOC_SECTION_REMOVE:
		ret = bs_ioctl_section(uarg, false);
		break;
	case BUDDY_SPLIT_IOC_SECTION_ADD:
		ret = bs_ioctl_section(uarg, true);
		break;
	case BUDDY_SPLIT_IOC_RESET:
		ret = bs_ioctl_reset(uarg);
		break;
	case BUDDY_SPLIT_IOC_BENCH:
		ret = bs_ioctl_bench(uarg);
		break;
	case BUDDY_SPLIT_IOC_INFO:
		ret = bs_ioctl_info(uarg);
		break;
	case BUDDY_SPLIT_IOC_CHECK:
		ret = bs_ioctl_check();
		break;
	case BUDDY_SPLIT_IOC_KERNEL_HOLD:
		ret = bs_ioctl_hold(uarg);
		break;
	case BUDDY_SPLIT_IOC_KERNEL_RELEASE:
		bs_release_held();
		ret = 0;
		break;
	default:
		ret = -ENOTTY;
		break;
	}
	mutex_unlock(&buddy_split_lock);
	return ret;
}

static const struct file_operations buddy_split_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = buddy_split_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* sysfs knobs on the misc device. */
static ssize_t policy_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	int p;

	mutex_lock(&buddy_split_lock);
	p = bs_split_arena->policy;
	mutex_unlock(&buddy_split_lock);
	return sysfs_emit(buf, "%s\n", bs_policy_name(p));
}

static ssize_t policy_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	int p = bs_policy_parse(buf);

	if (p < 0)
		return p;
	mutex_lock(&buddy_split_lock);
	bs_set_policy(bs_split_arena, p);
	mutex_unlock(&buddy_split_lock);
	return count;
}
static DEVICE_ATTR_RW(policy);

static ssize_t mode_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	int m;

	mutex_lock(&buddy_split_lock);
	m = bs_split_arena->mode;
	mutex_unlock(&buddy_split_lock);
	return sysfs_emit(buf, "%s\n", bs_mode_name(m));
}

/* Changing the mode resets the arena: every allocation is dropped. */
static ssize_t mode_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	int m = bs_mode_parse(buf), ret;

	if (m < 0)
		return m;
	mutex_lock(&buddy_split_lock);
	ret = bs_arena_reset(bs_split_arena, m);
	mutex_unlock(&buddy_split_lock);
	return ret ? ret : count;
}
static DEVICE_ATTR_RW(mode);

static ssize_t kreclaim_home_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	int h;

	mutex_lock(&buddy_split_lock);
	h = bs_split_arena->kreclaim_home;
	mutex_unlock(&buddy_split_lock);
	return sysfs_emit(buf, "%s\n", h == BS_AREA_HOTPLUG ? "hotplug" : "pinned");
}

static ssize_t kreclaim_home_store(struct device *dev,
				   struct device_attribute *attr,
				   const char *buf, size_t count)
{
	int h;

	if (sysfs_streq(buf, "pinned"))
		h = BS_AREA_PINNED;
	else if (sysfs_streq(buf, "hotplug"))
		h = BS_AREA_HOTPLUG;
	else
		return -EINVAL;
	mutex_lock(&buddy_split_lock);
	bs_set_kreclaim_home(bs_split_arena, h);
	mutex_unlock(&buddy_split_lock);
	return count;
}
static DEVICE_ATTR_RW(kreclaim_home);

static ssize_t geometry_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "sections %u section_pages %lu pinned %u\n",
			  nr_sections, bs_arena_section_pages(),
			  min(pinned_sections, nr_sections));
}
static DEVICE_ATTR_RO(geometry);

static struct attribute *buddy_split_attrs[] = {
	&dev_attr_policy.attr,
	&dev_attr_mode.attr,
	&dev_attr_kreclaim_home.attr,
	&dev_attr_geometry.attr,
	NULL,
};
ATTRIBUTE_GROUPS(buddy_split);

static struct miscdevice buddy_split_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "buddy_split",
	.fops = &buddy_split_fops,
	.groups = buddy_split_groups,
	.mode = 0600,
};

/* debugfs dumps. */
static int bs_dbg_sections_show(struct seq_file *m, void *v)
{
	unsigned int i;

	mutex_lock(&buddy_split_lock);
	seq_puts(m, "# nr base_pfn kind state user kreclaim kpinned free verdict\n");
	for (i = 0; i < nr_sections; i++) {
		struct bs_section *s = &bs_split_arena->sections[i];
		int blocker = -1, ret;

		ret = bs_section_check(bs_split_arena, i, &blocker);
		seq_printf(m, "%u %#lx %s %s %lu %lu %lu %lu %s\n", i,
			   bs_chunk_pfn[i],
			   i < pinned_sections ? "pinned" : "hotplug",
			   s->online ? "online" : "offline",
			   s->used[0], s->used[1], s->used[2], s->nr_free,
			   ret == -EBUSY ? bs_type_name(blocker) :
			   ret ? "offline" : "removable");
	}
	mutex_unlock(&buddy_split_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(bs_dbg_sections);

#define DUMP_PER_LIST	32

static int bs_dbg_free_lists_show(struct seq_file *m, void *v)
{
	int ar, o;

	mutex_lock(&buddy_split_lock);
	seq_printf(m, "mode %s policy %s\n", bs_mode_name(bs_split_arena->mode),
		   bs_policy_name(bs_split_arena->policy));
	for (ar = 0; ar < BS_NR_AREAS; ar++) {
		for (o = 0; o < BS_MAX_ORDER; o++) {
			struct bs_free_area *fa = &bs_split_arena->area[ar];
			struct bs_page *p;
			int n = 0;

			if (!fa->nr_free[o])
				continue;
			seq_printf(m, "%s order %d: %lu:", bs_area_name(ar), o,
				   fa->nr_free[o]);
			list_for_each_entry(p, &fa->list[o], lru) {
				struct bs_section *s = &bs_split_arena->sections[p->section];

				if (n++ == DUMP_PER_LIST) {
					seq_puts(m, " ...");
					break;
				}
				seq_printf(m, " %#lx",
					   s->base_pfn + (unsigned long)(p - s->pages));
			}
			seq_putc(m, '\n');
		}
	}
	mutex_unlock(&buddy_split_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(bs_dbg_free_lists);

static int bs_dbg_stats_show(struct seq_file *m, void *v)
{
	struct bs_stats *st;
	int t;

	mutex_lock(&buddy_split_lock);
	st = &bs_split_arena->stats;
	for (t = 0; t < BS_NR_TYPES; t++)
		seq_printf(m, "%s allocs %llu fails %llu refills %llu fallbacks %llu\n",
			   bs_type_name(t), st->allocs[t], st->fails[t],
			   st->refills[t], st->fallbacks[t]);
	seq_printf(m, "frees %llu reclaimed_pages %llu bitmap_reallocs %llu\n",
		   st->frees, st->reclaimed_pages, st->bitmap_reallocs);
	mutex_unlock(&buddy_split_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(bs_dbg_stats);

static int bs_dbg_check_show(struct seq_file *m, void *v)
{
	char msg[160];
	int ret;

	mutex_lock(&buddy_split_lock);
	ret = bs_check(bs_split_arena, msg, sizeof(msg));
	mutex_unlock(&buddy_split_lock);
	if (ret)
		seq_printf(m, "FAIL %s\n", msg);
	else
		seq_puts(m, "ok\n");
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(bs_dbg_check);

/*
 * Refuse offlining a block that holds our frames, or whose isolation a
 * failed alloc_contig_range() of ours may have undone; track the offline
 * in flight. See bs_chunk_lock.
 */
static int bs_memory_notify(struct notifier_block *nb, unsigned long action,
			    void *arg)
{
	const struct memory_notify *mhp = arg;
	unsigned long start = mhp->start_pfn, n = mhp->nr_pages, pfn = 0;
	unsigned long range[2] = { start, start + n };
	bool tainted = false;
	unsigned int i;

	switch (action) {
	case MEM_GOING_OFFLINE:
		break;
	case MEM_OFFLINE:
	case MEM_CANCEL_OFFLINE:
		spin_lock(&bs_chunk_lock);
		bs_offlining[0] = 0;
		bs_offlining[1] = 0;
		spin_unlock(&bs_chunk_lock);
		return NOTIFY_OK;
	default:
		return NOTIFY_OK;
	}

	spin_lock(&bs_chunk_lock);
	for (i = 0; i < nr_sections; i++) {
		if (bs_chunk_pfn[i] &&
		    bs_overlaps(range, bs_chunk_pfn[i], bs_chunk_pages)) {
			pfn = bs_chunk_pfn[i];
			break;
		}
	}
	if (!pfn && bs_overlaps(bs_taint, start, n)) {
		tainted = time_before(jiffies, bs_taint_until);
		bs_taint[0] = 0;
		bs_taint[1] = 0;
	}
	if (!pfn && !tainted) {
		bs_offlining[0] = start;
		bs_offlining[1] = start + n;
	}
	spin_unlock(&bs_chunk_lock);
	if (tainted) {
		pr_info("pfns %#lx..%#lx: refusing this offline once: a failed allocation of ours may have undone its isolation\n",
			start, start + n - 1);
		return notifier_from_errno(-EBUSY);
	}
	if (!pfn)
		return NOTIFY_OK;
	pr_info_ratelimited("pfns %#lx..%#lx cannot go offline: slot %u (pfns %#lx..%#lx) is held until unload\n",
			    start, start + n - 1, i, pfn,
			    pfn + bs_chunk_pages - 1);
	return notifier_from_errno(-EBUSY);
}

static struct notifier_block bs_memory_nb = {
	.notifier_call = bs_memory_notify,
};

static int __init buddy_split_init(void)
{
	unsigned long pages;
	unsigned int i;
	int ret;

	if (!nr_sections || nr_sections > 256 || !is_power_of_2(section_mb) ||
	    section_mb < 4 || section_mb > 1024)
		return -EINVAL;
	pages = (unsigned long)section_mb << (20 - PAGE_SHIFT);
	bs_split_arena = bs_arena_create(ilog2(pages), nr_sections,
					 BS_MODE_SPLIT);
	bs_chunk_pfn = kcalloc(nr_sections, sizeof(*bs_chunk_pfn), GFP_KERNEL);
	if (!bs_split_arena || !bs_chunk_pfn) {
		ret = -ENOMEM;
		goto err_free;
	}
	bs_chunk_pages = pages;
	ret = register_memory_notifier(&bs_memory_nb);
	if (ret)
		goto err_free;
	for (i = 0; i < nr_sections; i++) {
		ret = bs_take_chunk(i, pages);
		if (ret) {
			pr_err("got %u of %u sections of %u MiB\n", i,
			       nr_sections, section_mb);
			goto err_chunks;
		}
		ret = bs_section_add(bs_split_arena, i, bs_chunk_pfn[i],
				     i >= pinned_sections);
		if (ret)
			goto err_chunks;
	}
	ret = misc_register(&buddy_split_dev);
	if (ret)
		goto err_chunks;
	bs_debug_dir = debugfs_create_dir("buddy_split", NULL);
	debugfs_create_file("sections", 0400, bs_debug_dir, NULL,
			    &bs_dbg_sections_fops);
	debugfs_create_file("free_lists", 0400, bs_debug_dir, NULL,
			    &bs_dbg_free_lists_fops);
	debugfs_create_file("stats", 0400, bs_debug_dir, NULL,
			    &bs_dbg_stats_fops);
	debugfs_create_file("check", 0400, bs_debug_dir, NULL,
			    &bs_dbg_check_fops);
	pr_info("%u sections of %u MiB (%u pinned), pfns %#lx..%#lx\n",
		nr_sections, section_mb, min(pinned_sections, nr_sections),
		bs_chunk_pfn[nr_sections - 1], bs_chunk_pfn[0]);
	return 0;

err_chunks:
	bs_release_chunks();
	unregister_memory_notifier(&bs_memory_nb);
err_free:
	kfree(bs_chunk_pfn);
	bs_arena_destroy(bs_split_arena);
	return ret;
}

static void __exit buddy_split_exit(void)
{
	debugfs_remove_recursive(bs_debug_dir);
	misc_deregister(&buddy_split_dev);
	/* No user is left: the frames go back whatever the arena holds. */
	bs_release_held();
	bs_release_chunks();
	unregister_memory_notifier(&bs_memory_nb);
	kfree(bs_chunk_pfn);
	bs_arena_destroy(bs_split_arena);
}

module_init(buddy_split_init);
module_exit(buddy_split_exit);
MODULE_DESCRIPTION("Bitmap-free buddy allocator split by reclaim type, over real memory");
MODULE_LICENSE("GPL");
