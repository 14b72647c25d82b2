#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# memhp-lab setup: installs what the suite needs and says what it installs.
# Idempotent; with --check it only reports (exit 1 if something is missing).
#
#   apt:  the suite's bookworm kernels, each with image, headers and
#         source: Debian's 6.1 and bookworm's linux-6.12 (bookworm-security
#         carries it, newer than bookworm-backports' 6.12.95); QEMU 10 from
#         bookworm-backports (a sources entry is added, with the suite's
#         default pin priority, 100, so nothing else is upgraded: only what
#         is asked for with -t bookworm-backports comes from it); sparse,
#         bpftrace, perf, valgrind, python3-venv, ndctl and daxctl (76.1:
#         /usr/bin/cxl, daxctl; the guest's CXL RAM regions and kmem), ...
#   src:  the pieces of linux-source-6.1 the suite builds against, extracted
#         to build/ksrc/ (kselftest headers and runner, lib.mk, checkpatch,
#         tools/include and tools/lib/rbtree.c for the user-space builds),
#         and 6.12's checkpatch to build/ksrc-6.12/ (make checkpatch runs
#         each kernel's; 7.3's comes with the 7.3 part below).
#         Nothing of the kernel source is committed to this repository.
#   qemu: the plugin API header of the installed QEMU (include/qemu/qemu-plugin.h,
#         which no binary package ships), from the orig tarball of Debian's
#         qemu source package: a deb-src entry for bookworm-backports gives
#         apt's signed Sources index, the tarball is fetched from the same
#         mirror, checked against the index's SHA-256 and cached in
#         /var/cache/memhp-lab/qemu/; the header goes to build/qemu-plugin/
#         (make count builds the memhp-count plugin against it).
#   venv: .venv with the pinned PyPI packages of tools/testing/vm/requirements.txt
#         (virtme-ng, qemu.qmp, matplotlib).
#
#   7.3:  Debian's 7.3 from trixie-backports (a sources entry pinned to 1, so
# nothing installed is upgraded from it), by tools/setup-7.3.sh, which
# `--kernel 7.3` (make setup-7.3) runs alone. Its headers want
# gcc-14 and its kbuild tools libc 2.38, which bookworm lacks, so nothing
# is installed with dpkg: the packages are
# downloaded to /var/cache/memhp-lab/7.3/, the image (vmlinuz, modules)
# unpacked into /usr/lib/modules/<release>/ and depmod run, and the headers
# unpacked into a trixie root made with mmdebstrap (gcc-14, make, sparse,
# pahole, ...) at /var/cache/memhp-lab/trixie-root, where the Makefile runs
# the Kbuild step. 7.3's checkpatch goes to build/ksrc-7.3/.

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD="$TOP/build"
KSRC="$BUILD/ksrc"
VENV="$TOP/.venv"
REQ="$TOP/tools/testing/vm/requirements.txt"
SRC_TAR=/usr/src/linux-source-6.1.tar.xz
SRC_TAR_612=/usr/src/linux-source-6.12.tar.xz
KSRC_612="$BUILD/ksrc-6.12"
BPO_LIST=/etc/apt/sources.list.d/memhp-bookworm-backports.sources
QEMU_SRC_LIST=/etc/apt/sources.list.d/memhp-qemu-src.sources
QEMU_CACHE=/var/cache/memhp-lab/qemu
QEMU_HDR="$BUILD/qemu-plugin/qemu-plugin.h"

APT_PACKAGES=(
	linux-image-amd64 linux-headers-amd64 linux-source-6.1
	linux-image-6.12-amd64 linux-headers-6.12-amd64 linux-source-6.12
	busybox-static udev kmod procps mount file binutils
	sparse bpftrace linux-perf dwarves valgrind
	python3 python3-venv xz-utils bc numactl libnuma-dev
	gcc gcc-12 make perl rsync libglib2.0-dev pkg-config curl
	flex bison libelf-dev
	dkms
	ndctl daxctl
)

# From bookworm-backports (installed with -t bookworm-backports): QEMU 10,
# whose virtio-mem has unplugged-inaccessible and dynamic-memslots.
BPO_PACKAGES=(qemu-system-x86)
BPO_QEMU_MAJOR=10

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

