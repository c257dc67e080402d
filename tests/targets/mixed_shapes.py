"""A target for the torn-stack test: one thread running, in turn, three shapes
of ordinary code whose stacks change at different speeds.

Usage: mixed_shapes.py OUTDIR

Runs on CPython 3.7 to 3.15, so it keeps to 3.7 syntax and the stdlib.

The main thread runs rounds of three phases, each for a slice of its wall
clock (time.perf_counter()):
  run_fib     a deep, fast recursion: fib(20) again and again; its stack
              changes every few tens of nanoseconds, so a stack read while
              it runs is nearly always torn;
  run_parse   an allocation-heavy parsing loop: lines split, numbers
              converted, a dict made per record;
  run_gen     nested generators (three deep) summed, each resumed and
              suspended in turn.
The slices (37, 23 and 29 ms) are longer than a sampling interval at
100 Hz and no multiple of it, so each phase gets a nearly fixed number of
samples, and their shares are three different numbers.  Each phase is timed
with time.perf_counter() and time.thread_time(); a phase runs its unit of
work to the end, so it lasts a little past its slice, and what it really
took is what is counted.

The thread writes OUTDIR/ready.json (pid) after its first round, then, after
every phase, OUTDIR/truth.json: pid, rounds, wall {fib, parse, gen} and cpu
{fib, parse, gen} in seconds since it started.  A profiler's share of the
samples in each run_* function (anywhere on the stack) must match that
function's share of the wall time, and, on a machine that is not starved, of
the CPU time.  Files are written to a temporary name and renamed, so a reader
never sees half of one.
"""
import json
import os
import sys
import time

perf_counter = time.perf_counter
thread_time = time.thread_time

SLICES = (("fib", 0.037), ("parse", 0.023), ("gen", 0.029))


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def run_fib(end):
    x = 0
    while perf_counter() < end:
        x += fib(20)
    return x


TEXT = "\n".join("%d, item-%d ,%d.%d" % (i, i * 7, i % 97, i % 13)
                 for i in range(300))


def parse_record(line):
    ident, name, value = line.split(",")
    return {"id": int(ident), "name": name.strip(), "value": float(value)}


def run_parse(end):
    n = 0
    while perf_counter() < end:
        records = [parse_record(line) for line in TEXT.splitlines()]
        n += len(records)
    return n


def leaves(n):
    for i in range(n):
        yield i


def pairs(n):
    for x in leaves(n):
        yield x, x * x


def sums(n):
    for a, b in pairs(n):
        yield a + b


def run_gen(end):
    total = 0
    while perf_counter() < end:
        total += sum(sums(500))
    return total


RUNS = {"fib": run_fib, "parse": run_parse, "gen": run_gen}


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        json.dump(data, out, indent=1)
        out.write("\n")
    os.rename(tmp, path)


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: mixed_shapes.py OUTDIR\n")
        sys.exit(2)
    outdir = sys.argv[1]
    truth = os.path.join(outdir, "truth.json")
    wall = dict((name, 0.0) for name, _ in SLICES)
    cpu = dict(wall)
    rounds = 0
    while True:
        for name, seconds in SLICES:
            w0, c0 = perf_counter(), thread_time()
            RUNS[name](w0 + seconds)
            wall[name] += perf_counter() - w0
            cpu[name] += thread_time() - c0
            write_atomically(truth, {"pid": os.getpid(), "rounds": rounds,
                                     "wall": wall, "cpu": cpu})
        rounds += 1
        if rounds == 1:
            write_atomically(os.path.join(outdir, "ready.json"),
                             {"pid": os.getpid()})


if __name__ == "__main__":
    main()
