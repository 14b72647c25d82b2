// SPDX-License-Identifier: GPL-2.0
/*
 * virtio_mem_shim: a small virtio-mem driver for memhp-lab experiments.
 *
 * It drives QEMU's virtio-mem-pci (VIRTIO_ID_MEM) with the protocol of
 * include/uapi/linux/virtio_mem.h, like the upstream virtio_mem driver, but
 * with a deliberately simple policy that is easy to observe and steer from
 * inside the guest:
 *
 *  - Two modes, chosen as upstream virtio_mem chooses them (overridable with
 *    the mode parameter at load, shown in sysfs "mode"):
 *    - big-block mode (bbm), for device blocks of at least a Linux memory
 *      block: memory is plugged, added and removed in "units", the larger
 *      of the device block size and the Linux memory block size; every
 *      added unit is fully plugged.
 *    - sub-block mode (sbm), for smaller device blocks: units are memory
 *      blocks, added once and plugged / unplugged in sub-blocks (the
 *      larger of the device block and a pageblock, 2 MiB on x86), so the
 *      plugged size follows the target exactly. An unplugged sub-block of
 *      an added block is fake-offline: PageOffline, refcount 1, not in the
 *      managed page count. It is either evacuated with alloc_contig_range()
 *      when unplugged, or never given to the buddy: our online_page
 *      callback (set_online_page_callback()) onlines only the plugged
 *      sub-blocks of a block and marks the others PageDirty ("never
 *      onlined", like upstream), so that plugging them later goes through
 *      generic_online_page() instead of free_contig_range(). A block whose
 *      sub-blocks are all unplugged is offlined and removed. The memory
 *      notifier drops our references to the unplugged sub-blocks at
 *      MEM_GOING_OFFLINE and takes them again at MEM_CANCEL_OFFLINE, with
 *      the managed-count step of memhp_going_offline_managed() /
 *      memhp_cancel_offline_managed() (6.1 adds them back for
 *      offline_pages() to subtract; 6.11+ does not count them).
 *  - The target is the host's requested_size, unless the guest wrote
 *    target_size in sysfs (a new host request, or the device's NACK of
 *    the guest target, makes it the host's again).
 *  - Growing: PLUG a unit and add_memory_driver_managed() it. Onlining is
 *    left to the system policy, as upstream virtio_mem does: the core
 *    onlines the blocks inside the call per auto_online_blocks, or they stay
 *    offline for udev / user space.
 *  - Shrinking: units that are offline first, then all-movable ones, then
 *    the rest, highest address first. The online memory blocks of a unit are
 *    first evacuated with alloc_contig_range() ("fake offline": the pages
 *    become ours and PageOffline), which fails in bounded time when memory
 *    cannot move; only then offline_and_remove_memory() removes the unit
 *    (our memory notifier drops our page references in MEM_GOING_OFFLINE),
 *    and UNPLUG returns it to the device. What could not go is reported in
 *    sysfs (unplug_shortfall) and the kernel log, and retried later.
 *  - At bind, plugged memory that nobody uses is dropped with UNPLUG_ALL;
 *    plugged memory still present in the guest (left behind by an earlier
 *    driver instance) is adopted unit by unit after a STATE request.
 *  - At unbind/unload everything that can be unplugged is; what cannot stay
 *    as plain System RAM (reported), and is adopted by the next bind.
 *  - Device responses follow the virtio-mem specification as upstream
 *    handles them: BUSY is retried later (retry_timer, with back-off);
 *    NACK makes the driver re-read the config at once and not repeat the
 *    refused request (see vmem_shim_nacked()); ERROR or a response the request
 *    cannot have marks the device broken: one log line, "broken" in the
 *    sysfs state file, no further requests.
 *
 * Locking: vm->lock serialises the worker (the only sender of device
 * requests after probe, besides remove) and unit state. vm->hotplug_mutex
 * guards the per-memory-block fake-offline state and (with vm->lock, which
 * every writer also holds) the sub-block bitmap, which the online_page
 * callback reads inside an onlining (the notifier holds hotplug_mutex
 * there, for the same operation); the memory notifier
 * holds it from MEM_GOING_* to the final event of one online/offline
 * operation, so the worker never holds it while calling into the hotplug
 * core. vm->state_lock (spinlock, also taken from the retry timer's
 * hardirq context) guards the guest target, the NACK level and the
 * removing flag, which are touched from sysfs and the config-change
 * callback. Fields that sysfs reads without the lock its writers hold are
 * written with WRITE_ONCE() and read with READ_ONCE(); each field says
 * which lock guards it.
 *
 * See Documentation/admin-guide/virtio_mem_shim.rst.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/lockdep.h>
#include <linux/module.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_mem.h>
#include <linux/memory.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/page-flags.h>
#include <linux/page_ref.h>
#include <linux/ioport.h>
#include <linux/workqueue.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/hrtimer.h>
#include <linux/scatterlist.h>
#include <linux/bitmap.h>
#include <linux/slab.h>
#include <linux/kmemleak.h>
#include <linux/delay.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/overflow.h>
#include <linux/ctype.h>
#include <linux/acpi.h>
#include <memhp_compat.h>

#define VMEM_SHIM_RESOURCE_NAME	"System RAM (virtio_mem_shim)"
#define VMEM_SHIM_RETRY_MIN_MS	500
#define VMEM_SHIM_RETRY_MAX_MS	16000
#define VMEM_SHIM_REMOVE_TRIES	5	/* unplug tries per unit at removal (-EBUSY) */
/* nb_blocks is a __virtio16: split larger requests. */
#define VMEM_SHIM_MAX_BLOCKS_PER_REQ	32768

enum vmem_shim_unit_state {
	VMEM_SHIM_UNIT_UNPLUGGED = 0,	/* unplugged, not added */
	VMEM_SHIM_UNIT_PLUGGED,	/* plugged at the device, not added */
	VMEM_SHIM_UNIT_ADDED,		/* plugged and added to Linux */
	VMEM_SHIM_UNIT_FOREIGN,	/* partially plugged and in use: never touched */
};

enum vmem_shim_mode {
	VMEM_SHIM_MODE_AUTO = 0,
	VMEM_SHIM_MODE_SBM,
	VMEM_SHIM_MODE_BBM,
};

static const char * const vmem_shim_mode_names[] = {
	[VMEM_SHIM_MODE_AUTO] = "auto",
	[VMEM_SHIM_MODE_SBM] = "sbm",
	[VMEM_SHIM_MODE_BBM] = "bbm",
};

static const char * const vmem_shim_unit_names[] = {
	[VMEM_SHIM_UNIT_UNPLUGGED] = "unplugged",
	[VMEM_SHIM_UNIT_PLUGGED] = "plugged",
	[VMEM_SHIM_UNIT_ADDED] = "added",
	[VMEM_SHIM_UNIT_FOREIGN] = "foreign",
};

enum vmem_shim_mb_state {
	VMEM_SHIM_MB_NORMAL = 0,	/* not ours beyond being added */
	VMEM_SHIM_MB_FAKE,		/* all pages ours (refcount 1), PageOffline */
	VMEM_SHIM_MB_FAKE_DROPPED,	/* as FAKE (sbm: its unplugged sub-blocks),
					 * refs dropped for offlining
					 */
	VMEM_SHIM_MB_HELD_OFFLINE,	/* offline, being unplugged: onlining refused */
};

static const char * const vmem_shim_mb_names[] = {
	[VMEM_SHIM_MB_NORMAL] = "-",
	[VMEM_SHIM_MB_FAKE] = "fake-offline",
	[VMEM_SHIM_MB_FAKE_DROPPED] = "fake-offline-dropped",
	[VMEM_SHIM_MB_HELD_OFFLINE] = "offline-held",
};

struct vmem_shim {
	struct virtio_device *vdev;
	struct virtqueue *vq;
	wait_queue_head_t host_resp;
	/* The one request in flight and its response (vm->lock). */
	struct virtio_mem_req req;
	struct virtio_mem_resp resp;

	/* Device configuration, set at probe; never changes. */
	u64 block_size;
	u64 addr;
	u64 region_size;
	int nid;
	/*
	 * Changing device configuration, re-read by the worker under vm->lock;
	 * requested_size is also read by sysfs without it (WRITE_ONCE).
	 */
	u64 usable_region_size;
	u64 dev_plugged_size;
	u64 requested_size;

	/* Our layout, set at probe: units of unit_size from base. */
	u64 mb_size;
	u64 unit_size;
	u64 base;
	unsigned long nr_units;
	unsigned long mbs_per_unit;
	/*
	 * Sub-block mode (set at probe): units are memory blocks of
	 * sbs_per_mb sub-blocks of sb_size; gran is what the plugged size
	 * moves by (sb_size in sbm, unit_size in bbm).
	 */
	bool sbm;
	u64 sb_size;
	unsigned long sbs_per_mb;
	u64 gran;
	/* On vmem_shim_sbm_devices (vmem_shim_sbm_list_lock). */
	struct list_head sbm_node;

	/* Serialises the worker, device requests and the fields below. */
	struct mutex lock;
	/* Usable units; read by sysfs without vm->lock (WRITE_ONCE). */
	unsigned long nr_usable;
	u8 *units;		/* enum vmem_shim_unit_state per unit */
	/*
	 * sbm: plugged sub-blocks, sbs_per_mb bits per unit; written under
	 * vm->lock and hotplug_mutex (see Locking above).
	 */
	unsigned long *sb_plugged;
	u64 plugged;		/* plugged bytes (bbm: of PLUGGED + ADDED units) */
	u64 added;		/* bytes of ADDED units */
	bool started;		/* startup scan of plugged memory done */
	unsigned int retry_ms;	/* next retry delay, 0: none pending */
	/*
	 * Last unplug shortfall and its error; read by sysfs without vm->lock
	 * (WRITE_ONCE).
	 */
	u64 short_bytes;
	int short_err;
	int last_err;
	/*
	 * The device answered ERROR or something impossible: no more requests.
	 * Written under vm->lock, read by sysfs without it (WRITE_ONCE).
	 */
	bool broken;

	/*
	 * The worker, queued at once by config changes, sysfs and the retry
	 * timer; the timer only queues it, so a retry never delays a config
	 * change (like upstream's retry_timer).
	 */
	struct work_struct work;
	struct hrtimer retry_timer;
	atomic_t config_changed;

	/* Guest-side target, NACK level and removal flag, under state_lock. */
	spinlock_t state_lock;
	bool removing;
	bool guest_target_set;
	u64 guest_target;
	/*
	 * 0: no NACK since the last new target; 1: the device refused a
	 * request for the guest target, follow the host's requested_size; 2:
	 * it refused one within requested_size too, send no more until the
	 * host or the guest sets a new target.
	 */
	unsigned int nack_level;
	/*
	 * target_gen counts new targets (host or guest); goal_gen is the one
	 * the worker's last goal was computed for: a NACK of a request made
	 * for an older target says nothing about the new one.
	 */
	unsigned int target_gen, goal_gen;

	/*
	 * Per memory block fake-offline state, under hotplug_mutex; debugfs
	 * reads it without that lock (WRITE_ONCE).
	 */
	struct mutex hotplug_mutex;
	bool hotplug_active;
	/*
	 * Set under hotplug_mutex at removal, after the last unplug: from
	 * then on onlining and offlining our blocks is refused, so nothing is
	 * in flight when the callback and the notifier go (upstream:
	 * vm->removing under hotplug_mutex).
	 */
	bool frozen;
	u8 *mb_state;
	struct notifier_block memory_nb;

	/* Set at probe; left behind with memory that stays added. */
	int mgid;
	struct resource *parent;
	const char *parent_name;
	/*
	 * Name of our System RAM resources: the resource tree keeps the
	 * pointer as long as the memory stays added, also after unload.
	 */
	const char *resource_name;
	struct dentry *dbg;

	/* Statistics (vm->lock). */
	unsigned long nr_plug_req, nr_unplug_req, nr_state_req;
	unsigned long nr_busy, nr_nack, nr_error;
	unsigned long nr_added, nr_removed, nr_remove_failed, nr_no_room;
	unsigned long nr_free_evac;
	unsigned long nr_sb_plugged, nr_sb_unplugged, nr_sb_busy;
	u64 last_grow_ns, last_shrink_ns;
};

/*
 * Evacuating a block migrates its used pages elsewhere; alloc_contig_range()
 * allocates the targets with __GFP_RETRY_MAYFAIL, i.e. by reclaiming hard.
 * We do not try when the free memory outside the block would drop below
 * this reserve: the unit is reported as not unpluggable (-ENOMEM) instead.
 */
static unsigned long vmem_shim_unplug_reserve_mb = 64;

static int vmem_shim_reserve_set(const char *val, const struct kernel_param *kp)
{
	unsigned long v;
	int rc = kstrtoul(val, 0, &v);

	if (rc)
		return rc;
	if (v > (totalram_pages() >> (20 - PAGE_SHIFT)))
		return -ERANGE;
	WRITE_ONCE(vmem_shim_unplug_reserve_mb, v);
	return 0;
}

static const struct kernel_param_ops vmem_shim_reserve_ops = {
	.set = vmem_shim_reserve_set,
	.get = param_get_ulong,
};

module_param_cb(unplug_reserve_mb, &vmem_shim_reserve_ops, &vmem_shim_unplug_reserve_mb, 0644);
MODULE_PARM_DESC(unplug_reserve_mb,
		 "Free memory (MiB) to keep when evacuating memory to unplug it (default 64)");