check_only=0
quiet=0
kernel=
kernel_next=0
for arg in "$@"; do
	if [ "$kernel_next" = 1 ]; then
		kernel=$arg
		kernel_next=0
		continue
	fi
	case "$arg" in
	--check) check_only=1 ;;
	--quiet) quiet=1 ;;
	--kernel) kernel_next=1 ;;
	--kernel=*) kernel=${arg#--kernel=} ;;
	-h|--help)
		sed -n '3,/^$/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
		echo "usage: $0 [--check] [--quiet]"
		echo "       $0 --kernel 7.3 [--check] [--quiet]   (the 7.3 part alone, make setup-7.3)"
		exit 0 ;;
	*) echo "setup: unknown argument '$arg'" >&2; exit 2 ;;
	esac
done
case "$kernel_next$kernel" in
0|07.3) ;;
*) echo "setup: --kernel '$kernel': only 7.3 is set up this way (--kernel 7.3)" >&2; exit 2 ;;
esac

say() { [ "$quiet" = 1 ] || echo "setup: $*"; }

# The system's Debian mirror (its debian.sources), or deb.debian.org.
mirror_uri()
{
	local uri

	uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
	echo "${uri:-http://deb.debian.org/debian}"
}

# add_apt_source TYPES SUITE FILE: a deb822 entry for SUITE's main on the
# system's mirror and keyring, written to FILE.
add_apt_source()
{
	printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$1" "$(mirror_uri)" "$2" | $sudo_cmd tee "$3" >/dev/null
}
missing=()

# download_size [-t RELEASE] PACKAGE...: what apt-get install would
# download for them, "N MB to download".
download_size()
{
	apt-get install -qq --print-uris --no-install-recommends "$@" 2>/dev/null |
		awk '{ s += $3 } END { printf "%.1f MB to download", s / 1e6 }'
}

# --- apt -------------------------------------------------------------------
apt_missing() {
	local p out=()
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || out+=("$p")
	done
	echo "${out[@]}"
}

sudo_cmd=""
[ "$(id -u)" = 0 ] || sudo_cmd=sudo

if [ "$kernel" = 7.3 ]; then
	# shellcheck source=tools/setup-7.3.sh
	. "$TOP/tools/setup-7.3.sh"
	exit 0
fi

# bookworm-backports, the Debian way: a sources entry beside the system's
# (same mirror and keyring), default priority 100 for the suite.
bpo_configured()
{
	grep -rqsE '^(Suites:.*[[:space:]]|deb .*[[:space:]])bookworm-backports([[:space:]]|$)' \
		/etc/apt/sources.list /etc/apt/sources.list.d/
}

bpo_missing()
{
	local major
	major=$(qemu-system-x86_64 --version 2>/dev/null | sed -n 's/^QEMU emulator version \([0-9]*\)\..*/\1/p')
	[ -n "$major" ] && [ "$major" -ge "$BPO_QEMU_MAJOR" ] || echo "${BPO_PACKAGES[@]}"
}

need_apt=$(apt_missing)
need_bpo=$(bpo_missing)
if ! bpo_configured; then
	missing+=("apt source bookworm-backports ($BPO_LIST)")
	if [ "$check_only" = 0 ]; then
		echo "setup: adding bookworm-backports to apt ($BPO_LIST, mirror $(mirror_uri))"
		add_apt_source deb bookworm-backports "$BPO_LIST"
		need_update=1
	fi
fi
if [ -n "$need_bpo" ]; then
	missing+=("from bookworm-backports: $need_bpo (QEMU >= $BPO_QEMU_MAJOR)")
