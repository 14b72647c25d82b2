#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# build.sh: qemu-system-x86_64 from Debian's source package of the
# installed QEMU (qemu-system-x86's version), Debian's patches and then
# tools/qemu/*.patch applied: the x86_64 system emulator only, TCG and
# KVM, plugins; no tools, docs or user-mode emulators. make qemu-fixed
# runs it; memhp-vm --qemu PATH runs guests with the result.
#
#   build.sh            build unless cached; prints the binary's path last
#   build.sh --path     print the path the binary has (or will have)
#
# Two variables pick another build (make qemu-fixed passes them on):
#   QEMU_ORIG=VERSION   QEMU's release VERSION (e.g. 11.1.1, Debian's orig
#                       tarball qemu_VERSION+ds.orig.tar.xz from the mirror,
#                       without Debian's patches) with tools/qemu/dev/*.patch
#                       (the port to QEMU's development tree), built in a
#                       trixie root (with qemu.qmp's wheel from PyPI, which
#                       its configure installs and the tarball leaves out);
#                       the result is a wrapper that runs it
#                       with the root's loader, libraries and firmware, as
#                       debian-qemu.sh does for Debian's binary (a trixie
#                       build needs glibc 2.41).
#   QEMU_STOCK=1        the same source without our patch: the other half
#                       of an A/B on one source.
#
# It builds in a bookworm root of its own (mmdebstrap, with meson from
# bookworm-backports as QEMU 10 wants meson >= 1.5; without bzip2, whose
# presence makes meson unpack the firmware blobs that Debian's +ds
# tarball leaves out), so the binary links
# against the libraries the host's Debian QEMU uses; nothing is installed
# on the host. It is configured with --prefix=/usr and not relocatable:
# firmware and keymaps come from the host's /usr/share/qemu
# (qemu-system-data), as for Debian's own binary. The result is cached by
# the QEMU version and a hash of the patches and configure options:
#   $MEMHP_CACHE/qemu-fixed/<version>-<hash>/qemu-system-x86_64
# with the configure line and the patches applied beside it. A build
# takes about 6 minutes on 2 cores (it says how long), the root about one
# more the first time; it is never part of make check.
#
# The sources: the orig tarball that make setup keeps in
# $MEMHP_CACHE/qemu (for the plugin header) and the Debian tarball of the
# same version, downloaded here and checked against apt's Sources index
# (without it, where the mirror does not serve it: a warning, and the
# file debian-patches beside the binary says so).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${MEMHP_CACHE:-/var/cache/memhp-lab}
SRC_CACHE=$CACHE/qemu
OUT=$CACHE/qemu-fixed
ROOT=$OUT/bookworm-root
ROOT_PACKAGES="gcc make ninja-build pkg-config python3 python3-venv flex bison
	libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev libslirp-dev meson/bookworm-backports
	python3-pycotap/bookworm-backports"

die()
{
	echo "qemu-fixed: $*" >&2
	exit 1
}
NAME=qemu-fixed
. "$TOP/tools/qemu/lib.sh"

