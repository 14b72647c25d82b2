#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# ab.sh [KERNEL...]: the stale-code A/B (make qemu-ab). On each kernel
# (default: 6.1 6.12), under TCG and with memhp-vm's hold of freed RAM
# off (--reuse-freed-ram), both reproducers of
# tools/testing/stale-code/ run on the installed QEMU (stock) and on
# make qemu-fixed's build (patched), one after the other in one run:
#
#   tb-replug.sh       calls that ran the old DIMM's code after the
#                      re-plug (step 3), and rewritten functions in the
#                      new DIMM that ran their old version (step 4)
#   module-replug.sh   module load/work/unload cycles that ran, of CYCLES
#                      (100), with module memory from a re-plugged DIMM;
#                      memhp-vm exits 125 on an Oops
#
# STOCK_QEMU and FIXED_QEMU name other binaries (e.g. make qemu-newest's
# wrapper), AB_OUT another log directory.
#
# Prints a table (REPORT_ONLY=1: from the logs of the last run, booting
# nothing); the guests' logs are in build/qemu-ab/. Exit 0 when the
# patched QEMU ran no stale code and every cycle, and the stock one showed
# the defect; 1 otherwise. Cost: about 4 minutes per kernel for the stock
# QEMU and 15 for the patched one (100 cycles under TCG); never part of
# make check.

set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
VM=$TOP/tools/testing/vm/memhp-vm
STALE=$TOP/tools/testing/stale-code
OUT=${AB_OUT:-$TOP/build/qemu-ab}
CYCLES=${CYCLES:-100}
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(6.1 6.12)

stock=${STOCK_QEMU:-$(command -v qemu-system-x86_64)} || { echo "qemu-ab: no qemu-system-x86_64" >&2; exit 1; }
fixed=${FIXED_QEMU:-$("$TOP/tools/qemu/build.sh" --path)}
[ -x "$fixed" ] || { echo "qemu-ab: no patched QEMU at $fixed: make qemu-fixed" >&2; exit 1; }
mkdir -p "$OUT"

# pages_of LINE: the "pages in range N" of a tb-replug result line.
pages_of()
{
	sed -n 's/.*pages in range \([0-9]*\),.*/\1/p' <<< "$1"
}

# row KERNEL QEMU: the table row of one kernel and QEMU from the logs;
# sets good (the patched QEMU is right) and bad (the stock one shows it).
row()
{
	local tb=$OUT/$1-$2-tb-replug.log mr=$OUT/$1-$2-module-replug.log
	local s3 s4 stale3 stale4 cycles oops tb_rc mr_rc

	s3=$(grep -m1 "^step 3" "$tb")
	s4=$(grep -m1 "^step 4" "$tb")
	stale3=$(sed -n 's/.*returned another value: \([0-9]*\).*/\1/p' <<< "$s3")
	stale4=$(sed -n 's/.*rewritten: returned [0-9]*: [0-9]*, returned another value: \([0-9]*\).*/\1/p' <<< "$s4")
	tb_rc=$(sed -n 's/^memhp-vm: exit \([0-9]*\).*/\1/p' "$tb" | tail -n1)
	mr_rc=$(sed -n 's/^memhp-vm: exit \([0-9]*\).*/\1/p' "$mr" | tail -n1)
	cycles=$(sed -n 's/^module-replug: \([0-9]*\) of .*/\1/p' "$mr" | tail -n1)
	# An oops is "Oops:", a general protection fault or a kernel BUG; each
	# line the kernel prints for one carries its count, "[#1]".
	oops=no
	grep -qE 'Oops|\[#[0-9]+\]' "$mr" && oops=yes
	echo "| $1 | $2 | ${stale3:-?} of $(pages_of "$s3") | ${stale4:-?} of $(pages_of "$s4") | ${cycles:-0} of $CYCLES | $oops | ${tb_rc:-?}/${mr_rc:-?} |"
	if [ "$2" = fixed ]; then
		[ "${tb_rc:-}" = 0 ] && [ "${mr_rc:-}" = 0 ] && [ "${stale3:-x}" = 0 ] && [ "${stale4:-x}" = 0 ] &&
			[ "${cycles:-0}" = "$CYCLES" ] && [ $oops = no ] || ok=0
	else
		[ "${stale3:-0}" -gt 0 ] 2>/dev/null || [ "${stale4:-0}" -gt 0 ] 2>/dev/null || ok=0
	fi
}

ok=1
if [ "${REPORT_ONLY:-0}" != 1 ]; then
	for k in "${kernels[@]}"; do
		for q in stock fixed; do
			bin=$stock
			[ $q = fixed ] && bin=$fixed
			"$VM" --kernel "$k" --accel tcg --reuse-freed-ram --qemu "$bin" --timeout 600 -- \
				"$STALE/tb-replug.sh" > "$OUT/$k-$q-tb-replug.log" 2>&1
			"$VM" --kernel "$k" --accel tcg --reuse-freed-ram --qemu "$bin" \
				--timeout $((300 + 12 * CYCLES)) -- \
				env CYCLES="$CYCLES" "$STALE/module-replug.sh" > "$OUT/$k-$q-module-replug.log" 2>&1
		done
	done
fi

echo "| kernel | QEMU | step 3: stale calls, of pages | step 4: stale rewrites, of pages | module cycles | Oops | memhp-vm exits (tb/module) |"
echo "|---|---|---|---|---|---|---|"
for k in "${kernels[@]}"; do
	for q in stock fixed; do
		row "$k" "$q"
	done
done
echo "stock: $("$stock" --version | sed -n 1p) ($stock)"
echo "fixed: $("$fixed" --version | sed -n 1p) ($fixed, $(cat "$(dirname "$fixed")/debian-patches" 2>/dev/null | sed 's/^/Debian patches: /'))"
[ $ok = 1 ]
