#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# debian-qemu.sh [--path]: Debian's newest QEMU (qemu-system-x86 from
# trixie-backports) for memhp-vm --qemu, on a bookworm host whose glibc
# is too old for it. make qemu-newest runs it.
#
# It installs the package into a trixie root of its own (mmdebstrap) and
# writes a wrapper beside it that runs the root's qemu-system-x86_64 with
# the root's dynamic loader and libraries, its modules
# (QEMU_MODULE_DIR) and its firmware (-L), on the host's files, so that
# the guest sees the host as with the installed QEMU:
#   $MEMHP_CACHE/qemu-newest/qemu-system-x86_64
# Prints that path last (--path: only the path). Nothing is installed on
# the host. About 2 minutes and 300 MB the first time.

set -euo pipefail

CACHE=${MEMHP_CACHE:-/var/cache/memhp-lab}
SUITE=trixie
OUT=$CACHE/qemu-newest
ROOT=$OUT/$SUITE-root
WRAP=$OUT/qemu-system-x86_64
PACKAGES="qemu-system-x86/$SUITE-backports qemu-system-common/$SUITE-backports
	qemu-system-data/$SUITE-backports seabios/$SUITE-backports"

if [ "${1:-}" = --path ]; then
	echo "$WRAP"
	exit 0
fi
die()
{
	echo "qemu-newest: $*" >&2
	exit 1
}

NAME=qemu-newest
. "$(dirname "$0")/lib.sh"
debian_root "$ROOT" "$SUITE" "$PACKAGES"

libs=$ROOT/usr/lib/x86_64-linux-gnu
cat > "$WRAP.tmp" <<EOT
#!/bin/sh
# Debian's $(chroot "$ROOT" dpkg-query -W -f='${Package} ${Version}' qemu-system-x86) from $ROOT,
# with its own loader, libraries, modules and firmware (tools/qemu/debian-qemu.sh).
QEMU_MODULE_DIR=$libs/qemu
export QEMU_MODULE_DIR
exec $libs/ld-linux-x86-64.so.2 --library-path $libs:$ROOT/lib/x86_64-linux-gnu \\
	$ROOT/usr/bin/qemu-system-x86_64 -L $ROOT/usr/share/qemu -L $ROOT/usr/share/seabios "\$@"
EOT
chmod +x "$WRAP.tmp"
mv "$WRAP.tmp" "$WRAP"
"$WRAP" --version | sed -n 1p
echo "$WRAP"