/*
 * Units plugged with one PLUG request when growing (0: as many as the goal
 * needs, within one request). 1 behaves like upstream's SBM: one request
 * per memory block.
 */
static unsigned long vmem_shim_plug_batch;

/* The batch parameters are read with READ_ONCE() by the worker. */
static int vmem_shim_ulong_set(const char *val, const struct kernel_param *kp)
{
	unsigned long v;
	int rc = kstrtoul(val, 0, &v);

	if (rc)
		return rc;
	WRITE_ONCE(*(unsigned long *)kp->arg, v);
	return 0;
}

static const struct kernel_param_ops vmem_shim_ulong_ops = {
	.set = vmem_shim_ulong_set,
	.get = param_get_ulong,
};

module_param_cb(plug_batch, &vmem_shim_ulong_ops, &vmem_shim_plug_batch, 0644);
MODULE_PARM_DESC(plug_batch, "Max units plugged with one request (0 = no limit)");

/*
 * Units added to Linux with one add_memory_driver_managed() call (0: as
 * many as allowed, see vmem_shim_plug_units()). 1 adds unit by unit,
 * like upstream's SBM, for comparing the two ways on the same device.
 */
static unsigned long vmem_shim_add_batch;
module_param_cb(add_batch, &vmem_shim_ulong_ops, &vmem_shim_add_batch, 0644);
MODULE_PARM_DESC(add_batch, "Max units added with one add_memory call (0 = no limit)");

/*
 * Mode at probe: auto (sub-block mode when the sub-block, the larger of the
 * device block and a pageblock, is smaller than a memory block, as upstream
 * chooses), sbm (where possible) or bbm. Set at load, or written later for
 * the next bind; read with READ_ONCE() by probe.
 */
static int vmem_shim_mode = VMEM_SHIM_MODE_AUTO;

static int vmem_shim_mode_set(const char *val, const struct kernel_param *kp)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(vmem_shim_mode_names); i++) {
		if (sysfs_streq(val, vmem_shim_mode_names[i])) {
			WRITE_ONCE(vmem_shim_mode, i);
			return 0;
		}
	}
	return -EINVAL;
}

static int vmem_shim_mode_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", vmem_shim_mode_names[READ_ONCE(vmem_shim_mode)]);
}

static const struct kernel_param_ops vmem_shim_mode_ops = {
	.set = vmem_shim_mode_set,
	.get = vmem_shim_mode_get,
};

module_param_cb(mode, &vmem_shim_mode_ops, NULL, 0644);
MODULE_PARM_DESC(mode, "auto (default, as upstream virtio_mem), sbm or bbm; applies at bind");

/*
 * Sub-block mode devices, for the online_page callback: the list under
 * vmem_shim_sbm_list_lock (taken by the callback inside an onlining, so
 * never held while calling into the hotplug core); the callback is set
 * while the list is not empty, under vmem_shim_sbm_cb_lock.
 */
static LIST_HEAD(vmem_shim_sbm_devices);
static DEFINE_MUTEX(vmem_shim_sbm_list_lock);
static DEFINE_MUTEX(vmem_shim_sbm_cb_lock);
static unsigned int vmem_shim_sbm_cb_users;

static struct dentry *vmem_shim_debugfs_root;

static inline u64 vmem_shim_unit_start(const struct vmem_shim *vm, unsigned long id)
{
	return vm->base + (u64)id * vm->unit_size;
}

static inline unsigned long vmem_shim_mb_pfn(const struct vmem_shim *vm, unsigned long mb)
{
	return PHYS_PFN(vm->base + (u64)mb * vm->mb_size);
}

static inline unsigned long vmem_shim_mb_pages(const struct vmem_shim *vm)
{
	return PHYS_PFN(vm->mb_size);
}

static void vmem_shim_vq_done(struct virtqueue *vq)
{
	struct vmem_shim *vm = vq->vdev->priv;

	wake_up(&vm->host_resp);
}

/* --- configuration ----------------------------------------------------- */

static void vmem_shim_update_usable(struct vmem_shim *vm)
{
	struct range pluggable = mhp_get_pluggable_range(true);
	u64 end = min_t(u64, vm->addr + vm->usable_region_size,
			pluggable.end + 1);

	if (end <= vm->base)
		WRITE_ONCE(vm->nr_usable, 0);
	else
		WRITE_ONCE(vm->nr_usable,
			   min_t(u64, div64_u64(end - vm->base, vm->unit_size),
				 vm->nr_units));
}

/*
 * Re-read the changing config fields (caller holds vm->lock); a new host
 * request wins over the guest target and ends a NACK stall.
 */
static void vmem_shim_refresh_config(struct vmem_shim *vm)
{
	u64 requested, plugged;
	unsigned long flags;

	lockdep_assert_held(&vm->lock);
	virtio_cread_le(vm->vdev, struct virtio_mem_config, usable_region_size,
			&vm->usable_region_size);
	virtio_cread_le(vm->vdev, struct virtio_mem_config, plugged_size,
			&plugged);
	virtio_cread_le(vm->vdev, struct virtio_mem_config, requested_size,
			&requested);
	if (vm->started && plugged != vm->dev_plugged_size)
		dev_warn_ratelimited(&vm->vdev->dev,
				     "device reports %llu bytes plugged, driver counted %llu\n",
				     plugged, vm->dev_plugged_size);
	vm->dev_plugged_size = plugged;
	if (requested != vm->requested_size) {
		spin_lock_irqsave(&vm->state_lock, flags);
		if (vm->guest_target_set)
			dev_info(&vm->vdev->dev,
				 "host requested %llu bytes: dropping guest target %llu\n",
				 requested, vm->guest_target);
		vm->guest_target_set = false;
		vm->nack_level = 0;
		vm->target_gen++;
		spin_unlock_irqrestore(&vm->state_lock, flags);
		vm->retry_ms = 0;
	}
	WRITE_ONCE(vm->requested_size, requested);
	vmem_shim_update_usable(vm);
}

/*
 * The size we steer to, a multiple of vm->gran: the guest target if one is
 * set and the device has not refused it, else the host's requested_size.
 * A guest target may be above requested_size: the device decides (QEMU
 * NACKs a PLUG beyond it, see vmem_shim_nacked()).
 */
static u64 vmem_shim_goal(struct vmem_shim *vm)
{
	unsigned long flags;
	u64 goal;

	spin_lock_irqsave(&vm->state_lock, flags);
	goal = vm->guest_target_set && !vm->nack_level ? vm->guest_target :
							  vm->requested_size;
	vm->goal_gen = vm->target_gen;
	spin_unlock_irqrestore(&vm->state_lock, flags);
	goal = min_t(u64, goal, (u64)vm->nr_usable * vm->unit_size);
	return round_down(goal, vm->gran);
}

static unsigned int vmem_shim_nack_level(struct vmem_shim *vm)
{
	unsigned long flags;
	unsigned int level;

	spin_lock_irqsave(&vm->state_lock, flags);
	level = vm->nack_level;
	spin_unlock_irqrestore(&vm->state_lock, flags);
	return level;
}

/* --- device requests --------------------------------------------------- */

/* Mark the device broken: one log line, no further requests. */
static void vmem_shim_mark_broken(struct vmem_shim *vm, const char *why, int val)
{
	lockdep_assert_held(&vm->lock);
	if (vm->broken)
		return;
	WRITE_ONCE(vm->broken, true);
	dev_err(&vm->vdev->dev,
		"%s (%d): marking the device broken, no more requests\n",
		why, val);
}

/*
 * Send vm->req and wait for the response type, or -EIO once the device is
 * broken. Caller holds vm->lock.
 */
static int vmem_shim_send(struct vmem_shim *vm)
{
	struct scatterlist sg_req, sg_resp, *sgs[2] = { &sg_req, &sg_resp };
	unsigned int len;
	int rc;

	lockdep_assert_held(&vm->lock);
	if (vm->broken)
		return -EIO;
	sg_init_one(&sg_req, &vm->req, sizeof(vm->req));
	sg_init_one(&sg_resp, &vm->resp, sizeof(vm->resp));
	/* One request in flight: the queue cannot be full. */
	rc = virtqueue_add_sgs(vm->vq, sgs, 1, 1, vm, GFP_KERNEL);
	if (rc < 0) {
		vmem_shim_mark_broken(vm, "cannot queue a request", rc);
		return -EIO;
	}
	virtqueue_kick(vm->vq);
	wait_event(vm->host_resp, virtqueue_get_buf(vm->vq, &len));
	return virtio16_to_cpu(vm->vdev, vm->resp.type);
}

static void vmem_shim_fill_req(struct vmem_shim *vm, u16 type, u64 addr, u64 nb)
{
	memset(&vm->req, 0, sizeof(vm->req));
	vm->req.type = cpu_to_virtio16(vm->vdev, type);
	vm->req.u.plug.addr = cpu_to_virtio64(vm->vdev, addr);
	vm->req.u.plug.nb_blocks = cpu_to_virtio16(vm->vdev, nb);
}

/*
 * The device refused a request (NACK): its config may say more than ours,
 * so re-read it now (upstream retries at once with the config re-read). If
 * requested_size changed, that was all (-EAGAIN: the worker goes on at
 * once with the new request). Otherwise the first NACK since the last new
 * target makes us follow the host's requested_size instead of a guest
 * target beyond it (-EAGAIN); a further one, within requested_size, stops
 * requests until the host or the guest sets a new target (-ENOSPC, no
 * retry), so a refused request is never repeated blindly.
 */
static int vmem_shim_nacked(struct vmem_shim *vm)
{
	u64 requested = vm->requested_size;
	unsigned long flags;
	unsigned int level;

	vm->nr_nack++;
	vmem_shim_refresh_config(vm);
	if (vm->requested_size != requested)
		return -EAGAIN;
	spin_lock_irqsave(&vm->state_lock, flags);
	if (vm->target_gen != vm->goal_gen) {
		/* A new target came meanwhile: the NACK was for the old one. */
		spin_unlock_irqrestore(&vm->state_lock, flags);
		return -EAGAIN;
	}
	level = min(vm->nack_level + 1, 2U);
	/* Level 1 changes the goal only when a guest target is beyond it. */
	if (level == 1 && !(vm->guest_target_set &&
			    vm->guest_target > vm->requested_size))
		level = 2;
	vm->nack_level = level;
	spin_unlock_irqrestore(&vm->state_lock, flags);
	if (level == 1) {
		dev_info_ratelimited(&vm->vdev->dev,
				     "device refused a request (NACK): following its requested size %llu\n",
				     vm->requested_size);
		return -EAGAIN;
	}
	dev_warn_ratelimited(&vm->vdev->dev,
			     "device refused a request within its requested size %llu (NACK): waiting for a new request\n",
			     vm->requested_size);
	return -ENOSPC;
}

/*
 * Map a response to a request of @type to an errno and count it: 0 (ACK),
 * -ETXTBSY (BUSY: retry later), vmem_shim_nacked()'s -EAGAIN / -ENOSPC (NACK, only
 * for PLUG), -EIO (ERROR or a response the request cannot have:
 * the device is marked broken).
 */
static int vmem_shim_resp_errno(struct vmem_shim *vm, u16 type, int resp)
{
	if (resp < 0)
		return resp;
	switch (resp) {
	case VIRTIO_MEM_RESP_ACK:
		return 0;
	case VIRTIO_MEM_RESP_NACK:
		/* The specification allows NACK for PLUG only. */
		if (type != VIRTIO_MEM_REQ_PLUG)
			break;
		return vmem_shim_nacked(vm);
	case VIRTIO_MEM_RESP_BUSY:
		if (type == VIRTIO_MEM_REQ_STATE)
			break;
		vm->nr_busy++;
		return -ETXTBSY;	/* device busy (e.g. migration) */
	case VIRTIO_MEM_RESP_ERROR:
		vm->nr_error++;
		vmem_shim_mark_broken(vm, "device answered ERROR to a request of type",
				      type);
		return -EIO;
	}
	vmem_shim_mark_broken(vm, "impossible response type", resp);
	return -EIO;
}

/* PLUG or UNPLUG [addr, addr + size); updates dev_plugged_size. */
static int vmem_shim_change_range(struct vmem_shim *vm, u16 type, u64 addr, u64 size)
{
	u64 nb = div64_u64(size, vm->block_size);
	int rc;

	while (nb) {
		u64 n = min_t(u64, nb, VMEM_SHIM_MAX_BLOCKS_PER_REQ);

		vmem_shim_fill_req(vm, type, addr, n);
		if (type == VIRTIO_MEM_REQ_PLUG)
			vm->nr_plug_req++;
		else
			vm->nr_unplug_req++;
		rc = vmem_shim_resp_errno(vm, type, vmem_shim_send(vm));
		if (rc)
			return rc;
		if (type == VIRTIO_MEM_REQ_PLUG)
			vm->dev_plugged_size += n * vm->block_size;
		else
			vm->dev_plugged_size -= n * vm->block_size;
		addr += n * vm->block_size;
		nb -= n;
	}
	return 0;
}

