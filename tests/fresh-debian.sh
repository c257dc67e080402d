#!/bin/sh
# Run the README's two quick-start lines, exactly as the README writes them,
# as root in a pristine Debian 12 (debootstrap --variant=minbase bookworm:
# nothing added, no pyenv), on a clean copy of this checkout's HEAD.  This is
# what a new user on a new machine does; a package the build or the tests
# need and tests/install-deps.sh does not install fails here, not on a
# developer's machine that happens to have it.  Line 1 (install-deps.sh
# --build: the build's packages only; build, make install, the demo) must
# leave `pystrobe` on root's PATH: `pystrobe --version` runs after it.
# Line 2 (every package the tests need, `make check`) follows.
#
# Only the bare debootstrap output is cached (a tar, outside the source
# tree), never a root with our dependencies in it: every run starts from a
# fresh copy of it.  The mirror is read from this machine's apt
# configuration at run time (tests/apt-mirror.sh).  The tests' own sid root
# (tests/setup-sid-root.sh) is built inside, from scratch, as a user's
# first `make check` would.
#
# Usage: tests/fresh-debian.sh [WORKDIR]      (as root; WORKDIR is removed)
#   PYSTROBE_FRESH_CACHE   the cached tar (default
#                          /var/cache/pystrobe/bookworm-minbase.tar)
#   PYSTROBE_FRESH_KEEP=1  leave WORKDIR (the root and its logs) after a run
#   PYSTROBE_FRESH_CACHE_ONLY=1  only build the cached tar, when missing
#   PYSTROBE_FRESH_LINES=1 run line 1 only (and the PATH check after it):
#                          minutes, where line 2 is the whole suite
#   PYSTROBE_FRESH_SID_ROOT_TO=DIR  after a pass, move the sid root the tests
#                          built inside to DIR, when DIR holds none
#   PYSTROBE_FRESH_FT_PYTHON_FROM=DIR  a free-threaded 3.13t built by
#                          tests/setup-ft-python.sh, copied into the root at
#                          the same path before the lines run, so that the
#                          tests find it built (its build takes 10-15 min)
# Exit status: that of the first README line that failed (1 when line 1
# left no pystrobe on PATH), 0 if all passed.
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
cache=${PYSTROBE_FRESH_CACHE:-/var/cache/pystrobe/bookworm-minbase.tar}
work=${1:-/var/tmp/pystrobe-fresh}
root=$work/root

say() { echo "fresh-debian: $*" >&2; }
die() { say "$*"; exit 1; }

# The mounts are run_line's namespace's, gone with it: seen from here the
# root holds none.  --one-file-system all the same, so that a mount that
# did stay is skipped, never emptied through (a bound /dev!).
cleanup() {
	[ "${PYSTROBE_FRESH_KEEP:-0}" = 1 ] || rm -rf --one-file-system "$work"
}

build_cache() {
	sh "$src/tests/debootstrap-root.sh" bookworm "$cache.d" || exit 1
	rm -f "$cache.d/.pystrobe-complete"
	tar --numeric-owner -C "$cache.d" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache" ||
		die "cannot write $cache"
	rm -rf "$cache.d" "$cache.d.log"
}

# The root gets this machine's network and apt transport settings (a
# snapshot mirror needs Check-Valid-Until off, a proxy must be named), and
# the checkout.  No package and no pyenv.
prepare_root() {
	mkdir -p "$root" && tar --numeric-owner -C "$root" -xf "$cache" ||
		die "cannot unpack $cache into $root"
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
	# This machine's TLS trust, for npm (the one client the lines run
	# over https): a site that inspects TLS signs with a CA of its own,
	# which a pristine root cannot know.  Given to node alone, by
	# environment (run_line); the root's own trust store is left as it is.
	mkdir -p "$root/etc/ssl"
	cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/host-ca-certificates.crt" 2>/dev/null
	apt-config dump | grep -E '^Acquire::(Check-Valid-Until|Check-Date|https?::Proxy) ' \
		>"$root/etc/apt/apt.conf.d/00host-transport"
	ft=${PYSTROBE_FRESH_FT_PYTHON_FROM:-}
	if [ -n "$ft" ] && [ -f "$ft/.pystrobe-complete" ]; then
		mkdir -p "$root$(dirname "$ft")" && cp -a "$ft" "$root$ft" ||
			die "cannot copy $ft into $root"
	fi
	mkdir -p "$root/root/pystrobe"
	git -C "$src" archive HEAD | tar -C "$root/root/pystrobe" -xf - ||
		die "cannot copy HEAD of $src (uncommitted changes are not in it)"
}

