// SPDX-License-Identifier: GPL-2.0
/*
 * memhp-count: a QEMU TCG plugin that counts guest instructions, exactly.
 *
 * Loaded by memhp-vm --count (qemu -plugin memhp-count.so,out=FILE). It
 * counts every instruction the guest executes, per vCPU and per translated
 * block's start address (a "slot"), which gives kernel and user totals (by
 * the address a block runs at) and, on the host side (memhp-count-report),
 * the guest kernel functions the instructions ran in.
 *
 * Phases: the guest marks the beginning and the end of a phase with a
 * marker instruction (memhp-mark), an eight-byte NOP that real hardware and
 * KVM execute as a NOP:
 *
 *	nopl 0x4d50484d(%rax,%rax,1)	0f 1f 84 00 4d 48 50 4d
 *
 * with %rdi = 1 (begin) or 2 (end) and %rsi = the guest virtual address of
 * the phase's name (NUL-terminated). For each phase the output gives the
 * instructions executed between the two markers, per vCPU and kernel/user,
 * per slot, the phase's host wall time and each vCPU's halted time.
 *
 * How counts are taken. Every instruction gets an inline operation, run
 * before it: add one to its slot's counter of the executing vCPU. The
 * counters of all slots live in one scoreboard entry per vCPU (no lock, no
 * callback). Counting per instruction, not per block, keeps the count
 * exact when a block stops early: an access to MMIO (the HPET, the APIC)
 * from inside a block makes TCG re-execute that instruction alone in a
 * block without plugin operations and go on in a new block, and a fault
 * leaves the rest of its block unexecuted; either way only the
 * instructions that started are counted. An instruction that faults is
 * counted when it starts and again when it is restarted.
 *
 * A marker's own operation runs before its callback (they are injected in
 * the order registered), so a begin's snapshot includes the begin marker
 * and an end's excludes the end marker by taking one off: the marking
 * vCPU's phase counts cover exactly the instructions strictly between the
 * two markers. A snapshot copies the slot counters of every vCPU; the
 * totals and the per-slot table of a phase both come from the same two
 * copies, so they agree. Other vCPUs run while their counters are copied:
 * their figures are right to within what they execute meanwhile (a copy
 * takes up to a millisecond or two). The copies are outside the phase's
 * wall and halted times but inside the guest's own view of time.
 *
 * Time: a phase records its host wall time and, per vCPU, the time the
 * vCPU was halted (QEMU's idle/resume callbacks), so that time spent
 * waiting is told from time spent emulating.
 *
 * Phases do not nest: a begin while a phase is open abandons that phase (it
 * is written with "complete": false and counted in "unbalanced"); an end
 * whose name is not the open phase's is counted in "unbalanced" and
 * ignored. Kernel slots are allocated per block start address until
 * MAX_SLOTS; kernel blocks beyond share an overflow slot, which the output
 * names. All user instructions share one slot.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <qemu-plugin.h>

#include "idle_clock.h"
#include "memhp_mark.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* The marker's bytes (MEMHP_MARK_INSN), op and name: memhp_mark.h. */
#define MARK_LEN	8
/* Canonical x86-64: the kernel runs in the upper half. */
#define KERNEL_START	0xffff800000000000ULL
/*
 * Slot 0 takes every user instruction (user code is not resolved to
 * functions, and a slot per user address would let every new process's
 * randomised addresses use the table up); slot 1 the kernel blocks past
 * the last slot; every other slot is a kernel block's. A vCPU's counters
 * are MAX_SLOTS * 8 bytes (2 MiB); QEMU allocates 16 vCPUs' worth at first
 * (32 MiB, zeroed).
 */
#define MAX_SLOTS	262144u
#define SLOT_USER	0
#define SLOT_KERNEL_OVERFLOW	1
/* QEMU computes cpu_index * element size in 32 bits: 2 MiB * 1024 fits. */
#define MAX_VCPUS	1024
#define INLINE_ADD		QEMU_PLUGIN_INLINE_ADD_U64

