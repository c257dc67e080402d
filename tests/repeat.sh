#!/bin/sh
# Run live tests round after round, to show that a race is gone: one pass
# proves little about a failure that came once in twenty runs.
#
#   tests/repeat.sh [-n ROUNDS] [-o DIR] TEST[+hog]...
#
# Run it in the build directory, after `make check` has built the tests
# (or `make -C tests live/check_async ...`).  Each round runs every TEST
# once on every interpreter it finds (PYSTROBE_TEST_ONLY and the other
# variables of tests/README apply); TEST+hog runs it with a busy loop on
# one CPU beside it for the whole run.  A round does not stop at a
# failure: the summary keeps, per test, how many passed, how many failed
# and how many passed in a row since the last failure.
#
# DIR (default repeat.out) gets `summary`, one line per run with the
# number of interpreters it found, and the log
# of every run that failed (TEST-ROUND.log); the logs of passing runs are
# not kept.  While DIR/PAUSE exists no new run starts, so that another job
# can have the machine for a while without a run being charged with it.
set -u
rounds=50
out=repeat.out
while getopts n:o: opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	o) out=$OPTARG ;;
	*) echo "usage: $0 [-n ROUNDS] [-o DIR] TEST[+hog]..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
	echo "usage: $0 [-n ROUNDS] [-o DIR] TEST[+hog]..." >&2
	exit 2
fi
builddir=$(pwd)
srcdir=$(sed -n 's/^abs_top_srcdir = //p' Makefile 2>/dev/null)
if [ -z "$srcdir" ]; then
	echo "$0: no Makefile here: run it in the build directory" >&2
	exit 2
fi
for t in "$@"; do
	t=${t%+hog}
	if [ ! -x "tests/live/$t" ]; then
		echo "$0: tests/live/$t is not built: run make -C tests live/$t first" >&2
		exit 2
	fi
done
mkdir -p "$out"
hog=

stop_hog() {
	[ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null
	hog=
}
trap 'stop_hog; exit 130' INT TERM HUP

# Per test: passes, failures, passes since the last failure.
count() {
	eval "echo \${$1_$2:-0}"
}
bump() {
	eval "$1_$2=\$((\${$1_$2:-0} + 1))"
}

round=1
while [ "$round" -le "$rounds" ]; do
	for spec in "$@"; do
		while [ -e "$out/PAUSE" ]; do sleep 5; done
		t=${spec%+hog}
		key=$(echo "$t" | tr -c 'a-zA-Z0-9_\n' _)
		log="$out/$t-$round.log"
		if [ "$spec" != "$t" ]; then
			sh -c 'while :; do :; done' &
			hog=$!
		fi
		t0=$(date +%s)
		(cd tests && env srcdir="$srcdir" PYSTROBE_BUILDDIR="$builddir" \
			"live/$t") >"$log" 2>&1
		rc=$?
		secs=$(($(date +%s) - t0))
		stop_hog
		# A pass on fewer interpreters than the last round is not the
		# same pass: say how many the run found.
		on=$(sed -n 's/^interpreters: testing on \([0-9]*\):.*/\1/p' "$log" | head -n 1)
		if [ "$rc" -eq 0 ] && grep -q '100%: Checks' "$log"; then
			bump pass "$key"
			bump row "$key"
			result=PASS
			rm -f "$log"
		else
			bump fail "$key"
			eval "row_$key=0"
			result="FAIL (exit $rc, $log)"
		fi
		echo "$(date +%H:%M:%S) round $round $spec: $result in $secs s" \
			"on ${on:-?} interpreters;" \
			"$(count pass "$key") passed, $(count fail "$key") failed," \
			"$(count row "$key") in a row" | tee -a "$out/summary"
	done
	round=$((round + 1))
done
fails=0
for spec in "$@"; do
	key=$(echo "${spec%+hog}" | tr -c 'a-zA-Z0-9_\n' _)
	fails=$((fails + $(count fail "$key")))
done
[ "$fails" -eq 0 ]
