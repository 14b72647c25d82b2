#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 30
#
# pfn_lookup (mm/pfn_lookup_main.c): the debugfs interface rejects bad input with
# the documented errno and changes nothing; a small run finds the right
# struct page with every method; the module cannot be unloaded while a run
# is in progress, a killed run ends with -EINTR, and it unloads cleanly.

. "$(dirname "$0")/lib.sh"

D=/sys/kernel/debug/pfn_lookup

memhp_require_guest
ktap_print_header
ktap_set_plan 5
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug

memhp_unload pfn_lookup
if ! memhp_load pfn_lookup; then
	ktap_exit_fail_msg "cannot load pfn_lookup"
fi

# write_errno STRING: the errno name of writing STRING to run ("OK" if none).
write_errno()
{
	python3 -c '
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    os.write(fd, sys.argv[2].encode())
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])' "$D/run" "$1"
}

ok=1
for bad in "abc:EINVAL" "12x:EINVAL" "-5:EINVAL" "100 3 4:EINVAL" "100 x:EINVAL" \
	   "0:ERANGE" "100000001:ERANGE" "100 0:ERANGE" "100 32:ERANGE"; do
	got=$(write_errno "${bad%:*}")
	if [ "$got" != "${bad#*:}" ]; then
		ktap_print_msg "'${bad%:*}': $got, expected ${bad#*:}"
		ok=0
	fi
done
grep -q "no run yet" "$D/results" || { ktap_print_msg "a rejected write changed results"; ok=0; }
ktap_test_result "bad input rejected with EINVAL/ERANGE, nothing changes" [ $ok = 1 ]

ok=1
echo "20000 3" > "$D/run" || ok=0
if [ $ok = 1 ]; then
	# Every method row ends with its count of wrong struct pages: all 0.
	rows=$(grep -cE '^(pfn_to_page|page_to_pfn|pfn_valid|section|sectab)' "$D/results")
	bad=$(grep -E '^(pfn_to_page|page_to_pfn|pfn_valid|section|sectab)' "$D/results" |
	      awk '$NF != 0' | wc -l)
	[ "$rows" -eq 10 ] && [ "$bad" -eq 0 ] || ok=0
	sed "s/^/# /" "$D/results"
fi
ktap_test_result "a run finds the right struct page with all 10 methods" [ $ok = 1 ]

ok=1
grep -qE '^pfndir +[0-9]+ ' "$D/layout" || ok=0
ktap_test_result "layout lists the tables" [ $ok = 1 ]

# A long run in the background: rmmod must refuse, a kill ends it.
echo "100000000 31" > "$D/run" 2>/dev/null &
writer=$!
sleep 2
ok=1
if rmmod pfn_lookup 2>/dev/null; then
	ktap_print_msg "rmmod succeeded during a run"
	ok=0
fi
kill -9 "$writer" 2>/dev/null
# (bash reports the killed job on stderr: not a KTAP line, so silence it)
{ wait_for 30 eval '! kill -0 '"$writer"' 2>/dev/null'; } 2>/dev/null ||
	{ ktap_print_msg "killed run did not end"; ok=0; }
grep -q '^# 20000 lookups x 3' "$D/results" ||
	{ ktap_print_msg "the killed run changed the published results"; ok=0; }
ktap_test_result "no unload mid-run; a killed run ends, results unchanged" [ $ok = 1 ]

ok=1
rmmod pfn_lookup || ok=0
memhp_module_loaded pfn_lookup && ok=0
ktap_test_result "unloads cleanly after a killed run" [ $ok = 1 ]
ktap_finished
