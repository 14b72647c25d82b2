// SPDX-License-Identifier: GPL-2.0
/*
 * memhp-count: a QEMU TCG plugin that counts guest instructions, exactly.
 *
 * Loaded by memhp-vm --count (qemu -plugin memhp-count.so,out=FILE). It
 * counts every instruction the guest executes, per vCPU, split kernel and
 * user by the address it runs at, and the executions of every translated
 * block, which the host side (memhp-count-report) attributes to the guest
 * kernel's functions with the guest's /proc/kallsyms.
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
 * and the executions of every block in that time.
 *
 * How counts are taken. Each translated block gets two inline operations,
 * run at its entry: add its instruction count to the vCPU's kernel or user
 * total, and add one to the block's execution count. Both live in
 * scoreboards (one slot per vCPU), so counting takes no lock. A marker
 * snapshots the totals and, for a phase's end, the blocks' counts. Two
 * consequences, written here because they decide what "exact" means:
 *
 *  - A block is counted whole when it starts. Interrupts are taken between
 *    blocks under TCG, so they never split one; an exception inside a block
 *    (a page fault, a #UD) counts its instructions after the faulting one.
 *  - The marker's own block is counted at its entry, before the marker ran.
 *    The snapshot at a marker is corrected by the instructions of that block
 *    after the marker (for a begin) or from the marker on (for an end), so
 *    the marking vCPU's phase counts cover exactly the instructions strictly
 *    between the two markers. Other vCPUs are read while they run: their
 *    figures are right to within the block each one is executing.
 *
 * Time: a phase also records its host wall time and, per vCPU, the time
 * the vCPU was halted (QEMU's idle/resume callbacks), so that time spent
 * waiting is told from time spent emulating.
 *
 * Phases do not nest: a begin while a phase is open ends that one first
 * (counted in "unbalanced"). Memory of a translated block's record is kept
 * until QEMU exits; re-translations of the same (address, length) share
 * one record.
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MARK_LEN	8
#define MARK_BEGIN	1
#define MARK_END	2
#define NAME_MAX_LEN	63
/* Canonical x86-64: the kernel runs in the upper half. */
#define KERNEL_START	0xffff800000000000ULL

static const uint8_t mark_bytes[MARK_LEN] = {
	0x0f, 0x1f, 0x84, 0x00, 0x4d, 0x48, 0x50, 0x4d
};

/* One per translated (address, length): its executions per vCPU. */
struct block {
	uint64_t pc;
	uint32_t insns;
	bool kernel;
	struct qemu_plugin_scoreboard *execs;
	uint64_t snap;		/* executions (all vCPUs) at the phase's begin */
};

/* A vCPU's running totals: instructions executed in kernel and in user. */
struct totals {
	uint64_t kernel;
	uint64_t user;
};

/*
 * A vCPU's halted time (host ns): QEMU's idle and resume callbacks, which
 * run on the vCPU's thread; markers on other threads read them atomically.
 */
struct idle {
	int64_t since;		/* when it last halted, 0 while it runs */
	int64_t total;		/* halted time before that */
};

/* Where a marker sits: its block's length and its index in the block. */
struct mark_site {
	uint32_t tb_insns;
	uint32_t index;
};

struct vcpu_regs {
	struct qemu_plugin_register *rdi;
	struct qemu_plugin_register *rsi;
};

static GMutex lock;		/* blocks, phase state, out */
static GHashTable *blocks;	/* struct block by (pc, insns) */
static struct qemu_plugin_scoreboard *totals;	/* struct totals */
static struct qemu_plugin_scoreboard *regs;	/* struct vcpu_regs */
static struct qemu_plugin_scoreboard *idle;	/* struct idle */
static char *out_path;
static GString *out;		/* phases, written at exit */
static unsigned int nr_phases;
static unsigned int unbalanced;
static unsigned int bad_marks;

/* The open phase, if any. */
static bool phase_open;
static char phase_name[NAME_MAX_LEN + 1];
static unsigned int phase_vcpu;
static struct totals *phase_begin;	/* per vCPU */
static int64_t *phase_idle_begin;	/* per vCPU */
static int64_t phase_wall_begin;

