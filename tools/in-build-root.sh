#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# in-build-root.sh ROOT TOP COMMAND...: runs COMMAND inside the Debian root
# ROOT (chroot), with this tree TOP bind-mounted at the same path and /proc
# mounted (objtool reads it), both in a mount namespace of its own, so they
# go away with the command. The Makefile runs a kernel's Kbuild step here
# when the compiler that kernel was built with (CONFIG_CC_VERSION_TEXT) is
# not on the host: Debian's 7.3 from trixie-backports wants gcc-14, and
# `tools/setup.sh --kernel 7.3` makes ROOT, a trixie root with gcc-14,
# sparse (sid's, in /usr/local/bin) and the 7.3 headers. PATH is the
# root's own. IN_BUILD_ROOT_BINDS names more directories to mount at
# their own paths (a kernel tree outside TOP that KDIR= names).

set -euo pipefail

if [ "$#" -lt 3 ]; then
	echo "usage: $0 ROOT TOP COMMAND..." >&2
	exit 2
fi
root=$1
top=$2
shift 2

if [ ! -x "$root/usr/bin/make" ]; then
	echo "in-build-root: no build root $root: make setup-7.3 (tools/setup.sh --kernel 7.3) makes it" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "in-build-root: chroot into $root needs root" >&2
	exit 1
fi
mkdir -p "$root$top"
binds=()
for d in ${IN_BUILD_ROOT_BINDS:-}; do
	[ -d "$d" ] || continue
	mkdir -p "$root$d"
	binds+=("$d")
done
# shellcheck disable=SC2016
exec unshare --mount --propagation private sh -ec '
	root=$1 top=$2 n=$3
	shift 3
	mount --bind "$top" "$root$top"
	while [ "$n" -gt 0 ]; do
		mount --bind "$1" "$root$1"
		shift
		n=$((n - 1))
	done
	mount -t proc proc "$root/proc"
	exec chroot "$root" env PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin "$@"
' in-build-root "$root" "$top" "${#binds[@]}" "${binds[@]}" "$@"
