#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The lab's own Debian root: the suite's host side (kernels, compilers,
# QEMU, virtme-ng, the guests' userland) lives in a Debian bookworm root
# under the cache, not on the host, and every make target runs inside it.
#
#   lab.sh check          the host prerequisites; what is missing is printed
#                         with the install line of each distribution
#   lab.sh root           makes the root if it is not there (mmdebstrap)
#   lab.sh enter CMD...   CMD inside the root (made first if needed)
#   lab.sh clean          removes the cache, roots included
#   lab.sh path           prints the root's path
#   lab.sh mmdebstrap     prints the mmdebstrap it runs (fetched if needed)
#   lab.sh site-apt-conf  the host's apt settings a root takes over
#
# The cache is MEMHP_CACHE, by default $XDG_CACHE_HOME/memhp-lab (else
# ~/.cache/memhp-lab). It holds:
#
#   root/    the bookworm root. tools/setup.sh runs inside it and installs
#            there what it used to install on the host: the 6.1 and 6.12
#            kernels, QEMU 10 from bookworm-backports, the compilers,
#            sparse, dkms, bpftrace, ndctl, daxctl and numactl. The guests
#            boot with it as their root file system (virtme-ng exports the
#            root it runs in).
#   cache/   seen inside the root as /var/cache/memhp-lab: 7.3's packages,
#            its trixie build root (gcc-14), QEMU's source tarballs and the
#            patched QEMU builds.
#
# A normal user gets a user namespace in which root is the user and uids
# 1-65535 are the user's subordinate ids (/etc/subuid, newuidmap): files
# the suite writes in the clone stay the user's, and the packages in the
# root keep their owners. Root gets the same layout without a user
# namespace. Either way the root, the clone (at its own path), the cache,
# /dev, /sys and /tmp are mounted in a mount namespace of the command's
# own, and a PID namespace ends every process of the command with it.

set -euo pipefail
shopt -s inherit_errexit

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# HOME may be unset (a service, some CI runners): the user's home then.
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
CACHE=${MEMHP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memhp-lab}
ROOT="$CACHE/root"
SUITE=bookworm
# What the root starts with; tools/setup.sh, run inside, installs the rest.
ROOT_PACKAGES=apt,ca-certificates,make,git,python3,python3-venv,curl,xz-utils,mmdebstrap,uidmap,util-linux

say() { echo "lab: $*" >&2; }

# host_uri SECURITY: the first URI of the host's deb822 Debian sources
# (/etc/apt/sources.list.d/debian.sources) whose suites are the security
# suites (SECURITY=1) or not (0); nothing on another host.
host_uri()
{
	awk -v sec="$1" 'BEGIN { RS = "" } {
		uri = ""; s = 0
		n = split($0, l, "\n")
		for (i = 1; i <= n; i++) {
			if (l[i] ~ /^URIs:/) { split(l[i], w, /[ \t]+/); uri = w[2] }
			if (l[i] ~ /^Suites:.*-security/) s = 1
		}
		if (uri != "" && s == sec) { print uri; exit }
	}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true
}

# The Debian mirror and the security mirror: MEMHP_MIRROR and
# MEMHP_SECURITY_MIRROR, else the host's own when it is Debian, else
# deb.debian.org.
mirror()
{
	local uri=${MEMHP_MIRROR:-}

	[ -n "$uri" ] || uri=$(host_uri 0)
	echo "${uri:-http://deb.debian.org/debian}"
}

security_mirror()
{
	local uri=${MEMHP_SECURITY_MIRROR:-}

	[ -n "$uri" ] || uri=$(host_uri 1)
	echo "${uri:-http://deb.debian.org/debian-security}"
}

subid()
{
	awk -F: -v u="$(id -un)" -v n="$(id -u)" \
		'($1 == u || $1 == n) && $3 >= 65536 { print $2; exit }' "$1" 2>/dev/null
}

# --- prerequisites --------------------------------------------------------
# Each line: what is checked (a command, or a file when it starts with /),
# who needs it (all, or user: a normal user), then its package on
# Debian/Ubuntu, Fedora and Arch; "-" where that distribution needs none.
# Debian and Ubuntu have apt, which fetches mmdebstrap into the cache
# (below); their line asks for it only on a host that cannot.
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
PREREQS="git all git git git
make all make make make
unshare all util-linux util-linux util-linux
mmdebstrap all - mmdebstrap mmdebstrap
newuidmap user uidmap shadow-utils shadow
newgidmap user uidmap shadow-utils shadow
$KEYRING all debian-archive-keyring debian-keyring debian-archive-keyring"

