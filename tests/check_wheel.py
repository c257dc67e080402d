#!/usr/bin/env python3
"""Hold a wheel made by `make wheel` to what pip and PyPI read in it.

Usage: check_wheel.py WHEEL VERSION FLOOR SRCDIR URL

Every file is listed in RECORD with the sha256 and size of its bytes as
this script reads them (RECORD itself without), and nothing is listed
twice or missing; WHEEL's Tag is the one in the file's name, that name's
platform is manylinux_FLOOR_x86_64 (FLOOR as "2.31": the glibc the binary
says it needs); METADATA names the project and VERSION (configure's); the
program, the package and both completions are there, the program
executable; the man pages are exactly SRCDIR's man/*.1, byte for byte.
The licence: METADATA says License-Expression: MIT and a License-File for
each file under .dist-info/licenses/ and no other; those are COPYING and
every file of SRCDIR's LICENSES/, byte for byte, and NOTICES, which names
the Debian source package of each library linked in and holds COPYING.
A project URL only when configure has one (URL, AC_INIT's; "" for none):
none is made up.  Prints one line per point; exits 1 on the first that
fails.
"""
import base64
import glob
import hashlib
import os
import sys
import zipfile


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def check_files(z, names, prefix, files, what):
    """The wheel's files under prefix are exactly files ({name: path}), byte for byte."""
    have = sorted(n[len(prefix):] for n in names if n.startswith(prefix))
    if have != sorted(files):
        fail("%s: the wheel has %s, the source tree %s" % (what, have, sorted(files)))
    for name, src in files.items():
        with open(src, "rb") as f:
            if z.read(prefix + name) != f.read():
                fail("%s%s is not %s" % (prefix, name, src))


def check_licences(z, names, dist, meta, srcdir):
    if "License-Expression: MIT" not in meta:
        fail("METADATA says no License-Expression: MIT")
    prefix = dist + ".dist-info/licenses/"
    declared = sorted(m[len("License-File: "):] for m in meta if m.startswith("License-File: "))
    present = sorted(n[len(prefix):] for n in names if n.startswith(prefix))
    if declared != present:
        fail("License-File says %s, .dist-info/licenses/ holds %s" % (declared, present))
    files = {"COPYING": os.path.join(srcdir, "COPYING")}
    for f in glob.glob(os.path.join(srcdir, "LICENSES", "*")):
        files["LICENSES/" + os.path.basename(f)] = f
    files["NOTICES"] = None
    check_files(z, [n for n in names if not n.endswith("/NOTICES")], prefix,
                {k: v for k, v in files.items() if v}, "licences")
    notices = z.read(prefix + "NOTICES").decode()
    with open(files["COPYING"]) as f:
        if f.read() not in notices:
            fail("NOTICES does not hold COPYING")
    for lib in ("libelf.a", "libdw.a", "libunwind.a", "libz.a", "libncursesw.a"):
        if "  " + lib + " " not in notices:
            fail("NOTICES names no " + lib)
    print("check_wheel: License-Expression: MIT, %d licence files as in the source tree"
          % len(present))


def main():
    path, version, floor, srcdir, url = sys.argv[1:6]
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
    urls = [m for m in meta if m.startswith(("Project-URL:", "Home-page:", "Download-URL:"))]
    if urls != (["Project-URL: Homepage, " + url] if url else []):
        fail("METADATA names %s, configure's URL is '%s'" % (urls, url))
    check_licences(z, names, dist, meta, srcdir)
    data = dist + ".data/"
    needed = [data + "scripts/pystrobe", "pystrobe/__init__.py", "pystrobe/__main__.py",
              data + "data/share/bash-completion/completions/pystrobe",
              data + "data/share/zsh/site-functions/_pystrobe"]
    for f in needed:
        if f not in names:
            fail("no " + f)
    if not (z.getinfo(data + "scripts/pystrobe").external_attr >> 16) & 0o111:
        fail("the program is not executable in the wheel")
    man = {os.path.basename(f): f for f in glob.glob(os.path.join(srcdir, "man", "*.1"))}
    check_files(z, names, data + "data/share/man/man1/", man, "man pages")
    print("check_wheel: the program, the package, %d man pages as man/, 2 completions" % len(man))


if __name__ == "__main__":
    main()
