#!/bin/sh
# Install from Debian 12's own archive (as root) what pystrobe needs:
#
#   sh tests/install-deps.sh --build   the build and the demo: the README's
#                                      first quick-start line
#   sh tests/install-deps.sh           that and everything the tests and the
#                                      fuzzers need: its second line, `make check`
#   sh tests/install-deps.sh --list    print the three lists (build, demo,
#                                      tests), one a line; installs nothing
#
# Already installed: nothing done.  Exit 0, 1 when apt-get failed or not
# root with something missing, 2 on a bad argument.
set -e
say() { echo "install-deps: $*"; }

# Building pystrobe: what configure.ac requires (each of its "apt-get install"
# errors names one of these) and the tools.  README's "From source" names the
# same packages (tests/unit/check_docs holds the three to each other).
# libdebuginfod-dev brings libdebuginfod1, the client pystrobe loads at run time.
build="autoconf automake make gcc pkgconf libelf-dev libdw-dev libdebuginfod-dev liblzma-dev libunwind-dev zlib1g-dev libncurses-dev"
# The quick start's demo (demo/run) runs Debian's python3 (3.11); so do the tests.
demo="python3"
# The tests: Check, debootstrap for the sid root (3.14, 3.15), and the tools
# the live tests drive.  node runs tests/browser_flamegraph.js (check_browser,
# check_flamegraph, check_diff); g++ and python3-dev build check_native's C
# and C++ extension module (without Python.h it can only call through
# ctypes); gdb's gcore takes the cores check_core and check_async read back;
# debuginfod is the server check_debuginfod serves a stripped library's debug
# file from; man-db's man renders the man pages for check_docs (man
# --warnings); clang and libclang-rt-dev build fuzz/ (libFuzzer, .ci/run);
# libffi-dev (ctypes) and xz-utils (the tarball), with the build's gcc, make
# and zlib1g-dev, build the free-threaded 3.13t (tests/setup-ft-python.sh).
# slurm-wlm (slurmctld, slurmd, srun, sbatch...) and munge make the tests'
# own Slurm cluster for --slurm (tests/slurm-cluster.sh: a private munged and
# daemons of its own; the system's services are neither used nor started),
# on ports it finds free with iproute2's ss.
tests="check debootstrap util-linux sudo tmux valgrind chromium libxml2-utils nodejs g++ python3-dev gdb debuginfod man-db clang libclang-rt-dev libffi-dev xz-utils slurm-wlm munge iproute2"

case "${1:-}" in
--build) pkgs="$build $demo" ;;
'') pkgs="$build $demo $tests" ;;
--list) printf 'build: %s\ndemo: %s\ntests: %s\n' "$build" "$demo" "$tests"; exit 0 ;;
*) echo "install-deps: unknown argument '$1': give --build (the build and the demo), nothing (the tests too) or --list" >&2; exit 2 ;;
esac

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ] && [ "$(id -u)" != 0 ]; then
	say "missing:$missing; run this as root (apt-get installs them)" >&2
	exit 1
fi
if [ -n "$missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	log=${TMPDIR:-/tmp}/pystrobe-install-deps.log
	say "apt-get update"
	apt-get update -qq
	say "installing$missing and what they need (minutes on a new machine; log: $log)"
	apt-get install -y -q $missing >"$log" 2>&1 || { tail -n 20 "$log"; exit 1; }
	say "installed $(grep -c '^Setting up ' "$log") packages ($(sed -n 's/^After this operation, \(.*\) of additional disk space.*/\1/p' "$log"))"
fi
[ "${1:-}" = --build ] && exit 0

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
