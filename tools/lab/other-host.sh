#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make lab-host: the lab's flow on another Debian release as the host.
#
#   tools/lab/other-host.sh SUITE CMD
#
# A root of SUITE (trixie: Debian 13) that holds only what a host of that
# release has after a minimal install plus the lab's host prerequisites
# for Debian (Documentation/admin-guide/lab-root.rst) is made in the cache
# (hosts/SUITE/), the tree this script belongs to is mounted there at its
# own path, and CMD (a shell command line) runs in it as root, from the
# tree, with the host's /dev, /sys and /tmp, its network settings and its
# trust store. The
# lab's cache is that host's own (/root/.cache/memhp-lab inside), kept
# between runs: a first run is the flow from nothing. Root only: the host
# root's packages have their own users.

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
CACHE=${MEMHP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memhp-lab}
# A minimal install (Priority: required) with the lab's prerequisites;
# git brings perl, and apt-get update has filled the package lists.
HOST_PACKAGES=git,make,ca-certificates,debian-archive-keyring

say() { echo "lab host: $*" >&2; }

[ $# = 2 ] || { sed -n '3,/^$/{/^#/p}' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
suite=$1 cmd=$2
[ "$(id -u)" = 0 ] || { say "run as root"; exit 1; }
case "$suite" in
*[!a-z]* | '') say "SUITE: a Debian suite name, e.g. trixie"; exit 2 ;;
esac
host="$CACHE/hosts/$suite"

# One run a host at a time; and, once mmdebstrap is there (fetching it may
# take the cache's lock), the cache's lock shared, as a command in the
# lab's root holds it: lab.sh clean then waits for the run.
mkdir -p "$CACHE/hosts"
exec 7>>"$CACHE/hosts/$suite.lock"
flock -n 7 || { say "another run uses the $suite host"; exit 1; }

if [ ! -x "$host/usr/bin/make" ]; then
	mmdebstrap=$("$TOP/tools/lab/lab.sh" mmdebstrap)
	say "making a Debian $suite host root in $host (log $host.log)"
	rm -rf "$host.new"
	mkdir -p "$(dirname "$host")"
	# In a mount namespace of its own: what mmdebstrap mounts in the
	# new root goes with it, also when it is killed.
	"$TOP/tools/lab/lab.sh" site-apt-conf > "$host.apt.conf"
	if ! unshare --mount --propagation private "$mmdebstrap" --variant=minbase \
		--aptopt="$host.apt.conf" --include="$HOST_PACKAGES" \
		--skip=cleanup/apt/lists "$suite" "$host.new" \
		"deb http://deb.debian.org/debian $suite main" \
		"deb http://deb.debian.org/debian $suite-updates main" \
		"deb http://deb.debian.org/debian-security $suite-security main" \
		> "$host.log" 2>&1 7>&-; then
		tail -n 20 "$host.log" >&2
		exit 1
	fi
	mv -T "$host.new" "$host"
fi
exec 8>>"$CACHE/.lock"
flock -s 8
say "$suite host: $(sed -n 's/^PRETTY_NAME=//p' "$host/etc/os-release"), $(chroot "$host" dpkg-query -W | wc -l) packages"

# What belongs to the site, not to the release, goes with the host: its
# network settings (resolv.conf, proxies), its apt's settings for the
# mirror (a snapshot mirror's expired Release files) and its trust store
# (a site's own CAs, a proxy's) with the variables that point tools at it.
"$TOP/tools/lab/lab.sh" site-apt-conf > "$host/etc/apt/apt.conf.d/00site"
site_env=(HOME=/root "TERM=${TERM:-dumb}" "CI=${CI:-}"
	  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
while IFS= read -r -d '' v; do
	site_env+=("$v")
done < <(env -0 | grep -zE '^((https?|ftp|no)_proxy|(HTTPS?|FTP|NO)_PROXY|PIP_(CERT|INDEX_URL|EXTRA_INDEX_URL|TRUSTED_HOST|DEFAULT_TIMEOUT)|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE)=' || true)

# The locks stay with this shell, not with the command: mmdebstrap's
# hooks name their file descriptor in a dash redirection, which takes one
# digit, and every descriptor a caller leaves open pushes it up.
# shellcheck disable=SC2016
unshare --mount --propagation private --pid --fork --kill-child sh -ec '
	host=$1 top=$2 cmd=$3
	shift 3
	mount --bind "$host" "$host"
	mount --rbind /dev "$host/dev"
	mount --rbind /sys "$host/sys"
	mount -t proc proc "$host/proc"
	mount --rbind /tmp "$host/tmp"
	mkdir -p "$host$top"
	mount --bind "$top" "$host$top"
	[ ! -r /etc/resolv.conf ] || mount --bind /etc/resolv.conf "$host/etc/resolv.conf"
	[ ! -r /etc/ssl/certs/ca-certificates.crt ] ||
		mount --bind /etc/ssl/certs/ca-certificates.crt "$host/etc/ssl/certs/ca-certificates.crt"
	exec chroot "$host" env -i "$@" sh -c "cd \"\$1\" && $cmd" lab-host "$top"
' lab-host "$host" "$TOP" "$cmd" "${site_env[@]}" 7>&- 8>&-
