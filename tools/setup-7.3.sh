# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# tools/setup.sh --kernel 7.3 (sourced by it; make setup runs it, make
# setup-7.3 alone): Debian's 7.3 from trixie-backports, the third kernel
# of make check and make run. Uses setup.sh's TOP,
# BUILD, check_only, quiet, say, sudo_cmd. Every step is skipped when its
# result is there already, so a second run prints only the ready line.
#
# The kernel release; Debian changes it (the ABI) with new uploads.
KVER_73=${MEMHP_KVER_73:-7.3.4+deb13-amd64}
ABI_73=${KVER_73%-amd64}
CACHE_73=${MEMHP_CACHE:-/var/cache/memhp-lab}
DEBS_73="$CACHE_73/7.3/debs"
ROOT_73="$CACHE_73/trixie-root"
KSRC_73="$BUILD/ksrc-7.3"
TBPO_LIST=/etc/apt/sources.list.d/memhp-trixie-backports.sources
TBPO_PREF=/etc/apt/preferences.d/memhp-trixie-backports
TBPO_PIN=1

IMAGE_DEBS_73=(linux-binary-$KVER_73 linux-modules-$KVER_73 linux-base-$KVER_73)
HEADER_DEBS_73=(linux-headers-$KVER_73 linux-headers-$ABI_73-common linux-kbuild-$ABI_73)
SOURCE_DEB_73=linux-source-7.3
# The trixie root: the compiler the 7.3 headers name (gcc-14), what
# Kbuild, objtool and make sparse need, and dkms and git for make
# dkms-check.
ROOT_PACKAGES_73=gcc-14,make,libelf-dev,bc,flex,bison,libssl-dev,kmod,pahole,sparse,dkms,git

missing=()

tbpo_pinned()
{
	grep -qx "Pin-Priority: $TBPO_PIN" "$TBPO_PREF" 2>/dev/null
}

tbpo_configured()
{
	[ -f "$TBPO_LIST" ] && tbpo_pinned
}

# root_log FILE COMMAND...: COMMAND as root ($sudo_cmd), its output into
# FILE (-a FILE: appended). The cache is root-owned, so FILE is written
# by root too; a plain redirect would open it as the calling user.
root_log()
{
	local tee_opt=
	if [ "$1" = -a ]; then
		tee_opt=-a
		shift
	fi
	local log=$1
	shift
	$sudo_cmd "$@" 2>&1 | $sudo_cmd tee $tee_opt "$log" >/dev/null
	return "${PIPESTATUS[0]}"
}

# deb_73 PACKAGE: its .deb in DEBS_73, downloaded if missing; fails with
# the package's name when apt does not know it.
deb_73()
{
	local p=$1 f

	# No DEBS_73 yet is no .deb yet.
	f=$(find "$DEBS_73" -maxdepth 1 -name "${p}_*.deb" 2>/dev/null | sort -V | tail -n1 || true)
	if [ -z "$f" ]; then
		apt-cache show --no-all-versions "$p" >/dev/null 2>&1 ||
			$sudo_cmd apt-get update -q >/dev/null
		if ! apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
			echo "setup: package $p is not in apt's lists (trixie-backports, $TBPO_LIST);" \
				"Debian may have moved on from $KVER_73 (MEMHP_KVER_73=<release> picks another)" >&2
			exit 1
		fi
		echo "setup: downloading $p ($(apt-cache show --no-all-versions "$p" |
			awk '/^Size:/ { printf "%.1f MB", $2 / 1e6; exit }'))" >&2
		$sudo_cmd mkdir -p "$DEBS_73"
		(cd "$DEBS_73" && root_log "$DEBS_73/download.log" apt-get download -q "$p") || {
			echo "setup: apt-get download $p failed; $DEBS_73/download.log:" >&2
			tail -5 "$DEBS_73/download.log" >&2
			exit 1
		}
		f=$(find "$DEBS_73" -maxdepth 1 -name "${p}_*.deb" | sort -V | tail -n1)
	fi
	echo "$f"
}

# debs_73 PACKAGE...: their .debs in DEBS, downloaded first where missing
# (every download is said before what is done with them).
debs_73()
{
	local p

	DEBS=()
	for p in "$@"; do
		DEBS+=("$(deb_73 "$p")")
	done
}

