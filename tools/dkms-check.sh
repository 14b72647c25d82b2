#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# dkms-check.sh KVER: DKMS builds memhp-lab from a copy of the tracked
# sources for kernel KVER in scratch trees (--sourcetree/--dkmstree), so
# nothing is registered or installed on this machine. dkms.conf must name
# every module the Kbuild files build, and DKMS must build all of them. Silent on success but for one line.

set -euo pipefail

KVER=$1
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

mkdir -p "$scratch/checkout" "$scratch/src" "$scratch/tree"
# What a clean clone holds (tracked and new files, not build products).
git -C "$TOP" ls-files -co --exclude-standard -z |
	(cd "$TOP" && xargs -0 cp --parents -t "$scratch/checkout" 2>/dev/null || true)
if ! dkms build "$scratch/checkout" --sourcetree "$scratch/src" \
	--dkmstree "$scratch/tree" -k "$KVER" > "$scratch/log" 2>&1; then
	cat "$scratch/log" "$scratch"/tree/*/*/build/make.log 2>/dev/null
	echo "dkms-check: dkms build failed for $KVER" >&2
	exit 1
fi
want=$(sed -n 's/^BUILT_MODULE_NAME\[[0-9]*\]="\(.*\)"/\1/p' "$TOP/dkms.conf" | sort)
got=$(find "$scratch/tree" -path "*/$KVER/*" -name '*.ko*' -printf '%f\n' |
	sed 's/\.ko.*//' | sort -u)
kbuild=$(sed -n 's/^obj-m *+= *\([a-z0-9_]*\)\.o$/\1/p' $(git -C "$TOP" ls-files -co \
	--exclude-standard --full-name '*Kbuild' | sed "s|^|$TOP/|") | sort)
if [ "$want" != "$kbuild" ]; then
	echo "dkms-check: dkms.conf names: $(echo $want)" >&2
	echo "dkms-check: Kbuild builds:   $(echo $kbuild)" >&2
	exit 1
fi
if [ "$want" != "$got" ]; then
	echo "dkms-check: dkms.conf names: $(echo $want)" >&2
	echo "dkms-check: DKMS built:      $(echo $got)" >&2
	exit 1
fi
echo "dkms-check: DKMS built $(echo "$got" | wc -l) modules for $KVER: $(echo $got)"