/* STATE of [addr, addr + size): VIRTIO_MEM_STATE_* or -errno. */
static int vmem_shim_state(struct vmem_shim *vm, u64 addr, u64 size)
{
	int rc;

	vmem_shim_fill_req(vm, VIRTIO_MEM_REQ_STATE, addr,
			   div64_u64(size, vm->block_size));
	vm->nr_state_req++;
	rc = vmem_shim_resp_errno(vm, VIRTIO_MEM_REQ_STATE, vmem_shim_send(vm));
	if (rc)
		return rc;
	rc = virtio16_to_cpu(vm->vdev, vm->resp.u.state.state);
	switch (rc) {
	case VIRTIO_MEM_STATE_PLUGGED:
	case VIRTIO_MEM_STATE_UNPLUGGED:
	case VIRTIO_MEM_STATE_MIXED:
		return rc;
	}
	vmem_shim_mark_broken(vm, "impossible STATE answer", rc);
	return -EIO;
}

static int vmem_shim_unplug_all(struct vmem_shim *vm)
{
	int rc;

	vmem_shim_fill_req(vm, VIRTIO_MEM_REQ_UNPLUG_ALL, 0, 0);
	vm->nr_unplug_req++;
	rc = vmem_shim_resp_errno(vm, VIRTIO_MEM_REQ_UNPLUG_ALL, vmem_shim_send(vm));
	if (!rc)
		vm->dev_plugged_size = 0;
	return rc;
}

/* --- memory block state ------------------------------------------------ */

static bool vmem_shim_mb_online(struct vmem_shim *vm, unsigned long mb)
{
	return !!pfn_to_online_page(vmem_shim_mb_pfn(vm, mb));
}

static bool vmem_shim_mb_movable(struct vmem_shim *vm, unsigned long mb)
{
	struct page *page = pfn_to_online_page(vmem_shim_mb_pfn(vm, mb));

	return page && zone_idx(page_zone(page)) == ZONE_MOVABLE;
}

/* --- fake offline: evacuate a block with alloc_contig_range() ----------- */

static void vmem_shim_set_offline_pages(unsigned long pfn, unsigned long nr, bool on)
{
	struct page *page = pfn_to_page(pfn);
	unsigned long i;

	page_offline_begin();
	if (on)
		for (i = 0; i < nr; i++)
			__SetPageOffline(memhp_page_add(page, i));
	else
		for (i = 0; i < nr; i++)
			__ClearPageOffline(memhp_page_add(page, i));
	page_offline_end();
}

/*
 * Is all of [pfn, pfn + nr) free in the buddy? A lockless snapshot that
 * walks free pages by their order (as has_unmovable_pages() and
 * isolate_migratepages_block() do): one step per free buddy page, and it
 * stops at the first page in use, so it costs a few dozen steps for a free
 * memory block instead of a test of each of its pages. A free page whose
 * head lies below @pfn (a sub-block smaller than the largest order) is
 * found the way is_free_buddy_page() finds it.
 */
static bool vmem_shim_range_free(unsigned long pfn, unsigned long nr)
{
	unsigned long end = pfn + nr, steps = 0;

	while (pfn < end) {
		unsigned long next = pfn;
		unsigned int order;

		for (order = 0; order < MEMHP_NR_PAGE_ORDERS; order++) {
			unsigned long head = ALIGN_DOWN(pfn, 1UL << order);
			struct page *page = pfn_to_page(head);
			unsigned long o;

			if (!PageBuddy(page))
				continue;
			o = READ_ONCE(page_private(page));
			if (o >= order && o < MEMHP_NR_PAGE_ORDERS) {
				next = head + (1UL << o);
				break;
			}
		}
		if (next == pfn)
			return false;
		pfn = next;
		if (!(++steps % 4096))
			cond_resched();
	}
	return true;
}

/*
 * Is there room to migrate the used pages of [pfn, pfn + nr) elsewhere and
 * still keep unplug_reserve_mb free? Evacuating takes all nr pages out of
 * the free pool (its free pages directly, its used ones by their copies),
 * so there is room when free_all >= nr + reserve: no page of the range
 * needs a look. A snapshot, but it keeps us from pushing the guest into
 * reclaim storms just to unplug. *@all_free (for free_evacuated) comes
 * from vmem_shim_range_free().
 */
static bool vmem_shim_room_to_evacuate(unsigned long pfn, unsigned long nr,
				       bool *all_free)
{
	unsigned long free_all = global_zone_page_state(NR_FREE_PAGES);
	unsigned long reserve = READ_ONCE(vmem_shim_unplug_reserve_mb) << (20 - PAGE_SHIFT);

	if (free_all < nr || free_all - nr < reserve)
		return false;
	*all_free = vmem_shim_range_free(pfn, nr);
	return true;
}

/*
 * Take all pages of an online block, also when it is entirely free, so
 * that every unplug takes one route (fake-offline, then
 * offline_and_remove_memory()); 0, or -EBUSY/-ENOMEM/-EINTR.
 */
static int vmem_shim_fake_offline_mb(struct vmem_shim *vm, unsigned long mb)
{
	unsigned long pfn = vmem_shim_mb_pfn(vm, mb), nr = vmem_shim_mb_pages(vm);
	bool all_free;
	int rc = 0;

	mutex_lock(&vm->hotplug_mutex);
	if (vm->mb_state[mb] != VMEM_SHIM_MB_NORMAL)
		goto out;
	/*
	 * An offline block is held offline until its unit is removed or the
	 * removal rolled back: onlined in between (udev, an admin), its pages
	 * would be in use when offline_and_remove_memory() comes, and a
	 * kworker's offline_pages() retries a page that does not migrate
	 * until a signal that never comes. The online state is stable here:
	 * an online holds hotplug_mutex from MEM_GOING_ONLINE to its end.
	 */
	if (!vmem_shim_mb_online(vm, mb)) {
		WRITE_ONCE(vm->mb_state[mb], VMEM_SHIM_MB_HELD_OFFLINE);
		goto out;
	}
	if (!vmem_shim_room_to_evacuate(pfn, nr, &all_free)) {
		vm->nr_no_room++;
		rc = -ENOMEM;
		goto out;
	}
	if (all_free)
		vm->nr_free_evac++;
	rc = memhp_alloc_contig_range(pfn, pfn + nr, GFP_KERNEL | __GFP_NOWARN);
	if (rc)
		goto out;
	vmem_shim_set_offline_pages(pfn, nr, true);
	adjust_managed_page_count(pfn_to_page(pfn), -(long)nr);
	WRITE_ONCE(vm->mb_state[mb], VMEM_SHIM_MB_FAKE);
out:
	mutex_unlock(&vm->hotplug_mutex);
	return rc;
}

/* Give a fake-offline block back to the page allocator. */
static void vmem_shim_fake_online_mb(struct vmem_shim *vm, unsigned long mb)
{
	unsigned long pfn = vmem_shim_mb_pfn(vm, mb), nr = vmem_shim_mb_pages(vm);

	mutex_lock(&vm->hotplug_mutex);
	if (vm->mb_state[mb] == VMEM_SHIM_MB_FAKE) {
		vmem_shim_set_offline_pages(pfn, nr, false);
		free_contig_range(pfn, nr);
		adjust_managed_page_count(pfn_to_page(pfn), nr);
		WRITE_ONCE(vm->mb_state[mb], VMEM_SHIM_MB_NORMAL);
	} else if (vm->mb_state[mb] == VMEM_SHIM_MB_HELD_OFFLINE) {
		WRITE_ONCE(vm->mb_state[mb], VMEM_SHIM_MB_NORMAL);
	}
	/*
	 * VMEM_SHIM_MB_FAKE_DROPPED: the block went offline with our pages and could
	 * not be onlined again (we veto that); it stays offline and is
	 * removed by the next attempt.
	 */
	mutex_unlock(&vm->hotplug_mutex);
}

/* --- sub-block mode ---------------------------------------------------- */

static inline unsigned long vmem_shim_sb_pages(const struct vmem_shim *vm)
{
	return PHYS_PFN(vm->sb_size);
}

static inline unsigned long vmem_shim_sb_pfn(const struct vmem_shim *vm,
					     unsigned long mb, unsigned long sb)
{
	return vmem_shim_mb_pfn(vm, mb) + sb * vmem_shim_sb_pages(vm);
}

static inline bool vmem_shim_sb_test(const struct vmem_shim *vm,
				     unsigned long mb, unsigned long sb)
{
	return test_bit(mb * vm->sbs_per_mb + sb, vm->sb_plugged);
}

/* Plugged sub-blocks of block @mb. */
static unsigned long vmem_shim_sb_weight(const struct vmem_shim *vm, unsigned long mb)
{
	unsigned long sb, n = 0;

	for (sb = 0; sb < vm->sbs_per_mb; sb++)
		n += vmem_shim_sb_test(vm, mb, sb);
	return n;
}

/*
 * Mark the sub-blocks [sb, sb + count) of @mb plugged or unplugged (they
 * are all in the other state) and count them in vm->plugged.
 */
static void vmem_shim_sb_mark(struct vmem_shim *vm, unsigned long mb,
			      unsigned long sb, unsigned long count, bool plugged)
{
	unsigned long bit = mb * vm->sbs_per_mb + sb;

	lockdep_assert_held(&vm->lock);
	lockdep_assert_held(&vm->hotplug_mutex);
	if (plugged) {
		bitmap_set(vm->sb_plugged, bit, count);
		vm->plugged += (u64)count * vm->sb_size;
	} else {
		bitmap_clear(vm->sb_plugged, bit, count);
		vm->plugged -= (u64)count * vm->sb_size;
	}
}

/*
 * Keep [pfn, pfn + nr) of a block being onlined out of the buddy:
 * PageOffline with the refcount of 1 the memmap was initialised with, and
 * PageDirty to say "never onlined" (as upstream virtio_mem does), so that
 * plugging it later goes through generic_online_page(). A memmap that
 * starts PageReserved (6.1) has that cleared, as upstream does.
 */
static void vmem_shim_sbm_keep_offline(unsigned long pfn, unsigned long nr)
{
	page_offline_begin();
	for (; nr--; pfn++) {
		struct page *page = pfn_to_page(pfn);

		ClearPageReserved(page);
		SetPageDirty(page);
		__SetPageOffline(page);
	}
	page_offline_end();
}

/*
 * Give fake-offline pages [pfn, pfn + nr) of an online block to the buddy:
 * never-onlined ones (PageDirty) through generic_online_page(), which
 * counts them in; evacuated ones (ours from alloc_contig_range()) freed
 * and counted back in. All pages of a sub-block are alike, but a run may
 * hold both kinds (a plug of a kept-offline and an evacuated sub-block):
 * no chunk is larger than a sub-block of @sb_pages.
 */
static void vmem_shim_sbm_fake_online(unsigned long pfn, unsigned long nr,
				      unsigned long sb_pages)
{
	unsigned int order = min_t(unsigned int, MEMHP_NR_PAGE_ORDERS - 1, ilog2(sb_pages));
	unsigned long i, j;

	while (!IS_ALIGNED(pfn | nr, 1UL << order))
		order--;
	for (i = 0; i < nr; i += 1UL << order) {
		struct page *page = pfn_to_page(pfn + i);
		bool fresh = PageDirty(page);

		page_offline_begin();
		for (j = 0; j < (1UL << order); j++) {
			struct page *p = memhp_page_add(page, j);

			if (fresh)
				ClearPageDirty(p);
			__ClearPageOffline(p);
		}
		page_offline_end();
		if (fresh) {
			generic_online_page(page, order);
		} else {
			free_contig_range(pfn + i, 1UL << order);
			adjust_managed_page_count(page, 1L << order);
		}
	}
}

/*
 * Evacuate the sub-blocks [sb, sb + count) of the online block @mb with
 * alloc_contig_range() and keep them fake-offline; 0, or -ENOMEM (no room,
 * see vmem_shim_room_to_evacuate()), -EBUSY, -EINTR. Caller holds
 * hotplug_mutex.
 */
static int vmem_shim_sbm_fake_offline(struct vmem_shim *vm, unsigned long mb,
				      unsigned long sb, unsigned long count)
{
	unsigned long pfn = vmem_shim_sb_pfn(vm, mb, sb);
	unsigned long nr = count * vmem_shim_sb_pages(vm);
	bool all_free;
	int rc;

	lockdep_assert_held(&vm->hotplug_mutex);
	if (!vmem_shim_room_to_evacuate(pfn, nr, &all_free)) {
		vm->nr_no_room++;
		return -ENOMEM;
	}
	if (all_free)
		vm->nr_free_evac++;
	rc = memhp_alloc_contig_range(pfn, pfn + nr, GFP_KERNEL | __GFP_NOWARN);
	if (rc)
		return rc;
	vmem_shim_set_offline_pages(pfn, nr, true);
	adjust_managed_page_count(pfn_to_page(pfn), -(long)nr);
	return 0;
}

/*
 * Drop (@drop) or take again our references to the unplugged sub-blocks of
 * block @mb, at MEM_GOING_OFFLINE / MEM_CANCEL_OFFLINE, with the managed
 * count step of the kernel (include/memhp_compat.h).
 */