/* MEMHP_MARK_INSN's bytes. */
static const uint8_t mark_bytes[MARK_LEN] = {
	0x0f, 0x1f, 0x84, 0x00, 0x4d, 0x48, 0x50, 0x4d
};

/* A vCPU's instructions per slot: one scoreboard entry. */
struct slot_counts {
	uint64_t insns[MAX_SLOTS];
};

struct vcpu_regs {
	struct qemu_plugin_register *rdi;
	struct qemu_plugin_register *rsi;
};

/* A snapshot: every vCPU's slot counters and halted time at one moment. */
struct snapshot {
	unsigned int nvcpus;
	unsigned int nslots;
	uint64_t *insns;	/* [vcpu * nslots + slot] */
	int64_t *idle_ns;	/* [vcpu] */
	int64_t wall_ns;
};

static GMutex lock;		/* slots, phase state, out */
static GHashTable *slot_of_pc;	/* block start -> slot + 1 */
static uint64_t slot_pc[MAX_SLOTS];
static unsigned int nslots = 2;
static struct qemu_plugin_scoreboard *counts;	/* struct slot_counts */
static struct qemu_plugin_scoreboard *regs;	/* struct vcpu_regs */
/* A vCPU's halted time (host ns), written by its thread: idle_clock.h. */
static struct qemu_plugin_scoreboard *idle;	/* struct idle_clock */
static char *out_path;
static GString *out;		/* phases, written at exit */
static unsigned int nr_phases;
static unsigned int unbalanced;
static unsigned int bad_marks;

/* The open phase, if any. */
static bool phase_open;
static char phase_name[MEMHP_MARK_NAME_MAX + 1];
static unsigned int phase_vcpu;
static struct snapshot phase_begin;

static uint64_t *vcpu_counts(unsigned int vcpu)
{
	struct slot_counts *c = qemu_plugin_scoreboard_find(counts, vcpu);

	return c->insns;
}

static int64_t vcpu_idle_ns(unsigned int vcpu, int64_t now)
{
	return idle_clock_read(qemu_plugin_scoreboard_find(idle, vcpu), now);
}

static void vcpu_idle(qemu_plugin_id_t id, unsigned int vcpu)
{
	idle_clock_halt(qemu_plugin_scoreboard_find(idle, vcpu), g_get_monotonic_time() * 1000);
}

static void vcpu_resume(qemu_plugin_id_t id, unsigned int vcpu)
{
	idle_clock_resume(qemu_plugin_scoreboard_find(idle, vcpu), g_get_monotonic_time() * 1000);
}

/* The phase's clock: host wall time and every vCPU's halted time. */
static void snapshot_stamp(struct snapshot *sn)
{
	int64_t now = g_get_monotonic_time() * 1000;

	for (unsigned int v = 0; v < sn->nvcpus; v++)
		sn->idle_ns[v] = vcpu_idle_ns(v, now);
	sn->wall_ns = now;
}

/*
 * Take a snapshot (lock held): every vCPU's counters, read one by one
 * (other vCPUs store to them meanwhile), and the clock: before the copy
 * for an end, after it for a begin, so no phase's time holds a copy.
 */
static void snapshot_take(struct snapshot *sn, bool end)
{
	unsigned int n = qemu_plugin_num_vcpus();

	g_free(sn->insns);
	g_free(sn->idle_ns);
	sn->nvcpus = n;
	sn->nslots = nslots;
	sn->insns = g_new(uint64_t, (size_t)n * nslots);
	sn->idle_ns = g_new(int64_t, n);
	if (end)
		snapshot_stamp(sn);
	for (unsigned int v = 0; v < n; v++) {
		const uint64_t *c = vcpu_counts(v);
		uint64_t *dst = sn->insns + (size_t)v * nslots;

		for (unsigned int i = 0; i < nslots; i++)
			dst[i] = __atomic_load_n(&c[i], __ATOMIC_RELAXED);
	}
	if (!end)
		snapshot_stamp(sn);
}

