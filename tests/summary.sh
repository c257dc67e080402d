#!/bin/sh
# The last line of `make check`: which interpreters and tools the suite ran
# on, and how many checks were skipped (each program logs "interpreters:
# testing on N: [label] ...", "USED: tool" and "SKIP: reason"; see
# tests/lib/suite.h).  When every live program ran, the required minimum
# must be there, or this fails and says what to install: Debian's own
# python3.11, the sid root's 3.14 and 3.15, node, Chromium, tmux, valgrind.
#
# Usage: summary.sh "LIVE PROGRAMS" PROGRAM...    (the programs that ran)
set -u
live=$1
shift
logs=
for t in "$@"; do
	[ -f "$t.log" ] && logs="$logs $t.log"
done
[ -n "$logs" ] || exit 0

# Every live program ran (not `make check-unit`, not TESTS=one).
all_live=yes
for t in $live; do
	case " $* " in *" $t "*) ;; *) all_live=no ;; esac
done

interps=$(sed -n 's/^interpreters: testing on [0-9]*: *//p' $logs | tr ']' '\n' |
	sed -n 's/^ *\[//p' | sort -u -V)
tools=$(sed -n 's/^USED: //p' $logs | sort -u | tr '\n' ' ' | sed 's/ $//')
notfound=$(sed -n 's/^interpreters: MISSING \([^(]*[^ (]\).*/\1/p' $logs | sort -u |
	tr '\n' ',' | sed 's/,$//; s/,/, /g; s/  */ /g')
skips=$(grep -h '^SKIP: ' $logs | sort | uniq | wc -l)

# The skipped checks, each once, above the summary.
for log in $logs; do
	grep '^SKIP: ' "$log" | sort -u | sed "s|^SKIP: |SKIP (${log%.log}): |"
done

missing=
need_interp() {
	echo "$interps" | grep -qx "$1" || missing="$missing, $1 ($2)"
}
need_tool() {
	command -v "$1" >/dev/null 2>&1 || missing="$missing, $1 ($2)"
}
if [ "$all_live" = yes ] && [ -z "${PYSTROBE_TEST_ONLY:-}" ]; then
	need_interp "3.11 debian-static" "apt-get install python3"
	need_interp "3.14 sid-root" "sh tests/setup-sid-root.sh, which needs debootstrap"
	need_interp "3.15 sid-root" "sh tests/setup-sid-root.sh, which needs debootstrap"
	need_tool node "apt-get install nodejs"
	need_tool chromium "apt-get install chromium"
	need_tool tmux "apt-get install tmux"
	need_tool valgrind "apt-get install valgrind"
fi

# Where the time went: the slowest programs (tests/timed.sh).
slow=$(for log in $logs; do
	sed -n "s|^elapsed: \([0-9]*\) s\$|\1 ${log%.log}|p" "$log" | tail -n 1
done | sort -rn | head -n 8 | awk '{printf "%s%s %ss", sep, $2, $1; sep=", "}')
[ -z "$slow" ] || echo "tests: slowest: $slow"

n=$(echo "$interps" | grep -c .)
list=$(echo "$interps" | sed -n 's/..*/[&]/p' | tr '\n' ' ' | sed 's/ $//')
echo "tests: covered $n interpreters${list:+ $list}; tools: ${tools:-none}; $skips SKIP${notfound:+; not found: $notfound}"
if [ -n "$missing" ]; then
	echo "tests: FAIL: the required minimum is missing: ${missing#, }; sh tests/install-deps.sh (as root) installs all of it" >&2
	exit 1
fi
exit 0
