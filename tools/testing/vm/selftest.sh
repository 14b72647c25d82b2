#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Tests of memhp-vm itself, run on the host (KTAP). A runner that cannot
# fail is no judge: a guest that logs a kernel WARNING must fail the run
# even when its command succeeds, and exit statuses must come through.
# Arguments are memhp-vm options for every guest (make check --qemu PATH
# passes --qemu PATH).

top=$(cd "$(dirname "$0")/../../.." && pwd)
. "$top/tools/testing/selftests/memhp/ktap_helpers.sh"
vm=("$top/tools/testing/vm/memhp-vm" "$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ktap_print_header
ktap_set_plan 18

# 1: bad options are refused before anything boots
"${vm[@]}" --mem 4G --maxmem 2G -- true > "$tmp/opts.out" 2>&1
rc=$?
ktap_test_result "maxmem below boot memory refused (exit 2, no boot)" \
	eval '[ $rc = 2 ] && grep -q maxmem "$tmp/opts.out"'

# 2: a CXL device that is no multiple of 256 MiB is refused before boot
"${vm[@]}" --cxl 100M -- true > "$tmp/cxl.out" 2>&1
rc=$?
ktap_test_result "--cxl 100M refused (exit 2, no boot)" \
	eval '[ $rc = 2 ] && grep -q "multiple of 256M" "$tmp/cxl.out"'

# 3: the command's exit status is the runner's
"${vm[@]}" --quiet --no-virtio-mem -- 'exit 7' > "$tmp/exit.out" 2>&1
rc=$?
ktap_print_msg "exit 7 in the guest -> memhp-vm exit $rc"
ktap_test_result "guest command status passed through" [ $rc = 7 ]

# 4+5: a kernel WARNING fails the run although the command succeeded;
# the same guest first checks that bad input to the debugfs file is
# rejected without a warning.
"${vm[@]}" --quiet --no-virtio-mem -- '
	insmod build/modules/$(uname -r)/mm/sparse_hotplug.ko selftest_warn=1 || exit 1
	f=/sys/kernel/debug/sparse_hotplug/provoke_warning
	if echo banana > $f; then echo "bad input accepted"; else echo "bad input rejected"; fi
	echo 1 > $f
	rmmod sparse_hotplug
	exit 0' > "$tmp/warn.out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/warn.out" | tail -n 8
ktap_test_result "bad input to provoke_warning rejected" grep -q "^bad input rejected" "$tmp/warn.out"
ktap_test_result "WARNING in the guest log fails the run (exit 125, line shown)" \
	eval '[ $rc = 125 ] && grep -q "WARNING:" "$tmp/warn.out" && grep -q "provoked on request" "$tmp/warn.out"'

# 6: a guest that runs past --timeout is killed
"${vm[@]}" --quiet --no-virtio-mem --timeout 5 -- 'sleep 600' > "$tmp/timeout.out" 2>&1
rc=$?
ktap_test_result "guest past --timeout killed (exit 124)" [ $rc = 124 ]

# 7: a page dump announced with memhp-expect lines is no problem, one
# outside the window is, and a WARNING inside the window still is.
"${vm[@]}" --quiet --no-virtio-mem -- '
	echo "memhp-expect: begin page dumped because: " > /dev/kmsg
	echo "page dumped because: expected by the selftest" > /dev/kmsg
	echo "WARNING: CPU: 0 PID: 1 at selftest.c:5 inside_the_window+0x0/0x10" > /dev/kmsg
	echo "memhp-expect: end" > /dev/kmsg
	echo "page dumped because: outside the window" > /dev/kmsg
	echo "kernel BUG at selftest.c:6!" > /dev/kmsg
	exit 0' > "$tmp/expect.out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/expect.out" | tail -n 7
ktap_test_result "memhp-expect excuses only announced page dumps (exit 125, others shown)" \
	eval '[ $rc = 125 ] && grep -q "outside the window" "$tmp/expect.out" &&
	 grep -q "WARNING: CPU: 0 PID: 1 at selftest.c:5 inside_the_window" "$tmp/expect.out" &&
	 grep -q "kernel BUG at selftest.c:6!" "$tmp/expect.out" &&
	 ! grep -q "expected by the selftest" "$tmp/expect.out"'

# 8: offlining's own page dumps (a page it could not isolate or migrate, an
# unmovable page) are information wherever they come: the run passes and
# they are counted.
"${vm[@]}" --no-virtio-mem -- '
	echo "page dumped because: migration failure" > /dev/kmsg
	echo "page dumped because: migration failure" > /dev/kmsg
	echo "page dumped because: unmovable page" > /dev/kmsg
	exit 0' > "$tmp/offline.out" 2>&1
rc=$?
grep "^memhp-vm: note" "$tmp/offline.out" | sed 's/^/# /'
ktap_test_result "offlining page dumps are counted, not failures (exit 0)" \
	eval '[ $rc = 0 ] && grep -q "migration failure 2, unmovable page 1" "$tmp/offline.out"'

# 9-12: the memhp-count plugin (memhp-vm --count). Its marker is a NOP
# where no plugin runs; in a guest, the instructions between two markers
# on the marking vCPU are exactly those of the loop between them
# (memhp-mark selftest N: 2N + 3), whatever the guest does meanwhile, and
# a phase's kernel work is attributed to the guest's kernel functions.
make -s -C "$top/tools/testing/count" > "$tmp/count-build.out" 2>&1 ||
	sed 's/^/# /' "$tmp/count-build.out"
mark="$top/build/count/memhp-mark"
ktap_test_result "memhp-mark's marker is a NOP without the plugin (selftest 10 -> 23)" \
	eval '[ "$("$mark" selftest 10)" = 23 ]'
"${vm[@]}" --count "$tmp/kvm.json" --accel kvm -- true > "$tmp/count-kvm.out" 2>&1
rc=$?
ktap_test_result "--count with --accel kvm refused (exit 2, no boot)" \
	eval '[ $rc = 2 ] && grep -q "needs TCG" "$tmp/count-kvm.out"'
"${vm[@]}" --quiet --no-virtio-mem --count "$tmp/count.json" -- '
	taskset -c 1 memhp-mark selftest 1000000 &&
	taskset -c 0 memhp-mark selftest 1 &&
	taskset -c 0 memhp-mark write drop_caches /proc/sys/vm/drop_caches 3' > "$tmp/count.out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/count.out"
"$top/tools/testing/count/memhp-count-report" --json --top 0 "$tmp/count.json" \
	> "$tmp/count-report.json" 2> "$tmp/count-report.err"
sed 's/^/# /' "$tmp/count-report.err"
python3 - "$tmp/count-report.json" "$tmp/count.out" <<'PYEOF' > "$tmp/count-check.out"
import json, sys
r = json.load(open(sys.argv[1]))
want = [int(x) for x in open(sys.argv[2]).read().split()[:2]]
got = [ph["marking_vcpu_counts"]["user"] for ph in r["phases"]
       if ph["name"] == "memhp-mark-selftest" and ph["marking_vcpu_counts"]]
print("selftest user instructions: expected", want, "counted", got)
print("exact" if got == want and len(want) == 2 else "differ")
drop = [ph for ph in r["phases"] if ph["name"] == "drop_caches"]
funcs = [n for n, _ in drop[0]["functions"]] if drop else []
own = drop[0]["marking_vcpu_counts"] if drop else None
print("drop_caches: kernel", drop[0]["kernel"] if drop else None, "instructions;",
      "marking vCPU user", own and own["user"], "; functions:", ", ".join(funcs[:5]))
print("named" if drop and drop[0]["kernel"] > 0 and "drop_caches_sysctl_handler" in funcs
      and own and own["user"] <= 16 else "unnamed")
PYEOF
sed 's/^/# /' "$tmp/count-check.out"
ktap_test_result "counted user instructions between markers are exact (2N + 3, N = 1000000 and 1)" \
	eval '[ $rc = 0 ] && grep -qx exact "$tmp/count-check.out"'
ktap_test_result "a marked sysctl write is its system call (drop_caches_sysctl_handler, at most 16 user instructions)" \
	eval '[ $rc = 0 ] && grep -qx named "$tmp/count-check.out"'

# 13: --print-accel answers without booting: tcg when TCG is asked for,
# kvm or tcg otherwise (what make run decides its counting default by).
accel_tcg=$("${vm[@]}" --print-accel --accel tcg 2>/dev/null)
accel_auto=$("${vm[@]}" --print-accel --quiet 2>"$tmp/accel.err")
rc=$?
ktap_print_msg "--print-accel: --accel tcg -> $accel_tcg, auto -> $accel_auto ($(cat "$tmp/accel.err"))"
ktap_test_result "--print-accel says tcg for --accel tcg and kvm or tcg for auto (exit 0)" \
	eval '[ "$accel_tcg" = tcg ] && [ $rc = 0 ] &&
	 { [ "$accel_auto" = kvm ] || [ "$accel_auto" = tcg ]; }'

# 14: memhp-count-repeat: two make run results directories holding the
# report above, then one whose drop_caches phase is 2 % dearer.
for d in a b c; do mkdir -p "$tmp/runs-$d/k/e"; done
cp "$tmp/count-report.json" "$tmp/runs-a/k/e/count-report.json"
cp "$tmp/count-report.json" "$tmp/runs-b/k/e/count-report.json"
python3 - "$tmp/count-report.json" "$tmp/runs-c/k/e/count-report.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
for ph in r["phases"]:
    if ph["name"] == "drop_caches":
        ph["kernel"] = round(ph["kernel"] * 1.02)
json.dump(r, open(sys.argv[2], "w"))
PYEOF
"$top/tools/testing/count/memhp-count-repeat" "$tmp/runs-a" "$tmp/runs-b" > "$tmp/repeat-same.out" 2>&1
rc_same=$?
"$top/tools/testing/count/memhp-count-repeat" "$tmp/runs-a" "$tmp/runs-c" > "$tmp/repeat-diff.out" 2>&1
rc_diff=$?
tail -n 2 "$tmp/repeat-diff.out" | sed 's/^/# /'
ktap_test_result "memhp-count-repeat finds the same counts within 1 % and a 2 % change outside" \
	eval '[ $rc_same = 0 ] && [ $rc_diff = 0 ] &&
	 grep -q "^all vCPUs: 2 of 2 phases within 1 %" "$tmp/repeat-same.out" &&
	 grep -q "^all vCPUs: 1 of 2 phases within 1 %; largest 2.00 % (drop_caches" "$tmp/repeat-diff.out"'

# 15: memhp-count-report --compare --functions of a run with itself: every
# function's difference is 0, and the sysctl handler is among them.
"$top/tools/testing/count/memhp-count-report" "$tmp/count.json" --compare "$tmp/count.json" \
	--functions --top 0 --phase drop_caches > "$tmp/functions.out" 2>&1
rc=$?
ktap_test_result "--compare --functions of a run with itself shows no difference, functions named" \
	eval '[ $rc = 0 ] && grep -q " 0  drop_caches_sysctl_handler$" "$tmp/functions.out" &&
	 ! awk "/^  *[0-9,]+ +[0-9,]+ +-?[0-9,]+  /" "$tmp/functions.out" | grep -qv " 0  "'

# 16+17: under TCG, a DIMM removed with its backend and added again on a
# new one of the same size runs no stale code (tb-replug.sh: steps 3 and
# 4), because the relay holds the RAM offset the deleted backend freed;
# its log says which offset, and the hold took that one. The run
# directory is kept when either case fails.
"${vm[@]}" --accel tcg --keep --no-virtio-mem -- tools/testing/stale-code/tb-replug.sh > "$tmp/replug.out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/replug.out"
rundir=$(grep -o "logs in build/vm/run-[a-z0-9_]*" "$tmp/replug.out" | head -n 1)
rundir=${rundir:+$top/${rundir#logs in }}
qmplog=${rundir:-$tmp/none}/qmp.log
grep "relay: " "$qmplog" 2>/dev/null | sed 's/^[0-9.]* /# /'
held_ok()
{
	local n

	for n in 1 2; do
		grep -Eq "relay: tbm$n freed RAM (0x[0-9a-f]+\+0x[0-9a-f]+); (.*, )?memhp-hold-[0-9]+ holds \1$" \
			"$qmplog" || return 1
	done
	! grep -q "relay: hold failed" "$qmplog"
}
held_ok
held=$?
ktap_test_result "a re-plugged DIMM on a new backend runs no stale code (tb-replug exit 0)" [ $rc = 0 ]
ktap_test_result "object-del of a DIMM backend: memhp-hold takes the RAM offset it freed" [ $held = 0 ]
[ $rc = 0 ] && [ $held = 0 ] && [ -n "$rundir" ] && rm -rf "$rundir"


# 18: a hold that fails fails the guest's make check group, with the
# relay's reason in the group's KTAP line: MEMHP_VM_INJECT_HOLD_FAILURE=1
# makes the relay add no hold after acpi_dimm.sh deletes its DIMMs'
# backends (TCG: the relay holds only there).
MEMHP_VM_INJECT_HOLD_FAILURE=1 "$top/.venv/bin/python" "$top/tools/testing/check.py" \
	--only guest --kernels "$(cd "$top" && make -s print-kver)" --tests acpi_dimm.sh \
	> "$tmp/hold.out" 2>&1
rc=$?
grep -E "^  not ok|hold failed" "$tmp/hold.out" | head -n 6 | sed 's/^ */# check.py: /'
ktap_test_result "a failed RAM hold fails the guest group, the relay's reason in its KTAP line" \
	eval '[ $rc = 1 ] && grep -Eq "^  not ok [0-9]+ guest \[default guest\] boots, runs and keeps a clean kernel log # guest failed: .*relay: hold failed: .*is not held" "$tmp/hold.out"'

ktap_finished