# trixie-backports: the system's mirror and keyring, pinned to priority
# 1. Installed packages and bookworm-backports have 100; at an equal 100
# the newer version wins, so an apt-get upgrade would take trixie's
# qemu-system-data, seabios and others. Below 100 a version is only a
# candidate where nothing of the package is installed, so nothing is
# upgraded from it (and the packages here are downloaded, never
# installed). An existing pin file with another priority is rewritten.
if ! tbpo_configured; then
	missing+=("apt source trixie-backports ($TBPO_LIST, pin $TBPO_PIN in $TBPO_PREF)")
	if [ "$check_only" = 0 ]; then
		if [ ! -f "$TBPO_LIST" ]; then
			echo "setup: adding trixie-backports to apt ($TBPO_LIST, mirror $(mirror_uri))"
			add_apt_source deb trixie-backports "$TBPO_LIST"
		fi
		echo "setup: pinning trixie-backports to priority $TBPO_PIN ($TBPO_PREF)"
		printf 'Package: *\nPin: release n=trixie-backports\nPin-Priority: %s\n' "$TBPO_PIN" |
			$sudo_cmd tee "$TBPO_PREF" >/dev/null
		$sudo_cmd apt-get update -q >/dev/null
	fi
fi

# The image, for guests (memhp-vm --kernel): vmlinuz and modules under
# /usr/lib/modules/KVER_73, as the packages would put them, then depmod.
if [ ! -f "/usr/lib/modules/$KVER_73/vmlinuz" ] || [ ! -f "/usr/lib/modules/$KVER_73/modules.dep" ]; then
	missing+=("7.3 image /usr/lib/modules/$KVER_73 (${IMAGE_DEBS_73[*]})")
	if [ "$check_only" = 0 ]; then
		debs_73 "${IMAGE_DEBS_73[@]}"
		echo "setup: unpacking ${IMAGE_DEBS_73[*]} into / (dpkg -x), depmod $KVER_73"
		for f in "${DEBS[@]}"; do
			$sudo_cmd dpkg -x "$f" /
		done
		$sudo_cmd depmod "$KVER_73"
	fi
fi

# The trixie build root (made in ROOT.tmp, renamed when complete), then
# the 7.3 headers and kbuild tools unpacked into it.
if [ ! -x "$ROOT_73/usr/bin/x86_64-linux-gnu-gcc-14" ] || [ ! -x "$ROOT_73/usr/bin/sparse" ] ||
   [ ! -x "$ROOT_73/usr/sbin/dkms" ] || [ ! -x "$ROOT_73/usr/bin/git" ]; then
	missing+=("trixie build root $ROOT_73 ($ROOT_PACKAGES_73)")
	if [ "$check_only" = 0 ]; then
		if ! command -v mmdebstrap >/dev/null; then
			echo "setup: installing mmdebstrap"
			$sudo_cmd apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
		fi
		echo "setup: making the trixie build root $ROOT_73 (mmdebstrap: $ROOT_PACKAGES_73)"
		$sudo_cmd rm -rf "$ROOT_73.tmp" "$ROOT_73"
		$sudo_cmd mkdir -p "$CACHE_73"
		root_log "$CACHE_73/mmdebstrap.log" \
			mmdebstrap --quiet --variant=apt --include="$ROOT_PACKAGES_73" trixie "$ROOT_73.tmp" || {
			echo "setup: mmdebstrap failed; last lines of $CACHE_73/mmdebstrap.log:" >&2
			tail -20 "$CACHE_73/mmdebstrap.log" >&2
			exit 1
		}
		$sudo_cmd mv "$ROOT_73.tmp" "$ROOT_73"
	fi
fi
if [ ! -f "$ROOT_73/usr/lib/modules/$KVER_73/build/include/generated/utsrelease.h" ]; then
	missing+=("7.3 headers in $ROOT_73 (${HEADER_DEBS_73[*]})")
	if [ "$check_only" = 0 ]; then
		debs_73 "${HEADER_DEBS_73[@]}"
		echo "setup: unpacking ${HEADER_DEBS_73[*]} into $ROOT_73"
		for f in "${DEBS[@]}"; do
			$sudo_cmd dpkg -x "$f" "$ROOT_73"
		done
	fi
fi

