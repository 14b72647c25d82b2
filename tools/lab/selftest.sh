#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make lab-selftest: the LAB=root flow on a fresh clone of this tree's
# HEAD proves the host unchanged (KTAP). Run as a normal user it runs the
# flow as that user; run as root, --user NAME runs it as NAME (who needs
# subordinate ids), without --user as root.
#
# The flow: make lab-check, make LAB=root setup, the unit stage of make
# check, and one guest that must see the lab's root as its root file
# system. The host is what dpkg-query -W lists, /etc/apt, /usr/lib/modules,
# /boot, and /var/lib/apt and /var/cache/apt without the package lists
# (names, sizes, modes, times), taken before and after.
#
# --full runs the whole of make check instead of its unit stage (the time
# of make check on top).
#
# It uses the cache as it is (MEMHP_CACHE): with the roots already made,
# about 6 minutes on 2 cores; from nothing, setup's time on top
# (Documentation/admin-guide/lab-root.rst).

set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tools/testing/selftests/memhp/ktap_helpers.sh"

user=
full=0
while [ $# -gt 0 ]; do
	case "$1" in
	--user) user=${2:-}; shift ;;
	--full) full=1 ;;
	*) echo "lab selftest: unknown argument '$1' (--user NAME, --full)" >&2; exit 2 ;;
	esac
	shift
done

# as_user CMD...: CMD as the flow's user, in the clone, with its own cache.
as_user()
{
	if [ -n "$user" ]; then
		runuser -u "$user" -- env -C "$clone" "$@"
	else
		env -C "$clone" "$@"
	fi
}

host_state()
{
	{
		command -v dpkg-query >/dev/null && dpkg-query -W
		find /etc/apt /usr/lib/modules /boot -maxdepth 3 -printf '%p %s %m %T@\n' 2>/dev/null
		# apt's state and binary caches, which fetching mmdebstrap must
		# not touch (not its lists, which the host's own apt-get update
		# may renew meanwhile).
		find /var/lib/apt /var/cache/apt -maxdepth 1 ! -name lists -printf '%p %s %m %T@\n' 2>/dev/null
	} | LC_ALL=C sort
}

tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
clone="$tmp/clone"

ktap_print_header
ktap_set_plan 6

host_state > "$tmp/before"
# Not hardlinked: the chown below would change this tree's objects too.
git clone -q --no-hardlinks "$top" "$clone"
[ -z "$user" ] || chown -R "$user": "$tmp"
ktap_print_msg "fresh clone of $(git -C "$top" rev-parse --short HEAD) in $clone, as ${user:-$(id -un)}"

as_user make --no-print-directory lab-check > "$tmp/lab-check.log" 2>&1
ktap_test_result "make lab-check: the host prerequisites are there" [ $? = 0 ]

start=$SECONDS
as_user make --no-print-directory LAB=root setup > "$tmp/setup.log" 2>&1
rc=$?
ktap_print_msg "make LAB=root setup: exit $rc in $((SECONDS - start)) s"
[ $rc = 0 ] || tail -n 20 "$tmp/setup.log" | sed 's/^/# /'
ktap_test_result "make LAB=root setup" [ $rc = 0 ]

start=$SECONDS
if [ "$full" = 1 ]; then
	as_user make --no-print-directory LAB=root check > "$tmp/check.log" 2>&1
	rc=$?
	what="make LAB=root check: 0 failed"
	# The totals and what failed; the whole log is kept in this tree's
	# build/ (the clone goes with the test), owned as the tree is.
	owner=(-o "$(stat -c %u "$top")" -g "$(stat -c %g "$top")")
	install -d "${owner[@]}" "$top/build" &&
		install "${owner[@]}" -m 644 "$tmp/check.log" "$top/build/lab-selftest-check.log"
	grep -E '^# Totals:|^not ok' "$tmp/check.log" | sed 's/^/# /'
else
	as_user make --no-print-directory LAB=root check CHECK_ARGS="--only unit" > "$tmp/check.log" 2>&1
	rc=$?
	what="make LAB=root check, unit stage: 0 failed"
fi
ktap_print_msg "$(grep -m1 '^check:' "$tmp/check.log") in $((SECONDS - start)) s"
ktap_test_result "$what" [ $rc = 0 ]

# The guest's root file system is the lab's: only it has the apt settings
# tools/lab/lab.sh copies from the host.
as_user make --no-print-directory LAB=root vm-shell \
	CMD="test -e /etc/apt/apt.conf.d/00memhp-host" > "$tmp/vm.log" 2>&1
rc=$?
[ $rc = 0 ] || tail -n 20 "$tmp/vm.log" | sed 's/^/# /'
ktap_test_result "a guest runs the lab's root as its userland" [ $rc = 0 ]

# Files in the clone stay the user's.
others=$(find "$clone" ! -user "${user:-$(id -un)}" -print -quit)
ktap_test_result "the clone holds only the user's files${others:+ (not: $others)}" [ -z "$others" ]

host_state > "$tmp/after"
diff "$tmp/before" "$tmp/after" > "$tmp/host.diff"
rc=$?
[ $rc = 0 ] || head -n 20 "$tmp/host.diff" | sed 's/^/# /'
ktap_test_result "the host is unchanged (packages, /etc/apt, /usr/lib/modules, /boot, apt's state)" [ $rc = 0 ]

ktap_finished