# install_lines DEB FED ARCH: the three install lines, each package once.
install_lines()
{
	local dist words

	for dist in "Debian/Ubuntu: sudo apt install|$1" "Fedora:        sudo dnf install|$2" \
		    "Arch:          sudo pacman -S --needed|$3"; do
		words=$(awk -v l="${dist#*|}" 'BEGIN {
			n = split(l, w, " ")
			for (i = 1; i <= n; i++)
				if (w[i] != "-" && !s[w[i]]++) o = o (o == "" ? "" : " ") w[i]
			print o }')
		say "  ${dist%%|*} $words"
	done
}

# mmdebstrap: the host's, else one fetched into the cache. It is a Perl
# script that drives the host's apt, so a host with apt (Debian, Ubuntu),
# dpkg-deb and perl needs no package installed: apt-get download takes it
# from the mirror the host's apt already uses, checked against signed
# package lists: the host's own, or, where they lack it (a host that never
# ran apt-get update), lists apt fetches into the cache. apt's binary
# caches are off and its lock is not taken: nothing outside the cache is
# written.
MMDEBSTRAP_DIR="$CACHE/mmdebstrap"
APT_DIR="$CACHE/apt"

can_fetch_mmdebstrap()
{
	command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 &&
		perl -e 'use Pod::Usage; use Term::ANSIColor; use Math::BigInt' 2>/dev/null
}

# apt_fetch DIR LISTS CMD...: apt-get CMD in DIR, with the package lists
# of LISTS (host: the host's).
apt_fetch()
{
	local dir=$1 lists=$2 opts

	shift 2
	opts=(-q -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
	      -o APT::Sandbox::User="$(id -un)")
	if [ "$lists" != host ]; then
		mkdir -p "$lists/partial" "$APT_DIR/archives/partial"
		# The host's hooks of apt-get update (a command-not-found
		# database, ...) would write outside the cache.
		printf '#clear %s;\n' APT::Update::Pre-Invoke APT::Update::Post-Invoke \
			APT::Update::Post-Invoke-Success > "$APT_DIR/apt.conf"
		opts+=(-c "$APT_DIR/apt.conf" -o Dir::State::Lists="$lists"
		       -o Dir::Cache="$APT_DIR" -o Debug::NoLocking=1)
	fi
	(cd "$dir" && apt-get "${opts[@]}" "$@")
}

# fetch_mmdebstrap: mmdebstrap unpacked into MMDEBSTRAP_DIR. Called with
# the cache's lock held.
fetch_mmdebstrap()
{
	local tmp="$CACHE/mmdebstrap.new" log="$CACHE/mmdebstrap.log"

	rm -rf "$tmp"
	mkdir -p "$tmp"
	if ! apt_fetch "$tmp" host download mmdebstrap > "$log" 2>&1; then
		say "the host's package lists lack mmdebstrap: fetching Debian's lists into $APT_DIR"
		apt_fetch "$tmp" "$APT_DIR/lists" update >> "$log" 2>&1 &&
			apt_fetch "$tmp" "$APT_DIR/lists" download mmdebstrap >> "$log" 2>&1 || {
			tail -n 5 "$log" >&2
			say "cannot fetch mmdebstrap with the host's apt (log $log); install it: lab.sh check"
			return 1
		}
	fi
	dpkg-deb -x "$tmp"/mmdebstrap_*.deb "$tmp/x" || return 1
	rm -rf "$MMDEBSTRAP_DIR"
	mv -T "$tmp/x" "$MMDEBSTRAP_DIR" || return 1
	rm -rf "$tmp"
	say "fetched $("$MMDEBSTRAP_DIR/usr/bin/mmdebstrap" --version) into $MMDEBSTRAP_DIR"
}

# mmdebstrap_cmd: the mmdebstrap to run, fetched first when needed. Call
# it with the cache's lock held exclusively.
mmdebstrap_cmd()
{
	local bin="$MMDEBSTRAP_DIR/usr/bin/mmdebstrap"

	if command -v mmdebstrap >/dev/null 2>&1; then
		command -v mmdebstrap
		return
	fi
	[ -x "$bin" ] || fetch_mmdebstrap >&2 || return 1
	echo "$bin"
}