# linux-source-7.3 unpacked into the root, /usr/src/linux-source-7.3.tar.xz
# there as apt puts 6.1's and 6.12's on the host (make check-debug KVER=7.3
# builds it); from it checkpatch (build/ksrc-7.3/) and
# scripts/checker-valid.sh, which Debian's linux-kbuild-7.3 lacks and 7.3's
# Makefile runs before sparse (without it, C=2 skips sparse).
kbuild_scripts_73="$ROOT_73/usr/lib/linux-kbuild-$ABI_73/scripts"
src_tar_73="$ROOT_73/usr/src/linux-source-7.3.tar.xz"
if [ ! -f "$KSRC_73/.stamp" ] || [ ! -x "$kbuild_scripts_73/checker-valid.sh" ] || [ ! -r "$src_tar_73" ]; then
	missing+=("$src_tar_73, checkpatch.pl, checker-valid.sh from $SOURCE_DEB_73")
	if [ "$check_only" = 0 ]; then
		debs_73 "$SOURCE_DEB_73"
		echo "setup: unpacking $SOURCE_DEB_73 into $ROOT_73, checkpatch.pl and checker-valid.sh from it"
		$sudo_cmd dpkg -x "${DEBS[0]}" "$ROOT_73"
		rm -rf "$KSRC_73"
		mkdir -p "$KSRC_73"
		tar -xJf "$src_tar_73" -C "$KSRC_73" --strip-components=1 \
			linux-source-7.3/scripts/checkpatch.pl linux-source-7.3/scripts/spelling.txt \
			linux-source-7.3/scripts/const_structs.checkpatch linux-source-7.3/scripts/checker-valid.sh
		$sudo_cmd install -m 755 "$KSRC_73/scripts/checker-valid.sh" "$kbuild_scripts_73/checker-valid.sh"
		touch "$KSRC_73/.stamp"
	fi
fi

# sparse: 7.3's headers use __typeof_unqual__, which trixie's sparse
# (0.6.4) rejects (checker-valid.sh then makes C=2 skip it). sid's
# 0.6.5~rc1 takes it; its sparse binary needs only libc, so it alone goes
# to the root's /usr/local/bin (the deb's other dependencies, gcc-16 and
# libxml2-16, are for tools Kbuild does not use). sid is reached with an
# apt configuration of its own under CACHE_73, not the system's sources.
sparse_valid_73()
{
	[ -x "$kbuild_scripts_73/checker-valid.sh" ] &&
		[ "$(in_root_73 /usr/lib/linux-kbuild-$ABI_73/scripts/checker-valid.sh sparse -m64 2>/dev/null)" = 1 ]
}
in_root_73()
{
	$sudo_cmd chroot "$ROOT_73" env PATH=/usr/local/bin:/usr/bin:/bin "$@"
}
if ! sparse_valid_73; then
	missing+=("a sparse in $ROOT_73 that takes the 7.3 headers (sid's)")
	if [ "$check_only" = 0 ]; then
		sid="$CACHE_73/apt-sid"
		sid_opts=(-o "Dir::Etc::SourceList=$sid/sources.list" -o Dir::Etc::SourceParts=/dev/null
			  -o "Dir::State::Lists=$sid/lists" -o "Dir::Cache=$sid/cache")
		echo "setup: installing sid's sparse into $ROOT_73/usr/local/bin (trixie's rejects __typeof_unqual__)"
		$sudo_cmd mkdir -p "$sid/lists/partial" "$sid/cache/archives/partial" "$sid/deb"
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(mirror_uri) sid main" |
			$sudo_cmd tee "$sid/sources.list" >/dev/null
		root_log "$sid/log" apt-get "${sid_opts[@]}" update -q &&
			(cd "$sid/deb" && $sudo_cmd rm -f sparse_*.deb &&
			 root_log -a "$sid/log" apt-get "${sid_opts[@]}" download -q sparse) || {
			echo "setup: sparse from sid: apt failed; $sid/log:" >&2
			tail -5 "$sid/log" >&2
			exit 1
		}
		$sudo_cmd rm -rf "$sid/x"
		$sudo_cmd dpkg -x "$sid"/deb/sparse_*.deb "$sid/x"
		$sudo_cmd install -D -m 755 "$sid/x/usr/bin/sparse" "$ROOT_73/usr/local/bin/sparse"
		sparse_valid_73 || { echo "setup: sid's sparse ($(in_root_73 sparse --version)) does not take the 7.3 headers either" >&2; exit 1; }
	fi
fi

if [ "$check_only" = 1 ]; then
	if [ "${#missing[@]}" -gt 0 ]; then
		printf 'setup: missing: %s\n' "${missing[@]}"
		exit 1
	fi
	say "7.3 is set up ($KVER_73, build root $ROOT_73)"
	exit 0
fi
done_what="7.3 ready"
[ "${#missing[@]}" -gt 0 ] || done_what="7.3 ready, nothing to do"
say "$done_what: make KVER=$KVER_73 modules (Kbuild in $ROOT_73), image /usr/lib/modules/$KVER_73/vmlinuz, checkpatch $KSRC_73"
