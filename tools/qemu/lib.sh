# SPDX-License-Identifier: GPL-2.0
#
# What tools/qemu/build.sh and tools/qemu/debian-qemu.sh share: the
# host's Debian mirror, and a Debian root of their own in the cache.
# The caller defines NAME (for messages) and die.

# mirror_uri: the first URIs of the host's debian.sources, else Debian's.
mirror_uri()
{
	local uri

	uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
		head -n1 || true)
	echo "${uri:-http://deb.debian.org/debian}"
}

# debian_root ROOT SUITE PACKAGES: ROOT made by mmdebstrap from SUITE and
# SUITE-backports with PACKAGES (whitespace-separated; pkg/suite picks a
# suite), unless ROOT was made with the same list (.memhp-packages).
# mmdebstrap's log goes beside ROOT.
debian_root()
{
	local root=$1 suite=$2 want mirror log

	# shellcheck disable=SC2086
	want=$(echo $3)
	[ "$(cat "$root/.memhp-packages" 2>/dev/null)" = "$want" ] && return 0
	mirror=$(mirror_uri)
	log=$(dirname "$root")/mmdebstrap.log
	echo "$NAME: making $root (mmdebstrap: $want)"
	mkdir -p "$(dirname "$root")"
	rm -rf "$root.tmp"
	mmdebstrap --quiet --variant=apt --include="$(echo "$want" | tr ' ' ,)" \
		"$suite" "$root.tmp" "deb $mirror $suite main" "deb $mirror $suite-backports main" \
		> "$log" 2>&1 || {
		tail -20 "$log" >&2
		die "mmdebstrap failed (log: $log)"
	}
	echo "$want" > "$root.tmp/.memhp-packages"
	rm -rf "$root"
	mv "$root.tmp" "$root"
}