fi
if [ -n "$need_apt" ] || { [ -n "$need_bpo" ] && [ "$check_only" = 0 ]; }; then
	[ -z "$need_apt" ] || missing+=("apt packages: $need_apt")
	if [ "$check_only" = 0 ]; then
		export DEBIAN_FRONTEND=noninteractive
		$sudo_cmd apt-get update -q >/dev/null
		if [ -n "$need_apt" ]; then
			echo "setup: installing Debian packages ($(download_size $need_apt)): $need_apt"
			# shellcheck disable=SC2086
			$sudo_cmd apt-get install -y -q --no-install-recommends $need_apt \
				> "$BUILD.apt.log" 2>&1 || {
				echo "setup: apt-get install failed; last lines of $BUILD.apt.log:" >&2
				tail -20 "$BUILD.apt.log" >&2
				exit 1
			}
		fi
		if [ -n "$need_bpo" ]; then
			echo "setup: installing from bookworm-backports ($(download_size -t bookworm-backports $need_bpo)): $need_bpo"
			# shellcheck disable=SC2086
			$sudo_cmd apt-get install -y -q --no-install-recommends \
				-t bookworm-backports $need_bpo >> "$BUILD.apt.log" 2>&1 || {
				echo "setup: apt-get install -t bookworm-backports failed; last lines of $BUILD.apt.log:" >&2
				tail -20 "$BUILD.apt.log" >&2
				exit 1
			}
		fi
		rm -f "$BUILD.apt.log"
		# In the lab's root (tools/lab/lab.sh) the downloaded packages
		# are only disk.
		[ "${MEMHP_IN_LAB:-}" != 1 ] || apt-get clean
		need_apt=$(apt_missing)
		[ -z "$need_apt" ] || { echo "setup: still missing: $need_apt" >&2; exit 1; }
		need_bpo=$(bpo_missing)
		[ -z "$need_bpo" ] || { echo "setup: QEMU is not >= $BPO_QEMU_MAJOR after install" >&2; exit 1; }
	fi
fi

# --- the kernels the suite targets (tools/kernels.tsv) ------------------------
# Each series that apt installs must now have a release under /lib/modules
# (the trixie-root ones are tools/setup-7.3.sh's).
if [ "$check_only" = 0 ]; then
	while IFS=$'\t' read -r series pattern source; do
		case "$series" in ''|'#'*) continue ;; esac
		[ "$source" = apt ] || continue
		ls /lib/modules 2>/dev/null | grep -qxE "$pattern" || {
			echo "setup: no $series kernel ($pattern) under /lib/modules after install" >&2
			exit 1
		}
	done < "$TOP/tools/kernels.tsv"
fi

# --- linux-source extraction -------------------------------------------------
# extract TAR DIR WHAT PATH...: PATHs of the tarball (below its top
# directory) into DIR, again whenever TAR is newer than DIR's stamp.
extract()
{
	local tar=$1 dir=$2 what=$3 top

	shift 3
	if [ -f "$dir/.stamp" ] && [ ! "$tar" -nt "$dir/.stamp" ]; then
		return 0
	fi
	missing+=("$what from $tar")
	[ "$check_only" = 0 ] || return 0
	echo "setup: extracting $what from $tar"
	top=$(basename "$tar" .tar.xz)
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xJf "$tar" -C "$dir" --strip-components=1 "${@/#/$top/}"
	touch "$dir/.stamp"
}

extract "$SRC_TAR" "$KSRC" "kselftest headers, lib.mk, checkpatch.pl and tools/include" \
	"${KSRC_PATHS[@]}"
# 6.12's checkpatch (make checkpatch runs each kernel's version).
extract "$SRC_TAR_612" "$KSRC_612" "checkpatch.pl" \
	scripts/checkpatch.pl scripts/spelling.txt scripts/const_structs.checkpatch

# The kselftest runner, where our lib.mk users look for it (see the
# selftests Makefiles): tools/testing/kselftest -> build/ksrc/...
link="$TOP/tools/testing/kselftest"
if [ "$(readlink "$link" 2>/dev/null)" != "../../build/ksrc/tools/testing/selftests/kselftest" ]; then
	missing+=("link tools/testing/kselftest")
	[ "$check_only" = 1 ] || ln -sfn ../../build/ksrc/tools/testing/selftests/kselftest "$link"
fi

