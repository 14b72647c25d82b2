/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The memhp-count phase marker, for programs that mark their own phases
 * (memhp-mark, memhp-copybench, the experiments' benchmarks).
 *
 * An eight-byte NOP, nopl 0x4d50484d(%rax,%rax,1), with the operation in
 * %rdi (MEMHP_MARK_BEGIN or MEMHP_MARK_END) and the address of the phase's
 * name in %rsi. Real hardware and KVM execute it as a NOP; under the
 * memhp-count TCG plugin it begins or ends the phase of that name
 * (Documentation/admin-guide/counting.rst). A name is 1 to 63 characters
 * of MEMHP_MARK_NAME_CHARS.
 */
#ifndef MEMHP_MARK_H
#define MEMHP_MARK_H

#define MEMHP_MARK_BEGIN	1
#define MEMHP_MARK_END		2
#define MEMHP_MARK_NAME_MAX	63
/* Names go into the plugin's JSON and the symbol file's lines as they are. */
#define MEMHP_MARK_NAME_CHARS \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:/+,"
/* The plugin (memhp-count.c) matches these bytes. */
#define MEMHP_MARK_INSN	".byte 0x0f, 0x1f, 0x84, 0x00, 0x4d, 0x48, 0x50, 0x4d\n\t"

static inline void memhp_mark(long op, const char *name)
{
	asm volatile(MEMHP_MARK_INSN : : "D"(op), "S"(name) : "memory");
}

#endif /* MEMHP_MARK_H */
