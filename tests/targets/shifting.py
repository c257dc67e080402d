"""Target for check_shifting: stacks whose depth and functions change on
every sample, and threads that start and end all the time.

    shifting.py SECONDS OUTDIR

Worker threads (three at a time, each living for a few hundred descents)
draw a pattern, a random string over "abg" of random length, note it, then
descend it: level i is a call of a() or b(), or for "g" a generator g()
entered through enter_g(), and the bottom spins a random short while in
leaf().  OUTDIR/ready is written once the first workers run; at the end
OUTDIR/patterns.txt lists every pattern descended (noted before the
descent), then OUTDIR/done says how many descents and threads there were.
A sampled stack of a worker is right only if its levels are a prefix of a
noted pattern, and reach leaf() only at a pattern's full length."""
import os
import random
import sys
import threading
import time

MAX_DEPTH = 24
WORKERS = 3
DESCENTS = 300

seen = set()
counts = {"descents": 0, "threads": 0}
lock = threading.Lock()


def leaf(n):
    x = 0
    for _ in range(n):
        x += 1
    return x


def a(p, i, n):
    if i < len(p):
        return LEVEL[p[i]](p, i + 1, n)
    return leaf(n)


def b(p, i, n):
    if i < len(p):
        return LEVEL[p[i]](p, i + 1, n)
    return leaf(n)


def g(p, i, n):
    if i < len(p):
        yield LEVEL[p[i]](p, i + 1, n)
    else:
        yield leaf(n)


def enter_g(p, i, n):
    return next(g(p, i, n))


LEVEL = {"a": a, "b": b, "g": enter_g}


def worker(seed):
    rng = random.Random(seed)
    for _ in range(DESCENTS):
        depth = rng.randint(1, MAX_DEPTH)
        p = "".join(rng.choice("abg") for _ in range(depth))
        with lock:
            seen.add(p)
            counts["descents"] += 1
        LEVEL[p[0]](p, 1, rng.randint(20, 400))


def main():
    seconds = float(sys.argv[1])
    out = sys.argv[-1]
    end = time.monotonic() + seconds
    live = []
    seed = 0
    ready = False
    while time.monotonic() < end:
        live = [t for t in live if t.is_alive()]
        while len(live) < WORKERS:
            seed += 1
            t = threading.Thread(target=worker, args=(seed,))
            t.start()
            live.append(t)
            counts["threads"] += 1
        if not ready:
            open(os.path.join(out, "ready"), "w").close()
            ready = True
        time.sleep(0.002)
    for t in live:
        t.join()
    with open(os.path.join(out, "patterns.txt"), "w") as f:
        f.write("".join(p + "\n" for p in sorted(seen)))
    with open(os.path.join(out, "done"), "w") as f:
        f.write("%d %d\n" % (counts["descents"], counts["threads"]))


if __name__ == "__main__":
    main()
