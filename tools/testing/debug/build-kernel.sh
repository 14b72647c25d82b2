#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds the memhp-lab debug kernel (KASAN, lockdep, DEBUG_VM,
# DEBUG_PAGEALLOC, PAGE_OWNER, kmemleak) from one of Debian's kernel
# sources and prints the bzImage path on its last line:
#
#   --series 6.1   linux-source-6.1 into build/debug-kernel/ (the default)
#   --series 6.12  linux-source-6.12 into build/debug-kernel-6.12/
#   --series 7.3   linux-source-7.3 into build/debug-kernel-7.3/, built in
#                  the trixie build root (gcc-14)
#
# The source is Debian's linux-source-SERIES: /usr/src/linux-source-SERIES.tar.xz
# on the host (6.1, 6.12) or in the build root (7.3), where `make setup`
# puts it. An existing build made from the same configuration is reused
# (make only rebuilds what changed, usually nothing).
#
# Config: Debian's own for that series (the packaged kernel's .config,
# `make print-kdir`), trimmed: every option Debian builds as a module is
# off, for a guest boots this bzImage without modules of its own and
# QEMU emulates none of that hardware. Then virtme-ng's minimal guest
# options, the suite's options (make kconfig, built in), and
# tools/testing/debug/memhp-debug.config (which wins), then olddefconfig.
# Every line of the debug fragment is checked to have landed in .config;
# the suite's options this kernel lacks are named. The compiler is the
# one Debian built the series with (`make print-kcc`); a compiler the
# host lacks (7.3's gcc-14) runs in the trixie build root.
#
# The build runs with `nice -n 19` and JOBS (default: nproc) jobs, so it
# only takes idle CPU. About 30 min on 2 idle cores for 6.1; 6.12 is
# bigger (over an hour).
#
# usage: build-kernel.sh [--series 6.1|6.12|7.3] [--config-only|--print-dir|--print-kernel]
# (--config-only: extract and configure, print the .config path, no build;
# --print-dir: print the series' build directory, nothing else;
# --print-kernel: the packaged kernel it starts from: release, build tree,
# compiler and build root, a line each)

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
# Run from `make check-debug KVER=7.3`, make's command line is in MAKEFLAGS
# and the environment, and KVER would override the KSERIES lookup below;
# the makes here name their kernel themselves, so none of it is passed on
# (check-debug.sh does the same).
unset MAKEFLAGS MFLAGS MAKELEVEL KVER KDIR KERNEL KSERIES
series=6.1
config_only=0
print_dir=0
print_kernel=0
while [ $# -gt 0 ]; do
	case "$1" in
	--series) series=${2:-}; shift ;;
	--config-only) config_only=1 ;;
	--print-dir) print_dir=1 ;;
	--print-kernel) print_kernel=1 ;;
	*) echo "build-kernel: unknown argument '$1' (--series 6.1|6.12|7.3, --config-only, --print-dir, --print-kernel)" >&2
	   exit 2 ;;
	esac
	shift
done
case "$series" in
6.1) DEBUG="$TOP/build/debug-kernel" ;;
6.12) DEBUG="$TOP/build/debug-kernel-6.12" ;;
7.3) DEBUG="$TOP/build/debug-kernel-7.3" ;;
*) echo "build-kernel: --series '$series': 6.1, 6.12 or 7.3" >&2; exit 2 ;;
esac
[ "$print_dir" = 1 ] && { echo "$DEBUG"; exit 0; }
# The packaged kernel of the series (tools/kernels.tsv): its release,
# build tree (Debian's config) and compiler; and the build root.
{ read -r release; read -r kdir; read -r KCC; read -r BUILD_ROOT; } < <(make -s -C "$TOP" \
	--no-print-directory print-kver print-kdir print-kcc print-build-root KSERIES="$series")
[ -n "$release" ] || { echo "build-kernel: no installed $series kernel (make setup)" >&2; exit 1; }
if [ "$print_kernel" = 1 ]; then
	printf '%s\n' "$release" "$kdir" "$KCC" "$BUILD_ROOT"
	exit 0
fi
DEBIAN_CONFIG="$kdir/.config"
RUN=()
KARGS=()
if [ -n "$KCC" ]; then
	KARGS=(CC="$KCC" HOSTCC="$KCC")
	# The tree is under TOP, at the same path in the root.
	command -v "$KCC" >/dev/null || RUN=("$TOP/tools/in-build-root.sh" "$BUILD_ROOT" "$TOP")
fi
if [ -z "${SRC_TAR:-}" ]; then
	for SRC_TAR in {,"$BUILD_ROOT"}/usr/src/linux-source-"$series".tar.xz; do
		[ -r "$SRC_TAR" ] && break
	done