static void vmem_shim_sbm_offline_refs(struct vmem_shim *vm, unsigned long mb, bool drop)
{
	unsigned long sb, i, nr = vmem_shim_sb_pages(vm);
	struct page *first;

	for (sb = 0; sb < vm->sbs_per_mb; sb++) {
		if (vmem_shim_sb_test(vm, mb, sb))
			continue;
		first = pfn_to_page(vmem_shim_sb_pfn(vm, mb, sb));
		if (drop) {
			for (i = 0; i < nr; i++) {
				struct page *page = memhp_page_add(first, i);

				if (WARN_ON_ONCE(!page_ref_dec_and_test(page)))
					dump_page(page, "fake-offline page referenced");
			}
			memhp_going_offline_managed(first, nr);
		} else {
			for (i = 0; i < nr; i++)
				page_ref_inc(memhp_page_add(first, i));
			memhp_cancel_offline_managed(first, nr);
		}
	}
}

/*
 * Is unit @id's memory ours, and (sbm) its sub-block bitmap to be trusted?
 * A unit is PLUGGED or ADDED only once plugged by us or adopted by the
 * startup scan (which fills the bitmap first, under hotplug_mutex);
 * before that scan, every unit reads UNPLUGGED, and blocks a previous
 * instance left added are not known yet. In sbm a unit is a memory block.
 */
static bool vmem_shim_unit_known(const struct vmem_shim *vm, unsigned long id)
{
	u8 state = READ_ONCE(vm->units[id]);

	return state == VMEM_SHIM_UNIT_PLUGGED || state == VMEM_SHIM_UNIT_ADDED;
}

/* Is any memory block of unit @id present in Linux? */
static bool vmem_shim_unit_present(const struct vmem_shim *vm, unsigned long id)
{
	unsigned long i;

	for (i = 0; i < vm->mbs_per_unit; i++)
		if (pfn_valid(vmem_shim_mb_pfn(vm, id * vm->mbs_per_unit + i)))
			return true;
	return false;
}

/* Is the sub-block of @pfn plugged? */
static bool vmem_shim_sbm_pfn_plugged(const struct vmem_shim *vm, unsigned long pfn)
{
	return test_bit(div64_u64(PFN_PHYS(pfn) - vm->base, vm->sb_size),
			vm->sb_plugged);
}

/*
 * Online [page, page + 2^order) of one of our blocks: the plugged
 * sub-blocks to the buddy, the others kept fake-offline. A chunk larger
 * than a sub-block and not all plugged is taken sub-block by sub-block.
 * The notifier holds hotplug_mutex for this onlining: the bitmap is stable.
 */
static void vmem_shim_sbm_online(struct vmem_shim *vm, struct page *page,
				 unsigned int order)
{
	unsigned long pfn = page_to_pfn(page), nr = 1UL << order, i;
	unsigned long sb_pages = vmem_shim_sb_pages(vm);
	unsigned int step_order = order;

	if (nr > sb_pages) {
		for (i = 0; i < nr; i += sb_pages) {
			if (!vmem_shim_sbm_pfn_plugged(vm, pfn + i)) {
				step_order = ilog2(sb_pages);
				break;
			}
		}
	}
	for (i = 0; i < nr; i += 1UL << step_order) {
		if (vmem_shim_sbm_pfn_plugged(vm, pfn + i))
			generic_online_page(pfn_to_page(pfn + i), step_order);
		else
			vmem_shim_sbm_keep_offline(pfn + i, 1UL << step_order);
	}
}

/* The online_page callback, set while a sub-block mode device is bound. */
static void vmem_shim_online_page_cb(struct page *page, unsigned int order)
{
	u64 addr = page_to_phys(page);
	struct vmem_shim *vm;

	mutex_lock(&vmem_shim_sbm_list_lock);
	list_for_each_entry(vm, &vmem_shim_sbm_devices, sbm_node) {
		unsigned long mb;

		if (addr < vm->base || addr >= vmem_shim_unit_start(vm, vm->nr_units))
			continue;
		/* Chunks never cross a memory block. */
		mb = div64_u64(addr - vm->base, vm->mb_size);
		/*
		 * The notifier refused to online any other block; should
		 * one get here, keep it out of the buddy (fail closed).
		 */
		if (WARN_ON_ONCE(!vmem_shim_unit_known(vm, mb)))
			vmem_shim_sbm_keep_offline(page_to_pfn(page), 1UL << order);
		else
			vmem_shim_sbm_online(vm, page, order);
		mutex_unlock(&vmem_shim_sbm_list_lock);
		return;
	}
	mutex_unlock(&vmem_shim_sbm_list_lock);
	generic_online_page(page, order);
}

/*
 * Take a share of the online_page callback for @vm, setting it for the
 * first; -errno when another driver has it set. The callback leaves
 * @vm's blocks alone (generic onlining) until vmem_shim_sbm_list_add():
 * probe calls that once its state exists and the notifier, which refuses
 * to online blocks we do not know, is registered.
 */
static int vmem_shim_sbm_register(struct vmem_shim *vm)
{
	int rc = 0;

	mutex_lock(&vmem_shim_sbm_cb_lock);
	if (!vmem_shim_sbm_cb_users) {
		rc = set_online_page_callback(&vmem_shim_online_page_cb);
		if (rc)
			goto out_unlock;
	}
	vmem_shim_sbm_cb_users++;
	INIT_LIST_HEAD(&vm->sbm_node);
out_unlock:
	mutex_unlock(&vmem_shim_sbm_cb_lock);
	return rc;
}

static void vmem_shim_sbm_list_add(struct vmem_shim *vm)
{
	mutex_lock(&vmem_shim_sbm_list_lock);
	list_add(&vm->sbm_node, &vmem_shim_sbm_devices);
	mutex_unlock(&vmem_shim_sbm_list_lock);
}

/*
 * Off the list (if on it), and the last sub-block mode device restores
 * the online_page callback.
 */
static void vmem_shim_sbm_unregister(struct vmem_shim *vm)
{
	mutex_lock(&vmem_shim_sbm_cb_lock);
	mutex_lock(&vmem_shim_sbm_list_lock);
	list_del_init(&vm->sbm_node);
	mutex_unlock(&vmem_shim_sbm_list_lock);
	if (!--vmem_shim_sbm_cb_users)
		restore_online_page_callback(&vmem_shim_online_page_cb);
	mutex_unlock(&vmem_shim_sbm_cb_lock);
}

static int vmem_shim_memory_notify(struct notifier_block *nb, unsigned long action,
				   void *arg)
{
	struct vmem_shim *vm = container_of(nb, struct vmem_shim, memory_nb);
	struct memory_notify *mhp = arg;
	u64 start = PFN_PHYS(mhp->start_pfn);
	unsigned long mb, pfn, i, nr;
	struct page *first;
	int rc = NOTIFY_OK;

	if (start < vm->base || start >= vmem_shim_unit_start(vm, vm->nr_units))
		return NOTIFY_DONE;
	mb = div64_u64(start - vm->base, vm->mb_size);
	pfn = vmem_shim_mb_pfn(vm, mb);
	nr = vmem_shim_mb_pages(vm);
	/* One whole memory block at a time, as we add them (no memmap_on_memory). */
	if (WARN_ON_ONCE(mhp->start_pfn != pfn || mhp->nr_pages != nr))
		return NOTIFY_BAD;
	first = pfn_to_page(pfn);

	/*
	 * hotplug_mutex is taken at MEM_GOING_* and released at the final
	 * event of the same operation. In between, the core releases the
	 * notifier chain's rwsem and takes it again for the next event, so
	 * lockdep records chain -> hotplug_mutex and hotplug_mutex -> chain
	 * and reports a cycle (on a PROVE_LOCKING kernel). It cannot close:
	 * online and offline operations are serialised by mem_hotplug_lock,
	 * so no second operation can hold the chain while this one holds the
	 * mutex, and the worker never calls into the hotplug core with the
	 * mutex held. Like upstream virtio_mem, keep lockdep out of it.
	 */
	lockdep_off();
	switch (action) {
	case MEM_GOING_OFFLINE:
		mutex_lock(&vm->hotplug_mutex);
		if (vm->frozen) {
			mutex_unlock(&vm->hotplug_mutex);
			rc = NOTIFY_BAD;
			break;
		}
		vm->hotplug_active = true;
		if (vm->sbm) {
			/*
			 * Let offlining skip our unplugged sub-blocks. A block
			 * we do not know has no sub-block of ours: offlining
			 * treats it as any other.
			 */
			if (!vmem_shim_unit_known(vm, mb))
				break;
			vmem_shim_sbm_offline_refs(vm, mb, true);
			WRITE_ONCE(vm->mb_state[mb], VMEM_SHIM_MB_FAKE_DROPPED);
		} else if (vm->mb_state[mb] == VMEM_SHIM_MB_FAKE) {
			/* Let offlining skip our pages: drop our references. */
			for (i = 0; i < nr; i++)
				page_ref_dec(memhp_page_add(first, i));
			/*
			 * Where offline_pages() takes skipped pages off the
			 * managed count too (6.1), count ours back in first.
			 */
			memhp_going_offline_managed(first, nr);
			WRITE_ONCE(vm->mb_state[mb], VMEM_SHIM_MB_FAKE_DROPPED);
		}
		break;
	case MEM_GOING_ONLINE:
		mutex_lock(&vm->hotplug_mutex);
		if (vm->frozen) {
			mutex_unlock(&vm->hotplug_mutex);
			rc = NOTIFY_BAD;
			break;
		}
		vm->hotplug_active = true;
		if (vm->mb_state[mb] != VMEM_SHIM_MB_NORMAL) {
			dev_info_ratelimited(&vm->vdev->dev,
					     "onlining memory block at %#llx refused: being unplugged\n",
					     start);
			rc = NOTIFY_BAD;
		} else if (!vmem_shim_unit_known(vm, mb / vm->mbs_per_unit)) {
			/*
			 * Not scanned yet, or FOREIGN: which of its memory is
			 * plugged is not known, so none may reach the buddy
			 * (upstream refuses blocks it does not know too), in
			 * either mode.
			 */
			dev_info_ratelimited(&vm->vdev->dev,
					     "onlining memory block at %#llx refused: not known to be plugged\n",
					     start);
			rc = NOTIFY_BAD;
		}
		break;
	case MEM_CANCEL_OFFLINE:
		if (!vm->hotplug_active)
			break;
		if (vm->sbm && vm->mb_state[mb] == VMEM_SHIM_MB_FAKE_DROPPED) {
			vmem_shim_sbm_offline_refs(vm, mb, false);
			WRITE_ONCE(vm->mb_state[mb], VMEM_SHIM_MB_NORMAL);
		} else if (vm->mb_state[mb] == VMEM_SHIM_MB_FAKE_DROPPED) {
			for (i = 0; i < nr; i++)
				page_ref_inc(memhp_page_add(first, i));
			memhp_cancel_offline_managed(first, nr);
			WRITE_ONCE(vm->mb_state[mb], VMEM_SHIM_MB_FAKE);
		}
		vm->hotplug_active = false;
		mutex_unlock(&vm->hotplug_mutex);
		break;
	case MEM_OFFLINE:
		if (!vm->hotplug_active)
			break;
		/* sbm: our pages went with the block; onlining sorts them again. */
		if (vm->sbm)
			WRITE_ONCE(vm->mb_state[mb], VMEM_SHIM_MB_NORMAL);
		vm->hotplug_active = false;
		mutex_unlock(&vm->hotplug_mutex);
		break;
	case MEM_ONLINE:
	case MEM_CANCEL_ONLINE:
		if (!vm->hotplug_active)
			break;
		vm->hotplug_active = false;
		mutex_unlock(&vm->hotplug_mutex);
		break;
	}
	lockdep_on();
	return rc;
}

/* --- units ------------------------------------------------------------- */

static void vmem_shim_set_unit(struct vmem_shim *vm, unsigned long id, u8 state)
{
	u8 old = vm->units[id];

	/* sbm counts plugged bytes by sub-block: vmem_shim_sb_mark(). */
	if (!vm->sbm && (old == VMEM_SHIM_UNIT_PLUGGED || old == VMEM_SHIM_UNIT_ADDED))
		vm->plugged -= vm->unit_size;
	if (old == VMEM_SHIM_UNIT_ADDED)
		vm->added -= vm->unit_size;
	if (!vm->sbm && (state == VMEM_SHIM_UNIT_PLUGGED || state == VMEM_SHIM_UNIT_ADDED))
		vm->plugged += vm->unit_size;
	if (state == VMEM_SHIM_UNIT_ADDED)
		vm->added += vm->unit_size;
	WRITE_ONCE(vm->units[id], state);
}

/* sbm: mark all sub-blocks of unit @id plugged or unplugged. */
static void vmem_shim_sb_mark_unit(struct vmem_shim *vm, unsigned long id, bool plugged)
{
	if (!vm->sbm)
		return;
	mutex_lock(&vm->hotplug_mutex);
	vmem_shim_sb_mark(vm, id, 0, vm->sbs_per_mb, plugged);
	mutex_unlock(&vm->hotplug_mutex);
}

/*
 * Add a PLUGGED unit to Linux. The system policy (auto_online_blocks)
 * onlines its blocks inside the call, or leaves them offline for udev /
 * user space, as with upstream virtio_mem.
 */
static int vmem_shim_add_unit(struct vmem_shim *vm, unsigned long id)
{
	u64 start = vmem_shim_unit_start(vm, id);
	int rc;

	/* Memory may be onlined inside the call: the notifier must agree. */
	rc = add_memory_driver_managed(vm->mgid, start, vm->unit_size,
				       vm->resource_name,
				       MHP_MERGE_RESOURCE | MHP_NID_IS_MGID);
	if (rc) {
		dev_warn_ratelimited(&vm->vdev->dev,
				     "adding memory %#llx+%#llx failed: %d\n",
				     start, vm->unit_size, rc);
		return rc;
	}
	vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_ADDED);
	vm->nr_added++;
	return 0;
}

