/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of sparse_hotplug (mm/sparse_hotplug.c): sparse_hotplug:*.
 *
 *   block_going       a memory block starts going online or offline
 *                     (MEM_GOING_ONLINE / MEM_GOING_OFFLINE), whoever asked
 *   block_transition  the transition ended (MEM_ONLINE / MEM_OFFLINE or
 *                     MEM_CANCEL_*): from, to, result, duration
 *   section_control   a write to sections/sectionN/state returned
 *   hidden_ram        a write to probe or remove returned
 *
 * States and results are small integers printed symbolically, so that
 * bpftrace and perf filters can test them cheaply.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM sparse_hotplug

#if !defined(_SPARSE_HOTPLUG_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _SPARSE_HOTPLUG_TRACE_H

#include <linux/tracepoint.h>

/* Block states in events (also used by the debugfs event log). */
#define SPARSE_HP_BLOCK_OFFLINE	0
#define SPARSE_HP_BLOCK_ONLINE	1

/* Transition results. */
#define SPARSE_HP_RESULT_OK		0
#define SPARSE_HP_RESULT_CANCELLED	1

#define sparse_hp_show_block_state(s)					\
	__print_symbolic(s, { SPARSE_HP_BLOCK_OFFLINE, "offline" },	\
			 { SPARSE_HP_BLOCK_ONLINE, "online" })

TRACE_EVENT(block_going,
	    TP_PROTO(unsigned long block, unsigned long start_pfn,
		     unsigned long nr_pages, int to),
	    TP_ARGS(block, start_pfn, nr_pages, to),
	    TP_STRUCT__entry(__field(unsigned long, block)
			     __field(unsigned long, start_pfn)
			     __field(unsigned long, nr_pages)
			     __field(int, to)),
	    TP_fast_assign(__entry->block = block;
			   __entry->start_pfn = start_pfn;
			   __entry->nr_pages = nr_pages;
			   __entry->to = to;),
	    TP_printk("block=%lu pfn=%#lx nr_pages=%lu to=%s",
		      __entry->block, __entry->start_pfn, __entry->nr_pages,
		      sparse_hp_show_block_state(__entry->to))
);

TRACE_EVENT(block_transition,
	    TP_PROTO(unsigned long block, int from, int to, int result,
		     u64 duration_ns, const char *zone),
	    TP_ARGS(block, from, to, result, duration_ns, zone),
	    TP_STRUCT__entry(__field(unsigned long, block)
			     __field(int, from)
			     __field(int, to)
			     __field(int, result)
			     __field(u64, duration_ns)
			     __array(char, zone, 16)),
	    TP_fast_assign(__entry->block = block;
			   __entry->from = from;
			   __entry->to = to;
			   __entry->result = result;
			   __entry->duration_ns = duration_ns;
			   strscpy(__entry->zone, zone, sizeof(__entry->zone));),
	    TP_printk("block=%lu %s->%s result=%s duration_ns=%llu zone=%s",
		      __entry->block, sparse_hp_show_block_state(__entry->from),
		      sparse_hp_show_block_state(__entry->to),
		      __print_symbolic(__entry->result,
				       { SPARSE_HP_RESULT_OK, "ok" },
				       { SPARSE_HP_RESULT_CANCELLED, "cancelled" }),
		      __entry->duration_ns, __entry->zone)
);

TRACE_EVENT(section_control,
	    TP_PROTO(unsigned long section, const char *cmd, int ret,
		     u64 duration_ns),
	    TP_ARGS(section, cmd, ret, duration_ns),
	    TP_STRUCT__entry(__field(unsigned long, section)
			     __array(char, cmd, 16)
			     __field(int, ret)
			     __field(u64, duration_ns)),
	    TP_fast_assign(__entry->section = section;
			   strscpy(__entry->cmd, cmd, sizeof(__entry->cmd));
			   __entry->ret = ret;
			   __entry->duration_ns = duration_ns;),
	    TP_printk("section=%lu cmd=%s ret=%d duration_ns=%llu",
		      __entry->section, __entry->cmd, __entry->ret,
		      __entry->duration_ns)
);

TRACE_EVENT(hidden_ram,
	    TP_PROTO(bool add, u64 phys, int ret, u64 duration_ns),
	    TP_ARGS(add, phys, ret, duration_ns),
	    TP_STRUCT__entry(__field(bool, add)
			     __field(u64, phys)
			     __field(int, ret)
			     __field(u64, duration_ns)),
	    TP_fast_assign(__entry->add = add;
			   __entry->phys = phys;
			   __entry->ret = ret;
			   __entry->duration_ns = duration_ns;),
	    TP_printk("%s phys=%#llx ret=%d duration_ns=%llu",
		      __entry->add ? "probe" : "remove", __entry->phys,
		      __entry->ret, __entry->duration_ns)
);

#endif /* _SPARSE_HOTPLUG_TRACE_H */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE sparse_hotplug_trace
#include <trace/define_trace.h>
