#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# perf stat around one in-kernel pfn lookup run (mm/pfn_lookup_main.c, module
# pfn_lookup), as root in a 6.1 guest:
#
#   pfn-perf-stat.sh [LOOKUPS [REPS]]      (defaults 200000 3)
#
# Loads the module if needed (and unloads it again), runs
# "echo LOOKUPS REPS > /sys/kernel/debug/pfn_lookup/run" under perf stat
# (software events: hardware counters are not available under QEMU TCG),
# then prints the module's results table. Exit 0 on success.
set -eu

lookups=${1:-200000}
reps=${2:-3}
top=${MEMHP_TOP:-$(cd "$(dirname "$0")/../../.." && pwd)}
dbg=/sys/kernel/debug/pfn_lookup
loaded=0

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
if [ ! -d "$dbg" ]; then
	insmod "$top/build/modules/$(uname -r)/mm/pfn_lookup.ko"
	loaded=1
fi

if command -v perf >/dev/null && perf stat -e task-clock -- true >/dev/null 2>&1; then
	perf stat -e task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions \
		-- sh -c "echo '$lookups $reps' > $dbg/run" 2>&1
else
	echo "# perf not usable here: timing with the shell instead"
	time sh -c "echo '$lookups $reps' > $dbg/run"
fi
cat "$dbg/results"
cat "$dbg/layout"

[ "$loaded" = 1 ] && rmmod pfn_lookup
exit 0