/*
 * Add the PLUGGED units [first, first + n) with one call; 0 or -errno
 * (nothing added then).
 */
static int vmem_shim_add_units(struct vmem_shim *vm, unsigned long first, unsigned long n)
{
	unsigned long id;
	int rc;

	rc = add_memory_driver_managed(vm->mgid, vmem_shim_unit_start(vm, first),
				       (u64)n * vm->unit_size, vm->resource_name,
				       MHP_MERGE_RESOURCE | MHP_NID_IS_MGID);
	if (rc)
		return rc;
	for (id = first; id < first + n; id++) {
		vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_ADDED);
		vm->nr_added++;
	}
	return 0;
}

/*
 * PLUG @count contiguous UNPLUGGED units from @first with one request, then
 * add them in as few calls as allowed (at most add_batch units each, if
 * that parameter is not 0): a call never covers a whole
 * 1 GiB-aligned GiB, because x86 maps such a range with a 1 GiB direct-map
 * page, and units are removed one by one: 6.1's remove_pud_table() clears
 * a 1 GiB leaf only when the removed range covers all of it, and otherwise
 * walks the leaf as if it pointed to a PMD table (pmd_offset() on a
 * pud_large() entry), which faults.
 * If a group cannot be added, its units are added one by one; a unit that
 * cannot be added is unplugged again (or left PLUGGED for the next run).
 */
static int vmem_shim_plug_units(struct vmem_shim *vm, unsigned long first,
				unsigned long count)
{
	u64 start = vmem_shim_unit_start(vm, first);
	u64 size = (u64)count * vm->unit_size;
	unsigned long id, n, i;
	int rc, err = 0;

	rc = vmem_shim_change_range(vm, VIRTIO_MEM_REQ_PLUG, start, size);
	if (rc)
		return rc;
	for (id = first; id < first + count; id++) {
		vmem_shim_sb_mark_unit(vm, id, true);
		vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_PLUGGED);
	}

	for (id = first; id < first + count; id += n) {
		u64 s = vmem_shim_unit_start(vm, id);

		n = div64_u64(ALIGN(s + 1, SZ_1G) - s, vm->unit_size);
		n = clamp_t(unsigned long, n, 1, first + count - id);
		if (n > 1 && IS_ALIGNED(s, SZ_1G) && (u64)n * vm->unit_size == SZ_1G)
			n--;
		n = min(n, READ_ONCE(vmem_shim_add_batch) ?: n);
		if (n > 1 && !vmem_shim_add_units(vm, id, n))
			continue;
		for (i = id; i < id + n; i++) {
			rc = vmem_shim_add_unit(vm, i);
			if (!rc)
				continue;
			if (!err)
				err = rc;
			if (vmem_shim_change_range(vm, VIRTIO_MEM_REQ_UNPLUG,
						   vmem_shim_unit_start(vm, i), vm->unit_size))
				continue;
			vmem_shim_sb_mark_unit(vm, i, false);
			vmem_shim_set_unit(vm, i, VMEM_SHIM_UNIT_UNPLUGGED);
		}
	}
	return err;
}

/*
 * Remove an ADDED unit from Linux: evacuate its online blocks with
 * alloc_contig_range() first (bounded, unlike offlining, which retries
 * migration forever in a kworker), then offline and remove it.
 */
static int vmem_shim_remove_unit(struct vmem_shim *vm, unsigned long id)
{
	unsigned long mb = id * vm->mbs_per_unit, i;
	int rc = 0;

	for (i = 0; i < vm->mbs_per_unit && !rc; i++)
		rc = vmem_shim_fake_offline_mb(vm, mb + i);
	if (!rc)
		rc = offline_and_remove_memory(vmem_shim_unit_start(vm, id),
					       vm->unit_size);
	if (rc) {
		for (i = 0; i < vm->mbs_per_unit; i++)
			vmem_shim_fake_online_mb(vm, mb + i);
		vm->nr_remove_failed++;
		return rc;
	}
	mutex_lock(&vm->hotplug_mutex);
	for (i = 0; i < vm->mbs_per_unit; i++)
		WRITE_ONCE(vm->mb_state[mb + i], VMEM_SHIM_MB_NORMAL);
	mutex_unlock(&vm->hotplug_mutex);
	vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_PLUGGED);
	vm->nr_removed++;
	return 0;
}

static long vmem_shim_pick_plug(struct vmem_shim *vm)
{
	unsigned long id;

	/* Never one with memory present in Linux: it is not ours. */
	for (id = 0; id < vm->nr_usable; id++)
		if (vm->units[id] == VMEM_SHIM_UNIT_UNPLUGGED &&
		    !vmem_shim_unit_present(vm, id))
			return id;
	return -1;
}

/*
 * sbm: unplug up to @want plugged sub-blocks of unit @id, highest first, in
 * runs of one request each (all of a fully plugged block at once, as
 * upstream's fast path; sub-block by sub-block once a run could not be
 * evacuated). Sub-blocks of an online block are evacuated first and stay
 * fake-offline. Once none is plugged, the block is offlined and removed.
 * Returns 0 if anything went, else the first error (also in *@err); a
 * device error (-EAGAIN, -ENOSPC, -ETXTBSY, -EIO) is returned at once.
 */
static int vmem_shim_sbm_unplug_unit(struct vmem_shim *vm, unsigned long id,
				     unsigned long want, int *err)
{
	unsigned long sb = vm->sbs_per_mb, done = 0, lo, hi, n;
	bool added = vm->units[id] == VMEM_SHIM_UNIT_ADDED;
	bool online, single = false;
	int rc = 0;

	*err = 0;
	mutex_lock(&vm->hotplug_mutex);
	online = added && vmem_shim_mb_online(vm, id);
	while (sb && done < want) {
		hi = sb - 1;
		if (!vmem_shim_sb_test(vm, id, hi)) {
			sb = hi;
			continue;
		}
		lo = hi;
		while (!single && lo && vmem_shim_sb_test(vm, id, lo - 1) &&
		       hi - lo + 1 < want - done)
			lo--;
		n = hi - lo + 1;
		if (online) {
			rc = vmem_shim_sbm_fake_offline(vm, id, lo, n);
			if (rc && n > 1) {
				single = true;
				continue;
			}
			if (rc) {
				vm->nr_sb_busy++;
				if (!*err)
					*err = rc;
				rc = 0;
				if (fatal_signal_pending(current))
					break;
				sb = hi;
				continue;
			}
		}
		rc = vmem_shim_change_range(vm, VIRTIO_MEM_REQ_UNPLUG,
					    PFN_PHYS(vmem_shim_sb_pfn(vm, id, lo)),
					    (u64)n * vm->sb_size);
		if (rc) {
			if (online)
				vmem_shim_sbm_fake_online(vmem_shim_sb_pfn(vm, id, lo),
							  n * vmem_shim_sb_pages(vm),
							  vmem_shim_sb_pages(vm));
			goto out_unlock;
		}
		vmem_shim_sb_mark(vm, id, lo, n, false);
		vm->nr_sb_unplugged += n;
		done += n;
		sb = lo;
	}
out_unlock:
	mutex_unlock(&vm->hotplug_mutex);
	if (vmem_shim_sb_weight(vm, id))
		goto out;
	if (!added) {
		vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_UNPLUGGED);
		goto out;
	}
	/* All unplugged and fake-offline: offlining only skips our pages. */
	if (!offline_and_remove_memory(vmem_shim_unit_start(vm, id), vm->unit_size)) {
		mutex_lock(&vm->hotplug_mutex);
		WRITE_ONCE(vm->mb_state[id], VMEM_SHIM_MB_NORMAL);
		mutex_unlock(&vm->hotplug_mutex);
		vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_UNPLUGGED);
		vm->nr_removed++;
	} else {
		/* Stays added and empty; removed again by the next unplug. */
		vm->nr_remove_failed++;
	}
out:
	if (rc)
		return rc;
	return done ? 0 : *err;
}

/*
 * sbm: plug the sub-blocks [sb, sb + n) of the added unit @id with one
 * request; in an online block they go to the buddy at once.
 */
static int vmem_shim_sbm_plug_sbs(struct vmem_shim *vm, unsigned long id,
				  unsigned long sb, unsigned long n)
{
	int rc;

	rc = vmem_shim_change_range(vm, VIRTIO_MEM_REQ_PLUG,
				    PFN_PHYS(vmem_shim_sb_pfn(vm, id, sb)),
				    (u64)n * vm->sb_size);
	if (rc)
		return rc;
	mutex_lock(&vm->hotplug_mutex);
	vmem_shim_sb_mark(vm, id, sb, n, true);
	if (vmem_shim_mb_online(vm, id))
		vmem_shim_sbm_fake_online(vmem_shim_sb_pfn(vm, id, sb),
					  n * vmem_shim_sb_pages(vm), vmem_shim_sb_pages(vm));
	mutex_unlock(&vm->hotplug_mutex);
	vm->nr_sb_plugged += n;
	return 0;
}

/*
 * sbm: plug the first @n (< sbs_per_mb) sub-blocks of the UNPLUGGED unit @id
 * and add it; onlining (the system's policy) gives only those to the buddy.
 */
static int vmem_shim_sbm_plug_new(struct vmem_shim *vm, unsigned long id,
				  unsigned long n)
{
	u64 start = vmem_shim_unit_start(vm, id);
	int rc;

	rc = vmem_shim_change_range(vm, VIRTIO_MEM_REQ_PLUG, start,
				    (u64)n * vm->sb_size);
	if (rc)
		return rc;
	mutex_lock(&vm->hotplug_mutex);
	vmem_shim_sb_mark(vm, id, 0, n, true);
	mutex_unlock(&vm->hotplug_mutex);
	vm->nr_sb_plugged += n;
	vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_PLUGGED);
	rc = vmem_shim_add_unit(vm, id);
	if (!rc)
		return 0;
	if (!vmem_shim_change_range(vm, VIRTIO_MEM_REQ_UNPLUG, start,
				    (u64)n * vm->sb_size)) {
		mutex_lock(&vm->hotplug_mutex);
		vmem_shim_sb_mark(vm, id, 0, n, false);
		mutex_unlock(&vm->hotplug_mutex);
		vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_UNPLUGGED);
	}
	return rc;
}

/*
 * sbm: plug up to @want sub-blocks: into added blocks with unplugged
 * sub-blocks first (lowest first), then whole new blocks (batched as in
 * big-block mode), then a partial new block. 0 when something was
 * plugged, 1 when there is no room, else -errno.
 */
static int vmem_shim_sbm_plug(struct vmem_shim *vm, unsigned long want)
{
	unsigned long id, sb, n, max;
	long pick;

	for (id = 0; id < vm->nr_usable; id++) {
		if (vm->units[id] != VMEM_SHIM_UNIT_ADDED)
			continue;
		for (sb = 0; sb < vm->sbs_per_mb; sb++)
			if (!vmem_shim_sb_test(vm, id, sb))
				break;
		if (sb == vm->sbs_per_mb)
			continue;
		n = 1;
		while (sb + n < vm->sbs_per_mb && n < want &&
		       !vmem_shim_sb_test(vm, id, sb + n))
			n++;
		return vmem_shim_sbm_plug_sbs(vm, id, sb, n);
	}
	pick = vmem_shim_pick_plug(vm);
	if (pick < 0)
		return 1;
	if (want < vm->sbs_per_mb)
		return vmem_shim_sbm_plug_new(vm, pick, want);
	max = want / vm->sbs_per_mb;
	max = min_t(u64, max, max_t(u64, 1, div64_u64((u64)VMEM_SHIM_MAX_BLOCKS_PER_REQ *
						       vm->block_size, vm->unit_size)));
	max = min(max, READ_ONCE(vmem_shim_plug_batch) ?: max);
	n = 1;
	while (n < max && pick + n < vm->nr_usable &&
	       vm->units[pick + n] == VMEM_SHIM_UNIT_UNPLUGGED)
		n++;
	return vmem_shim_plug_units(vm, pick, n);
}

static int vmem_shim_unplug_unit(struct vmem_shim *vm, unsigned long id)
{
	int rc, err;

	if (vm->sbm)
		return vmem_shim_sbm_unplug_unit(vm, id, ULONG_MAX, &err);
	if (vm->units[id] == VMEM_SHIM_UNIT_ADDED) {
		rc = vmem_shim_remove_unit(vm, id);
		if (rc)
			return rc;
	}
	rc = vmem_shim_change_range(vm, VIRTIO_MEM_REQ_UNPLUG, vmem_shim_unit_start(vm, id),
				    vm->unit_size);
	if (!rc)
		vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_UNPLUGGED);
	return rc;
}

/*
 * Unplug preference, lower first: plugged-only units, units whose blocks
 * are all offline, all-movable units, the rest. -1: not a candidate.
 */
