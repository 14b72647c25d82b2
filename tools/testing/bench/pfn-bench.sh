#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-pfn: the pfn lookup benchmark (pfn_bench), instruction counts
# under callgrind, then tables, CSV, PNG and summary.md (pfn_report.py).
#
#   pfn-bench.sh PFN_BENCH_BINARY RESULTS_DIR [--full] [--reps R] [--quick]
#
# --full adds 100M lookups to the fixed workload.
set -euo pipefail

bin=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
py=$top/.venv/bin/python
[ -x "$py" ] || py=python3

mkdir -p "$out"
echo "# pfn_bench $* (results in $out)"
"$bin" --out "$out" "$@" | tee "$out/pfn_bench.txt"

# Instructions per lookup: callgrind, only inside the timed loops.
n=1000000
echo
echo "callgrind: instructions per lookup (pregenerated mode, $n lookups)"
echo "workload,variant,lookups,instructions,per_lookup" > "$out/callgrind.csv"
if command -v valgrind >/dev/null; then
	for wl in fixed frag-256MB; do
		for var in array rbtree sparse flat pfndir; do
			f=$(mktemp)
			valgrind --tool=callgrind --callgrind-out-file="$f" \
				--toggle-collect='bench_loop_pre_*' \
				"$bin" --one "$wl" "$var" "$n" >/dev/null 2>&1
			ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$f")
			rm -f "$f"
			echo "$wl,$var,$n,$ir,$(awk -v a="$ir" -v n="$n" \
				'BEGIN { printf "%.2f", a / n }')" >> "$out/callgrind.csv"
			printf '  %-11s %-7s %8.2f\n' "$wl" "$var" \
				"$(awk -v a="$ir" -v n="$n" 'BEGIN { print a / n }')"
		done
	done
else
	echo "  valgrind not installed: instruction counts skipped"
fi

MPLBACKEND=Agg "$py" "$here/pfn_report.py" "$out"
