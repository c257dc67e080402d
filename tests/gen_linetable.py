"""Write the line-table fixture that tests/live/check_linetable_real.c decodes.

Usage: gen_linetable.py OUTPUT

For every code object of a few large standard-library modules (and a
synthetic module made to reach the corners of each format), write its line
table as the interpreter stores it and the line the interpreter itself gives
each 2-byte offset of its bytecode.  The C decoder must agree on every one.

Must run on any CPython from 3.7 on, so it keeps to 3.7 syntax.

Format, one record per line, fields separated by single spaces:
    pystrobe-linetable 1 VERSION FORMAT       FORMAT: lnotab|linetable|locations
    code NAME FIRSTLINENO CODELEN TABLEHEX    TABLEHEX is "-" when empty
    lines RUN...                              RUN: LINE or LINE*COUNT, one
                                              LINE per offset 0, 2, 4, ...;
                                              -1 where there is no line
    end NCODE
"""

import dis
import os
import sys
import types

# Large modules present in every version from 3.7 on, chosen for variety:
# long functions, deep nesting, comprehensions, generators, try/finally.
# "A|B" names a module that moved: the first that exists is used.
MODULES = [
    "os.py",
    "threading.py",
    "json/decoder.py",
    "argparse.py",
    "collections/__init__.py",
    "dis.py",
    "typing.py",
    "inspect.py",
    "tokenize.py",
    "difflib.py",
    "pydoc.py",
    "email/_header_value_parser.py",
    "asyncio/base_events.py",
    "unittest/case.py",
    "tarfile.py",
    "_pydecimal.py",
    "enum.py",
    "subprocess.py",
    "ast.py",
    "logging/__init__.py",
    "http/client.py",
    "email/message.py",
    "pickle.py",
    "shutil.py",
    "zipfile/__init__.py|zipfile.py",
    "_pydatetime.py|datetime.py",
    "doctest.py",
    "pdb.py",
    "optparse.py",
    "mailbox.py",
    "imaplib.py",
    "urllib/request.py",
    "xml/etree/ElementTree.py",
    "re/_parser.py|sre_parse.py",
]

# Big gaps between lines need multi-pair (lnotab, 3.10) or multi-byte varint
# (3.11+) line deltas; backward lines need the signed forms; long one-line
# statements need several address entries for a single line; long lines
# push columns past what the short forms hold.
WIDE = "    x = [" + ", ".join("a + %d" % i for i in range(150)) + "]\n"
SYNTHETIC = (
    "def far_jumps(a):\n"
    "    b = a + 1\n"
    + "\n" * 300 +
    "    c = b + 2\n"
    + "\n" * 70000 +
    "    return (a,\n"
    + "\n" * 200 +
    "        b, c)\n"
    "\n"
    "def backwards(f, g):\n"
    "    return f(\n"
    "        g(1),\n"
    "        g(2),\n"
    "    )\n"
    "\n"
    "def loops(n):\n"
    "    t = 0\n"
    "    for i in range(n):\n"
    "        while t < i:\n"
    "            t += 1\n"
    "        if t > 100:\n"
    "            break\n"
    "    else:\n"
    "        t = -t\n"
    "    return [j * k for j in range(n) for k in range(j)]\n"
    "\n"
    "def wide(a):\n"
    + WIDE +
    "    return x\n"
    "\n"
    "def handlers(f):\n"
    "    try:\n"
    "        with open(f) as fp:\n"
    "            return fp.read()\n"
    "    except (OSError, ValueError) as e:\n"
    "        raise RuntimeError(e) from None\n"
    "    finally:\n"
    "        f = None\n"
    "\n"
    "async def coro(q):\n"
    "    async with q as r:\n"
    "        async for v in r:\n"
    "            await v\n"
    "    return {k: v async for k, v in q}\n"
    "\n"
    "def annotated(a: int, *b: 'str', c: list = [], **d) -> 'dict':\n"
    "    g = (lambda y: y + a)\n"
    "    yield from map(g, b)\n"
    "\n"
    "class K(object):\n"
    "    attr: int = 3\n"
    "    def m(self):\n"
    "        return super().m()\n"
)

