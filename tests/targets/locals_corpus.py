# -*- coding: utf-8 -*-
"""A target for `pystrobe dump --locals`: a frame full of values whose
repr() pystrobe must rebuild exactly.

Usage: locals_corpus.py OUTDIR

The main thread (the only one) parks in corpus(), whose locals are the
corpus: None, bools, ints (small, 64-bit edges, at the 2048-bit bound and
past it), floats (nan, infinities, signed zero, exponent forms, shortest
round-trip cases), bytes (every byte 0-255, NULs, quote choices, values
longer than pystrobe reads), and str: every code point of the Basic
Multilingual Plane and a sample of the others (controls, C1, format
characters, lone surrogates, non-characters, private use, astral), terminal
escapes, bidi overrides, quote choices, a long one; threading.Thread
objects (new, daemon, a subclass, the main thread, one that ran and was
joined where its __dict__ says so: before 3.13), alone and in a list.

OUTDIR/truth.json says what pystrobe must show for each: repr() of the
value, or for what it shows otherwise, the same rule computed here (a
container's size, an int's width, a long value's start and whole length).
Its "deep" is what --locals=deep must show: repr() of every container
within deep's bounds (cycles, shared items, deleted dict entries and set
slots among them), the bounds' rule for those past them.

Printability follows Unicode: pystrobe uses one table (see
src/util/unicode_tables.c), this interpreter its own unicodedata.  A code
point unassigned in this interpreter's Unicode may be assigned in the
table's; such code points are left out of the corpus (all but the
non-characters, unassigned forever).  Runs on 3.7 to 3.15.
"""
import json
import os
import sys
import threading
import time
import unicodedata

LIMIT = 1024            # characters or bytes pystrobe reads of a value
INT_BITS = 2048         # widest int pystrobe shows in decimal
UNITS = ["KiB", "MiB", "GiB", "TiB"]


def whole_size(v):
    n = len(v)
    if isinstance(v, str):
        return "%d characters" % n
    if n < (1 << 20):
        return "%d bytes" % n
    x, u = float(n), -1
    while x >= 1024 and u < 3:
        x /= 1024
        u += 1
    if x == int(x):
        return "%d %s" % (x, UNITS[u])
    return "%.1f %s" % (x, UNITS[u])


def items_word(n):
    return "%d item%s" % (n, "" if n == 1 else "s")


def expect(v, limit=LIMIT):
    t = type(v)
    if t in SHAPES:
        return "<%s of %s>" % (t.__name__, items_word(len(v)))
    if t is int and v.bit_length() > INT_BITS:
        return "<%sint of %d bits>" % ("negative " if v < 0 else "",
                                       v.bit_length())
    if t in (str, bytes) and len(v) > limit:
        return repr(v[:limit]) + "\u2026 (%s)" % whole_size(v)
    return repr(v)


# --locals=deep's bounds (src/python/deeprepr.h): nesting, items per
# container, objects per local, characters of a str or bytes item.
DEEP_DEPTH, DEEP_ITEMS, DEEP_OBJECTS, DEEP_CHARS = 4, 32, 256, 128
# open, close, empty, met inside itself
SHAPES = {
    list: ("[", "]", "[]", "[...]"), tuple: ("(", ")", "()", "(...)"),
    dict: ("{", "}", "{}", "{...}"), set: ("{", "}", "set()", "set(...)"),
    frozenset: ("frozenset({", "})", "frozenset()", "frozenset(...)"),
}


class Deep:
    """What --locals=deep must show of a container cut by its bounds: the
    rule of deeprepr.h, applied to the values as this process holds them.
    (A container within the bounds must show as repr() does: its truth is
    repr() itself.)"""

    def __init__(self):
        self.budget = DEEP_OBJECTS
        self.path = []

    def obj(self, v, limit=DEEP_CHARS):
        self.budget -= 1
        if type(v) in SHAPES:
            return self.container(v)
        return expect(v, limit)

    def container(self, v):
        opn, close, empty, cycle = SHAPES[type(v)]
        if any(p is v for p in self.path):
            return cycle
        if not v:
            return empty
        if len(self.path) == DEEP_DEPTH:
            return expect(v)
        self.path.append(v)
        items = list(v.items() if type(v) is dict else v)[:DEEP_ITEMS]
        out = []
        while len(out) < len(items) and self.budget > 0:
            it = items[len(out)]
            if type(v) is dict:
                out.append(self.obj(it[0]) + ": " + self.obj(it[1]))
            else:
                out.append(self.obj(it))
        self.path.pop()
        s = ", ".join(out)
        if len(out) < len(v):
            s += (", " if out else "") + "\u2026 (%s)" % items_word(len(v))
        elif type(v) is tuple and len(v) == 1:
            s += ","
        return opn + s + close


