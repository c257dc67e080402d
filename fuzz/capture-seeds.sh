#!/bin/sh
# Capture fuzz seeds from real interpreters: run tests/targets/parked.py on
# each Python found, wait until its threads are parked, and let ./capture
# record what a `dump --locals` reads from it.
#
# Usage: capture-seeds.sh CORPUSDIR
#
# Writes CORPUSDIR/walk/real-LABEL, CORPUSDIR/debug_offsets/real-LABEL (3.13+)
# and a few CORPUSDIR/linetable/real-LABEL-N; for 3.11+ also, from
# tests/targets/async_service.py, CORPUSDIR/asyncio/real-async-LABEL (and
# its walk and debug_offsets seeds, as real-async-LABEL), on 3.11-3.13 also
# with pure-Python tasks (--pytasks, as real-async-LABEL-pytasks).
# Interpreters that are not installed are skipped.  PYENV_ROOT (default /root/.pyenv) and SID_ROOT
# (default /var/cache/pystrobe/sid-root, the chroot tests/setup-sid-root.sh
# builds, with python3.14, python3.15 and python3.15d) say where to look.
set -u

corpus=${1:?usage: capture-seeds.sh CORPUSDIR}
here=$(cd "$(dirname "$0")" && pwd)
parked=$here/../tests/targets/parked.py
service=$here/../tests/targets/async_service.py
pyenv=${PYENV_ROOT:-/root/.pyenv}
sidroot=${SID_ROOT:-/var/cache/pystrobe/sid-root}
capture=$here/capture
tmp=$(mktemp -d /tmp/pystrobe-capture.XXXXXX)
pid=

mkdir -p "$corpus/walk" "$corpus/debug_offsets" "$corpus/linetable" "$corpus/asyncio"

cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# capture_one LABEL OUTDIR(as the capture sees it) ROOT PYTHON...
capture_one() {
	label=$1 out=$2 root=$3
	shift 3
	rm -f "$out/truth.json"
	if [ -n "$root" ]; then
		PYTHONDONTWRITEBYTECODE=1 chroot "$root" "$@" >"$tmp/$label.log" 2>&1 &
	else
		PYTHONDONTWRITEBYTECODE=1 "$@" >"$tmp/$label.log" 2>&1 &
	fi
	pid=$!
	i=0
	while [ ! -s "$out/truth.json" ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ ! -s "$out/truth.json" ]; then
		echo "capture-seeds: $label: never parked" >&2
		cat "$tmp/$label.log" >&2
	else
		mkdir -p "$tmp/lt-$label"
		dbg=
		case $label in 3.1[3-9]*) dbg="-d $corpus/debug_offsets/real-$label" ;; esac
		# Under the asyncio service: its tasks as a fuzz_asyncio seed.
		case $label in async-*) dbg="$dbg -a $corpus/asyncio/real-$label" ;; esac
		# shellcheck disable=SC2086
		"$capture" $dbg -l "$tmp/lt-$label" "$pid" "$corpus/walk/real-$label" ||
			echo "capture-seeds: $label: capture failed" >&2
		# A few line tables: the first frames of the parked threads.
		n=0
		for f in "$tmp/lt-$label"/*; do
			[ -e "$f" ] || break
			[ $n -lt 4 ] || break
			cp "$f" "$corpus/linetable/real-$label-$n"
			n=$((n + 1))
		done
	fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=
}

for v in 7 8 9 10 11 12 13; do
	for py in "$pyenv"/versions/3.$v.*/bin/python3.$v; do
		[ -x "$py" ] || continue
		mkdir -p "$tmp/out-3.$v"
		capture_one "3.$v" "$tmp/out-3.$v" "" "$py" "$parked" "$tmp/out-3.$v"
		# 3.11-3.13: the legacy task reader's seeds, C and Python tasks.
		if [ "$v" -ge 11 ]; then
			for variant in "" -pytasks; do
				adir=$tmp/async-3.$v$variant
				mkdir -p "$adir"
				capture_one "async-3.$v$variant" "$adir" "" "$py" "$service" \
					${variant:+--pytasks} "$adir"
			done
		fi
		break
	done
done

if [ -x /usr/bin/python3.11 ]; then
	mkdir -p "$tmp/out-deb"
	capture_one "3.11-debian" "$tmp/out-deb" "" /usr/bin/python3.11 "$parked" "$tmp/out-deb"
fi

for py in python3.14 python3.15 python3.15d; do
	[ -x "$sidroot/usr/bin/$py" ] || continue
	dir=$(mktemp -d "$sidroot/tmp/pystrobe-capture.XXXXXX")
	inside=/tmp/$(basename "$dir")
	cp "$parked" "$dir/parked.py"
	capture_one "${py#python}" "$dir" "$sidroot" "/usr/bin/$py" "$inside/parked.py" "$inside"
	cp "$service" "$dir/async_service.py"
	capture_one "async-${py#python}" "$dir" "$sidroot" "/usr/bin/$py" "$inside/async_service.py" "$inside"
	rm -rf "$dir"
done
