#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Does the emulator run code that a re-plugged DIMM no longer holds?
# In a guest (memhp-vm, TCG):
#
#   tools/testing/vm/memhp-vm -- tools/testing/stale-code/tb-replug.sh
#
# 1. Hot-add a 128 MiB pc-dimm, online it movable; tb-replug writes
#    "mov $1, %eax; ret" into every page of it that it gets and calls it.
# 2. Control: the same with 3, without touching the DIMM; every call must
#    return 3 (the pages held code; writing them again must drop what the
#    emulator translated from them).
# 3. Offline the block, device_del the DIMM, object-del its backend, add
#    a new backend and DIMM of the same size (same guest-physical range),
#    online it, and the same with 2. A call that returns 1 or 3 ran a
#    translation of code the old DIMM held.
# 4. In the new DIMM, at another offset of each page (where the old DIMM
#    held no code): write and call a function returning 4, then write it
#    again returning 5 and call it (new code where code ran: a module
#    loader's case). A second call that returns 4 ran a translation that
#    the page's own rewrite did not drop. Step 2 does the same on the
#    first DIMM (6, then 7) as its control.
#
# With SAME_BACKEND=1, step 3's DIMM is added on the first DIMM's backend
# instead of a new one (make run's experiments do that).
#
# Prints one line per step; exits 1 when step 3 or 4 ran stale code, 0
# when neither did, 2 when it could not run the steps.

NAME=tb-replug
ID=tb
. "$(dirname "$0")/lib.sh"

plug 1 online_movable
first=$block
echo "DIMM 1: block $block, pfns $lo-$((hi - 1))"
step1=$(run 1) || exit 2
echo "step 1: $step1"
control=$(run 3) || exit 2
echo "step 2 (control, same DIMM): $control"
control_rw=$(run 6 0x200) || exit 2
echo "step 2 (control, same DIMM, another offset): $control_rw"
if [ "${SAME_BACKEND:-0}" = 1 ]; then
	unplug 1
	plug 2 online_movable tbm1
	echo "DIMM 2: block $block, on DIMM 1's backend"
else
	unplug 1 tbm1
	plug 2 online_movable
	echo "DIMM 2: block $block, on a new backend"
fi
[ "$block" = "$first" ] || die "the new DIMM is at block $block, not $first"
replug=$(run 2) || exit 2
echo "step 3 (new DIMM, same range): $replug"
replug_rw=$(run 4 0x300) || exit 2
echo "step 4 (new DIMM, another offset): $replug_rw"
if [ "${SAME_BACKEND:-0}" = 1 ]; then
	unplug 2 tbm1
else
	unplug 2 tbm2
fi

# stale LINE: true when a call of LINE (either half) returned another value.
stale()
{
	case "$1" in
	*"another value: "[1-9]*) return 0 ;;
	*) return 1 ;;
	esac
}

stale "$control" || stale "$control_rw" && { echo "tb-replug: the control ran stale code too"; exit 2; }
rc=0
stale "$replug" && { echo "tb-replug: stale code ran after the re-plug"; rc=1; }
stale "$replug_rw" && { echo "tb-replug: rewritten code in the new DIMM ran its old version"; rc=1; }
[ "$rc" = 0 ] && echo "tb-replug: no stale code after the re-plug"
exit "$rc"