def expect_deep(name, v):
    if type(v) not in SHAPES:
        return expect(v)
    if name.startswith("c_whole_"):
        return repr(v)
    return Deep().obj(v, LIMIT)


def containers():
    """c_whole_*: within deep's bounds, shown exactly as repr();
    c_cut_*: past one of them."""
    cyc_l = [1]
    cyc_l.append(cyc_l)
    cyc_d = {"k": 1}
    cyc_d["self"] = cyc_d
    cyc_t = ([],)
    cyc_t[0].append(cyc_t)
    deleted = dict((i, str(i)) for i in range(20))
    for i in range(0, 20, 3):
        del deleted[i]
    holes = set(range(40))
    for i in range(0, 40, 2):
        holes.discard(i)
    shared = [1, 2]
    deep4 = [[("four", {1: 2})]]
    return [
        ("c_whole_list", [None, True, False, 0, -1, 2 ** 64, 1.5, float("nan"), -0.0,
                          float("-inf"), "s", "it's", "\x1b[31m\u202e", b"\x00\xff", b"'\""]),
        ("c_whole_tuple1", (1,)), ("c_whole_tuple", (1, "a", (), ((),), [])),
        ("c_whole_dict", {"a": 1, 2: "b", None: [1, 2], (1, 2): {"x": -0.0}, b"k": 1e300,
                          1.5: frozenset()}),
        ("c_whole_set", {1, 2, 3, 100, -5}), ("c_whole_strset", {"a", "b\x00", "\u200b"}),
        ("c_whole_frozen", frozenset([1, 2, 3])), ("c_whole_eset", set()),
        ("c_whole_deleted", deleted), ("c_whole_holes", holes),
        ("c_whole_cycle_list", cyc_l), ("c_whole_cycle_dict", cyc_d),
        ("c_whole_cycle_tuple", cyc_t), ("c_whole_shared", [shared, shared, (shared,)]),
        ("c_whole_deep4", deep4), ("c_whole_32", list(range(32))),
        ("c_whole_bigint", [2 ** 100, -(10 ** 50)]),
        ("c_cut_33", list(range(33))), ("c_cut_1000", list(range(1000))),
        ("c_cut_dict", dict((i, i * i) for i in range(100))),
        ("c_cut_set", set(range(1000))), ("c_cut_frozen", frozenset(range(50))),
        ("c_cut_deep5", [[[[[5]]]]]), ("c_cut_deep5d", {"a": [({"b": [1]},)]}),
        ("c_cut_budget", [list(range(32)) for _ in range(32)]),
        ("c_cut_str", ["x" * 200, b"\x01" * 300, "y"]),
        ("c_cut_bigint", (2 ** 3000, 1)),
        ("c_cut_tuple", tuple(range(40))),
    ]


class Worker(threading.Thread):
    pass


def threads():
    """th_*: Thread objects, shown as Thread.__repr__ shows them.  A thread
    that ran and was joined only where its __dict__ says it stopped
    (_is_stopped, before 3.13; later the C thread handle keeps it)."""
    done = threading.Thread(target=len, args=("",), name="done")
    done.start()
    done.join()
    v = [
        ("th_new", threading.Thread(name="worker-1")),
        ("th_daemon", threading.Thread(name="feeder", daemon=True)),
        ("th_sub", Worker(name="w-\u00e9 it's")),
        ("th_main", threading.main_thread()),
        ("th_list", [threading.main_thread(), threading.Thread(name="x")]),
    ]
    if "_is_stopped" in vars(done):
        v.append(("th_done", done))
    return v


def noncharacter(cp):
    return (cp & 0xfffe) == 0xfffe or 0xfdd0 <= cp <= 0xfdef


def known(cp):
    """Printable or not the same way in every Unicode since this one."""
    return unicodedata.category(chr(cp)) != "Cn" or noncharacter(cp)