static uint64_t snap_at(const struct snapshot *sn, unsigned int v, unsigned int slot)
{
	if (v >= sn->nvcpus || slot >= sn->nslots)
		return 0;
	return sn->insns[(size_t)v * sn->nslots + slot];
}

/*
 * Write the open phase from its begin snapshot to END (lock held).
 * complete: ended by its own end marker on vcpu, in slot mark_slot, whose
 * own instruction (counted before its callback) is taken off; else
 * abandoned by a begin.
 */
static void emit_phase(const struct snapshot *end, unsigned int vcpu, bool complete,
		       unsigned int mark_slot)
{
	const struct snapshot *beg = &phase_begin;
	unsigned int n = end->nvcpus;
	uint64_t *kernel = g_new0(uint64_t, n), *user = g_new0(uint64_t, n);
	bool first = true;

	if (nr_phases)
		g_string_append(out, ",\n");
	g_string_append_printf(out, "{\"name\": \"%s\", \"complete\": %s, ", phase_name,
			       complete ? "true" : "false");
	g_string_append_printf(out, "\"begin_vcpu\": %u, \"end_vcpu\": %u, ", phase_vcpu, vcpu);
	g_string_append_printf(out, "\"wall_ns\": %" PRId64 ", \"blocks\": [",
			       end->wall_ns - beg->wall_ns);
	for (unsigned int s = 0; s < end->nslots; s++) {
		uint64_t sum = 0;

		for (unsigned int v = 0; v < n; v++) {
			uint64_t d = snap_at(end, v, s) - snap_at(beg, v, s);

			if (complete && v == vcpu && s == mark_slot && d)
				d--;
			if (s == SLOT_USER)
				user[v] += d;
			else
				kernel[v] += d;
			sum += d;
		}
		if (!sum)
			continue;
		g_string_append_printf(out, "%s[%" PRIu64 ", %" PRIu64 "]", first ? "" : ", ",
				       slot_pc[s], sum);
		first = false;
	}
	g_string_append(out, "], \"vcpus\": [");
	for (unsigned int v = 0; v < n; v++) {
		g_string_append_printf(out, "%s{\"kernel\": %" PRIu64 ", \"user\": %" PRIu64,
				       v ? ", " : "", kernel[v], user[v]);
		g_string_append_printf(out, ", \"idle_ns\": %" PRId64 "}",
				       end->idle_ns[v] - (v < beg->nvcpus ? beg->idle_ns[v] : 0));
	}
	g_string_append(out, "]}");
	g_free(kernel);
	g_free(user);
	nr_phases++;
	phase_open = false;
}

/* A 64-bit register of the marking vCPU (in a QEMU_PLUGIN_CB_R_REGS callback). */
static bool read_reg64(struct qemu_plugin_register *handle, uint64_t *val)
{
	g_autoptr(GByteArray) reg = g_byte_array_new();

	if (!handle || qemu_plugin_read_register(handle, reg) != 8)
		return false;
	memcpy(val, reg->data, 8);
	return true;
}

static void read_name(unsigned int vcpu, char *name)
{
	g_autoptr(GByteArray) buf = g_byte_array_new();
	struct vcpu_regs *r = qemu_plugin_scoreboard_find(regs, vcpu);
	uint64_t addr;
	size_t i;

	g_strlcpy(name, "?", MEMHP_MARK_NAME_MAX + 1);
	if (!read_reg64(r->rsi, &addr))
		return;
	for (i = 0; i < MEMHP_MARK_NAME_MAX; i++) {
		char c;

		g_byte_array_set_size(buf, 0);
		if (!qemu_plugin_read_memory_vaddr(addr + i, buf, 1))
			break;
		c = (char)buf->data[0];
		if (!c)
			break;
		/* The name goes into JSON: keep it to memhp-mark's alphabet. */
		name[i] = strchr(MEMHP_MARK_NAME_CHARS, c) ? c : '_';
	}
	name[i] = '\0';
	if (!i)
		g_strlcpy(name, "?", MEMHP_MARK_NAME_MAX + 1);
}