static guint block_hash(gconstpointer v)
{
	const struct block *b = v;

	return (guint)(b->pc ^ (b->pc >> 32)) ^ b->insns;
}

static gboolean block_equal(gconstpointer a, gconstpointer b)
{
	const struct block *x = a, *y = b;

	return x->pc == y->pc && x->insns == y->insns;
}

static uint64_t block_execs(struct block *b)
{
	return qemu_plugin_u64_sum(qemu_plugin_scoreboard_u64(b->execs));
}

static struct totals *vcpu_totals(unsigned int vcpu)
{
	return qemu_plugin_scoreboard_find(totals, vcpu);
}

/*
 * The marking vCPU's totals as of the marker: its block was counted whole
 * at entry, so take off the instructions not yet run (begin: those after
 * the marker; end: the marker and those after it).
 */
static struct totals vcpu_at_mark(unsigned int vcpu, const struct mark_site *site,
				  int op, bool kernel)
{
	struct totals t = *vcpu_totals(vcpu);
	uint64_t ahead = site->tb_insns - site->index - (op == MARK_BEGIN ? 1 : 0);

	if (kernel)
		t.kernel -= ahead;
	else
		t.user -= ahead;
	return t;
}

static int64_t vcpu_idle_ns(unsigned int vcpu, int64_t now)
{
	struct idle *d = qemu_plugin_scoreboard_find(idle, vcpu);
	int64_t since = __atomic_load_n(&d->since, __ATOMIC_ACQUIRE);
	int64_t total = __atomic_load_n(&d->total, __ATOMIC_ACQUIRE);

	return total + (since ? now - since : 0);
}

static void vcpu_idle(qemu_plugin_id_t id, unsigned int vcpu)
{
	struct idle *d = qemu_plugin_scoreboard_find(idle, vcpu);

	__atomic_store_n(&d->since, g_get_monotonic_time() * 1000, __ATOMIC_RELEASE);
}

static void vcpu_resume(qemu_plugin_id_t id, unsigned int vcpu)
{
	struct idle *d = qemu_plugin_scoreboard_find(idle, vcpu);
	int64_t since = __atomic_load_n(&d->since, __ATOMIC_ACQUIRE);

	if (!since)
		return;
	/* since first: a reader may briefly miss this period, never count it twice */
	__atomic_store_n(&d->since, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&d->total, d->total + g_get_monotonic_time() * 1000 - since,
			 __ATOMIC_RELEASE);
}

static void snapshot_blocks(void)
{
	GHashTableIter it;
	gpointer key;

	g_hash_table_iter_init(&it, blocks);
	while (g_hash_table_iter_next(&it, &key, NULL)) {
		struct block *b = key;

		b->snap = block_execs(b);
	}
}

static void emit_phase_end(unsigned int vcpu, const struct mark_site *site, int op,
			   bool kernel)
{
	int n = qemu_plugin_num_vcpus();
	int64_t now = g_get_monotonic_time() * 1000;
	GHashTableIter it;
	gpointer key;
	bool first = true;

	if (nr_phases)
		g_string_append(out, ",\n");
	g_string_append_printf(out, "{\"name\": \"%s\", ", phase_name);
	g_string_append_printf(out, "\"begin_vcpu\": %u, \"end_vcpu\": %u, ", phase_vcpu, vcpu);
	g_string_append_printf(out, "\"wall_ns\": %" PRId64 ", ", now - phase_wall_begin);
	g_string_append(out, "\"vcpus\": [");
	for (int i = 0; i < n; i++) {
		struct totals t = i == (int)vcpu ?
			vcpu_at_mark(vcpu, site, op, kernel) : *vcpu_totals(i);

		g_string_append_printf(out, "%s{\"kernel\": %" PRIu64 ", \"user\": %" PRIu64,
				       i ? ", " : "",
				       t.kernel - phase_begin[i].kernel,
				       t.user - phase_begin[i].user);
		g_string_append_printf(out, ", \"idle_ns\": %" PRId64 "}",
				       vcpu_idle_ns(i, now) - phase_idle_begin[i]);
	}
	g_string_append(out, "], \"blocks\": [");
	g_hash_table_iter_init(&it, blocks);
	while (g_hash_table_iter_next(&it, &key, NULL)) {
		struct block *b = key;
		uint64_t d = block_execs(b) - b->snap;

		if (!d)
			continue;
		g_string_append_printf(out, "%s[%" PRIu64 ", %u, %" PRIu64 "]",
				       first ? "" : ", ", b->pc, b->insns, d);
		first = false;
	}
	g_string_append(out, "]}");
	nr_phases++;
	phase_open = false;
}