def chunks(cps, name):
    cps = [cp for cp in cps if known(cp)]
    out = []
    for i in range(0, len(cps), 1000):
        out.append(("%s_%02d" % (name, i // 1000),
                    "".join(chr(cp) for cp in cps[i:i + 1000])))
    return out


def corpus_values():
    v = [
        ("v_none", None), ("v_true", True), ("v_false", False),
        ("i_zero", 0), ("i_neg", -1), ("i_small", 42),
        ("i_2p63", 2 ** 63), ("i_m2p63", -2 ** 63), ("i_m2p64", -2 ** 64),
        ("i_googol", 10 ** 100), ("i_bound", 2 ** INT_BITS - 1),
        ("i_mbound", -(2 ** INT_BITS - 1)), ("i_past", 2 ** INT_BITS),
        ("i_mpast", -3 ** 3000),
        ("f_nan", float("nan")), ("f_inf", float("inf")),
        ("f_minf", float("-inf")), ("f_zero", 0.0), ("f_mzero", -0.0),
        ("f_1e300", 1e300), ("f_1em05", 1e-05), ("f_tenth", 0.1),
        ("f_1e5", 100000.0), ("f_1e16", 1e16), ("f_1e15", 1e15),
        ("f_third", 1 / 3.0), ("f_tiny", 5e-324), ("f_max", 1.7976931348623157e308),
        ("f_sum", 0.1 + 0.2), ("f_1em4", 0.0001), ("f_m15", -1.5e-310),
        ("b_empty", b""), ("b_nul", b"ab\x00cd"), ("b_ff", b"\xff\xfe"),
        ("b_all", bytes(range(256))), ("b_long", b"\x00\xff" * 1000),
        ("b_big", b"\x00\xff" * (4 << 20)), ("b_squote", b"it's"),
        ("b_dquote", b'say "hi"'), ("b_both", b"'\""),
        ("s_empty", ""), ("s_hostile", "\x1b[31mred\x07\u202e"),
        ("s_nul", "a\x00b"), ("s_squote", "it's"), ("s_dquote", 'say "hi"'),
        ("s_both", "both ' and \""), ("s_slash", "a\\b\\x1b"),
        ("s_bidi", "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"),
        ("s_zw", "\u200b\u200c\u200d\u2060\ufeff\u00ad"),
        ("s_lines", "\u2028\u2029\x85\r\n\t\x0b\x0c"),
        ("s_surr", "\ud800\udbff\udc00\udfff x\ud834"),
        ("s_astral", "\U0001f600\U0001f1ef\U0001f1f5\U000e0001\U000e007f\U0010fffd\U000f0000"),
        ("s_long", "x\u00e9\u4e2d\U0001f600" * 300000),
        ("l_five", [1, 2, 3, 4, 5]), ("l_empty", []), ("t_one", (1,)),
        ("t_two", ("a", "b")), ("d_two", {"a": 1, "b": 2}), ("d_empty", {}),
    ]
    v += containers()
    v += threads()
    v += chunks(range(0, 0x10000), "s_bmp")
    v += chunks(list(range(0x10000, 0x110000, 97)) +
                [0x1fffe, 0x1ffff, 0xe0001, 0xe0020, 0xe007f, 0x10ffff], "s_astral")
    return v


def make_corpus(values):
    """corpus(ready, V) with one local per value, parked in time.sleep."""
    lines = ["def corpus(ready, V):"]
    for i, (name, _) in enumerate(values):
        lines.append("    %s = V[%d]" % (name, i))
    lines += ["    ready()", "    while True:", "        time.sleep(3600)"]
    ns = {"time": time}
    exec(compile("\n".join(lines) + "\n", __file__, "exec"), ns)
    return ns["corpus"]


def main():
    outdir = sys.argv[-1]
    values = corpus_values()

    def ready():
        truth = {
            "pid": os.getpid(), "nthreads": 1, "function": "corpus",
            "unicode": unicodedata.unidata_version,
            "locals": [{"name": n, "type": type(v).__name__, "repr": expect(v),
                        "deep": expect_deep(n, v)} for n, v in values],
        }
        tmp = os.path.join(outdir, "truth.tmp")
        with open(tmp, "w") as f:
            json.dump(truth, f)
        os.rename(tmp, os.path.join(outdir, "truth.json"))

    make_corpus(values)(ready, [v for _, v in values])


main()
