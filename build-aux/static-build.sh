#!/bin/sh
# Build pystrobe-static in a Debian 11 (bullseye) root: the oldest Debian
# whose archive is still served, so the oldest glibc (2.31) a binary built
# from Debian's packages can ask for.  Every library but the C library is
# linked in from the root's static archives (Makefile.am, pystrobe-static).
#
# The root (minbase, the compiler and the -dev packages, nothing else) is
# cached outside the source tree, as the tests' sid root is: debootstrap
# takes minutes (tests/debootstrap-root.sh, the mirror from this machine's
# apt configuration).  The sources go in as `make distdir`
# made them (configure already generated: the root needs no autotools), in
# a directory of their own, removed after the build.  The binary loses its
# debugging information (its symbols stay, for backtraces): about 1.8 MB.
# It carries the licences of the libraries linked in (`pystrobe
# --licences`, build-aux/notices.sh), --strict: each LICENSES/ file must
# be the root's own /usr/share/doc/PACKAGE/copyright, or the build stops.
#
# Usage: build-aux/static-build.sh DISTDIR OUT     (as root)
#   PYSTROBE_STATIC_ROOT   the cached root
#                          (default /var/cache/pystrobe/bullseye-build-root)
#   PYSTROBE_STATIC_ROOT_ONLY=1  only build the root, when missing
# Exit 0: OUT written.  Exit 1: reason on stderr.
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
root=${PYSTROBE_STATIC_ROOT:-/var/cache/pystrobe/bullseye-build-root}
need="gcc libc6-dev make pkg-config libelf-dev libdw-dev libunwind-dev zlib1g-dev libncurses-dev liblzma-dev libbz2-dev libdebuginfod-dev"

say() { echo "static-build: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (debootstrap and chroot); without root, \`make pystrobe-static' links against this machine's glibc instead"
sh "$src/tests/debootstrap-root.sh" bullseye "$root" $need || exit 1
[ "${PYSTROBE_STATIC_ROOT_ONLY:-0}" = 1 ] && exit 0
[ $# = 2 ] || die "usage: static-build.sh DISTDIR OUT"
dist=$(cd "$1" && pwd) || die "no directory $1"
out=$2

work=$(mktemp -d "$root/tmp/pystrobe-static.XXXXXX") || die "cannot write in $root/tmp"
trap 'rm -rf --one-file-system "$work"' EXIT
trap 'exit 130' INT TERM HUP
cp -pR "$dist/." "$work/" || die "cannot copy $dist into the root"
inside=/tmp/$(basename "$work")
say "building in $root ($(chroot "$root" getconf GNU_LIBC_VERSION))"
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C HOME=/root \
	/bin/sh -c "cd $inside && ./configure -q && make -j2 NOTICES_FLAGS=--strict pystrobe-static && strip --strip-debug pystrobe-static" \
	>"$work.log" 2>&1 || {
	tail -n 30 "$work.log" >&2
	rm -f "$work.log"
	die "the build in $root failed"
}
rm -f "$work.log"
cp "$work/pystrobe-static" "$out.tmp" && mv "$out.tmp" "$out" || die "cannot write $out"
