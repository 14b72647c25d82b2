#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# memhp-budget: 40
#
# Every module of the suite loads and unloads cleanly, three times in a row:
# insmod succeeds, the module is listed, rmmod succeeds and leaves nothing
# behind in /sys/module. (The runner fails the guest on any kernel warning.)

. "$(dirname "$0")/lib.sh"

CYCLES=3

memhp_require_guest
mapfile -t modules < <(memhp_all_modules)
ktap_print_header
if [ "${#modules[@]}" -eq 0 ]; then
	ktap_set_plan 1
	ktap_test_fail "no built modules found under mm/ and drivers/ (run make)"
	ktap_finished
fi
ktap_set_plan "${#modules[@]}"

for m in "${modules[@]}"; do
	ok=1
	memhp_module_loaded "$m" && rmmod "$m"
	for i in $(seq $CYCLES); do
		if ! memhp_load "$m"; then
			ktap_print_msg "$m: insmod failed in cycle $i"
			ok=0
			break
		fi
		if ! rmmod "$m"; then
			ktap_print_msg "$m: rmmod failed in cycle $i"
			ok=0
			break
		fi
		if memhp_module_loaded "$m"; then
			ktap_print_msg "$m: still in /sys/module after rmmod"
			ok=0
			break
		fi
	done
	ktap_test_result "$m loads and unloads $CYCLES times" [ $ok = 1 ]
done
ktap_finished
