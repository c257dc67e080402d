#!/bin/sh
# Build pystrobe-static in a Debian 11 (bullseye) root: the oldest Debian
# whose archive is still served, so the oldest glibc (2.31) a binary built
# from Debian's packages can ask for.  Every library but the C library is
# linked in from the root's static archives (Makefile.am, pystrobe-static).
#
# The root (minbase, the compiler and the -dev packages, nothing else) is
# cached outside the source tree, as the tests' sid root is: debootstrap
# takes minutes.  The mirror is read from this machine's apt configuration
# at run time (tests/apt-mirror.sh).  The sources go in as `make distdir`
# made them (configure already generated: the root needs no autotools), in
# a directory of their own, removed after the build.
#
# Usage: build-aux/static-build.sh DISTDIR OUT     (as root)
#   PYSTROBE_STATIC_ROOT   the cached root
#                          (default /var/cache/pystrobe/bullseye-build-root)
#   PYSTROBE_STATIC_ROOT_ONLY=1  only build the root, when missing
# Exit 0: OUT written.  Exit 1: reason on stderr.
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
root=${PYSTROBE_STATIC_ROOT:-/var/cache/pystrobe/bullseye-build-root}
need="gcc libc6-dev make pkg-config libelf-dev libdw-dev libunwind-dev zlib1g-dev
	libncurses-dev liblzma-dev libbz2-dev"

say() { echo "static-build: $*" >&2; }
die() { say "$*"; exit 1; }

build_root() {
	mirror=$(sh "$src/tests/apt-mirror.sh") ||
		die "no Debian mirror found in the apt configuration"
	command -v debootstrap >/dev/null 2>&1 ||
		die "debootstrap is not installed (apt-get install debootstrap)"
	say "building the bullseye build root from $mirror (a few minutes; log: $root.log)"
	rm -rf --one-file-system "$root.tmp"
	mkdir -p "$(dirname "$root")"
	debootstrap --variant=minbase --include="$(echo $need | tr ' ' ,)" \
			bullseye "$root.tmp" "$mirror" >"$root.log" 2>&1 || {
		tail -n 5 "$root.log" >&2
		rm -rf --one-file-system "$root.tmp"
		die "debootstrap failed"
	}
	chroot "$root.tmp" apt-get clean >/dev/null 2>&1
	touch "$root.tmp/.pystrobe-complete"
	rm -rf --one-file-system "$root" && mv "$root.tmp" "$root" ||
		die "cannot move the root to $root"
}

[ "$(id -u)" = 0 ] || die "run as root (debootstrap and chroot); without root, \`make pystrobe-static' links against this machine's glibc instead"
[ -f "$root/.pystrobe-complete" ] || build_root
[ "${PYSTROBE_STATIC_ROOT_ONLY:-0}" = 1 ] && exit 0
[ $# = 2 ] || die "usage: static-build.sh DISTDIR OUT"
dist=$(cd "$1" && pwd) || die "no directory $1"
out=$2

work=$(mktemp -d "$root/tmp/pystrobe-static.XXXXXX") || die "cannot write in $root/tmp"
trap 'rm -rf --one-file-system "$work"' EXIT
trap 'exit 130' INT TERM HUP
cp -R "$dist/." "$work/" || die "cannot copy $dist into the root"
inside=/tmp/$(basename "$work")
say "building in $root ($(chroot "$root" getconf GNU_LIBC_VERSION))"
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C HOME=/root \
	/bin/sh -c "cd $inside && ./configure -q && make -j\${JOBS:-2} pystrobe-static" \
	>"$work.log" 2>&1 || {
	tail -n 30 "$work.log" >&2
	rm -f "$work.log"
	die "the build in $root failed"
}
rm -f "$work.log"
cp "$work/pystrobe-static" "$out.tmp" && mv "$out.tmp" "$out" || die "cannot write $out"
