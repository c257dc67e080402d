#!/bin/sh
# Install what building and testing pystrobe needs on Debian 12 (run as root).
# Everything comes from Debian's own archive.  Already installed: nothing done.
set -e
say() { echo "install-deps: $*"; }

# Building pystrobe.
pkgs="autoconf automake make gcc pkgconf libelf-dev libdw-dev libdebuginfod-dev liblzma-dev libunwind-dev zlib1g-dev libncurses-dev"
# The tests: Check, the system's python3 (3.11), debootstrap for the sid root
# (3.14, 3.15), and the tools the live tests drive.
pkgs="$pkgs check python3 debootstrap util-linux sudo tmux valgrind chromium libxml2-utils"
# node runs tests/browser_flamegraph.js (check_browser, check_flamegraph,
# check_diff); g++ and python3-dev build check_native's C and C++ extension
# module (without Python.h it can only call through ctypes).
pkgs="$pkgs nodejs g++ python3-dev"
# gdb's gcore takes the cores check_core and check_async read back.
pkgs="$pkgs gdb"
# debuginfod: the client pystrobe loads at run time, and the server
# check_debuginfod serves a stripped library's debug file from.
pkgs="$pkgs libdebuginfod1 debuginfod"
# man-db's man renders the man pages for check_docs (man --warnings).
pkgs="$pkgs man-db"
# fuzz/ (libFuzzer, run by .ci/run).
pkgs="$pkgs clang libclang-rt-dev"

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	log=${TMPDIR:-/tmp}/pystrobe-install-deps.log
	say "apt-get update"
	apt-get update -qq
	say "installing$missing and what they need (minutes on a new machine; log: $log)"
	apt-get install -y -q $missing >"$log" 2>&1 || { tail -n 20 "$log"; exit 1; }
	say "installed $(grep -c '^Setting up ' "$log") packages"
fi

# --- The consumers the tests open our files with -------------------------
# (tests/consumers.js, tests/live/check_consumers.c): Go's pprof from
# Debian's golang-go; node and npm from Debian; the npm packages speedscope
# (its own importer) and pprof-format into a cache outside the source tree,
# from npm's configured registry.
# By command, not package: a node from elsewhere (with its own npm) will do.
missing=
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing from Debian (a few minutes)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq $missing >/dev/null
fi
npm_dir=${PYSTROBE_NPM_DIR:-/var/cache/pystrobe/npm}
if [ ! -d "$npm_dir/node_modules/speedscope" ] || [ ! -d "$npm_dir/node_modules/pprof-format" ]; then
	echo "install-deps: installing the npm packages speedscope and pprof-format into $npm_dir"
	mkdir -p "$npm_dir"
	# Not fatal: without them check_consumers is a SKIP that says why, in
	# the suite's summary; the build and every other test do not need them.
	npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error speedscope pprof-format >/dev/null ||
		echo "install-deps: WARNING: npm could not install speedscope and pprof-format (check_consumers will be skipped)"
fi
