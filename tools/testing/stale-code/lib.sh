# SPDX-License-Identifier: GPL-2.0
#
# What tb-replug.sh and module-replug.sh share, in a guest: a 128 MiB
# pc-dimm of one memory block, plugged and removed by number, and the
# tb-replug helper run over its frames. Sourcing it builds the helper
# into a scratch directory ($tmp, removed at exit) and needs the caller's
# NAME (for messages) and ID (DIMMs ${ID}dN, backends ${ID}mN); die ends
# the script with 2.

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
. "$top/tools/testing/selftests/memhp/lib.sh"

SIZE=$((128 << 20))
MIB=192		# more than the DIMM: anonymous memory fills ZONE_MOVABLE first

die() { echo "$NAME: $*"; exit 2; }

tmp=$(mktemp -d) || die "mktemp"
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -Wall -Werror -o "$tmp/tb-replug" "$top/tools/testing/stale-code/tb-replug.c" ||
	die "build failed"
set_auto_online offline
bs=$(block_size_bytes)
[ "$SIZE" -eq "$bs" ] || die "block size $bs is not $SIZE"
memory_blocks > "$tmp/blocks0"

# plug N ONLINE [BACKEND]: add DIMM ${ID}d$N on BACKEND, or on a new
# backend ${ID}m$N, and online its block with ONLINE (online_movable,
# online_kernel). Sets $block, and $lo and $hi, its frames.
plug()
{
	if [ -n "${3:-}" ]; then
		memhp-qmp device_add driver=pc-dimm id="${ID}d$1" memdev="$3" > /dev/null ||
			die "device_add $1"
	else
		dimm_add "${ID}d$1" "${ID}m$1" "$SIZE" || die "dimm_add $1"
	fi
	wait_new_blocks "$tmp/blocks0" "$tmp/blocks1" 1 || die "no new block"
	block=$(cat "$tmp/blocks1")
	lo=$((block * bs / 4096))
	hi=$(((block + 1) * bs / 4096))
	echo "$2" > "$MEMORY_SYSFS/memory$block/state" || die "$2 $block"
}

# unplug N [BACKEND]: offline the block, remove DIMM ${ID}d$N, then
# delete BACKEND (if given).
unplug()
{
	echo offline > "$MEMORY_SYSFS/memory$block/state" || die "offline $block"
	dimm_del "${ID}d$1" ${2:+"$2"} || die "removing DIMM $1 ${2:-}"
}

# run VALUE [OFFSET]: the tb-replug helper over the DIMM's frames; prints
# its line, or says on stderr why not and fails (it failed, or no page of
# the DIMM was used). The callers exit 2 then.
run()
{
	local out

	out=$("$tmp/tb-replug" "$1" "$lo" "$hi" "$MIB" ${2:+"$2"}) ||
		{ echo "$NAME: the run with $* failed" >&2; return 1; }
	case "$out" in
	"pages in range "[1-9]*) echo "$out" ;;
	*) echo "$NAME: the run with $* used no page of the DIMM: $out" >&2; return 1 ;;
	esac
}