static void read_name(unsigned int vcpu, char *name)
{
	g_autoptr(GByteArray) buf = g_byte_array_new();
	g_autoptr(GByteArray) reg = g_byte_array_new();
	struct vcpu_regs *r;
	uint64_t addr = 0;
	size_t i;

	g_strlcpy(name, "?", NAME_MAX_LEN + 1);
	r = qemu_plugin_scoreboard_find(regs, vcpu);
	if (!r->rsi || qemu_plugin_read_register(r->rsi, reg) != 8)
		return;
	memcpy(&addr, reg->data, 8);
	for (i = 0; i < NAME_MAX_LEN; i++) {
		char c;

		g_byte_array_set_size(buf, 0);
		if (!qemu_plugin_read_memory_vaddr(addr + i, buf, 1))
			break;
		c = (char)buf->data[0];
		if (!c)
			break;
		/* The name goes into JSON: keep it to a safe alphabet. */
		name[i] = g_ascii_isalnum(c) || strchr("-_.:/+,", c) ? c : '_';
	}
	name[i] = '\0';
	if (!i)
		g_strlcpy(name, "?", NAME_MAX_LEN + 1);
}

static int read_op(unsigned int vcpu)
{
	g_autoptr(GByteArray) reg = g_byte_array_new();
	struct vcpu_regs *r = qemu_plugin_scoreboard_find(regs, vcpu);
	uint64_t v = 0;

	if (!r->rdi || qemu_plugin_read_register(r->rdi, reg) != 8)
		return 0;
	memcpy(&v, reg->data, 8);
	return v == MARK_BEGIN || v == MARK_END ? (int)v : 0;
}

static void vcpu_mark(unsigned int vcpu, void *udata)
{
	const struct mark_site *site = udata;
	int n = qemu_plugin_num_vcpus();
	char name[NAME_MAX_LEN + 1];
	int op = read_op(vcpu);
	bool kernel = site->index & 0x80000000u;
	struct mark_site s = { site->tb_insns, site->index & 0x7fffffffu };

	if (!op) {
		g_mutex_lock(&lock);
		bad_marks++;
		g_mutex_unlock(&lock);
		return;
	}
	read_name(vcpu, name);

	g_mutex_lock(&lock);
	if (op == MARK_END && (!phase_open || strcmp(name, phase_name))) {
		unbalanced++;
		goto out;
	}
	if (op == MARK_BEGIN && phase_open) {
		unbalanced++;
		emit_phase_end(vcpu, &s, MARK_BEGIN, kernel);
	}
	if (op == MARK_END) {
		emit_phase_end(vcpu, &s, op, kernel);
		goto out;
	}
	g_free(phase_begin);
	g_free(phase_idle_begin);
	phase_begin = g_new0(struct totals, n);
	phase_idle_begin = g_new0(int64_t, n);
	phase_wall_begin = g_get_monotonic_time() * 1000;
	for (int i = 0; i < n; i++) {
		phase_begin[i] = i == (int)vcpu ?
			vcpu_at_mark(vcpu, &s, op, kernel) : *vcpu_totals(i);
		phase_idle_begin[i] = vcpu_idle_ns(i, phase_wall_begin);
	}
	snapshot_blocks();
	g_strlcpy(phase_name, name, sizeof(phase_name));
	phase_vcpu = vcpu;
	phase_open = true;
out:
	g_mutex_unlock(&lock);
}