fi
KTREE="$DEBUG/linux-source-$series"
FRAGMENT="$TOP/tools/testing/debug/memhp-debug.config"
SUITE_CONFIG="$TOP/tools/testing/selftests/memhp/config"
JOBS=${JOBS:-$(nproc)}
CONFIGURE="$TOP/.venv/bin/virtme-configkernel"

say() { echo "build-kernel: $*" >&2; }

mkdir -p "$DEBUG"
[ -r "$SRC_TAR" ] || { say "no linux-source-$series.tar.xz in /usr/src or $BUILD_ROOT/usr/src (make setup)"; exit 1; }
# The tree is the source it was extracted from: a new upload of
# linux-source-SERIES (another size or date) replaces it.
src_id="$(stat -c '%s %Y' "$SRC_TAR") $SRC_TAR"
if [ ! -f "$KTREE/Makefile" ] || [ "$(cat "$DEBUG/.source-stamp" 2>/dev/null)" != "$src_id" ]; then
	say "extracting $SRC_TAR"
	rm -rf "$KTREE" "$DEBUG/.source-stamp" "$DEBUG/.config-stamp"
	tar -C "$DEBUG" -xJf "$SRC_TAR"
	[ -f "$KTREE/Makefile" ] || { say "$SRC_TAR has no linux-source-$series/"; exit 1; }
	echo "$src_id" > "$DEBUG/.source-stamp"
fi

# not_applied FRAGMENT: each of its lines that .config does not have.
not_applied()
{
	local line sym

	while read -r line; do
		case "$line" in
		CONFIG_*=*)
			grep -qxF "$line" "$KTREE/.config" || echo "$line" ;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }; sym=${sym%% *}
			! grep -q "^$sym=" "$KTREE/.config" || echo "$line" ;;
		esac
	done < "$1"
}

# (Re)configure when Debian's config or a fragment changed since the last
# configuration: the build is cached by source version and configuration.
stamp="$DEBUG/.config-stamp"
[ -r "$DEBIAN_CONFIG" ] || { say "$DEBIAN_CONFIG missing (make setup)"; exit 1; }
want=$(cat "$DEBIAN_CONFIG" "$SUITE_CONFIG" "$FRAGMENT" | sha256sum | cut -d' ' -f1)
if [ ! -f "$KTREE/.config" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	say "configuring ($release's config without its modules + virtme-ng options + the suite's config + $(basename "$FRAGMENT"))"
	sed 's/^\(CONFIG_[A-Za-z0-9_]*\)=m$/# \1 is not set/' "$DEBIAN_CONFIG" > "$KTREE/.config"
	"$CONFIGURE" --dry-run | grep -E '^(# )?CONFIG_' > "$DEBUG/virtme.config"
	# The suite's options built in: a debug kernel boots without modules
	# of its own, and our modules are all it loads.
	sed 's/=m$/=y/' "$SUITE_CONFIG" > "$DEBUG/suite.config"
	"${RUN[@]}" env -C "$KTREE" KCONFIG_CONFIG=.config scripts/kconfig/merge_config.sh -m \
		.config "$DEBUG/virtme.config" "$DEBUG/suite.config" "$FRAGMENT" >"$DEBUG/merge.log" 2>&1
	"${RUN[@]}" make -s -C "$KTREE" "${KARGS[@]}" olddefconfig >/dev/null
	# The debug options must all be there; an option of the suite's that
	# this kernel lacks (6.1 has no DEV_DAX_CXL) is the SKIP of the test
	# that needs it, which the runner names.
	gaps=$(not_applied "$DEBUG/suite.config")
	[ -z "$gaps" ] || say "the suite's options this kernel does not take: $(echo $gaps)"
	bad=$(not_applied "$FRAGMENT")
	if [ -n "$bad" ]; then
		echo "$bad" | sed 's/^/build-kernel: not applied: /' >&2
		say "$(basename "$FRAGMENT") does not apply cleanly (see above)"
		exit 1
	fi
	echo "$want" > "$stamp"
fi

[ "$config_only" = 1 ] && { echo "$KTREE/.config"; exit 0; }

say "building with $JOBS jobs at nice 19 (log: $DEBUG/build.log)"
if ! nice -n 19 "${RUN[@]}" make -C "$KTREE" "${KARGS[@]}" -j"$JOBS" all >"$DEBUG/build.log" 2>&1; then
	tail -30 "$DEBUG/build.log" >&2
	say "kernel build failed"
	exit 1
fi
echo "$KTREE/arch/x86/boot/bzImage"
