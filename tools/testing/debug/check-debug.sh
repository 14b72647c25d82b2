#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-debug: the selftest suite on a debug kernel (KASAN, lockdep,
# DEBUG_VM, DEBUG_PAGEALLOC, PAGE_OWNER, kmemleak), then a kmemleak scan.
#
#   1. tools/testing/debug/build-kernel.sh builds (or reuses) the kernel:
#      by default from linux-source-6.1 in build/debug-kernel/ (about 30
#      min on 2 idle cores); with --series 6.12 from linux-source-6.12 in
#      build/debug-kernel-6.12/ (over an hour), with --series 7.3 from
#      linux-source-7.3 in build/debug-kernel-7.3/, in the trixie build
#      root (gcc-14).
#   2. The repository is copied to DEBUG/tree (sources only),
#      so that modules built against the debug kernel never replace the
#      ones in the working tree; modules and selftests are built there
#      with KDIR= the debug kernel.
#   3. check.py --only guest --kernel bzImage runs every selftest group in
#      guests booted from the debug kernel; memhp-vm fails a guest whose
#      log has a KASAN, lockdep, BUG, WARNING or kmemleak report.
#   4. One more guest loads and exercises every module (load_unload.sh,
#      fuzz_inputs.sh, unload_under_load.sh with CYCLES=5) and then asks
#      kmemleak for two scans: any unreferenced object fails the run.
#   5. The end repeats the figures the tests reported (inputs tried,
#      cycles, operations, bytes verified), the totals and the kmemleak
#      count. Logs: DEBUG/{suite,kmemleak}.log.
#
# Options: --series 6.1|6.12|7.3 (the kernel source, default 6.1), --tests
# a.sh,b (a subset), --build-only, --config-only (extract and configure
# the kernel, no build, no guest), --skip-suite (only the kmemleak guest).
# Environment: JOBS (build jobs), GUEST_TIMEOUT (s, per guest),
# BOOT_TIMEOUT (s, for a guest to start its command; 1200, the stock suite
# gives 300: the debug kernel with Debian's config reaches init after some
# 90 s under TCG and udev's coldplug takes minutes more), TEST_TIMEOUT
# (s, per selftest; 3600, the stock suite uses 900).

set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
GUEST_TIMEOUT=${GUEST_TIMEOUT:-7200}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-1200}
TEST_TIMEOUT=${TEST_TIMEOUT:-3600}
series=6.1
tests=
build_only=0
config_only=0
skip_suite=0

while [ $# -gt 0 ]; do
	case "$1" in
	--series) series=${2:-}; shift ;;
	--tests) tests=$2; shift ;;
	--build-only) build_only=1 ;;
	--config-only) config_only=1 ;;
	--skip-suite) skip_suite=1 ;;
	-h|--help) sed -n '3,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "check-debug: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
# Run as `make check-debug KVER=7.3`, make's command line is in MAKEFLAGS
# and the environment; the makes below name their kernel themselves
# (KDIR=, --series), so none of it is passed on (build-kernel.sh does the
# same).
unset MAKEFLAGS MFLAGS MAKELEVEL KVER KDIR KERNEL KSERIES
# The series' build directory (build-kernel.sh knows them; a bad --series
# ends here, exit 2).
DEBUG=$("$TOP/tools/testing/debug/build-kernel.sh" --series "$series" --print-dir) || exit 2
TREE="$DEBUG/tree"

say() { echo "# check-debug: $*"; }

t0=$(date +%s)
if [ "$config_only" = 1 ]; then
	config=$("$TOP/tools/testing/debug/build-kernel.sh" --series "$series" --config-only | tail -n1) ||
		exit 1
	say "linux-source-$series configured: $config ($(make -s -C "$(dirname "$config")" kernelversion)$(sed -n 's/^CONFIG_LOCALVERSION="\(.*\)"$/\1/p' "$config")), $(($(date +%s) - t0)) s"
	exit 0
fi
bzimage=$("$TOP/tools/testing/debug/build-kernel.sh" --series "$series" | tail -n1) || exit 1
KTREE=$(dirname "$(dirname "$(dirname "$(dirname "$bzimage")")")")
say "kernel $(cat "$KTREE/include/config/kernel.release") ($bzimage), $(($(date +%s) - t0)) s"
[ "$build_only" = 1 ] && exit 0