static int read_op(unsigned int vcpu)
{
	struct vcpu_regs *r = qemu_plugin_scoreboard_find(regs, vcpu);
	uint64_t v;

	if (!read_reg64(r->rdi, &v))
		return 0;
	return v == MEMHP_MARK_BEGIN || v == MEMHP_MARK_END ? (int)v : 0;
}

static void vcpu_mark(unsigned int vcpu, void *udata)
{
	unsigned int slot = GPOINTER_TO_UINT(udata);
	char name[MEMHP_MARK_NAME_MAX + 1];
	struct snapshot now = { 0 };
	int op = read_op(vcpu);

	if (!op) {
		g_mutex_lock(&lock);
		bad_marks++;
		g_mutex_unlock(&lock);
		return;
	}
	read_name(vcpu, name);

	g_mutex_lock(&lock);
	if (op == MEMHP_MARK_END) {
		if (!phase_open || strcmp(name, phase_name)) {
			unbalanced++;
		} else {
			snapshot_take(&now, true);
			emit_phase(&now, vcpu, true, slot);
		}
		goto out;
	}
	snapshot_take(&now, false);
	if (phase_open) {
		unbalanced++;
		emit_phase(&now, vcpu, false, slot);
		/* the new phase's clock starts after that */
		snapshot_stamp(&now);
	}
	/* The new phase begins after this marker, which now counted. */
	g_free(phase_begin.insns);
	g_free(phase_begin.idle_ns);
	phase_begin = now;
	now.insns = NULL;
	now.idle_ns = NULL;
	g_strlcpy(phase_name, name, sizeof(phase_name));
	phase_vcpu = vcpu;
	phase_open = true;
out:
	g_free(now.insns);
	g_free(now.idle_ns);
	g_mutex_unlock(&lock);
}

/* The slot of a block starting at pc: its own, or an overflow slot. */
static unsigned int get_slot(uint64_t pc)
{
	unsigned int slot;
	gpointer v;

	if (pc < KERNEL_START)
		return SLOT_USER;
	g_mutex_lock(&lock);
	v = g_hash_table_lookup(slot_of_pc, (gpointer)(uintptr_t)pc);
	if (v) {
		slot = GPOINTER_TO_UINT(v) - 1;
	} else if (nslots < MAX_SLOTS) {
		slot = nslots;
		slot_pc[slot] = pc;
		/* published under the lock, which snapshot_take() holds */
		nslots++;
		g_hash_table_insert(slot_of_pc, (gpointer)(uintptr_t)pc,
				    GUINT_TO_POINTER(slot + 1));
	} else {
		slot = SLOT_KERNEL_OVERFLOW;
	}
	g_mutex_unlock(&lock);
	return slot;
}

static void vcpu_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	unsigned int slot = get_slot(qemu_plugin_tb_vaddr(tb));
	qemu_plugin_u64 entry = { counts, slot * sizeof(uint64_t) };

	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint8_t bytes[MARK_LEN];

		/* First the count, then (for a marker) the callback. */
		qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn, INLINE_ADD, entry, 1);
		if (qemu_plugin_insn_size(insn) != MARK_LEN ||
		    qemu_plugin_insn_data(insn, bytes, MARK_LEN) != MARK_LEN ||
		    memcmp(bytes, mark_bytes, MARK_LEN))
			continue;
		qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_mark, QEMU_PLUGIN_CB_R_REGS,
						       GUINT_TO_POINTER(slot));
	}
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
	g_autoptr(GArray) list = qemu_plugin_get_registers();
	struct vcpu_regs *r = qemu_plugin_scoreboard_find(regs, vcpu);

	for (guint i = 0; list && i < list->len; i++) {
		qemu_plugin_reg_descriptor *d = &g_array_index(list, qemu_plugin_reg_descriptor, i);

		if (!strcmp(d->name, "rdi"))
			r->rdi = d->handle;
		else if (!strcmp(d->name, "rsi"))
			r->rsi = d->handle;
	}
}

