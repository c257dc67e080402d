#!/bin/sh
# Print the Debian archive this machine's apt is configured with (the first
# source whose URI ends in /debian: not -security, not a third-party
# repository).  Read at run time, so the repository names no package host.
# Exit 1, with nothing printed, when there is none.
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] || continue
	# deb822 sources: the URIs: lines.
	awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' "$f"
done | grep -E '/debian/?$' | head -n 1 | grep . && exit 0
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -f "$f" ] || continue
	# One-line sources: deb [options] URI suite components.
	awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f"
done | grep -E '/debian/?$' | head -n 1 | grep .