# Forms newer interpreters compile into code of their own.
SYNTHETIC_310 = (
    "def matcher(v):\n"
    "    match v:\n"
    "        case [1, *rest] if rest:\n"
    "            return rest\n"
    "        case {'k': x}:\n"
    "            return x\n"
    "        case _:\n"
    "            return None\n"
)
SYNTHETIC_311 = (
    "def groups(f):\n"
    "    try:\n"
    "        f()\n"
    "    except* ValueError as eg:\n"
    "        f = eg\n"
    "    return f\n"
)
SYNTHETIC_312 = (
    "type Alias[T] = list[T]\n"
    "def generic[T: int](x: T) -> T:\n"
    "    return x\n"
    "class Box[T]:\n"
    "    item: T\n"
)


def sources():
    stdlib = os.path.dirname(os.__file__)
    for names in MODULES:
        found = [rel for rel in names.split("|")
                 if os.path.isfile(os.path.join(stdlib, rel))]
        if not found:
            sys.stderr.write("gen_linetable: no %s in %s\n" % (names, stdlib))
            continue
        path = os.path.join(stdlib, found[0])
        # Bytes, so the coding cookie decides and the locale does not.
        with open(path, "rb") as f:
            yield found[0], path, f.read()
    text = SYNTHETIC
    if sys.version_info >= (3, 10):
        text += SYNTHETIC_310
    if sys.version_info >= (3, 11):
        text += SYNTHETIC_311
    if sys.version_info >= (3, 12):
        text += SYNTHETIC_312
    yield "synthetic", "<synthetic>", text


def walk(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            for sub in walk(c):
                yield sub


def lines_from_co_lines(code, n):
    lines = [-1] * n
    for start, end, line in code.co_lines():
        for off in range(start, end, 2):
            if 0 <= off // 2 < n:
                lines[off // 2] = -1 if line is None else line
    return lines


def lines_from_lnotab(code, n):
    # findlinestarts gives where each line begins; an instruction's line is
    # the last one begun at or before it.
    lines = [-1] * n
    starts = sorted(dis.findlinestarts(code))
    for i, (start, line) in enumerate(starts):
        stop = starts[i + 1][0] if i + 1 < len(starts) else 2 * n
        for off in range(start, stop, 2):
            if 0 <= off // 2 < n:
                lines[off // 2] = line
    return lines


def runs(values):
    out = []
    i = 0
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        if j - i == 1:
            out.append(str(values[i]))
        else:
            out.append("%d*%d" % (values[i], j - i))
        i = j
    return " ".join(out)


def clean(name):
    return "".join("_" if ch.isspace() else ch for ch in name) or "_"


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: gen_linetable.py OUTPUT\n")
        return 2
    new = sys.version_info >= (3, 10)
    if sys.version_info >= (3, 11):
        fmt = "locations"
    elif new:
        fmt = "linetable"
    else:
        fmt = "lnotab"
    version = "%d.%d.%d" % sys.version_info[:3]
    count = 0
    with open(sys.argv[1] + ".tmp", "w") as out:
        out.write("pystrobe-linetable 1 %s %s\n" % (version, fmt))
        for rel, path, text in sources():
            top = compile(text, path, "exec", dont_inherit=True)
            for code in walk(top):
                table = code.co_linetable if new else code.co_lnotab
                n = len(code.co_code) // 2
                if new:
                    lines = lines_from_co_lines(code, n)
                else:
                    lines = lines_from_lnotab(code, n)
                name = clean("%s:%s" % (rel, code.co_name))
                hexed = "".join("%02x" % b for b in bytearray(table)) or "-"
                out.write("code %s %d %d %s\n" % (name, code.co_firstlineno,
                                                  len(code.co_code), hexed))
                out.write("lines %s\n" % runs(lines))
                count += 1
        out.write("end %d\n" % count)
    # Renamed only when whole, so a crash midway cannot pass for a short run.
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
