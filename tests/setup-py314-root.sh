#!/bin/sh
# Build (once) a minimal Debian testing root holding python3.14, for the tests that
# need Python 3.14 and for the "process in another root" case.
#
# The root is cached outside the source tree, because debootstrap takes minutes and
# the tests should not pay that on every run.  The mirror is read from this
# machine's apt configuration at run time: the repository names no package host.
#
# Usage: setup-py314-root.sh [DIR]     prints the root's path on success.
# Exit 0: root ready.  Exit 1: could not build it (reason on stderr).
set -u

root=${1:-${PYSTROBE_PY314_ROOT:-/var/cache/pystrobe/py314-root}}
suite=forky
script=/usr/share/debootstrap/scripts/sid   # debootstrap here has no forky script

if [ -x "$root/usr/bin/python3.14" ] && [ -f "$root/.pystrobe-complete" ]; then
	echo "$root"
	exit 0
fi

find_mirror() {
	# deb822 sources first (URIs: lines), then one-line sources (deb URI suite ...).
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f"
	done
}

# The Debian archive is the one whose path ends in /debian (not -security, not a
# third-party repository).
mirror=$(find_mirror | grep -E '/debian/?$' | head -n 1)
if [ -z "$mirror" ]; then
	echo "setup-py314-root: no Debian mirror found in the apt configuration" >&2
	exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
	echo "setup-py314-root: debootstrap is not installed (apt-get install debootstrap)" >&2
	exit 1
fi

rm -rf "$root.tmp"
mkdir -p "$(dirname "$root")"
log="$root.log"
echo "setup-py314-root: building $suite root from $mirror (log: $log)" >&2
if ! debootstrap --variant=minbase --include=python3.14 "$suite" "$root.tmp" "$mirror" "$script" >"$log" 2>&1; then
	echo "setup-py314-root: debootstrap failed; last lines of $log:" >&2
	tail -n 5 "$log" >&2
	exit 1
fi
if [ ! -x "$root.tmp/usr/bin/python3.14" ]; then
	echo "setup-py314-root: root built but has no /usr/bin/python3.14" >&2
	exit 1
fi
touch "$root.tmp/.pystrobe-complete"
rm -rf "$root"
mv "$root.tmp" "$root"
echo "$root"