static int vmem_shim_unplug_class(struct vmem_shim *vm, unsigned long id)
{
	unsigned long mb = id * vm->mbs_per_unit, i;
	bool online = false, movable = true;

	if (vm->units[id] == VMEM_SHIM_UNIT_PLUGGED)
		return 0;
	if (vm->units[id] != VMEM_SHIM_UNIT_ADDED)
		return -1;
	if (vm->sbm) {
		unsigned long w = vmem_shim_sb_weight(vm, id);

		/*
		 * Partially plugged blocks first, so that whole blocks go;
		 * then as in bbm.
		 */
		if (!w)
			return -1;
		if (!vmem_shim_mb_online(vm, id))
			return w < vm->sbs_per_mb ? 1 : 2;
		if (vmem_shim_mb_movable(vm, id))
			return w < vm->sbs_per_mb ? 3 : 5;
		return w < vm->sbs_per_mb ? 4 : 6;
	}
	for (i = 0; i < vm->mbs_per_unit; i++) {
		if (!vmem_shim_mb_online(vm, mb + i))
			continue;
		online = true;
		if (!vmem_shim_mb_movable(vm, mb + i))
			movable = false;
	}
	if (!online)
		return 1;
	return movable ? 2 : 3;
}

static long vmem_shim_pick_unplug(struct vmem_shim *vm, const unsigned long *tried)
{
	long best = -1;
	int best_class = INT_MAX;
	long id;

	for (id = vm->nr_units - 1; id >= 0; id--) {
		int c;

		if (test_bit(id, tried))
			continue;
		c = vmem_shim_unplug_class(vm, id);
		if (c >= 0 && c < best_class) {
			best = id;
			best_class = c;
		}
	}
	return best;
}

static void vmem_shim_report_shortfall(struct vmem_shim *vm, u64 bytes, int err)
{
	if (bytes == vm->short_bytes && err == vm->short_err)
		return;
	WRITE_ONCE(vm->short_bytes, bytes);
	WRITE_ONCE(vm->short_err, err);
	if (bytes)
		dev_info(&vm->vdev->dev,
			 "could not unplug %llu MiB (plugged %llu MiB, goal %llu MiB): error %d; retrying\n",
			 bytes >> 20, vm->plugged >> 20,
			 (vm->plugged - bytes) >> 20, err);
	else
		dev_info(&vm->vdev->dev, "unplug shortfall resolved\n");
}

/*
 * Move the plugged size towards the goal one unit at a time, re-reading the
 * goal after each step. 0 when the goal is reached (or no more room),
 * -EAGAIN when the config changed or a first NACK made us follow the host,
 * -ENOSPC after a NACK within requested_size (no request until a new
 * target), -EIO when the device is broken, another -errno to retry later.
 */
static int vmem_shim_reconcile(struct vmem_shim *vm, unsigned long *tried)
{
	int first_err = 0;
	u64 t0 = ktime_get_ns();
	bool grew = false, shrank = false;
	unsigned long id;
	int rc;

	bitmap_zero(tried, vm->nr_units);

	/* Leftovers: plugged at the device but not added. */
	for (id = 0; id < vm->nr_units; id++) {
		if (vm->units[id] != VMEM_SHIM_UNIT_PLUGGED)
			continue;
		if (id >= vm->nr_usable || vm->plugged > vmem_shim_goal(vm) ||
		    vmem_shim_add_unit(vm, id)) {
			rc = vmem_shim_unplug_unit(vm, id);
			if (rc)
				return rc;
		}
	}

	for (;;) {
		u64 goal;
		long pick;

		if (atomic_read(&vm->config_changed))
			return -EAGAIN;
		goal = vmem_shim_goal(vm);
		if (vm->plugged + vm->gran <= goal) {
			unsigned long n = 1, max;

			/* Stalled by NACKs: no PLUG until a new target. */
			if (vmem_shim_nack_level(vm) >= 2)
				return -ENOSPC;
			if (vm->sbm) {
				rc = vmem_shim_sbm_plug(vm, div64_u64(goal - vm->plugged,
								      vm->sb_size));
				if (rc < 0)
					return rc;
				if (rc)
					break;	/* no room left */
				grew = true;
				continue;
			}

			pick = vmem_shim_pick_plug(vm);
			if (pick < 0)
				break;	/* no room left */
			/* Batch contiguous units, one PLUG request at most. */
			max = div64_u64(goal - vm->plugged, vm->unit_size);
			max = min_t(u64, max,
				    max_t(u64, 1, div64_u64((u64)VMEM_SHIM_MAX_BLOCKS_PER_REQ *
							    vm->block_size,
							    vm->unit_size)));
			max = min(max, READ_ONCE(vmem_shim_plug_batch) ?: max);
			while (n < max && pick + n < vm->nr_usable &&
			       vm->units[pick + n] == VMEM_SHIM_UNIT_UNPLUGGED)
				n++;
			rc = vmem_shim_plug_units(vm, pick, n);
			if (rc)
				return rc;
			grew = true;
			continue;
		}
		if (vm->plugged <= goal)
			break;
		pick = vmem_shim_pick_unplug(vm, tried);
		if (pick < 0) {
			vmem_shim_report_shortfall(vm, vm->plugged - goal,
						   first_err ?: -EBUSY);
			return first_err ?: -EBUSY;
		}
		set_bit(pick, tried);
		if (vm->sbm) {
			int err;

			rc = vmem_shim_sbm_unplug_unit(vm, pick,
						       div64_u64(vm->plugged - goal, vm->sb_size),
						       &err);
			if (!rc && err && !first_err)
				first_err = err;
		} else {
			rc = vmem_shim_unplug_unit(vm, pick);
		}
		/*
		 * The device's answer, not this unit's: no other candidate
		 * (BUSY, e.g. during migration, would refuse them all after
		 * each was evacuated and removed for nothing).
		 */
		if (rc == -EAGAIN || rc == -ENOSPC || rc == -ETXTBSY ||
		    vm->broken)
			return rc;
		if (rc && !first_err)
			first_err = rc;
		if (!rc)
			shrank = true;
	}
	vmem_shim_report_shortfall(vm, 0, 0);
	/* sbm: blocks left added and empty by a failed removal. */
	for (id = 0; vm->sbm && id < vm->nr_units; id++)
		if (vm->units[id] == VMEM_SHIM_UNIT_ADDED && !vmem_shim_sb_weight(vm, id))
			vmem_shim_sbm_unplug_unit(vm, id, 0, &rc);
	if (grew)
		vm->last_grow_ns = ktime_get_ns() - t0;
	if (shrank)
		vm->last_shrink_ns = ktime_get_ns() - t0;
	return 0;
}

/*
 * Set unit @id to @state during the startup scan, forgetting (sbm) the
 * sub-blocks of an adopted unit (all of them set: before the scan is done
 * nothing else marks any; counted by weight all the same). Under
 * hotplug_mutex: an online in flight (the notifier holds the mutex until
 * it ends) sees the unit known with its bitmap, or unknown, never a mix
 * (the callback warns on that).
 */
static void vmem_shim_startup_set(struct vmem_shim *vm, unsigned long id, u8 state)
{
	mutex_lock(&vm->hotplug_mutex);
	if (vm->sbm) {
		unsigned long w = vmem_shim_sb_weight(vm, id);

		bitmap_clear(vm->sb_plugged, id * vm->sbs_per_mb, vm->sbs_per_mb);
		vm->plugged -= (u64)w * vm->sb_size;
	}
	vmem_shim_set_unit(vm, id, state);
	mutex_unlock(&vm->hotplug_mutex);
}

/*
 * Memory plugged before we bound: if none of it is present in Linux, drop
 * it all with UNPLUG_ALL; otherwise adopt it unit by unit. STATE is asked
 * only inside the usable region: the device answers ERROR beyond it (and
 * keeps nothing plugged there), which would mark it broken.
 */
static int vmem_shim_startup(struct vmem_shim *vm)
{
	u64 usable_end = vm->addr + vm->usable_region_size;
	unsigned long id, mb;
	bool present_any = false;
	int rc;

	/*
	 * A retried startup (UNPLUG_ALL or a mixed unit's UNPLUG answered
	 * BUSY, or the config changed before a scan succeeded) starts from
	 * nothing known: what an earlier pass adopted may have changed
	 * since, the device's plugged size too.
	 */
	for (id = 0; id < vm->nr_units; id++)
		if (vm->units[id] != VMEM_SHIM_UNIT_UNPLUGGED)
			vmem_shim_startup_set(vm, id, VMEM_SHIM_UNIT_UNPLUGGED);

	for (mb = 0; mb < vm->nr_units * vm->mbs_per_unit; mb++)
		if (pfn_valid(vmem_shim_mb_pfn(vm, mb)))
			present_any = true;
	if (!vm->dev_plugged_size) {
		/*
		 * Blocks a previous instance could not remove (an unload
		 * killed midway) while the device holds nothing plugged:
		 * none of their memory is ours to give out, so none of these
		 * units may be plugged into or onlined.
		 */
		for (id = 0; present_any && id < vm->nr_units; id++) {
			if (!vmem_shim_unit_present(vm, id))
				continue;
			vmem_shim_startup_set(vm, id, VMEM_SHIM_UNIT_FOREIGN);
			dev_warn(&vm->vdev->dev,
				 "memory %#llx+%#llx is present but nothing is plugged: left alone\n",
				 vmem_shim_unit_start(vm, id), vm->unit_size);
		}
		return 0;
	}
	if (!present_any) {
		dev_info(&vm->vdev->dev,
			 "%llu bytes plugged but unused at bind: UNPLUG_ALL\n",
			 vm->dev_plugged_size);
		rc = vmem_shim_unplug_all(vm);
		/* The usable region may have shrunk: re-read it. */
		atomic_set(&vm->config_changed, 1);
		return rc;
	}

	for (id = 0; id < vm->nr_units; id++) {
		u64 start = vmem_shim_unit_start(vm, id);
		u64 end = min(start + vm->unit_size, usable_end);
		bool present = vmem_shim_unit_present(vm, id);

		if (start >= usable_end)
			rc = VIRTIO_MEM_STATE_UNPLUGGED;
		else
			rc = vmem_shim_state(vm, start, end - start);
		if (rc < 0)
			return rc;
		/* A unit cut by the end of the usable region is not all plugged. */
		if (rc == VIRTIO_MEM_STATE_PLUGGED && end < start + vm->unit_size)
			rc = VIRTIO_MEM_STATE_MIXED;
		if (rc == VIRTIO_MEM_STATE_PLUGGED) {
			/* The bitmap first: see vmem_shim_unit_known(). */
			vmem_shim_sb_mark_unit(vm, id, true);
			vmem_shim_set_unit(vm, id, present ? VMEM_SHIM_UNIT_ADDED :
						       VMEM_SHIM_UNIT_PLUGGED);
			if (present)
				dev_info(&vm->vdev->dev,
					 "adopted plugged memory %#llx+%#llx\n",
					 start, vm->unit_size);
		} else if (present) {
			vmem_shim_startup_set(vm, id, VMEM_SHIM_UNIT_FOREIGN);
			dev_warn(&vm->vdev->dev,
				 "memory %#llx+%#llx is in use but not fully plugged: left alone\n",
				 start, vm->unit_size);
		} else if (rc == VIRTIO_MEM_STATE_MIXED) {
			u64 a;

			/* Unused and partially plugged: unplug block-wise. */
			for (a = start; a < end; a += vm->block_size) {
				rc = vmem_shim_state(vm, a, vm->block_size);
				if (rc == VIRTIO_MEM_STATE_PLUGGED)
					rc = vmem_shim_change_range(vm, VIRTIO_MEM_REQ_UNPLUG,
								    a, vm->block_size);
				if (rc < 0)
					return rc;
			}
		}
	}
	return 0;
}

/* Queue the worker at once, unless the device is going away. */
static void vmem_shim_queue(struct vmem_shim *vm)
{
	unsigned long flags;

	spin_lock_irqsave(&vm->state_lock, flags);
	if (!vm->removing)
		queue_work(system_freezable_wq, &vm->work);
	spin_unlock_irqrestore(&vm->state_lock, flags);
}

/* The retry timer only queues the worker (hardirq context). */
static enum hrtimer_restart vmem_shim_retry_timer_fn(struct hrtimer *timer)
{
	struct vmem_shim *vm = container_of(timer, struct vmem_shim, retry_timer);

	vmem_shim_queue(vm);
	return HRTIMER_NORESTART;
}

static void vmem_shim_work_fn(struct work_struct *work)
{
	struct vmem_shim *vm = container_of(work, struct vmem_shim, work);
	unsigned long *tried;
	int rc = 0;

	/* Running now: a pending retry has nothing left to do. */
	hrtimer_cancel(&vm->retry_timer);
	tried = bitmap_zalloc(vm->nr_units, GFP_KERNEL);
	mutex_lock(&vm->lock);
	if (vm->broken)
		goto out_unlock;
	if (!tried) {
		rc = -ENOMEM;
		goto out;
	}
	do {
		if (atomic_xchg(&vm->config_changed, 0))
			vmem_shim_refresh_config(vm);
		if (!vm->started) {
			rc = vmem_shim_startup(vm);
			if (rc)
				continue;
			vm->started = true;
		}
		rc = vmem_shim_reconcile(vm, tried);
	} while (rc == -EAGAIN);
out:
	vm->last_err = rc;
	if (!rc || vm->broken || vmem_shim_nack_level(vm) >= 2) {
		/* Done, or nothing to retry until a new request. */
		vm->retry_ms = 0;
	} else {
		/* BUSY, busy memory, no memory: retry later, backing off. */
		vm->retry_ms = clamp(vm->retry_ms * 2, VMEM_SHIM_RETRY_MIN_MS,
				     VMEM_SHIM_RETRY_MAX_MS);
		hrtimer_start(&vm->retry_timer, ms_to_ktime(vm->retry_ms),
			      HRTIMER_MODE_REL);
	}
out_unlock:
	mutex_unlock(&vm->lock);
	bitmap_free(tried);
}