# The lines are the README's, found as .ci/run finds its line: the indented
# "$ " lines of the quick start that build and run the demo or the tests.
readme_lines() {
	sed -n 's/^    \$ \(.*install-deps.*\)$/\1/p' "$src/README" | head -n 2
}

# Run $1 in the root as a machine booted from it would: in a mount
# namespace of its own, the root bound on itself and made "/" by
# pivot_root (not chroot: in a chroot, unshare cannot make "/" private or
# create a user namespace, which check_containers does), with /proc, /sys,
# /dev, /dev/pts and /dev/shm.  The mounts live and die with the namespace,
# so no exit path leaves one behind on this machine.
run_line() {
	say "running in the root, as root: $1"
	unshare --mount --propagation private /bin/sh -c '
		set -e
		r=$1
		mount --bind "$r" "$r"
		mount -t proc proc "$r/proc"
		mount -t sysfs sysfs "$r/sys"
		mount --bind /dev "$r/dev"
		mount --bind /dev/pts "$r/dev/pts"
		mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
		cd "$r"
		pivot_root . .
		umount -l .
		ca=
		[ -f /etc/ssl/host-ca-certificates.crt ] &&
			ca="NODE_EXTRA_CA_CERTS=/etc/ssl/host-ca-certificates.crt npm_config_cafile=/etc/ssl/host-ca-certificates.crt"
		exec /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 $ca \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			/bin/sh -c "cd /root/pystrobe && $2"' sh "$root" "$1"
}

# CI on a new machine: the sid root the tests built inside, for this
# machine's own runs when it has none (the same script, the same mirror),
# so that it is built once, not twice.
hand_over_sid_root() {
	to=${PYSTROBE_FRESH_SID_ROOT_TO:-}
	from=$root/var/cache/pystrobe/sid-root
	[ -n "$to" ] && [ ! -f "$to/.pystrobe-complete" ] && [ -f "$from/.pystrobe-complete" ] ||
		return 0
	say "handing the sid root built inside over to $to"
	rm -rf --one-file-system "$to" && mkdir -p "$(dirname "$to")" && mv "$from" "$to" ||
		say "could not move it to $to (it will be built there when needed)"
}

[ "$(id -u)" = 0 ] || die "run as root (it uses debootstrap, unshare, mount and pivot_root)"
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
[ -f "$cache" ] || build_cache
[ "${PYSTROBE_FRESH_CACHE_ONLY:-0}" = 1 ] && exit 0
rm -rf --one-file-system "$work"
prepare_root
n=$(readme_lines | wc -l)
[ "$n" = 2 ] || die "found $n quick-start lines in README, not 2"
readme_lines >"$work/lines"
n=0
while read -r line; do
	start=$(date +%s)
	run_line "$line" </dev/null
	status=$?
	say "exit $status after $(($(date +%s) - start)) s: $line"
	if [ "$status" != 0 ]; then
		cat "$root/root/pystrobe/tests/test-suite.log" 2>/dev/null
		exit "$status"
	fi
	n=$((n + 1))
	[ "$n" = 1 ] || continue
	# Every README example after the quick start types `pystrobe`.
	run_line 'command -v pystrobe && pystrobe --version' </dev/null ||
		die "pystrobe is not on PATH after the quick start's first line"
	[ "${PYSTROBE_FRESH_LINES:-}" = 1 ] && exit 0
done <"$work/lines"
hand_over_sid_root
exit 0
