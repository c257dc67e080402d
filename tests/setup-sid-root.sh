#!/bin/sh
# Build (once) a minimal Debian sid root holding the interpreters Debian has
# and this machine has not: python3.14, python3.15 and python3.15-dbg (a
# Py_DEBUG build), and python3.14-dbg when the archive has it.  The tests run
# them chrooted, which also covers the "process in another root" case.
#
# The root is cached outside the source tree, because debootstrap takes minutes and
# the tests should not pay that on every run.  The mirror is read from this
# machine's apt configuration at run time: the repository names no package host.
#
# Usage: setup-sid-root.sh [DIR]     prints the root's path on success.
# Exit 0: root ready.  Exit 1: could not build it (reason on stderr).
#
# PYSTROBE_SID_EXTRA="pkg ..." also installs packages the plain root does
# without (python3-torch, ~90 packages, ~1 GB: bench/dataloader, and
# live/check_watch's torch stalls, a SKIP without it), into a new root or
# one already built; the tests never install them.
set -u

root=${1:-${PYSTROBE_SID_ROOT:-/var/cache/pystrobe/sid-root}}
suite=sid
script=/usr/share/debootstrap/scripts/sid
need="python3.14 python3.15 python3.15-dbg"	# debootstrap fails without these
want="python3.14-dbg python3-uvloop"		# installed if the archive has them
apt_opts="-o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false"

complete() {
	[ -f "$1/.pystrobe-complete" ] || return 1
	for p in /usr/bin/python3.14 /usr/bin/python3.15 /usr/bin/python3.15d; do
		[ -x "$1$p" ] || return 1
	done
}

# The opt-in extras, into root $1 (logging to $2); 1 when one failed.
install_extra() {
	[ -n "${PYSTROBE_SID_EXTRA:-}" ] || return 0
	for p in $PYSTROBE_SID_EXTRA; do
		chroot "$1" dpkg -s "$p" >/dev/null 2>&1 && continue
		echo "setup-sid-root: installing $p (log: $2)" >&2
		if ! { chroot "$1" apt-get $apt_opts update &&
		       DEBIAN_FRONTEND=noninteractive chroot "$1" apt-get $apt_opts \
				install -y "$p"; } >>"$2" 2>&1; then
			echo "setup-sid-root: could not install $p (see $2)" >&2
			return 1
		fi
	done
	chroot "$1" apt-get clean >/dev/null 2>&1
	return 0
}

if complete "$root"; then
	install_extra "$root" "$root.log" || exit 1
	echo "$root"
	exit 0
fi

mirror=$(sh "$(dirname "$0")/apt-mirror.sh")
if [ -z "$mirror" ]; then
	echo "setup-sid-root: no Debian mirror found in the apt configuration" >&2
	exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
	echo "setup-sid-root: debootstrap is not installed (apt-get install debootstrap)" >&2
	exit 1
fi

rm -rf "$root.tmp"
mkdir -p "$(dirname "$root")"
log="$root.log"
echo "setup-sid-root: building $suite root from $mirror (log: $log)" >&2
if ! debootstrap --variant=minbase --include="$(echo $need | tr ' ' ,)" \
		"$suite" "$root.tmp" "$mirror" "$script" >"$log" 2>&1; then
	echo "setup-sid-root: debootstrap failed; last lines of $log:" >&2
	tail -n 5 "$log" >&2
	exit 1
fi
# The optional packages: an archive without them is not an error.
for p in $want; do
	if chroot "$root.tmp" apt-get $apt_opts update >>"$log" 2>&1 &&
	   DEBIAN_FRONTEND=noninteractive chroot "$root.tmp" apt-get $apt_opts install -y "$p" >>"$log" 2>&1; then
		echo "setup-sid-root: installed $p" >&2
	else
		echo "setup-sid-root: no $p in $suite (see $log)" >&2
	fi
done
chroot "$root.tmp" apt-get clean >/dev/null 2>&1
install_extra "$root.tmp" "$log" || exit 1
touch "$root.tmp/.pystrobe-complete"
if ! complete "$root.tmp"; then
	echo "setup-sid-root: root built but lacks one of $need" >&2
	exit 1
fi
rm -rf "$root"
mv "$root.tmp" "$root"
echo "$root"
