"""Check a collapsed profile of tests/targets/shifting.py against what the
target noted about itself.

    check_shifting.py PROFILE PATTERNS

Every stack through worker() must show levels that are a prefix of a
pattern the target descended (a(), b(), enter_g() then g(), one letter
each), reach leaf() only at a pattern's full length, and have nothing
else below worker() when it has levels.  Prints one line of counts, and
each wrong stack; exits 1 if there was one, 2 if there was nothing to
check."""
import sys

LETTER = {"a": "a", "b": "b", "g": "g"}


def name(frame):
    i = frame.rfind(" (")
    return frame[:i] if i > 0 else frame


def levels(names):
    """The letters of the levels, whether leaf() is reached, or None when
    the shape is not one the target makes."""
    out = []
    i = 0
    while i < len(names):
        n = names[i]
        if n in ("a", "b"):
            out.append(n)
        elif n == "enter_g":
            if i + 1 < len(names):
                if names[i + 1] != "g":
                    return None
                i += 1
            out.append("g")
        elif n == "leaf":
            return ("".join(out), True) if i == len(names) - 1 and out else None
        elif n == "g":
            return None
        else:
            # Code of its own below worker (random, the lock): only before
            # the first level.
            return ("", False) if not out else None
        i += 1
    return ("".join(out), False)


def main():
    patterns = set(open(sys.argv[2]).read().split())
    prefixes = set()
    for p in patterns:
        for k in range(1, len(p) + 1):
            prefixes.add(p[:k])
    total = checked = deep = full = 0
    bad = []
    for line in open(sys.argv[1]):
        line = line.rstrip("\n")
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        count = int(count)
        total += count
        names = [name(f) for f in stack.split(";")]
        if "worker" not in names:
            continue
        below = names[names.index("worker") + 1:]
        checked += count
        got = levels(below)
        ok = got is not None
        if ok and got[0]:
            ok = got[0] in (patterns if got[1] else prefixes)
        if not ok:
            bad.append((count, stack))
            continue
        deep += count if len(got[0]) >= 10 else 0
        full += count if got[1] else 0
    print("%d samples, %d in worker, %d at depth >= 10, %d in leaf; %d patterns noted; "
          "%d wrong" % (total, checked, deep, full, len(patterns), sum(c for c, _ in bad)))
    for count, stack in bad[:20]:
        print("WRONG (%d): %s" % (count, stack))
    if bad:
        return 1
    return 0 if checked and deep else 2


if __name__ == "__main__":
    sys.exit(main())
