#!/bin/sh
# Build (once) a free-threaded CPython 3.13, python3.13t, the build with no
# GIL that PyTorch ships and the tests read like every other interpreter.
# No distribution packages it, so it is built from Debian 13 (trixie)'s
# source package of Python 3.13: a deb-src line for trixie beside the
# mirror of this machine's apt configuration (read at run time: the
# repository names no package host), in a sources list and lists directory
# of its own (the machine's apt configuration is left as it is); apt-get
# fetches the package and checks its hashes; the upstream tarball in it is
# configured with --disable-gil (no PGO, no LTO, no test modules), built
# at -O1 (the tests need its layout, not its speed: two thirds of -O3's
# CPU, 231 s against 351 s) with nice -n 19 (make -j2) and installed under
# the cache.
#
# Usage: setup-ft-python.sh [DIR]     prints DIR (the install prefix; the
# interpreter is DIR/bin/python3.13t) on success.  DIR defaults to
# $PYSTROBE_FT_PYTHON or /var/cache/pystrobe/python3.13t.
# Exit 0: ready (built now or before: a complete build is reused).
# Exit 1: it cannot be built here (reason on stderr; log: DIR.log).
#
# Build dependencies (the modules the tests use: threading, json, ctypes
# through libffi, asyncio, zlib): gcc, make, xz-utils, libffi-dev and
# zlib1g-dev.  Those missing are installed with apt-get when run as root.
set -u

root=${1:-${PYSTROBE_FT_PYTHON:-/var/cache/pystrobe/python3.13t}}
suite=trixie
need_pkgs="gcc make xz-utils libffi-dev zlib1g-dev"
need_mods="threading json ctypes asyncio zlib"
apt_opts="-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false"

say() { echo "setup-ft-python: $*" >&2; }
fail() { say "$*"; exit 1; }
complete() {
	[ -f "$root/.pystrobe-complete" ] && [ -x "$root/bin/python3.13t" ]
}

if complete; then
	echo "$root"
	exit 0
fi
# One builder at a time (a test and CI may both want it): the others wait,
# then find it built.
mkdir -p "$(dirname "$root")" || fail "cannot create $(dirname "$root")"
exec 9>"$root.lock"
flock 9
if complete; then
	echo "$root"
	exit 0
fi

missing=
for p in $need_pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	[ "$(id -u)" = 0 ] || fail "missing build dependencies:$missing (run this as root, or apt-get install$missing)"
	say "installing$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >/dev/null 2>&1 ||
		fail "apt-get install$missing failed"
fi

mirror=$(sh "$(dirname "$0")/apt-mirror.sh") ||
	fail "no Debian mirror found in the apt configuration"
src=$root.src		# the source package, kept for a rebuild
log=$root.log
mkdir -p "$src/apt/lists/partial" "$src/apt/parts" || fail "cannot create $src"
echo "deb-src $mirror $suite main" >"$src/apt/sources.list"
apt_src="$apt_opts -o Dir::Etc::SourceList=$src/apt/sources.list
	-o Dir::Etc::SourceParts=$src/apt/parts -o Dir::State::Lists=$src/apt/lists
	-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache="
start=$(date +%s)
if ! ls "$src"/python3.13_*.orig.tar.xz >/dev/null 2>&1; then
	say "fetching Debian $suite's python3.13 source package from $mirror (log: $log)"
	# shellcheck disable=SC2086 # apt_src is a list of options
	if ! { apt-get $apt_src update &&
	       (cd "$src" && apt-get $apt_src source --download-only python3.13); } >"$log" 2>&1; then
		tail -n 5 "$log" >&2
		fail "could not fetch python3.13's source package from $suite (see $log)"
	fi
fi
tarball=$(ls "$src"/python3.13_*.orig.tar.xz 2>/dev/null | tail -n 1)
[ -n "$tarball" ] || fail "the source package has no upstream tarball (see $log)"

build=$src/build
rm -rf "$build" "$root"
mkdir -p "$build" && tar -xJf "$tarball" -C "$build" ||
	fail "cannot unpack $tarball"
top=$(ls -d "$build"/Python-3.13* 2>/dev/null | head -n 1)
[ -n "$top" ] || fail "$tarball holds no Python-3.13 directory"
say "building $(basename "$top") with --disable-gil into $root (nice -n 19 make -j2: 4 minutes of CPU, 15 or more on a busy machine; log: $log)"
if ! { cd "$top" &&
       nice -n 19 ./configure --disable-gil --prefix="$root" --without-ensurepip --disable-test-modules &&
       nice -n 19 make -j2 OPT="-DNDEBUG -g -O1 -Wall" &&
       nice -n 19 make install COMPILEALL_OPTS=-j2; } >>"$log" 2>&1; then
	tail -n 10 "$log" >&2
	fail "the build failed (see $log)"
fi
cd / && rm -rf "$build"

py=$root/bin/python3.13t
[ -x "$py" ] || fail "the build installed no $py (see $log)"
# What the tests need of it: no GIL, and the modules they import.
for m in $need_mods; do
	"$py" -c "import $m" 2>>"$log" || fail "$py cannot import $m (see $log)"
done
"$py" -c 'import sys; sys.exit(sys._is_gil_enabled())' ||
	fail "$py has a GIL: not a free-threaded build"
say "built in $(( $(date +%s) - start )) s"
touch "$root/.pystrobe-complete"
echo "$root"
