// SPDX-License-Identifier: GPL-2.0
/*
 * sparse_hotplug: the event log. The memory notifier records every block
 * transition (online, offline, cancelled, with its duration) in a ring read
 * through debugfs sparse_hotplug/events and traces it; it also hands the
 * offline events to the isolation code (sparse_hotplug_isolate.c). Design
 * and locking: the top of sparse_hotplug_sections.c.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/memory.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/fs.h>
#include <linux/ktime.h>

#include "sparse_hotplug_internal.h"
#include "sparse_hotplug_trace.h"

/* ---- event log (memory notifier) --------------------------------------- */

#define SPARSE_HP_NR_EVENTS	1024

struct sparse_hp_event {
	u64 time_ns;			/* CLOCK_BOOTTIME at the end */
	u64 duration_ns;		/* GOING_* to the final event */
	unsigned long block;
	int from, to, result;
	char zone[16];			/* after onlining; "-" otherwise */
};

/*
 * Protects the ring and sparse_hp_pending (see the locking rules at the top
 * of sparse_hotplug_sections.c).
 */
static DEFINE_MUTEX(sparse_hp_event_lock);
static struct sparse_hp_event *sparse_hp_events;
static u64 sparse_hp_events_total;		/* ever recorded; ring index = total % N */

static struct {
	bool active;
	unsigned long block;
	int to;
	u64 start_ns;
} sparse_hp_pending;

static void sparse_hp_event_begin(struct memory_notify *mn, int to)
{
	unsigned long block = pfn_to_section_nr(mn->start_pfn) / sparse_hp_sections_per_block;

	mutex_lock(&sparse_hp_event_lock);
	sparse_hp_pending.active = true;
	sparse_hp_pending.block = block;
	sparse_hp_pending.to = to;
	sparse_hp_pending.start_ns = ktime_get_ns();
	mutex_unlock(&sparse_hp_event_lock);
	trace_block_going(block, mn->start_pfn, mn->nr_pages, to);
}

static void sparse_hp_event_end(struct memory_notify *mn, int to, int result)
{
	unsigned long block = pfn_to_section_nr(mn->start_pfn) / sparse_hp_sections_per_block;
	struct page *page = sparse_hp_online_page(mn->start_pfn);
	const char *zone = (page && to == SPARSE_HP_BLOCK_ONLINE && result == SPARSE_HP_RESULT_OK) ?
			   page_zone(page)->name : "-";
	/* from/to name the attempted change; a cancelled one ends in from. */
	int from = to == SPARSE_HP_BLOCK_ONLINE ? SPARSE_HP_BLOCK_OFFLINE : SPARSE_HP_BLOCK_ONLINE;
	struct sparse_hp_event *ev;
	u64 now = ktime_get_ns(), duration = 0;

	mutex_lock(&sparse_hp_event_lock);
	if (sparse_hp_pending.active && sparse_hp_pending.block == block &&
	    sparse_hp_pending.to == to)
		duration = now - sparse_hp_pending.start_ns;
	sparse_hp_pending.active = false;
	ev = &sparse_hp_events[sparse_hp_events_total++ % SPARSE_HP_NR_EVENTS];
	ev->time_ns = ktime_get_boottime_ns();
	ev->duration_ns = duration;
	ev->block = block;
	ev->from = from;
	ev->to = to;
	ev->result = result;
	strscpy(ev->zone, zone, sizeof(ev->zone));
	mutex_unlock(&sparse_hp_event_lock);
	trace_block_transition(block, from, to, result, duration, zone);
}

static int sparse_hp_memory_notify(struct notifier_block *nb,
				   unsigned long action, void *arg)
{
	struct memory_notify *mn = arg;

	switch (action) {
	case MEM_GOING_ONLINE:
		sparse_hp_event_begin(mn, SPARSE_HP_BLOCK_ONLINE);
		break;
	case MEM_GOING_OFFLINE:
		sparse_hp_event_begin(mn, SPARSE_HP_BLOCK_OFFLINE);
		/* A veto: the core sends MEM_CANCEL_OFFLINE, which ends the event. */
		return notifier_from_errno(sparse_hp_isolated_notify(action,
								     mn->start_pfn,
								     mn->nr_pages));
	case MEM_ONLINE:
		sparse_hp_event_end(mn, SPARSE_HP_BLOCK_ONLINE, SPARSE_HP_RESULT_OK);
		break;
	case MEM_CANCEL_ONLINE:
		sparse_hp_event_end(mn, SPARSE_HP_BLOCK_ONLINE, SPARSE_HP_RESULT_CANCELLED);
		break;
	case MEM_OFFLINE:
		sparse_hp_isolated_notify(action, mn->start_pfn, mn->nr_pages);
		sparse_hp_event_end(mn, SPARSE_HP_BLOCK_OFFLINE, SPARSE_HP_RESULT_OK);
		break;
	case MEM_CANCEL_OFFLINE:
		sparse_hp_isolated_notify(action, mn->start_pfn, mn->nr_pages);
		sparse_hp_event_end(mn, SPARSE_HP_BLOCK_OFFLINE, SPARSE_HP_RESULT_CANCELLED);
		break;
	}
	return NOTIFY_OK;
}

struct notifier_block sparse_hp_memory_nb = {
	.notifier_call = sparse_hp_memory_notify,
};

static const char *sparse_hp_state_name(int s)
{
	return s == SPARSE_HP_BLOCK_ONLINE ? "online" : "offline";
}

static int sparse_hp_events_show(struct seq_file *m, void *v)
{
	struct sparse_hp_event *ev;
	u64 i, first;

	seq_puts(m, "# seq time_s block from to zone result duration_us\n");
	mutex_lock(&sparse_hp_event_lock);
	first = sparse_hp_events_total > SPARSE_HP_NR_EVENTS ?
		sparse_hp_events_total - SPARSE_HP_NR_EVENTS : 0;
	for (i = first; i < sparse_hp_events_total; i++) {
		ev = &sparse_hp_events[i % SPARSE_HP_NR_EVENTS];
		seq_printf(m, "%llu %llu.%06llu %lu %s %s %s %s %llu\n", i,
			   ev->time_ns / NSEC_PER_SEC,
			   (ev->time_ns % NSEC_PER_SEC) / NSEC_PER_USEC,
			   ev->block, sparse_hp_state_name(ev->from),
			   sparse_hp_state_name(ev->to), ev->zone,
			   ev->result == SPARSE_HP_RESULT_OK ? "ok" : "cancelled",
			   ev->duration_ns / NSEC_PER_USEC);
	}
	mutex_unlock(&sparse_hp_event_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sparse_hp_events);

/* Module init: the ring; -ENOMEM. */
int sparse_hp_events_alloc(void)
{
	sparse_hp_events = kvcalloc(SPARSE_HP_NR_EVENTS,
				    sizeof(*sparse_hp_events), GFP_KERNEL);
	return sparse_hp_events ? 0 : -ENOMEM;
}

/* Module exit, and init's error path. */
void sparse_hp_events_free(void)
{
	kvfree(sparse_hp_events);
}

/* Module init: debugfs events. */
void sparse_hp_events_debugfs(struct dentry *dir)
{
	debugfs_create_file("events", 0400, dir, NULL, &sparse_hp_events_fops);
}
