"""A stand-in for a training job whose input pipeline runs in worker
processes: a multiprocessing Pool of 3 workers decodes batches, the main
process trains on them.  The README's `record -s` and `top` examples run it.

    python3 doc/examples/pool_job.py [SECONDS]      (default 5)
"""
import multiprocessing as mp
import sys
import time


def decode(i):
    """Pure-Python work per item, as a decoding or augmenting step does."""
    acc = 0
    for k in range(300000):
        acc = (acc * 31 + k + i) % 1000003
    return acc


def train_step(batch):
    total = 0
    for _ in range(40000):
        total += sum(batch) % 7
    return total


def main(seconds):
    end = time.monotonic() + seconds
    steps = 0
    with mp.Pool(3) as pool:
        while time.monotonic() < end:
            batch = pool.map(decode, range(steps * 6, steps * 6 + 6))
            train_step(batch)
            steps += 1
    print("%d steps" % steps)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 5)