/*
 * The counts, written whole or not at all: to FILE.tmp, renamed to FILE
 * once complete (memhp-vm fails a run whose FILE is missing).
 */
static void plugin_exit(qemu_plugin_id_t id, void *p)
{
	unsigned int n = qemu_plugin_num_vcpus();
	uint64_t overflow = 0;
	char *tmp;
	bool ok;
	FILE *f;

	tmp = g_strdup_printf("%s.tmp", out_path);
	g_mutex_lock(&lock);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "memhp-count: cannot write %s\n", tmp);
		goto unlock;
	}
	fprintf(f, "{\"format\": \"memhp-count 2\", \"kernel_start\": %llu, \"vcpus\": [",
		KERNEL_START);
	for (unsigned int v = 0; v < n; v++) {
		uint64_t *c = vcpu_counts(v), k = 0;

		for (unsigned int s = SLOT_USER + 1; s < nslots; s++)
			k += c[s];
		overflow += c[SLOT_KERNEL_OVERFLOW];
		fprintf(f, "%s{\"kernel\": %" PRIu64 ", \"user\": %" PRIu64 "}",
			v ? ", " : "", k, c[SLOT_USER]);
	}
	fprintf(f, "],\n \"slots\": %u, \"max_slots\": %u, ", nslots, MAX_SLOTS);
	fprintf(f, "\"overflow_insns\": {\"kernel\": %" PRIu64 "}, ", overflow);
	if (phase_open)
		fprintf(f, "\"open_phase\": \"%s\", ", phase_name);
	else
		fprintf(f, "\"open_phase\": null, ");
	fprintf(f, "\"unbalanced_marks\": %u, \"bad_marks\": %u,\n", unbalanced, bad_marks);
	fprintf(f, " \"phases\": [\n%s\n]}\n", out->str);
	ok = !ferror(f);
	if (fclose(f) || !ok || rename(tmp, out_path)) {
		fprintf(stderr, "memhp-count: error writing %s\n", out_path);
		unlink(tmp);
	}
unlock:
	g_mutex_unlock(&lock);
	g_free(tmp);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4) && argv[i][4]) {
			out_path = g_strdup(argv[i] + 4);
		} else {
			fprintf(stderr, "memhp-count: unknown argument %s (out=FILE only)\n",
				argv[i]);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "memhp-count: out=FILE is required\n");
		return -1;
	}
	if (info->system_emulation && info->system.max_vcpus > MAX_VCPUS) {
		fprintf(stderr, "memhp-count: at most %d vCPUs, not %d\n", MAX_VCPUS,
			info->system.max_vcpus);
		return -1;
	}
	if (strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "memhp-count: x86_64 guests only, not %s\n", info->target_name);
		return -1;
	}
	slot_of_pc = g_hash_table_new(g_direct_hash, g_direct_equal);
	/* The output's names for the two shared slots (no real block starts there). */
	slot_pc[SLOT_USER] = 0;
	slot_pc[SLOT_KERNEL_OVERFLOW] = 1;
	counts = qemu_plugin_scoreboard_new(sizeof(struct slot_counts));
	regs = qemu_plugin_scoreboard_new(sizeof(struct vcpu_regs));
	idle = qemu_plugin_scoreboard_new(sizeof(struct idle_clock));
	out = g_string_new(NULL);

	qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
	qemu_plugin_register_vcpu_tb_trans_cb(id, vcpu_tb_trans);
	qemu_plugin_register_vcpu_idle_cb(id, vcpu_idle);
	qemu_plugin_register_vcpu_resume_cb(id, vcpu_resume);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
