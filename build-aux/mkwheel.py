#!/usr/bin/env python3
"""Write pystrobe's wheel: the static binary as the environment's
`pystrobe` command, the package that runs it for `python -m pystrobe`
(python/pystrobe), the man pages and the shell completions, the licences
and the metadata PyPI shows.  Python's standard library only (zipfile,
hashlib).

The man pages are those make installs (Makefile.am's dist_man_MANS, given
as --man), so that a new page reaches the wheel with no second list.  The
licence files (COPYING, LICENSES/: --licences, Makefile.am's LICENCE_FILES)
go under .dist-info/licenses/ as the core metadata 2.4 asks (License-File),
with NOTICES: what the binary's own `--licences` prints, which names the
Debian source package and version of every library linked in.  The URL is
AC_INIT's: none there, none here (the project has no public page).

The platform tag comes from the binary itself: `pystrobe-static --version`
names the glibc it was built against (configure), its floor; so a wheel
cannot claim an older glibc than its binary needs.  The version is the one
configure.ac's AC_INIT gives (--version here, from make).

Usage: mkwheel.py --srcdir DIR --binary FILE --name NAME --version V
                  --man "man/a.1 man/b.1 ..." --licences "COPYING LICENSES/x ..."
                  [--url URL] --out DIR       (prints the wheel's path)
"""
import argparse
import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile

SUMMARY = "Sampling profiler and stack dumper for running CPython processes, from the outside"

# What PyPI lists the project under; the Python versions are those of the
# targets pystrobe reads (README), not of the interpreter that installs it.
CLASSIFIERS = [
    "Development Status :: 4 - Beta",
    "Environment :: Console",
    "Intended Audience :: Developers",
    "Operating System :: POSIX :: Linux",
    "Programming Language :: C",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: Implementation :: CPython",
    "Topic :: Software Development :: Debuggers",
    "Topic :: System :: Monitoring",
]

# Where each shipped file goes: the wheel's .data/ directories install
# under the environment's prefix (data) and bin/ (scripts).
COMPLETIONS = [("completion/pystrobe", "share/bash-completion/completions/pystrobe"),
               ("completion/_pystrobe", "share/zsh/site-functions/_pystrobe")]

# A fixed date for every entry: the same inputs give the same wheel.
DATE = (2020, 1, 1, 0, 0, 0)


def run_binary(binary, option):
    return subprocess.run([os.path.abspath(binary), option], stdout=subprocess.PIPE,
                          universal_newlines=True, check=True).stdout


def glibc_floor(binary):
    out = run_binary(binary, "--version")
    m = re.search(r"needs glibc (\d+)\.(\d+) or newer", out)
    if not m:
        sys.exit("mkwheel: %s --version names no glibc floor: is it pystrobe-static?" % binary)
    return int(m.group(1)), int(m.group(2))


def metadata(args, readme, licence_files):
    head = ["Metadata-Version: 2.4",
            "Name: " + args.name,
            "Version: " + args.version,
            "Summary: " + SUMMARY,
            "Keywords: profiler,sampling,flamegraph,stack,hang,deadlock",
            "License-Expression: MIT"]
    head += ["License-File: " + f for f in licence_files]
    if args.url:
        head.append("Project-URL: Homepage, " + args.url)
    head += ["Requires-Python: >=3.7"]
    head += ["Classifier: " + c for c in CLASSIFIERS]
    head.append("Description-Content-Type: text/markdown")
    return "\n".join(head) + "\n\n" + readme


class Wheel:
    """A wheel being written: each file's hash and size go to RECORD."""

    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, name, data, mode=0o644):
        info = zipfile.ZipInfo(name, DATE)
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        self.record.append("%s,sha256=%s,%d" % (name, digest.decode(), len(data)))

    def close(self, record_name):
        self.record.append(record_name + ",,")
        info = zipfile.ZipInfo(record_name, DATE)
        info.external_attr = 0o100644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, "\n".join(self.record) + "\n")
        self.zip.close()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--srcdir", "--binary", "--name", "--version", "--out", "--man", "--licences"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--url", default="")
    args = ap.parse_args()
    src = args.srcdir
    major, minor = glibc_floor(args.binary)
    tag = "py3-none-manylinux_%d_%d_x86_64" % (major, minor)
    dist = "%s-%s" % (args.name, args.version)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "%s-%s.whl" % (dist, tag))
    licences = args.licences.split()
    if "COPYING" not in licences:
        sys.exit("mkwheel: --licences names no COPYING")

    w = Wheel(path + ".tmp")
    init = read(os.path.join(src, "python/pystrobe/__init__.py"))
    w.add("pystrobe/__init__.py", init.replace(b"@VERSION@", args.version.encode()))
    w.add("pystrobe/__main__.py", read(os.path.join(src, "python/pystrobe/__main__.py")))
    data = dist + ".data"
    w.add(data + "/scripts/pystrobe", read(args.binary), 0o755)
    for page in args.man.split():
        w.add(data + "/data/share/man/man1/" + os.path.basename(page),
              read(os.path.join(src, page)))
    for name, dest in COMPLETIONS:
        w.add(data + "/data/" + dest, read(os.path.join(src, name)))
    info = dist + ".dist-info"
    readme = read(os.path.join(src, "README")).decode("utf-8")
    w.add(info + "/METADATA", metadata(args, readme, licences + ["NOTICES"]).encode("utf-8"))
    for f in licences:
        w.add(info + "/licenses/" + f, read(os.path.join(src, f)))
    w.add(info + "/licenses/NOTICES", run_binary(args.binary, "--licences").encode("utf-8"))
    w.add(info + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: pystrobe build-aux/mkwheel.py\n"
                            "Root-Is-Purelib: false\nTag: %s\n" % tag).encode())
    w.close(info + "/RECORD")
    os.replace(path + ".tmp", path)
    print(path)


if __name__ == "__main__":
    main()
