#!/bin/sh
# Build a minbase Debian root with debootstrap, once: the roots the build
# and the tests keep outside the source tree (build-aux/static-build.sh's
# Debian 11 build root, the pristine roots of tests/fresh-debian.sh and
# tests/live/check_install.c).  The mirror is read from this machine's apt
# configuration at run time (tests/apt-mirror.sh).
#
# Usage: debootstrap-root.sh SUITE DIR [PACKAGE...]     (as root)
# DIR is whole or absent: built in DIR.tmp (log: DIR.log), marked
# DIR/.pystrobe-complete (which holds the package list), then moved in
# place.  A root built before with other packages is built again, so that
# a package added to a caller's list reaches the machines that cached the
# root.  Exit 0: DIR ready (built now or before).  Exit 1: it cannot be
# built here (reason on stderr).
set -u
suite=$1
root=$2
shift 2
want="$suite $*"

say() { echo "debootstrap-root: $*" >&2; }
ready() { [ "$(cat "$root/.pystrobe-complete" 2>/dev/null)" = "$want" ]; }

ready && exit 0
# One builder at a time (two tests may want the same root): the others
# wait, then find it built.
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9
ready && exit 0
mirror=$(sh "$(dirname "$0")/apt-mirror.sh") || {
	say "no Debian mirror found in the apt configuration"
	exit 1
}
command -v debootstrap >/dev/null 2>&1 || {
	say "debootstrap is not installed (apt-get install debootstrap)"
	exit 1
}
say "building a minbase $suite root${1:+ with $*} in $root from $mirror (a few minutes; log: $root.log)"
rm -rf --one-file-system "$root.tmp"
include=
[ $# -gt 0 ] && include=--include=$(echo "$@" | tr ' ' ,)
if ! debootstrap --variant=minbase $include "$suite" "$root.tmp" "$mirror" >"$root.log" 2>&1; then
	tail -n 5 "$root.log" >&2
	rm -rf --one-file-system "$root.tmp"
	say "debootstrap of $suite failed"
	exit 1
fi
chroot "$root.tmp" apt-get clean >/dev/null 2>&1
echo "$want" >"$root.tmp/.pystrobe-complete"
rm -rf --one-file-system "$root" && mv "$root.tmp" "$root" || {
	say "cannot move the root to $root"
	exit 1
}