# present WHAT: the command, or the file (mmdebstrap: also one the cache
# can fetch; a keyring: also apt's copy of bookworm's key).
present()
{
	case "$1" in
	mmdebstrap)
		command -v mmdebstrap >/dev/null 2>&1 || can_fetch_mmdebstrap ;;
	"$KEYRING")
		[ -r "$1" ] || [ -r /etc/apt/trusted.gpg.d/debian-archive-bookworm-stable.asc ] ;;
	/*)	[ -r "$1" ] ;;
	*)	command -v "$1" >/dev/null 2>&1 || [ -x "/usr/bin/$1" ] ;;
	esac
}

# cmd_install_lines: the install lines of every prerequisite (README.md's).
cmd_install_lines()
{
	local deb=() fed=() arch=() w who d f a

	while read -r w who d f a; do
		deb+=("$d"); fed+=("$f"); arch+=("$a")
	done <<< "$PREREQS"
	install_lines "${deb[*]}" "${fed[*]}" "${arch[*]}"
}

# cmd_check: the prerequisites this user lacks, with their install lines.
cmd_check()
{
	local missing=() deb=() fed=() arch=() w who d f a problems=()

	while read -r w who d f a; do
		[ "$who" = all ] || [ "$(id -u)" != 0 ] || continue
		present "$w" && continue
		# A Debian host that cannot fetch mmdebstrap installs it.
		[ "$w" != mmdebstrap ] || d=mmdebstrap
		missing+=("$w"); deb+=("$d"); fed+=("$f"); arch+=("$a")
	done <<< "$PREREQS"
	if [ "${#missing[@]}" -gt 0 ]; then
		say "missing on this host: ${missing[*]}"
		install_lines "${deb[*]}" "${fed[*]}" "${arch[*]}"
		problems+=(packages)
	fi
	if [ "$(id -u)" != 0 ]; then
		if [ -z "$(subid /etc/subuid)" ] || [ -z "$(subid /etc/subgid)" ]; then
			say "$(id -un) has no 65536 subordinate uids and gids in /etc/subuid and /etc/subgid"
			say "  every distribution: sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $(id -un)"
			problems+=(subids)
		elif ! unshare --user true 2>/dev/null; then
			say "user namespaces are disabled for $(id -un) (unshare --user fails)"
			say "  Debian/Ubuntu: sudo sysctl kernel.unprivileged_userns_clone=1; Ubuntu 24.04 and later: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0"
			problems+=(userns)
		fi
	fi
	[ "${#problems[@]}" = 0 ]
}

# --- namespaces -----------------------------------------------------------
# ns CMD...: CMD as root of new mount and PID namespaces (and, for a normal
# user, of a user namespace: root is the user, 1-65535 its subordinate
# ids). Standard input, output and the exit status are CMD's.
# PID 1 of the command's PID namespace: the kernel gives PID 1 no signal
# it has no handler for, so the command runs as its child, with SIGINT
# and SIGQUIT at their defaults (a background job of a script starts with
# them ignored), and PID 1 passes on what it is sent. WAIT_MAP=1: first
# wait until the ids are mapped (the uid map is written last).
# shellcheck disable=SC2016
NS_INIT='
	[ "$WAIT_MAP" != 1 ] || until read -r _ </proc/self/uid_map; do sleep 0.01; done
	{ trap - INT QUIT; exec "$@"; } &
	c=$!
	for s in INT TERM HUP QUIT; do trap "kill -$s $c 2>/dev/null" "$s"; done
	rc=0
	while kill -0 "$c" 2>/dev/null; do wait "$c"; rc=$?; done
	exit "$rc"'

ns()
{
	local pid uid gid subu subg rc=0

	if [ "$(id -u)" = 0 ]; then
		WAIT_MAP=0 unshare --mount --propagation private --pid --fork --kill-child \
			bash -c "$NS_INIT" lab-ns "$@"
		return
	fi
	uid=$(id -u) gid=$(id -g) subu=$(subid /etc/subuid) subg=$(subid /etc/subgid)
	# newuidmap can map a process only once it is in the new user
	# namespace.
	{
		trap - INT QUIT
		WAIT_MAP=1 exec unshare --user --mount --propagation private --pid --fork \
			--kill-child bash -c "$NS_INIT" lab-ns "$@"
	} <&0 &
	pid=$!
	while [ "$(readlink "/proc/$pid/ns/user" 2>/dev/null)" = "$(readlink /proc/self/ns/user)" ]; do
		sleep 0.01
	done
	if ! newgidmap "$pid" 0 "$gid" 1 1 $((subg + 1)) 65535 ||
	   ! newuidmap "$pid" 0 "$uid" 1 1 $((subu + 1)) 65535; then
		# unshare ignores SIGTERM; --kill-child takes the child with it.
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		say "cannot map the subordinate ids (lab.sh check)"
		return 1
	fi
	wait "$pid" || rc=$?
	return "$rc"
}

# --- the root -------------------------------------------------------------
# lock MODE...: the cache's lock on fd 9, shared (-s: a command runs in
# the root) or exclusive (-x: the root is made or removed); -n: fail
# rather than wait. fd 9 stays open in the command, so the lock lasts as
# long as it.
lock()
{
	mkdir -p "$CACHE"
	exec 9>>"$CACHE/.lock"
	flock "$@" 9
}

# rm_tree DIR: DIR and everything in it, also what the packages' own
# users own (subordinate ids: removed from inside the namespace).
rm_tree()
{
	[ -e "$1" ] || return 0
	if [ "$(id -u)" = 0 ]; then
		rm -rf "$1"
	else
		rm -rf "$1" 2>/dev/null || ns rm -rf "$1"
	fi
}

cmd_root()
{
	local tmp log mmdebstrap

	[ -x "$ROOT/usr/bin/apt-get" ] && return 0
	cmd_check || exit 1
	lock -x
	# Made by another run while this one waited.
	[ -x "$ROOT/usr/bin/apt-get" ] && return 0
	mkdir -p "$CACHE/cache"
	tmp="$ROOT.new"
	log="$CACHE/root.log"
	say "making the lab's Debian $SUITE root in $ROOT (mmdebstrap, about 60 MB to download; log $log)"
	# What an interrupted run left.
	rm_tree "$tmp"
	rm_tree "$ROOT"
	mkdir -p "$tmp"
	# Root mode in the namespace: the root's files are the user's, the
	# packages' own users and groups its subordinate ids.
	mmdebstrap=$(mmdebstrap_cmd) || exit 1
	# The host's settings for the mirror (a proxy, a snapshot's expired
	# Release files) also while the root is made. The lock's descriptor
	# stays here: mmdebstrap's hooks name theirs in a dash redirection,
	# which takes one digit, and every open one pushes it up.
	site_apt_conf > "$CACHE/site-apt.conf"
	if ! ns "$mmdebstrap" --mode=root --variant=apt --include="$ROOT_PACKAGES" \
		--aptopt='Acquire::Retries "3"' --aptopt="$CACHE/site-apt.conf" \
		"$SUITE" "$tmp" \
		"deb $(mirror) $SUITE main" \
		"deb $(mirror) $SUITE-updates main" \
		"deb $(security_mirror) $SUITE-security main" > "$log" 2>&1 9>&-; then
		say "mmdebstrap failed; last lines of $log:"
		tail -n 20 "$log" >&2
		exit 1
	fi
	mv -T "$tmp" "$ROOT"
	say "root ready: $(du -sh "$ROOT" 2>/dev/null | cut -f1) in $ROOT"
}

# How the host's apt reaches the mirror (proxies; a mirror that is a
# snapshot, whose Release files have expired), for the root's apt too.
HOST_APT_CONF='^Acquire::(Check-Valid-Until|Check-Date|Max-ValidTime|https?::Proxy|Retries) '

# site_apt_conf: those settings of the host's apt, in apt.conf form.
site_apt_conf()
{
	if command -v apt-config >/dev/null 2>&1; then
		apt-config dump | grep -E "$HOST_APT_CONF" || true
	fi
}

host_apt_conf()
{
	local conf="$ROOT/etc/apt/apt.conf.d/00memhp-host" new

	# Written also when empty: the file marks the lab's root (a guest
	# that sees it runs the root's userland).
	new="// memhp-lab: the host's apt Acquire settings (tools/lab/lab.sh)"
	new+=$'\n'$(site_apt_conf)
	[ "$new" = "$(cat "$conf" 2>/dev/null)" ] || echo "$new" > "$conf"
}

# The environment inside: the caller's, with the root's PATH and HOME and
# without what names places of the host.
ENV_DROP="XDG_RUNTIME_DIR XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME DBUS_SESSION_BUS_ADDRESS PIP_FIND_LINKS VIRTUAL_ENV"

cmd_enter()
{
	local v binds=()

	[ "$#" -gt 0 ] || set -- bash
	cmd_root
	lock -s
	host_apt_conf
	# Directories the command names that live outside the clone (KDIR=,
	# KERNEL= trees): mounted at the paths named.
	set -f
	for v in ${MEMHP_LAB_BINDS:-}; do
		[ -d "$v" ] && binds+=("$(cd "$v" && pwd)")
	done
	set +f
	for v in $ENV_DROP; do
		unset "$v"
	done
	# MEMHP_CACHE names the cache as seen inside: tools/setup-7.3.sh and
	# the debug kernel's build find 7.3's packages and the trixie root there.
	export MEMHP_IN_LAB=1 HOME=/root MEMHP_CACHE=/var/cache/memhp-lab
	export PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin
	# shellcheck disable=SC2016
	ns sh -ec '
		root=$1 top=$2 cache=$3 cwd=$4 nbinds=$5
		shift 5
		bind() {
			mkdir -p "$root$2"
			mount --bind "$1" "$root$2"
		}
		# The root a mount of its own: inside, / is then a mount point,
		# whose propagation unshare --mount can change.
		mount --bind "$root" "$root"
		mount --rbind /dev "$root/dev"
		mount --rbind /sys "$root/sys"
		mount -t proc proc "$root/proc"
		mount --rbind /tmp "$root/tmp"
		bind "$top" "$top"
		bind "$cache" /var/cache/memhp-lab
		while [ "$nbinds" -gt 0 ]; do
			bind "$1" "$1"
			shift
			nbinds=$((nbinds - 1))
		done
		# The host network settings and trust store (a proxy CA).
		[ ! -r /etc/resolv.conf ] || mount --bind /etc/resolv.conf "$root/etc/resolv.conf"
		[ ! -r /etc/ssl/certs/ca-certificates.crt ] ||
			mount --bind /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
		# The caller'"'"'s directory when the root shows it (the clone), else the clone.
		exec chroot "$root" sh -c '"'"'cd "$1" 2>/dev/null || cd "$2"; shift 2; exec "$@"'"'"' \
			lab-cd "$cwd" "$top" "$@"
	' lab-enter "$ROOT" "$TOP" "$CACHE/cache" "$PWD" "${#binds[@]}" "${binds[@]}" "$@"
}

# Only what lab.sh and setup put there: MEMHP_CACHE may name a directory
# that holds more.
CACHE_ENTRIES="root root.new root.log cache mmdebstrap mmdebstrap.new mmdebstrap.log apt hosts site-apt.conf"

cmd_clean()
{
	local e

	[ -d "$CACHE" ] || { say "no cache at $CACHE"; return 0; }
	lock -x -n || { say "the cache is in use (a command runs in the root)"; exit 1; }
	say "removing the lab's root and cache in $CACHE ($(du -sh "$CACHE" 2>/dev/null | cut -f1))"
	for e in $CACHE_ENTRIES; do
		rm_tree "${CACHE:?}/$e"
	done
	rm -f "$CACHE/.lock"
	rmdir "$CACHE" 2>/dev/null || true
}

case "${1:-}" in
check)
	if [ "${2:-}" = --all ]; then
		cmd_install_lines
	else
		cmd_check && say "host prerequisites present"
	fi ;;
root) cmd_root; echo "$ROOT" ;;
enter) shift; cmd_enter "$@" ;;
clean) cmd_clean ;;
path) echo "$ROOT" ;;
mmdebstrap)
	# The lock only to fetch: a command in the root holds it shared.
	command -v mmdebstrap >/dev/null 2>&1 || [ -x "$MMDEBSTRAP_DIR/usr/bin/mmdebstrap" ] || lock -x
	mmdebstrap_cmd ;;
site-apt-conf) site_apt_conf ;;
*)
	sed -n '3,/^$/{/^#/p}' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2 ;;
esac