# --- QEMU's plugin API header --------------------------------------------------
# qemu_plugin_header: include/qemu/qemu-plugin.h of the installed
# qemu-system-x86's source, into $QEMU_HDR (again when QEMU changes).
qemu_plugin_header()
{
	local ver upstream orig uri sources sum size

	ver=$(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null) || return 0
	if [ -f "$QEMU_HDR" ] && [ "$(cat "$QEMU_HDR.version" 2>/dev/null)" = "$ver" ]; then
		return 0
	fi
	missing+=("QEMU $ver plugin header ($QEMU_HDR)")
	[ "$check_only" = 0 ] || return 0
	upstream=${ver#*:}
	upstream=${upstream%-*}
	orig="qemu_${upstream}.orig.tar.xz"
	uri=$(mirror_uri)
	if [ ! -f "$QEMU_SRC_LIST" ]; then
		echo "setup: adding bookworm-backports sources (deb-src) to apt ($QEMU_SRC_LIST)"
		add_apt_source deb-src bookworm-backports "$QEMU_SRC_LIST"
		$sudo_cmd apt-get update -q >/dev/null
	fi
	sources=$(compgen -G '/var/lib/apt/lists/*bookworm-backports_main_source_Sources*' | head -n1 || true)
	# The SHA-256 of the orig tarball from apt's (signature-checked) index,
	# which apt may keep compressed: apt-helper cat-file reads it either way.
	read -r sum size < <([ -n "$sources" ] && /usr/lib/apt/apt-helper cat-file "$sources" |
		awk -v f="$orig" '/^Checksums-Sha256:/ { c = 1; next } /^[^ ]/ { c = 0 }
		c && $3 == f { print $1, $2; exit }' || true) || true
	if [ -z "$sum" ]; then
		echo "setup: $orig is not in bookworm-backports' Sources index ($sources)" >&2
		exit 1
	fi
	$sudo_cmd mkdir -p "$QEMU_CACHE"
	if ! echo "$sum  $QEMU_CACHE/$orig" | sha256sum -c --quiet - >/dev/null 2>&1; then
		echo "setup: downloading $orig ($(awk -v s="$size" 'BEGIN { printf "%.1f MB", s / 1e6 }'), Debian's qemu source, for its plugin header)"
		$sudo_cmd curl -fsS -o "$QEMU_CACHE/$orig.part" "$uri/pool/main/q/qemu/$orig" &&
			$sudo_cmd mv "$QEMU_CACHE/$orig.part" "$QEMU_CACHE/$orig" || {
			echo "setup: cannot download $uri/pool/main/q/qemu/$orig" >&2
			exit 1
		}
		echo "$sum  $QEMU_CACHE/$orig" | sha256sum -c --quiet - || {
			echo "setup: $orig does not match the SHA-256 of the Sources index" >&2
			exit 1
		}
	fi
	mkdir -p "$(dirname "$QEMU_HDR")"
	tar -xJf "$QEMU_CACHE/$orig" -O --wildcards '*/include/qemu/qemu-plugin.h' > "$QEMU_HDR.tmp"
	[ -s "$QEMU_HDR.tmp" ] || { echo "setup: no include/qemu/qemu-plugin.h in $orig" >&2; exit 1; }
	mv "$QEMU_HDR.tmp" "$QEMU_HDR"
	echo "$ver" > "$QEMU_HDR.version"
	echo "setup: QEMU plugin header of $ver in $QEMU_HDR"
}
qemu_plugin_header

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

# --- Debian's 7.3: the same script, in a process of its own ---------------------
opts_73=()
[ "$check_only" = 0 ] || opts_73+=(--check)
[ "$quiet" = 0 ] || opts_73+=(--quiet)
if ! "$0" --kernel 7.3 "${opts_73[@]}"; then
	[ "$check_only" = 1 ] || exit 1
	missing+=("Debian's 7.3 (listed above)")
fi

if [ "$check_only" = 1 ]; then
	if [ "${#missing[@]}" -gt 0 ]; then
		printf 'setup: missing: %s\n' "${missing[@]}"
		exit 1
	fi
	say "everything is installed (kernels $(make -s -C "$TOP" --no-print-directory print-kvers), $(qemu-system-x86_64 --version | head -n1))"
	exit 0
fi

# A run that found everything in place says so (the 7.3 part says it for
# itself, above).
done_what=ready
[ "${#missing[@]}" -gt 0 ] || done_what="ready, nothing to do"
say "$done_what: kernels $(make -s -C "$TOP" --no-print-directory print-kvers), $(qemu-system-x86_64 --version | head -n1), sources $KSRC, venv $VENV"