static void vmem_shim_config_changed(struct virtio_device *vdev)
{
	struct vmem_shim *vm = vdev->priv;

	atomic_set(&vm->config_changed, 1);
	vmem_shim_queue(vm);
}

/* --- sysfs ------------------------------------------------------------- */

static struct vmem_shim *dev_to_vms(struct device *dev)
{
	return dev_to_virtio(dev)->priv;
}

static ssize_t plugged_size_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	u64 v;

	virtio_cread_le(dev_to_virtio(dev), struct virtio_mem_config,
			plugged_size, &v);
	return sysfs_emit(buf, "%llu\n", v);
}
static DEVICE_ATTR_RO(plugged_size);

static ssize_t requested_size_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	u64 v;

	virtio_cread_le(dev_to_virtio(dev), struct virtio_mem_config,
			requested_size, &v);
	return sysfs_emit(buf, "%llu\n", v);
}
static DEVICE_ATTR_RO(requested_size);

static ssize_t block_size_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", dev_to_vms(dev)->block_size);
}
static DEVICE_ATTR_RO(block_size);

/* What the plugged size moves by: the sub-block (sbm) or the unit (bbm). */
static ssize_t unit_size_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", dev_to_vms(dev)->gran);
}
static DEVICE_ATTR_RO(unit_size);

static ssize_t mode_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", dev_to_vms(dev)->sbm ? "sbm" : "bbm");
}
static DEVICE_ATTR_RO(mode);

static ssize_t region_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct vmem_shim *vm = dev_to_vms(dev);
	u64 usable;

	virtio_cread_le(vm->vdev, struct virtio_mem_config, usable_region_size,
			&usable);
	return sysfs_emit(buf, "%#llx %#llx %#llx\n", vm->addr, vm->region_size,
			  usable);
}
static DEVICE_ATTR_RO(region);

static ssize_t unplug_shortfall_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	struct vmem_shim *vm = dev_to_vms(dev);

	return sysfs_emit(buf, "%llu %d\n", READ_ONCE(vm->short_bytes),
			  READ_ONCE(vm->short_err));
}
static DEVICE_ATTR_RO(unplug_shortfall);

/*
 * ready, nacked (a guest target was refused: following the host), stalled
 * (a request within requested_size was refused: waiting for a new target)
 * or broken (ERROR or an impossible response: no more requests).
 */
static ssize_t state_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	static const char * const names[] = { "ready", "nacked", "stalled" };
	struct vmem_shim *vm = dev_to_vms(dev);

	if (READ_ONCE(vm->broken))
		return sysfs_emit(buf, "broken\n");
	return sysfs_emit(buf, "%s\n", names[vmem_shim_nack_level(vm)]);
}
static DEVICE_ATTR_RO(state);

static ssize_t target_size_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct vmem_shim *vm = dev_to_vms(dev);
	unsigned long flags;
	bool guest;
	u64 t;

	spin_lock_irqsave(&vm->state_lock, flags);
	guest = vm->guest_target_set;
	t = guest ? vm->guest_target : READ_ONCE(vm->requested_size);
	spin_unlock_irqrestore(&vm->state_lock, flags);
	return sysfs_emit(buf, "%llu %s\n", t, guest ? "guest" : "host");
}

/*
 * "host" follows the host again; otherwise a size (memparse suffixes K, M,
 * G allowed) that is a multiple of unit_size, inside the usable region. It
 * may be above requested_size: the device decides (QEMU refuses, see
 * vmem_shim_nacked()). Either starts over after a NACK.
 */
/*
 * A size as memparse() reads it: a number (decimal, 0x hex or 0 octal) and
 * an optional K, M, G, T, P or E suffix, then at most a newline. Unlike
 * memparse(), a value that does not fit in 64 bits is refused (-ERANGE)
 * instead of silently wrapping (16E would otherwise read as 0).
 */
static int vmem_shim_parse_size(const char *buf, u64 *size)
{
	static const char suffixes[] = "KMGTPE";
	const char *digits = buf, *sfx;
	unsigned int shift = 0;
	char num[24];
	size_t len;
	u64 val;
	int ret;

	if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'))
		len = 2 + strspn(buf + 2, "0123456789abcdefABCDEF");
	else
		len = strspn(buf, "0123456789");
	if (!len || len >= sizeof(num))
		return len ? -ERANGE : -EINVAL;
	memcpy(num, digits, len);
	num[len] = '\0';
	ret = kstrtoull(num, 0, &val);
	if (ret)
		return ret;
	buf += len;
	if (*buf && *buf != '\n') {
		sfx = strchr(suffixes, toupper(*buf));
		if (!sfx)
			return -EINVAL;
		shift = 10 * (sfx - suffixes + 1);
		buf++;
	}
	if (*buf == '\n')
		buf++;
	if (*buf)
		return -EINVAL;
	if (check_shl_overflow(val, shift, size))
		return -ERANGE;
	return 0;
}

static ssize_t target_size_store(struct device *dev,
				 struct device_attribute *attr,
				 const char *buf, size_t count)
{
	struct vmem_shim *vm = dev_to_vms(dev);
	unsigned long flags;
	u64 t, cap;
	int ret;

	if (READ_ONCE(vm->broken))
		return -EIO;
	if (sysfs_streq(buf, "host")) {
		spin_lock_irqsave(&vm->state_lock, flags);
		vm->guest_target_set = false;
		vm->nack_level = 0;
		vm->target_gen++;
		spin_unlock_irqrestore(&vm->state_lock, flags);
		vmem_shim_queue(vm);
		return count;
	}
	ret = vmem_shim_parse_size(buf, &t);
	if (ret)
		return ret;
	if (!IS_ALIGNED(t, vm->gran))
		return -EINVAL;
	cap = (u64)READ_ONCE(vm->nr_usable) * vm->unit_size;
	if (t > cap)
		return -ERANGE;
	spin_lock_irqsave(&vm->state_lock, flags);
	vm->guest_target = t;
	vm->guest_target_set = true;
	vm->nack_level = 0;
	vm->target_gen++;
	spin_unlock_irqrestore(&vm->state_lock, flags);
	vmem_shim_queue(vm);
	return count;
}
static DEVICE_ATTR_RW(target_size);

static struct attribute *vmem_shim_attrs[] = {
	&dev_attr_plugged_size.attr,
	&dev_attr_requested_size.attr,
	&dev_attr_block_size.attr,
	&dev_attr_unit_size.attr,
	&dev_attr_region.attr,
	&dev_attr_target_size.attr,
	&dev_attr_unplug_shortfall.attr,
	&dev_attr_state.attr,
	&dev_attr_mode.attr,
	NULL,
};
ATTRIBUTE_GROUPS(vmem_shim);

/* --- debugfs ----------------------------------------------------------- */