if [ -n "${QEMU_ORIG:-}" ]; then
	[[ $QEMU_ORIG =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "QEMU_ORIG=$QEMU_ORIG is not a QEMU release (e.g. 11.1.1)"
	ver=$QEMU_ORIG+ds
	upstream=$ver
	debver=
	patches=$(ls "$TOP"/tools/qemu/dev/*.patch)
	SUITE=trixie
	# The build's packages, and Debian's firmware for the wrapper's -L.
	ROOT_PACKAGES="gcc make ninja-build pkg-config python3 python3-venv flex bison
		libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev libslirp-dev meson python3-pycotap
		python3-pip python3-wheel python3-setuptools device-tree-compiler
		qemu-system-data/trixie-backports seabios/trixie-backports ipxe-qemu"
	ROOT=$OUT/trixie-root
	# Apart from the tarball of the installed version that setup keeps.
	SRC_CACHE=$OUT/orig
else
	ver=$(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null) ||
		die "no qemu-system-x86 installed (make setup installs it)"
	upstream=${ver#*:}
	upstream=${upstream%-*}
	debver=${ver#*:}
	patches=$(ls "$TOP"/tools/qemu/*.patch)
	SUITE=bookworm
fi
[ "${QEMU_STOCK:-0}" = 1 ] && patches=
# Debian's firmware paths (qemu-system-x86 is configured with the same).
conf=(--prefix=/usr --disable-relocatable --target-list=x86_64-softmmu
      --firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu
      --enable-tcg --enable-kvm --enable-plugins --enable-slirp --enable-fdt=system
      --disable-docs --disable-tools --disable-guest-agent --disable-user
      --disable-werror --disable-download --disable-install-blobs)
# shellcheck disable=SC2086
hash=$({ [ -z "$patches" ] || cat $patches; echo "${conf[@]}"; } | sha256sum | cut -c1-12)
dest=$OUT/${ver#*:}-$hash
[ -z "$patches" ] && dest=$OUT/${ver#*:}-stock-$hash
bin=$dest/qemu-system-x86_64

if [ "${1:-}" = --path ]; then
	echo "$bin"
	exit 0
fi
if [ -x "$bin" ]; then
	echo "qemu-fixed: cached: QEMU $ver with $(echo -n "$patches" | grep -c . || true) patch(es), $hash"
	echo "$bin"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "the build root's chroot needs root (tools/in-build-root.sh)"

# --- sources -----------------------------------------------------------------
mirror=$(mirror_uri)
orig=qemu_${upstream}.orig.tar.xz
deb=qemu_${debver}.debian.tar.xz
if [ -z "${QEMU_ORIG:-}" ]; then
	[ -f "$SRC_CACHE/$orig" ] || die "no $SRC_CACHE/$orig: make setup fetches it"
	index=$(compgen -G '/var/lib/apt/lists/*bookworm-backports_main_source_Sources*' | head -n1 || true)
	[ -n "$index" ] || die "no bookworm-backports Sources index: make setup adds it"
	sum=$(/usr/lib/apt/apt-helper cat-file "$index" |
		awk -v f="$deb" '/^Checksums-Sha256:/ { c = 1; next } /^[^ ]/ { c = 0 }
		c && $3 == f { print $1; exit }' || true)
	[ -n "$sum" ] || die "$deb is not in $index"
fi
# Debian's patches are packaging fixes (paths, defaults), none in the code
# the patch touches; a mirror that serves the orig tarball but not this
# one (it happens: a partial mirror) gives QEMU's release with our patch,
# and the binary says so beside it (debian-patches).
debpatches="none: $deb not served by $mirror"
if [ -n "${QEMU_ORIG:-}" ]; then
	# Not in the host's apt indexes: fetched over the mirror's TLS-less
	# HTTP like apt, but checked by nothing but its xz integrity.
	debpatches="none: QEMU's release $QEMU_ORIG (Debian's orig tarball)"
	if [ ! -f "$SRC_CACHE/$orig" ]; then
		mkdir -p "$SRC_CACHE"
		curl -fsS -o "$SRC_CACHE/$orig.part" "$mirror/pool/main/q/qemu/$orig" ||
			die "$mirror does not serve $orig"
		xz -t "$SRC_CACHE/$orig.part" || die "$orig is damaged"
		mv "$SRC_CACHE/$orig.part" "$SRC_CACHE/$orig"
	fi
elif echo "$sum  $SRC_CACHE/$deb" | sha256sum -c --quiet - >/dev/null 2>&1; then
	debpatches=$deb
elif curl -fsS -o "$SRC_CACHE/$deb.part" "$mirror/pool/main/q/qemu/$deb"; then
	mv "$SRC_CACHE/$deb.part" "$SRC_CACHE/$deb"
	echo "$sum  $SRC_CACHE/$deb" | sha256sum -c --quiet - ||
		die "$deb does not match the SHA-256 of the Sources index"
	debpatches=$deb
else
	rm -f "$SRC_CACHE/$deb.part"
	echo "qemu-fixed: warning: $mirror does not serve $deb: building $orig without Debian's patches" >&2
fi

# --- the build root ----------------------------------------------------------
debian_root "$ROOT" "$SUITE" "$ROOT_PACKAGES"

# --- source tree: Debian's patches, then ours ----------------------------------
work=$OUT/build-${debver:-$ver}-$hash
rm -rf "$work"
mkdir -p "$work"
tar -xJf "$SRC_CACHE/$orig" -C "$work"
src=$(echo "$work"/qemu-*)
[ "$debpatches" = "$deb" ] && [ -z "${QEMU_ORIG:-}" ] && tar -xJf "$SRC_CACHE/$deb" -C "$src"
if [ -f "$src/debian/patches/series" ]; then
	grep -v '^\s*\(#\|$\)' "$src/debian/patches/series" | while read -r p _; do
		patch -s -p1 -d "$src" < "$src/debian/patches/$p" || die "Debian's $p does not apply"
	done
fi
# QEMU 11's configure installs its "tooling" group (qemu.qmp) into its
# venv, offline from python/wheels, which Debian's +ds tarball leaves out:
# the wheel pythondeps.toml pins, from PyPI.
if [ -n "${QEMU_ORIG:-}" ] && grep -q '^\[tooling\]' "$src/pythondeps.toml" 2>/dev/null; then
	qmpver=$(sed -n 's/^"qemu.qmp".*installed = "\([^"]*\)".*/\1/p' "$src/pythondeps.toml")
	pip=python3
	[ -x "$TOP/.venv/bin/python3" ] && pip=$TOP/.venv/bin/python3
	"$pip" -m pip download --quiet --no-deps --only-binary=:all: \
		-d "$src/python/wheels" "qemu.qmp==$qmpver" || die "no qemu.qmp $qmpver wheel from PyPI"
fi
for p in $patches; do
	patch -s -p1 -d "$src" < "$p" || die "$(basename "$p") does not apply to $orig + $deb"
done

# --- configure and build -------------------------------------------------------
echo "qemu-fixed: building QEMU $ver + $(echo "$patches" | xargs -rn1 basename | tr '\n' ' ')"
t0=$(date +%s)
"$TOP/tools/in-build-root.sh" "$ROOT" "$work" sh -ec '
	cd "$1"; shift
	mkdir -p build && cd build
	../configure "$@" > ../configure.log 2>&1 || { tail -30 ../configure.log; exit 1; }
	ninja -j"$(nproc)" qemu-system-x86_64 > ../ninja.log 2>&1 || { tail -40 ../ninja.log; exit 1; }
' build "$src" "${conf[@]}" || die "build failed (logs in $src)"

# --- it must run on the host ---------------------------------------------------
mkdir -p "$dest.tmp"
if [ -n "${QEMU_ORIG:-}" ]; then
	libs=$ROOT/usr/lib/x86_64-linux-gnu
	cp "$src/build/qemu-system-x86_64" "$dest.tmp/qemu-system-x86_64.bin"
	cat > "$dest.tmp/qemu-system-x86_64" <<EOT
#!/bin/sh
# QEMU $QEMU_ORIG$( [ -n "$patches" ] && echo " with tools/qemu/dev's patch" ), built in $ROOT,
# with that root's loader, libraries and firmware (tools/qemu/build.sh).
exec $libs/ld-linux-x86-64.so.2 --library-path $libs:$ROOT/lib/x86_64-linux-gnu \\
	$dest/qemu-system-x86_64.bin -L $ROOT/usr/share/qemu -L $ROOT/usr/share/seabios \\
	-L $ROOT/usr/lib/ipxe/qemu "\$@"
EOT
	chmod +x "$dest.tmp/qemu-system-x86_64"
	sed -i "s|$dest/qemu-system-x86_64.bin|$dest.tmp/qemu-system-x86_64.bin|" "$dest.tmp/qemu-system-x86_64"
	"$dest.tmp/qemu-system-x86_64" --version | sed -n 1p || die "the wrapped binary does not run"
	sed -i "s|$dest.tmp/qemu-system-x86_64.bin|$dest/qemu-system-x86_64.bin|" "$dest.tmp/qemu-system-x86_64"
else
	missing=$(ldd "$src/build/qemu-system-x86_64" | grep "not found" || true)
	[ -z "$missing" ] || die "the binary needs libraries the host lacks: $missing"
	cp "$src/build/qemu-system-x86_64" "$dest.tmp/"
	"$dest.tmp/qemu-system-x86_64" --version | sed -n 1p
	# The firmware every x86 machine loads, where the binary looks for it
	# (outside its build tree: inside, it looks in the build's qemu-bundle).
	for d in $("$dest.tmp/qemu-system-x86_64" -L help); do
		[ -e "$d/bios-256k.bin" ] && bios=$d/bios-256k.bin
	done
	[ -n "${bios:-}" ] || die "the binary finds no bios-256k.bin (-L help: $("$dest.tmp/qemu-system-x86_64" -L help | tr '\n' ' '))"
fi
printf '%s\n' "${conf[@]}" > "$dest.tmp/configure-options"
echo "$debpatches" > "$dest.tmp/debian-patches"
for p in $patches; do cp "$p" "$dest.tmp/"; done
rm -rf "$dest"
mv "$dest.tmp" "$dest"
rm -rf "$work"
echo "qemu-fixed: built in $(( $(date +%s) - t0 )) s"
echo "$bin"
