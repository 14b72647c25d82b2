/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A vCPU's halted time (ns) for the memhp-count plugin: written by the
 * vCPU's own thread (QEMU's idle and resume callbacks), read by a marker's
 * callback on any vCPU's thread. No lock: a sequence count, as the
 * kernel's seqcount_t, makes the reader see since and total from the same
 * moment.
 *
 * The value at time now is total + (now - since) while halted, total while
 * running. A resume must move the halt from since into total; without the
 * count, a reader could take since from one side of that move and total
 * from the other:
 *
 *	vCPU thread (resume)		marker thread (read)
 *	since = 0
 *					s = since	(0: running)
 *					t = total	(without this halt)
 *	total += now - since
 *
 * reads the halt nowhere, and the other order of the two stores reads it
 * twice; either way a phase's halted time (end read minus begin read) is
 * wrong, and negative when the end's read misses a halt that the begin's
 * read saw in progress. With the count, a read that overlaps a write in
 * any way sees an odd count or a changed one and is repeated:
 *
 *	vCPU thread (write)		marker thread (read)
 *	seq++ (odd)
 *	   release fence
 *	since, total			seq (acquire), odd or not
 *	   release store		since, total
 *	seq++ (even)			   acquire fence
 *					seq again: unchanged and even, or retry
 *
 * The order is that of seqlocks in the C11 memory model: the data are
 * atomics themselves (relaxed), the fences order them against seq.
 *
 * A read never decreases over successive reads with non-decreasing now,
 * not even when the vCPU halts after the reader took now (a halt that
 * starts after now adds nothing yet) or resumes between the reader's now
 * and its read (the total then holds the halt up to the resume, which is
 * later than any earlier reader's now). So a phase's halted time is never
 * negative.
 */
#ifndef MEMHP_IDLE_CLOCK_H
#define MEMHP_IDLE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct idle_clock {
	uint32_t seq;		/* odd while since and total change */
	int64_t since;		/* when it last halted, 0 while it runs */
	int64_t total;		/* halted time before since */
};

/* Writer side: the vCPU's own thread only. */
static inline void idle_clock_write_begin(struct idle_clock *c)
{
	uint32_t seq = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&c->seq, seq + 1, __ATOMIC_RELAXED);
	/* the odd count before the data (smp_wmb) */
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void idle_clock_write_end(struct idle_clock *c)
{
	uint32_t seq = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);

	/* the data before the even count */
	__atomic_store_n(&c->seq, seq + 1, __ATOMIC_RELEASE);
}

/* The halt's start; a second halt without a resume keeps the first's. */
static inline void idle_clock_halt_fields(struct idle_clock *c, int64_t now)
{
	if (!c->since)
		__atomic_store_n(&c->since, now > 0 ? now : 1, __ATOMIC_RELAXED);
}

/* The halt into total (now before since, from a clock's step: nothing). */
static inline void idle_clock_resume_fields(struct idle_clock *c, int64_t now)
{
	int64_t since = c->since;

	if (!since)
		return;
	if (now > since)
		__atomic_store_n(&c->total, c->total + now - since, __ATOMIC_RELAXED);
	__atomic_store_n(&c->since, 0, __ATOMIC_RELAXED);
}

static inline void idle_clock_halt(struct idle_clock *c, int64_t now)
{
	idle_clock_write_begin(c);
	idle_clock_halt_fields(c, now);
	idle_clock_write_end(c);
}

static inline void idle_clock_resume(struct idle_clock *c, int64_t now)
{
	idle_clock_write_begin(c);
	idle_clock_resume_fields(c, now);
	idle_clock_write_end(c);
}

/* Reader side: any thread. */
static inline uint32_t idle_clock_read_begin(const struct idle_clock *c)
{
	return __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
}

/* The halted time at now from since and total as they read now. */
static inline int64_t idle_clock_read_value(const struct idle_clock *c, int64_t now)
{
	int64_t since = __atomic_load_n(&c->since, __ATOMIC_RELAXED);
	int64_t total = __atomic_load_n(&c->total, __ATOMIC_RELAXED);

	return total + (since && now > since ? now - since : 0);
}

/* Whether a value read since idle_clock_read_begin() gave seq must be read again. */
static inline bool idle_clock_read_retry(const struct idle_clock *c, uint32_t seq)
{
	/* the data's loads before the count's (smp_rmb) */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return (seq & 1) || __atomic_load_n(&c->seq, __ATOMIC_RELAXED) != seq;
}

static inline int64_t idle_clock_read(const struct idle_clock *c, int64_t now)
{
	uint32_t seq;
	int64_t ns;

	do {
		seq = idle_clock_read_begin(c);
		ns = idle_clock_read_value(c, now);
	} while (idle_clock_read_retry(c, seq));
	return ns;
}

#endif /* MEMHP_IDLE_CLOCK_H */
