#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# memhp-lab setup: installs what the suite needs and says what it installs.
# Idempotent; with --check it only reports (exit 1 if something is missing).
#
#   apt:  the Debian 6.1 kernel (image, headers, source), QEMU, sparse,
#         bpftrace, perf, valgrind, python3-venv, ...
#   src:  the pieces of linux-source-6.1 the suite builds against, extracted
#         to build/ksrc/ (kselftest headers and runner, lib.mk, checkpatch,
#         tools/include and tools/lib/rbtree.c for the user-space builds).
#         Nothing of the kernel source is committed to this repository.
#   venv: .venv with the pinned PyPI packages of tools/testing/vm/requirements.txt
#         (virtme-ng, qemu.qmp, matplotlib).

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$TOP/build"
KSRC="$BUILD/ksrc"
VENV="$TOP/.venv"
REQ="$TOP/tools/testing/vm/requirements.txt"
SRC_TAR=/usr/src/linux-source-6.1.tar.xz

APT_PACKAGES=(
	linux-image-amd64 linux-headers-amd64 linux-source-6.1
	qemu-system-x86 busybox-static udev kmod
	sparse bpftrace linux-perf dwarves valgrind
	python3 python3-venv xz-utils bc numactl libnuma-dev
	gcc-12 make perl rsync
	flex bison libelf-dev
	dkms
)

# What is extracted from linux-source-6.1 (paths inside the tarball).
KSRC_PATHS=(
	tools/testing/selftests/lib.mk
	tools/testing/selftests/kselftest.h
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest_module.h
	tools/testing/selftests/kselftest
	scripts/subarch.include
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
	tools/include
	tools/arch/x86/include
	tools/lib/rbtree.c
)
KSRC_STAMP="$KSRC/.stamp"

check_only=0
quiet=0
for arg in "$@"; do
	case "$arg" in
	--check) check_only=1 ;;
	--quiet) quiet=1 ;;
	-h|--help)
		sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'
		echo "usage: $0 [--check] [--quiet]"
		exit 0 ;;
	*) echo "setup: unknown argument '$arg'" >&2; exit 2 ;;
	esac
done

say() { [ "$quiet" = 1 ] || echo "setup: $*"; }
missing=()

# --- apt -------------------------------------------------------------------
apt_missing() {
	local p out=()
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || out+=("$p")
	done
	echo "${out[@]}"
}

need_apt=$(apt_missing)
if [ -n "$need_apt" ]; then
	missing+=("apt packages: $need_apt")
	if [ "$check_only" = 0 ]; then
		echo "setup: installing Debian packages: $need_apt"
		export DEBIAN_FRONTEND=noninteractive
		sudo_cmd=""
		[ "$(id -u)" = 0 ] || sudo_cmd=sudo
		$sudo_cmd apt-get update -q >/dev/null
		# shellcheck disable=SC2086
		$sudo_cmd apt-get install -y -q --no-install-recommends $need_apt \
			> "$BUILD.apt.log" 2>&1 || {
			echo "setup: apt-get install failed; last lines of $BUILD.apt.log:" >&2
			tail -20 "$BUILD.apt.log" >&2
			exit 1
		}
		rm -f "$BUILD.apt.log"
		need_apt=$(apt_missing)
		[ -z "$need_apt" ] || { echo "setup: still missing: $need_apt" >&2; exit 1; }
	fi
fi

# --- the kernel the suite targets -------------------------------------------
kver=$(ls /lib/modules 2>/dev/null | grep -E '^6\.1\.0-[0-9]+-amd64$' | sort -V | tail -n1 || true)
if [ -z "$kver" ] && [ "$check_only" = 0 ]; then
	echo "setup: no 6.1.0-*-amd64 kernel under /lib/modules after install" >&2
	exit 1
fi

# --- linux-source extraction -------------------------------------------------
if [ ! -f "$KSRC_STAMP" ] || [ "$SRC_TAR" -nt "$KSRC_STAMP" ]; then
	missing+=("kselftest headers, checkpatch and tools/include from $SRC_TAR")
	if [ "$check_only" = 0 ]; then
		echo "setup: extracting kselftest headers, lib.mk, checkpatch.pl and tools/include from $SRC_TAR"
		rm -rf "$KSRC"
		mkdir -p "$KSRC"
		tar -xJf "$SRC_TAR" -C "$KSRC" --strip-components=1 \
			"${KSRC_PATHS[@]/#/linux-source-6.1/}"
		touch "$KSRC_STAMP"
	fi
fi

# The kselftest runner, where our lib.mk users look for it (see the
# selftests Makefiles): tools/testing/kselftest -> build/ksrc/...
link="$TOP/tools/testing/kselftest"
if [ "$(readlink "$link" 2>/dev/null)" != "../../build/ksrc/tools/testing/selftests/kselftest" ]; then
	missing+=("link tools/testing/kselftest")
	[ "$check_only" = 1 ] || ln -sfn ../../build/ksrc/tools/testing/selftests/kselftest "$link"
fi

# --- python venv ---------------------------------------------------------------
venv_stamp="$VENV/.memhp-requirements"
if [ ! -x "$VENV/bin/python" ] || ! cmp -s "$REQ" "$venv_stamp"; then
	missing+=("python venv .venv ($(tr '\n' ' ' < "$REQ"))")
	if [ "$check_only" = 0 ]; then
		echo "setup: creating .venv with $(grep -v '^#' "$REQ" | tr '\n' ' ')"
		/usr/bin/python3 -m venv "$VENV"
		"$VENV/bin/pip" install -q --disable-pip-version-check -r "$REQ"
		cp "$REQ" "$venv_stamp"
	fi
fi

if [ "$check_only" = 1 ]; then
	if [ "${#missing[@]}" -gt 0 ]; then
		printf 'setup: missing: %s\n' "${missing[@]}"
		exit 1
	fi
	say "everything is installed (kernel $kver)"
	exit 0
fi

say "ready: kernel $kver, headers /lib/modules/$kver/build, sources $KSRC, venv $VENV"
