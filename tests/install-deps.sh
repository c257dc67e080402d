#!/bin/sh
# Install what building and testing pystrobe needs on Debian 12 (run as root).
# Everything comes from Debian's own archive.
set -e
pkgs="autoconf automake make gcc pkgconf libelf-dev libdw-dev libunwind-dev zlib1g-dev check libxml2-utils chromium python3 debootstrap util-linux libncurses-dev tmux clang libclang-rt-dev valgrind sudo"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq $missing >/dev/null
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
	npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error speedscope pprof-format >/dev/null
fi
