#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds the memhp-lab debug kernel (KASAN, lockdep, DEBUG_VM,
# DEBUG_PAGEALLOC, PAGE_OWNER, kmemleak) from one of Debian's kernel
# sources and prints the bzImage path on its last line:
#
#   --series 6.1   linux-source-6.1 into build/debug-kernel/ (the default)
#   --series 6.12  linux-source-6.12 into build/debug-kernel-6.12/
#
# (/usr/src/linux-source-SERIES.tar.xz, which `make setup` installs.) An
# existing build made from the same config fragment is reused (make only
# rebuilds what changed, usually nothing).
#
# Config: x86_64 defconfig, then virtme-ng's minimal guest options, then
# tools/testing/debug/memhp-debug.config (which wins), then olddefconfig.
# Every fragment line is checked to have landed in .config.
#
# The build runs with `nice -n 19` and JOBS (default: nproc) jobs, so it
# only takes idle CPU. About 30 min on 2 idle cores for 6.1; 6.12 is
# bigger (over an hour).
#
# usage: build-kernel.sh [--series 6.1|6.12] [--config-only|--print-dir]
# (--config-only: extract and configure, print the .config path, no build;
# --print-dir: print the series' build directory, nothing else)

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
series=6.1
config_only=0
print_dir=0
while [ $# -gt 0 ]; do
	case "$1" in
	--series) series=${2:-}; shift ;;
	--config-only) config_only=1 ;;
	--print-dir) print_dir=1 ;;
	*) echo "build-kernel: unknown argument '$1' (--series 6.1|6.12, --config-only, --print-dir)" >&2
	   exit 2 ;;
	esac
	shift
done
case "$series" in
6.1) DEBUG="$TOP/build/debug-kernel" ;;
6.12) DEBUG="$TOP/build/debug-kernel-6.12" ;;
*) echo "build-kernel: --series '$series': 6.1 or 6.12" >&2; exit 2 ;;
esac
[ "$print_dir" = 1 ] && { echo "$DEBUG"; exit 0; }
SRC_TAR=${SRC_TAR:-/usr/src/linux-source-$series.tar.xz}
KTREE="$DEBUG/linux-source-$series"
FRAGMENT="$TOP/tools/testing/debug/memhp-debug.config"
JOBS=${JOBS:-$(nproc)}
CONFIGURE="$TOP/.venv/bin/virtme-configkernel"

say() { echo "build-kernel: $*" >&2; }

mkdir -p "$DEBUG"
if [ ! -f "$KTREE/Makefile" ]; then
	[ -r "$SRC_TAR" ] || { say "$SRC_TAR missing (apt install linux-source-$series)"; exit 1; }
	say "extracting $SRC_TAR"
	tar -C "$DEBUG" -xJf "$SRC_TAR"
	[ -f "$KTREE/Makefile" ] || { say "$SRC_TAR has no linux-source-$series/"; exit 1; }
fi

# (Re)configure when the fragment changed since the last configuration.
stamp="$DEBUG/.config-stamp"
want=$(sha256sum "$FRAGMENT" | cut -d' ' -f1)
if [ ! -f "$KTREE/.config" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	say "configuring (defconfig + virtme-ng options + $(basename "$FRAGMENT"))"
	make -s -C "$KTREE" defconfig >/dev/null
	"$CONFIGURE" --dry-run | grep -E '^(# )?CONFIG_' > "$DEBUG/virtme.config"
	(cd "$KTREE" && KCONFIG_CONFIG=.config scripts/kconfig/merge_config.sh -m \
		.config "$DEBUG/virtme.config" "$FRAGMENT" >"$DEBUG/merge.log" 2>&1)
	make -s -C "$KTREE" olddefconfig >/dev/null
	bad=0
	while read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qxF "$line" "$KTREE/.config" || { say "not applied: $line"; bad=1; } ;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }; sym=${sym%% *}
			! grep -q "^$sym=" "$KTREE/.config" || { say "not applied: $line"; bad=1; } ;;
		esac
	done < "$FRAGMENT"
	[ "$bad" = 0 ] || { say "the fragment does not apply cleanly (see above)"; exit 1; }
	echo "$want" > "$stamp"
fi

[ "$config_only" = 1 ] && { echo "$KTREE/.config"; exit 0; }

say "building with $JOBS jobs at nice 19 (log: $DEBUG/build.log)"
if ! nice -n 19 make -C "$KTREE" -j"$JOBS" all >"$DEBUG/build.log" 2>&1; then
	tail -30 "$DEBUG/build.log" >&2
	say "kernel build failed"
	exit 1
fi
echo "$KTREE/arch/x86/boot/bzImage"