static int vmem_shim_blocks_show(struct seq_file *m, void *unused)
{
	struct vmem_shim *vm = m->private;
	unsigned long id, i;

	if (mutex_lock_interruptible(&vm->lock))
		return -EINTR;
	seq_puts(m, "# unit memory_block phys_start unit_state online zone fake [plugged_sub_blocks]\n");
	for (id = 0; id < vm->nr_units; id++) {
		for (i = 0; i < vm->mbs_per_unit; i++) {
			unsigned long mb = id * vm->mbs_per_unit + i;
			unsigned long pfn = vmem_shim_mb_pfn(vm, mb);
			struct page *page = pfn_to_online_page(pfn);

			seq_printf(m, "%lu %llu %#llx %s%s %s %s %s", id,
				   div64_u64(PFN_PHYS(pfn), vm->mb_size),
				   (u64)PFN_PHYS(pfn), vmem_shim_unit_names[vm->units[id]],
				   id < vm->nr_usable ? "" : "(unusable)",
				   page ? "online" : "offline",
				   page ? page_zone(page)->name : "-",
				   vmem_shim_mb_names[READ_ONCE(vm->mb_state[mb])]);
			if (vm->sbm)
				seq_printf(m, " %lu/%lu", vmem_shim_sb_weight(vm, mb),
					   vm->sbs_per_mb);
			seq_putc(m, '\n');
		}
	}
	mutex_unlock(&vm->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vmem_shim_blocks);

static int vmem_shim_stats_show(struct seq_file *m, void *unused)
{
	struct vmem_shim *vm = m->private;

	if (mutex_lock_interruptible(&vm->lock))
		return -EINTR;
	seq_printf(m, "plugged %llu\nadded %llu\ndevice_plugged %llu\n",
		   vm->plugged, vm->added, vm->dev_plugged_size);
	seq_printf(m, "requested %llu\ngoal %llu\nusable_units %lu\nunits %lu\n",
		   vm->requested_size, vmem_shim_goal(vm), vm->nr_usable, vm->nr_units);
	seq_printf(m, "plug_requests %lu\nunplug_requests %lu\nstate_requests %lu\n",
		   vm->nr_plug_req, vm->nr_unplug_req, vm->nr_state_req);
	seq_printf(m, "busy %lu\nnack %lu\nerror %lu\n", vm->nr_busy,
		   vm->nr_nack, vm->nr_error);
	seq_printf(m, "units_added %lu\nunits_removed %lu\nremove_failed %lu\nno_room %lu\nfree_evacuated %lu\n",
		   vm->nr_added, vm->nr_removed, vm->nr_remove_failed,
		   vm->nr_no_room, vm->nr_free_evac);
	seq_printf(m, "last_error %d\nretry_ms %u\nlast_grow_ns %llu\nlast_shrink_ns %llu\n",
		   vm->last_err, vm->retry_ms, vm->last_grow_ns,
		   vm->last_shrink_ns);
	seq_printf(m, "nack_level %u\nbroken %d\n", vmem_shim_nack_level(vm),
		   vm->broken);
	seq_printf(m, "mode %s\nsub_block_size %llu\nsub_blocks_plugged %lu\nsub_blocks_unplugged %lu\nsub_blocks_busy %lu\n",
		   vm->sbm ? "sbm" : "bbm", vm->sbm ? vm->sb_size : 0,
		   vm->nr_sb_plugged, vm->nr_sb_unplugged, vm->nr_sb_busy);
	mutex_unlock(&vm->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vmem_shim_stats);

/* --- probe / remove ---------------------------------------------------- */

/* Units, their number and the plug granularity, for vm->sbm. */
static int vmem_shim_layout(struct vmem_shim *vm)
{
	struct range pluggable;
	u64 end;

	if (vm->sbm) {
		vm->unit_size = vm->mb_size;
		vm->sbs_per_mb = div64_u64(vm->mb_size, vm->sb_size);
		vm->gran = vm->sb_size;
	} else {
		vm->unit_size = max_t(u64, vm->block_size, vm->mb_size);
		vm->sbs_per_mb = 0;
		vm->gran = vm->unit_size;
	}
	vm->mbs_per_unit = div64_u64(vm->unit_size, vm->mb_size);
	pluggable = mhp_get_pluggable_range(true);
	vm->base = ALIGN(max_t(u64, vm->addr, pluggable.start), vm->unit_size);
	end = min_t(u64, vm->addr + vm->region_size, pluggable.end + 1);
	end = round_down(end, vm->unit_size);
	if (end <= vm->base) {
		dev_err(&vm->vdev->dev, "region %#llx+%#llx holds no %#llx unit\n",
			vm->addr, vm->region_size, vm->unit_size);
		return -EINVAL;
	}
	vm->nr_units = div64_u64(end - vm->base, vm->unit_size);
	vmem_shim_update_usable(vm);
	return 0;
}

static int vmem_shim_read_config(struct vmem_shim *vm)
{
	struct virtio_device *vdev = vm->vdev;
	int mode;
	u16 node_id;

	virtio_cread_le(vdev, struct virtio_mem_config, block_size,
			&vm->block_size);
	virtio_cread_le(vdev, struct virtio_mem_config, node_id, &node_id);
	virtio_cread_le(vdev, struct virtio_mem_config, addr, &vm->addr);
	virtio_cread_le(vdev, struct virtio_mem_config, region_size,
			&vm->region_size);
	virtio_cread_le(vdev, struct virtio_mem_config, usable_region_size,
			&vm->usable_region_size);
	virtio_cread_le(vdev, struct virtio_mem_config, plugged_size,
			&vm->dev_plugged_size);
	virtio_cread_le(vdev, struct virtio_mem_config, requested_size,
			&vm->requested_size);

	if (!is_power_of_2(vm->block_size) || vm->block_size < PAGE_SIZE ||
	    !IS_ALIGNED(vm->addr, vm->block_size)) {
		dev_err(&vdev->dev, "bad block size %#llx or address %#llx\n",
			vm->block_size, vm->addr);
		return -EINVAL;
	}

	vm->nid = NUMA_NO_NODE;
#if defined(CONFIG_ACPI_NUMA)
	if (virtio_has_feature(vdev, VIRTIO_MEM_F_ACPI_PXM))
		vm->nid = pxm_to_node(node_id);
#endif
	if (vm->nid == NUMA_NO_NODE)
		vm->nid = memory_add_physaddr_to_nid(vm->addr);

	vm->mb_size = memory_block_size_bytes();
	/* As upstream: sub-blocks of at least a pageblock (alloc_contig_range()). */
	vm->sb_size = max_t(u64, vm->block_size, PFN_PHYS(pageblock_nr_pages));
	mode = READ_ONCE(vmem_shim_mode);
	vm->sbm = vm->sb_size < vm->mb_size && mode != VMEM_SHIM_MODE_BBM;
	if (mode == VMEM_SHIM_MODE_SBM && !vm->sbm)
		dev_info(&vdev->dev,
			 "sub-block mode needs a device block below the memory block size: big-block mode\n");
	return vmem_shim_layout(vm);
}

/*
 * The parent resource covers the whole region, like upstream's: it keeps
 * other users out, and our System RAM children nest in it. It is busy
 * only while being requested. A parent left behind by an earlier instance
 * (memory still added) makes the request nest or fail: we go on without.
 */
static void vmem_shim_request_parent(struct vmem_shim *vm)
{
	vm->parent_name = kstrdup(dev_name(&vm->vdev->dev), GFP_KERNEL);
	if (!vm->parent_name)
		return;
	vm->parent = __request_mem_region(vm->addr, vm->region_size,
					  vm->parent_name,
					  IORESOURCE_SYSTEM_RAM |
					  IORESOURCE_EXCLUSIVE);
	if (!vm->parent) {
		dev_info(&vm->vdev->dev,
			 "region %#llx+%#llx already claimed: no parent resource\n",
			 vm->addr, vm->region_size);
		kfree(vm->parent_name);
		vm->parent_name = NULL;
		return;
	}
	vm->parent->flags &= ~IORESOURCE_BUSY;
}

static void vmem_shim_release_parent(struct vmem_shim *vm)
{
	if (!vm->parent)
		return;
	release_resource(vm->parent);
	kfree(vm->parent);
	kfree(vm->parent_name);
	vm->parent = NULL;
	vm->parent_name = NULL;
}

static void vmem_shim_free(struct vmem_shim *vm)
{
	kfree(vm->units);
	kfree(vm->mb_state);
	bitmap_free(vm->sb_plugged);
	kfree(vm);
}

static int vmem_shim_probe(struct virtio_device *vdev)
{
	struct vmem_shim *vm;
	int rc;

	BUILD_BUG_ON(sizeof(struct virtio_mem_req) != 24);
	BUILD_BUG_ON(sizeof(struct virtio_mem_resp) != 10);

	if (!vdev->config->get) {
		dev_err(&vdev->dev, "config access disabled\n");
		return -EINVAL;
	}
	vm = kzalloc(sizeof(*vm), GFP_KERNEL);
	if (!vm)
		return -ENOMEM;
	vm->vdev = vdev;
	vdev->priv = vm;
	init_waitqueue_head(&vm->host_resp);
	mutex_init(&vm->lock);
	mutex_init(&vm->hotplug_mutex);
	spin_lock_init(&vm->state_lock);
	INIT_WORK(&vm->work, vmem_shim_work_fn);
	memhp_hrtimer_setup(&vm->retry_timer, vmem_shim_retry_timer_fn,
			    CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	vm->memory_nb.notifier_call = vmem_shim_memory_notify;
	vm->mgid = -1;

	rc = vmem_shim_read_config(vm);
	if (rc)
		goto err_free;
	/*
	 * Sub-block mode needs the online_page callback; another driver
	 * (upstream virtio_mem, hv_balloon) may hold it: big-block mode then.
	 */
	if (vm->sbm && vmem_shim_sbm_register(vm)) {
		dev_warn(&vdev->dev,
			 "online_page callback taken by another driver: big-block mode\n");
		vm->sbm = false;
		rc = vmem_shim_layout(vm);
		if (rc)
			goto err_free;
	}
	if (vm->sbm) {
		vm->sb_plugged = bitmap_zalloc(vm->nr_units * vm->sbs_per_mb, GFP_KERNEL);
		if (!vm->sb_plugged) {
			rc = -ENOMEM;
			goto err_sbm;
		}
	}
	vm->units = kcalloc(vm->nr_units, 1, GFP_KERNEL);
	vm->mb_state = kcalloc(vm->nr_units * vm->mbs_per_unit, 1, GFP_KERNEL);
	/*
	 * The name of our System RAM resources must outlive the module when
	 * memory stays added at unload (/proc/iomem prints it): never a
	 * string in the module's own .rodata. See vmem_shim_remove().
	 */
	vm->resource_name = kstrdup_const(VMEM_SHIM_RESOURCE_NAME, GFP_KERNEL);
	if (!vm->units || !vm->mb_state || !vm->resource_name) {
		rc = -ENOMEM;
		goto err_sbm;
	}

	vm->vq = virtio_find_single_vq(vdev, vmem_shim_vq_done, "guest-request");
	if (IS_ERR(vm->vq)) {
		rc = PTR_ERR(vm->vq);
		goto err_sbm;
	}

	vmem_shim_request_parent(vm);
	rc = memory_group_register_dynamic(vm->nid,
					   PHYS_PFN(vm->unit_size));
	if (rc < 0)
		goto err_parent;
	vm->mgid = rc;
	rc = register_memory_notifier(&vm->memory_nb);
	if (rc)
		goto err_group;
	if (vm->sbm)
		vmem_shim_sbm_list_add(vm);

	vm->dbg = debugfs_create_dir(dev_name(&vdev->dev), vmem_shim_debugfs_root);
	debugfs_create_file("blocks", 0400, vm->dbg, vm, &vmem_shim_blocks_fops);
	debugfs_create_file("stats", 0400, vm->dbg, vm, &vmem_shim_stats_fops);

	dev_info(&vdev->dev,
		 "region %#llx+%#llx block %#llx unit %#llx node %d, %s mode (plugs by %#llx): %lu units, %lu usable, requested %llu plugged %llu\n",
		 vm->addr, vm->region_size, vm->block_size, vm->unit_size,
		 vm->nid, vm->sbm ? "sub-block" : "big-block", vm->gran,
		 vm->nr_units, vm->nr_usable, vm->requested_size,
		 vm->dev_plugged_size);

	virtio_device_ready(vdev);
	/* Startup scan, then follow requested_size. */
	vmem_shim_queue(vm);
	return 0;

err_group:
	memory_group_unregister(vm->mgid);
err_parent:
	vmem_shim_release_parent(vm);
	vdev->config->del_vqs(vdev);
err_sbm:
	if (vm->sbm)
		vmem_shim_sbm_unregister(vm);
err_free:
	vdev->priv = NULL;
	kfree_const(vm->resource_name);
	vmem_shim_free(vm);
	return rc;
}

static void vmem_shim_remove(struct virtio_device *vdev)
{
	struct vmem_shim *vm = vdev->priv;
	unsigned long flags, id;
	int rc = 0;

	spin_lock_irqsave(&vm->state_lock, flags);
	vm->removing = true;
	spin_unlock_irqrestore(&vm->state_lock, flags);
	/*
	 * Nothing queues the worker now (vmem_shim_queue() checks removing, also
	 * for the timer); once it stopped, it cannot arm the timer again.
	 */
	cancel_work_sync(&vm->work);
	hrtimer_cancel(&vm->retry_timer);
	debugfs_remove_recursive(vm->dbg);

	/*
	 * Unplug everything that can go; report what cannot. A broken device
	 * takes no request: removing memory from Linux first would only lose
	 * it, so it all stays.
	 */
	mutex_lock(&vm->lock);
	if (vm->broken)
		rc = -EIO;
	for (id = 0; id < vm->nr_units && !vm->broken; id++) {
		int err, try;

		if (vm->units[id] != VMEM_SHIM_UNIT_ADDED &&
		    vm->units[id] != VMEM_SHIM_UNIT_PLUGGED)
			continue;
		/*
		 * Evacuating a movable unit fails with -EBUSY while one of its
		 * pages is briefly held (under migration, in a per-CPU list):
		 * up to VMEM_SHIM_REMOVE_TRIES tries per unit, sleeping 100 ms
		 * longer before each retry than before the last (100, 200, ...
		 * ms), none once rmmod is killed; anything else stays, as
		 * reported below.
		 */
		for (try = 0; ; try++) {
			err = vmem_shim_unplug_unit(vm, id);
			/* sbm: some sub-blocks may have gone, not all. */
			if (!err && vm->sbm && vm->units[id] != VMEM_SHIM_UNIT_UNPLUGGED)
				err = -EBUSY;
			if (err != -EBUSY || try == VMEM_SHIM_REMOVE_TRIES - 1 ||
			    fatal_signal_pending(current))
				break;
			msleep(100 * (try + 1));
		}
		if (err && !rc)
			rc = err;
	}
	if (vm->plugged)
		dev_warn(&vdev->dev,
			 "%llu MiB could not be unplugged at removal (error %d): %llu MiB stay as System RAM and are adopted at the next bind\n",
			 vm->plugged >> 20, rc, vm->added >> 20);
	mutex_unlock(&vm->lock);

	/*
	 * Refuse onlining and offlining our blocks from now on; taking the
	 * mutex waits for one in flight to end (it holds the mutex from
	 * MEM_GOING_* to the final event).
	 */
	mutex_lock(&vm->hotplug_mutex);
	vm->frozen = true;
	mutex_unlock(&vm->hotplug_mutex);

	/*
	 * sbm: an offline block left added must not be onlined without our
	 * callback (its unplugged sub-blocks would reach the buddy); online
	 * ones keep their fake-offline pages, which cannot be offlined any
	 * more, as with upstream virtio_mem.
	 */
	if (vm->sbm) {
		for (id = 0; id < vm->nr_units; id++) {
			if (vm->units[id] != VMEM_SHIM_UNIT_ADDED ||
			    vmem_shim_mb_online(vm, id) ||
			    vmem_shim_sb_weight(vm, id) == vm->sbs_per_mb)
				continue;
			if (offline_and_remove_memory(vmem_shim_unit_start(vm, id),
						      vm->unit_size))
				dev_warn(&vdev->dev,
					 "partially plugged offline memory %#llx could not be removed\n",
					 vmem_shim_unit_start(vm, id));
			else
				vmem_shim_set_unit(vm, id, VMEM_SHIM_UNIT_UNPLUGGED);
		}
		vmem_shim_sbm_unregister(vm);
	}
	unregister_memory_notifier(&vm->memory_nb);
	/*
	 * Blocks left behind keep their group, nest in the parent and keep
	 * pointing at resource_name: like upstream virtio_mem, we deliberately
	 * never free the name then (a few bytes per unload with memory that
	 * could not go), since nothing tells us when the next bind or a later
	 * removal drops the last resource that uses it. kmemleak is told: once
	 * that removal drops the last pointer, the name is unreferenced on
	 * purpose, not a leak.
	 */
	if (!vm->added) {
		memory_group_unregister(vm->mgid);
		vmem_shim_release_parent(vm);
		kfree_const(vm->resource_name);
	} else {
		kmemleak_not_leak(vm->resource_name);
	}
	virtio_reset_device(vdev);
	vdev->config->del_vqs(vdev);
	vdev->priv = NULL;
	vmem_shim_free(vm);
}

#ifdef CONFIG_PM_SLEEP
static int vmem_shim_freeze(struct virtio_device *vdev)
{
	/* Plugged memory cannot survive a device reset safely. */
	dev_err(&vdev->dev, "suspend/hibernation not supported\n");
	return -EPERM;
}

static int vmem_shim_restore(struct virtio_device *vdev)
{
	return -EPERM;
}
#endif

static unsigned int vmem_shim_features[] = {
#if defined(CONFIG_NUMA) && defined(CONFIG_ACPI_NUMA)
	VIRTIO_MEM_F_ACPI_PXM,
#endif
	VIRTIO_MEM_F_UNPLUGGED_INACCESSIBLE,
};

static const struct virtio_device_id vmem_shim_id_table[] = {
	{ VIRTIO_ID_MEM, VIRTIO_DEV_ANY_ID },
	{ 0 },
};

static struct virtio_driver vmem_shim_driver = {
	.feature_table = vmem_shim_features,
	.feature_table_size = ARRAY_SIZE(vmem_shim_features),
	.driver.name = KBUILD_MODNAME,
	.driver.owner = THIS_MODULE,
	.driver.dev_groups = vmem_shim_groups,
	.id_table = vmem_shim_id_table,
	.probe = vmem_shim_probe,
	.remove = vmem_shim_remove,
	.config_changed = vmem_shim_config_changed,
#ifdef CONFIG_PM_SLEEP
	.freeze = vmem_shim_freeze,
	.restore = vmem_shim_restore,
#endif
};

static int __init vmem_shim_init(void)
{
	int rc;

	vmem_shim_debugfs_root = debugfs_create_dir(KBUILD_MODNAME, NULL);
	rc = register_virtio_driver(&vmem_shim_driver);
	if (rc)
		debugfs_remove_recursive(vmem_shim_debugfs_root);
	return rc;
}

static void __exit vmem_shim_exit(void)
{
	unregister_virtio_driver(&vmem_shim_driver);
	debugfs_remove_recursive(vmem_shim_debugfs_root);
}

module_init(vmem_shim_init);
module_exit(vmem_shim_exit);

/* No MODULE_DEVICE_TABLE: never autoload instead of upstream virtio_mem. */
MODULE_DESCRIPTION("memhp-lab virtio-mem driver with guest-side controls");
MODULE_LICENSE("GPL");