# Sources only: objects and modules of the working tree stay out.
mkdir -p "$TREE/build"
rsync -a --delete --exclude=/build/ --exclude=/.venv --exclude=/.git/ --exclude=/results/ \
	--exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
	--exclude='.*.cmd' --exclude=Module.symvers --exclude=modules.order \
	"$TOP/" "$TREE/"
ln -sfn "$TOP/.venv" "$TREE/.venv"
# The debug kernel runs the tests several times slower under TCG, too
# slow for the stock 900 s per-test limit: a longer one (TEST_TIMEOUT) in
# the copy's kselftest settings.
echo "timeout=$TEST_TIMEOUT" > "$TREE/tools/testing/selftests/memhp/settings"
# Each kernel's extracted source pieces (kselftest, checkpatch).
for d in "$TOP"/build/ksrc "$TOP"/build/ksrc-*; do
	[ -e "$d" ] || continue
	ln -sfn "$d" "$TREE/build/$(basename "$d")"
done
export KDIR="$KTREE"
say "building modules and selftests against $KDIR in $TREE"
make -s -C "$TREE" modules >"$DEBUG/modules.log" 2>&1 || { tail -30 "$DEBUG/modules.log"; exit 1; }
make -s -C "$TREE" selftests >>"$DEBUG/modules.log" 2>&1 || { tail -30 "$DEBUG/modules.log"; exit 1; }
kver=$(cat "$KTREE/include/config/kernel.release")
for ko in $(find "$TREE/build/modules/$kver" -name '*.ko'); do
	modinfo -F vermagic "$ko" | grep -q memhp-debug ||
		{ say "$ko is not built for the debug kernel"; exit 1; }
done

# Every guest mounts its root with cache=loose: on a debug kernel each
# lookup of a 9p file costs so much that udev's coldplug outlasts
# virtme-ng-init's settle (Documentation/known-issues.rst).
rc=0
if [ "$skip_suite" = 0 ]; then
	args=(--only guest --kernel "$bzimage" --kernel-release "$kver" --root-cache loose
		--guest-timeout "$GUEST_TIMEOUT" --boot-timeout "$BOOT_TIMEOUT")
	[ -n "$tests" ] && args+=(--tests "$tests")
	"$TOP/.venv/bin/python" "$TREE/tools/testing/check.py" "${args[@]}" |
		tee "$DEBUG/suite.log"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
fi

say "kmemleak guest: load, exercise and unload every module, then scan"
S=tools/testing/selftests/memhp
"$TREE/tools/testing/vm/memhp-vm" --kernel "$bzimage" --timeout "$GUEST_TIMEOUT" \
	--root-cache loose --boot-timeout "$BOOT_TIMEOUT" -- "
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	[ -e /sys/kernel/debug/kmemleak ] || { echo 'no kmemleak in this kernel'; exit 1; }
	$S/load_unload.sh; $S/fuzz_inputs.sh; CYCLES=5 $S/unload_under_load.sh
	echo clear > /sys/kernel/debug/kmemleak
	for m in sparse_hotplug migrate_test buddy_split pfn_lookup; do
		insmod \$(find build/modules/\$(uname -r) -name \$m.ko) && rmmod \$m
	done
	echo scan > /sys/kernel/debug/kmemleak; sleep 5
	echo scan > /sys/kernel/debug/kmemleak
	leaks=\$(grep -c '^unreferenced object' /sys/kernel/debug/kmemleak)
	echo \"# kmemleak: \$leaks unreferenced objects after the suite\"
	cat /sys/kernel/debug/kmemleak | head -60
	[ \$leaks = 0 ]" | tee "$DEBUG/kmemleak.log"
[ "${PIPESTATUS[0]}" = 0 ] || rc=1

# What the run exercised, at the end where it is seen.
say "figures:"
if [ "$skip_suite" = 0 ]; then
	sed -n '/^# figures reported by the tests:/,/^# make check took/p' "$DEBUG/suite.log" |
		sed '1d;$d'
	grep -E '^(check:|# Totals:)' "$DEBUG/suite.log"
fi
grep -h '^# kmemleak:' "$DEBUG/kmemleak.log"
say "done in $(($(date +%s) - t0)) s: $([ $rc = 0 ] && echo PASS || echo FAIL)"
exit $rc
