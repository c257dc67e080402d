#!/usr/bin/env python3
"""Hold a wheel made by `make wheel` to what pip and PyPI read in it.

Usage: check_wheel.py WHEEL VERSION FLOOR

Every file is listed in RECORD with the sha256 and size of its bytes as
this script reads them (RECORD itself without), and nothing is listed
twice or missing; WHEEL's Tag is the one in the file's name, that name's
platform is manylinux_FLOOR_x86_64 (FLOOR as "2.31": the glibc the binary
says it needs); METADATA names the project and VERSION (configure's); the
program, the package, the six man pages and both completions are there,
the program executable.  Prints one line per point; exits 1 on the first
that fails.
"""
import base64
import hashlib
import os
import sys
import zipfile


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def main():
    path, version, floor = sys.argv[1:4]
    name = os.path.basename(path)
    dist = "pystrobe-" + version
    tag = "py3-none-manylinux_%s_x86_64" % floor.replace(".", "_")
    if name != "%s-%s.whl" % (dist, tag):
        fail("%s is not named %s-%s.whl" % (name, dist, tag))
    z = zipfile.ZipFile(path)
    names = z.namelist()
    if len(set(names)) != len(names):
        fail("a file is in the wheel twice")
    record = z.read(dist + ".dist-info/RECORD").decode().splitlines()
    listed = {}
    for line in record:
        f, h, size = line.rsplit(",", 2)
        listed[f] = (h, size)
    if set(listed) != set(names):
        fail("RECORD lists %s, the wheel holds %s" % (sorted(set(listed) ^ set(names)), ""))
    for f in names:
        h, size = listed[f]
        if f.endswith(".dist-info/RECORD"):
            if h or size:
                fail("RECORD gives itself a hash")
            continue
        data = z.read(f)
        want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        if h != want or size != str(len(data)):
            fail("%s: RECORD says %s,%s, its bytes are %s,%d" % (f, h, size, want, len(data)))
    print("check_wheel: RECORD: %d files, every hash and size right" % (len(names) - 1))
    wheel = z.read(dist + ".dist-info/WHEEL").decode().splitlines()
    if "Tag: " + tag not in wheel or "Wheel-Version: 1.0" not in wheel \
            or "Root-Is-Purelib: false" not in wheel:
        fail("WHEEL is %r" % wheel)
    meta = z.read(dist + ".dist-info/METADATA").decode().split("\n\n", 1)[0].splitlines()
    for want in ("Name: pystrobe", "Version: " + version):
        if want not in meta:
            fail("METADATA has no %r" % want)
    print("check_wheel: WHEEL Tag %s, METADATA %s" % (tag, ", ".join(meta[1:3])))
    data = dist + ".data/"
    needed = [data + "scripts/pystrobe", "pystrobe/__init__.py", "pystrobe/__main__.py",
              data + "data/share/bash-completion/completions/pystrobe",
              data + "data/share/zsh/site-functions/_pystrobe"]
    needed += [data + "data/share/man/man1/pystrobe%s.1" % c
               for c in ("", "-dump", "-record", "-top", "-diff", "-merge")]
    for f in needed:
        if f not in names:
            fail("no " + f)
    if not (z.getinfo(data + "scripts/pystrobe").external_attr >> 16) & 0o111:
        fail("the program is not executable in the wheel")
    print("check_wheel: the program, the package, 6 man pages, 2 completions")


if __name__ == "__main__":
    main()