static struct block *get_block(uint64_t pc, uint32_t insns)
{
	struct block key = { .pc = pc, .insns = insns }, *b;

	g_mutex_lock(&lock);
	b = g_hash_table_lookup(blocks, &key);
	if (!b) {
		b = g_new0(struct block, 1);
		b->pc = pc;
		b->insns = insns;
		b->kernel = pc >= KERNEL_START;
		b->execs = qemu_plugin_scoreboard_new(sizeof(uint64_t));
		g_hash_table_insert(blocks, b, b);
	}
	g_mutex_unlock(&lock);
	return b;
}

static void vcpu_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	uint64_t pc = qemu_plugin_tb_vaddr(tb);
	struct block *b = get_block(pc, n);
	qemu_plugin_u64 t = qemu_plugin_scoreboard_u64_in_struct(totals, struct totals,
								 kernel);

	if (!b->kernel)
		t = qemu_plugin_scoreboard_u64_in_struct(totals, struct totals, user);
	qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							  t, n);
	qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							  qemu_plugin_scoreboard_u64(b->execs), 1);

	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint8_t bytes[MARK_LEN];
		struct mark_site *site;

		if (qemu_plugin_insn_size(insn) != MARK_LEN ||
		    qemu_plugin_insn_data(insn, bytes, MARK_LEN) != MARK_LEN ||
		    memcmp(bytes, mark_bytes, MARK_LEN))
			continue;
		/* Kept for the life of QEMU: a block's callbacks may run at any time. */
		site = g_new0(struct mark_site, 1);
		site->tb_insns = n;
		site->index = i | (b->kernel ? 0x80000000u : 0);
		qemu_plugin_register_vcpu_insn_exec_cb(insn, vcpu_mark, QEMU_PLUGIN_CB_R_REGS,
						       site);
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

static void plugin_exit(qemu_plugin_id_t id, void *p)
{
	int n = qemu_plugin_num_vcpus();
	FILE *f;

	g_mutex_lock(&lock);
	f = fopen(out_path, "w");
	if (!f) {
		g_autofree char *msg = g_strdup_printf("memhp-count: cannot write %s\n", out_path);

		qemu_plugin_outs(msg);
		goto unlock;
	}
	fprintf(f, "{\"format\": \"memhp-count 1\", \"kernel_start\": %llu, \"vcpus\": [",
		KERNEL_START);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s{\"kernel\": %" PRIu64 ", \"user\": %" PRIu64 "}", i ? ", " : "",
			vcpu_totals(i)->kernel, vcpu_totals(i)->user);
	fprintf(f, "],\n \"translated_blocks\": %u, ", g_hash_table_size(blocks));
	if (phase_open)
		fprintf(f, "\"open_phase\": \"%s\", ", phase_name);
	else
		fprintf(f, "\"open_phase\": null, ");
	fprintf(f, "\"unbalanced_marks\": %u, \"bad_marks\": %u,\n", unbalanced, bad_marks);
	fprintf(f, " \"phases\": [\n%s\n]}\n", out->str);
	if (fclose(f)) {
		g_autofree char *msg = g_strdup_printf("memhp-count: error writing %s\n", out_path);

		qemu_plugin_outs(msg);
	}
unlock:
	g_mutex_unlock(&lock);
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
	if (strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "memhp-count: x86_64 guests only, not %s\n", info->target_name);
		return -1;
	}
	blocks = g_hash_table_new(block_hash, block_equal);
	totals = qemu_plugin_scoreboard_new(sizeof(struct totals));
	regs = qemu_plugin_scoreboard_new(sizeof(struct vcpu_regs));
	idle = qemu_plugin_scoreboard_new(sizeof(struct idle));
	out = g_string_new(NULL);

	qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
	qemu_plugin_register_vcpu_tb_trans_cb(id, vcpu_tb_trans);
	qemu_plugin_register_vcpu_idle_cb(id, vcpu_idle);
	qemu_plugin_register_vcpu_resume_cb(id, vcpu_resume);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
