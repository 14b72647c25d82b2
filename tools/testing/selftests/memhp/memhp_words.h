/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memhp_words.h: a verifiable pattern for the C selftests. Word i of a
 * buffer filled with seed s holds word_of(s, i), so any lost, stale or
 * misplaced page shows as the first wrong word.
 */
#ifndef _MEMHP_WORDS_H
#define _MEMHP_WORDS_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t word_of(uint64_t seed, size_t i)
{
	return (seed + i) * 0x9E3779B97F4A7C15ULL;
}

static inline void fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t *w = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = word_of(seed, i);
}

/* The index of the first wrong word, or -1. */
static inline long check(const void *buf, size_t len, uint64_t seed)
{
	const uint64_t *w = buf;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != word_of(seed, i))
			return i;
	return -1;
}

#endif /* _MEMHP_WORDS_H */
