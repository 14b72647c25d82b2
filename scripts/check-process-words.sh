#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# check-process-words.sh [TOP]: fail when the product speaks of how it was
# made (tracker numbers, development sessions, past runs) instead of what
# it is. The patterns, one extended regex per line, are in
# scripts/process-words.txt. Prints "file:line: text" for every match and
# one line of explanation, exit 1; prints nothing and exits 0 when clean.

top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
words=$top/scripts/process-words.txt
pat=$(mktemp) || exit 2
trap 'rm -f "$pat"' EXIT

grep -vE '^[[:space:]]*(#|$)' "$words" > "$pat" || {
	echo "check-process-words: no patterns in $words" >&2
	exit 2
}

cd "$top" || exit 2
paths=
for p in README.md Documentation mm drivers include tools; do
	[ -e "$p" ] && paths="$paths $p"
done

# shellcheck disable=SC2086 # $paths is a list of words without blanks
out=$(grep -rnIEi --exclude-dir=build --exclude-dir=.venv --exclude-dir=results \
	--exclude-dir=__pycache__ -f "$pat" $paths | sed 's/^\([^:]*:[0-9]*\):/\1: /')
[ -z "$out" ] && exit 0

printf '%s\n' "$out"
n=$(printf '%s\n' "$out" | wc -l)
echo "check-process-words: $n line(s) speak of the development process (tracker" \
	"numbers, sessions, past runs: scripts/process-words.txt); say what the code" \
	"does and why, and put open defects in Documentation/known-issues.rst"
exit 1
