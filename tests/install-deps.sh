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
