// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the memhp-count plugin's halted-time clock
 * (tools/testing/count/idle_clock.h) in user space: a marker's read that
 * overlaps a vCPU's resume in each possible order, then a writer and a
 * reader thread on a shared fake clock. A phase's halted time is the
 * difference of two reads; it must hold every halt and never be negative.
 */
#include <pthread.h>

#include "idle_clock.h"
#include "kselftest_harness.h"

#define RETRY	true

/* One read attempt whose three steps the test interleaves with a write. */
struct attempt {
	uint32_t seq;
	int64_t ns;
};

/* The fixture: halted 900 to 1000, again from 1000; the resume at 1500. */
#define RESUME_AT	1500
#define TOTAL_AFTER	600

FIXTURE(clock) {
	struct idle_clock c;
};

FIXTURE_SETUP(clock)
{
	memset(&self->c, 0, sizeof(self->c));
	idle_clock_halt(&self->c, 900);
	idle_clock_resume(&self->c, 1000);
	idle_clock_halt(&self->c, 1000);
	ASSERT_EQ(100, idle_clock_read(&self->c, 1000));
	ASSERT_EQ(300, idle_clock_read(&self->c, 1200));
}

FIXTURE_TEARDOWN(clock)
{
}

/* No overlap: the halt is in total once the resume is written. */
TEST_F(clock, resume_then_read)
{
	idle_clock_resume(&self->c, RESUME_AT);
	ASSERT_EQ(TOTAL_AFTER, idle_clock_read(&self->c, RESUME_AT));
	ASSERT_EQ(TOTAL_AFTER, idle_clock_read(&self->c, 5000));
}

/*
 * The whole read inside the write (between its since and total stores):
 * the reader sees since cleared and total without the halt, a value that
 * misses the halt; it must not take it.
 */
TEST_F(clock, read_inside_write)
{
	struct attempt a;

	idle_clock_write_begin(&self->c);
	idle_clock_resume_fields(&self->c, RESUME_AT);
	a.seq = idle_clock_read_begin(&self->c);
	a.ns = idle_clock_read_value(&self->c, 1600);
	ASSERT_EQ(RETRY, idle_clock_read_retry(&self->c, a.seq));
	idle_clock_write_end(&self->c);
	ASSERT_EQ(TOTAL_AFTER, idle_clock_read(&self->c, 1600));
}

/* The read begins before the resume and takes its values after it. */
TEST_F(clock, write_between_begin_and_values)
{
	struct attempt a;

	a.seq = idle_clock_read_begin(&self->c);
	idle_clock_resume(&self->c, RESUME_AT);
	a.ns = idle_clock_read_value(&self->c, 1600);
	ASSERT_EQ(RETRY, idle_clock_read_retry(&self->c, a.seq));
}

/* The read takes its values before the resume and checks after it. */
TEST_F(clock, write_between_values_and_check)
{
	struct attempt a;

	a.seq = idle_clock_read_begin(&self->c);
	a.ns = idle_clock_read_value(&self->c, 1600);
	ASSERT_EQ(700, a.ns);
	idle_clock_resume(&self->c, RESUME_AT);
	ASSERT_EQ(RETRY, idle_clock_read_retry(&self->c, a.seq));
}

/* The read's check falls inside the write. */
TEST_F(clock, check_inside_write)
{
	struct attempt a;

	a.seq = idle_clock_read_begin(&self->c);
	a.ns = idle_clock_read_value(&self->c, 1600);
	idle_clock_write_begin(&self->c);
	ASSERT_EQ(RETRY, idle_clock_read_retry(&self->c, a.seq));
	idle_clock_resume_fields(&self->c, RESUME_AT);
	idle_clock_write_end(&self->c);
}

/* A read that overlaps no write is taken: the retry is no false alarm. */
TEST_F(clock, read_alone)
{
	struct attempt a;

	a.seq = idle_clock_read_begin(&self->c);
	a.ns = idle_clock_read_value(&self->c, 1600);
	ASSERT_EQ(!RETRY, idle_clock_read_retry(&self->c, a.seq));
	ASSERT_EQ(700, a.ns);
}

/*
 * A phase begun during the halt and ended after the resume: its halted
 * time is the part of the halt inside it, 1200 to 1500.
 */
TEST_F(clock, phase_across_resume)
{
	int64_t begin = idle_clock_read(&self->c, 1200);

	idle_clock_resume(&self->c, RESUME_AT);
	ASSERT_EQ(300, idle_clock_read(&self->c, 1600) - begin);
}

/*
 * A halt that starts after the reader took its time (the reader was slow
 * to read) adds nothing: no negative part.
 */
TEST_F(clock, halt_after_reader_time)
{
	idle_clock_resume(&self->c, RESUME_AT);
	idle_clock_halt(&self->c, 2000);
	ASSERT_EQ(TOTAL_AFTER, idle_clock_read(&self->c, 1900));
	ASSERT_EQ(TOTAL_AFTER + 100, idle_clock_read(&self->c, 2100));
}

/* A second halt without a resume keeps the first one's start. */
TEST_F(clock, halt_twice)
{
	idle_clock_halt(&self->c, 1300);
	idle_clock_resume(&self->c, RESUME_AT);
	ASSERT_EQ(TOTAL_AFTER, idle_clock_read(&self->c, RESUME_AT));
}

/* A resume without a halt changes nothing. */
TEST_F(clock, resume_twice)
{
	idle_clock_resume(&self->c, RESUME_AT);
	idle_clock_resume(&self->c, 1800);
	ASSERT_EQ(TOTAL_AFTER, idle_clock_read(&self->c, 2000));
}

/* Two threads: a vCPU halting and resuming, a marker reading. */
#define THREAD_CYCLES	300000

struct race {
	struct idle_clock c;
	int64_t clk;		/* the fake clock: one tick per event */
	int done;
};

static void *vcpu_thread(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < THREAD_CYCLES; i++) {
		idle_clock_halt(&r->c, __atomic_add_fetch(&r->clk, 1, __ATOMIC_SEQ_CST));
		idle_clock_resume(&r->c, __atomic_add_fetch(&r->clk, 1, __ATOMIC_SEQ_CST));
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Successive reads never decrease and never exceed the clock read after
 * them; at the end every halt (one tick each) is in total.
 */
TEST(threads)
{
	static struct race r;
	int64_t last = 0, reads = 0;
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, vcpu_thread, &r));
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		int64_t now = __atomic_load_n(&r.clk, __ATOMIC_SEQ_CST);
		int64_t ns = idle_clock_read(&r.c, now);

		ASSERT_LE(last, ns) {
			TH_LOG("read %lld after %lld at clock %lld", (long long)ns,
			       (long long)last, (long long)now);
		}
		ASSERT_GE(__atomic_load_n(&r.clk, __ATOMIC_SEQ_CST), ns);
		last = ns;
		reads++;
	}
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(THREAD_CYCLES, idle_clock_read(&r.c, r.clk));
	TH_LOG("%lld reads", (long long)reads);
}

TEST_HARNESS_MAIN
