#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What counting costs: the same guest command in two guests, one plain and
# one with the memhp-count plugin (memhp-vm --count), booted one after the
# other on the same host. Prints each guest's wall time (host side, boot
# included), the marked workload's time seen in the guest, their ratios,
# and the workload's counted instructions. One run of each: the ratios
# compare two guests under the same host load; on a busy host run it again.
#
#   tools/testing/count/overhead.sh [--kernel 6.1|6.12] [WORK_ARGS]
#
# The workload (between memhp-mark markers): a 256 MiB file written and
# read back through tmpfs, a 64 MiB /dev/urandom read, and 20000 numbers
# sorted in user space: kernel copies, page-cache and anon-memory work, and
# user code.

set -euo pipefail
top=$(cd "$(dirname "$0")/../../.." && pwd)
vm="$top/tools/testing/vm/memhp-vm"
report="$top/tools/testing/count/memhp-count-report"
kernel=6.1
[ "${1:-}" = --kernel ] && { kernel=$2; shift 2; }
make -s -C "$top" count
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

work='
t0=$EPOCHREALTIME
memhp-mark run overhead-work -- bash -c "
	dd if=/dev/zero of=/dev/shm/w bs=1M count=256 status=none
	cat /dev/shm/w > /dev/null; rm /dev/shm/w
	head -c 64M /dev/urandom > /dev/null
	seq 20000 | sort -R | sort -n > /dev/null"
t1=$EPOCHREALTIME
echo "work-seconds $(echo "$t1 - $t0" | bc)"'

run()
{
	local t0 t1

	t0=$(date +%s.%N)
	"$vm" --quiet --kernel "$kernel" --no-virtio-mem "$@" -- "$work" > "$tmp/out" 2>&1 || {
		cat "$tmp/out" >&2
		exit 1
	}
	t1=$(date +%s.%N)
	echo "$(echo "$t1 - $t0" | bc) $(sed -n 's/^work-seconds //p' "$tmp/out")"
}

read -r plain_wall plain_work < <(run)
read -r count_wall count_work < <(run --count "$tmp/count.json")
instr=$("$report" --json --top 0 "$tmp/count.json" | python3 -c '
import json, sys
r = json.load(sys.stdin)
ph = [p for p in r["phases"] if p["name"] == "overhead-work"][0]
print(ph["kernel"], ph["user"])')
read -r k u <<< "$instr"
printf 'kernel %s, TCG guests, same workload, one after the other\n' "$kernel"
printf '%-28s %10s %10s %8s\n' "" plain counted ratio
printf '%-28s %10.1f %10.1f %8.2f\n' "guest wall s (boot incl.)" "$plain_wall" "$count_wall" \
	"$(echo "$count_wall / $plain_wall" | bc -l)"
printf '%-28s %10.2f %10.2f %8.2f\n' "workload s (in the guest)" "$plain_work" "$count_work" \
	"$(echo "$count_work / $plain_work" | bc -l)"
printf 'workload instructions: kernel %s, user %s (all vCPUs)\n' "$k" "$u"
