# -*- coding: utf-8 -*-
"""A target for record --waits with a real torch DataLoader (Debian's
python3-torch): two worker processes whose __getitem__ is slow pure Python,
so that the main thread mostly waits for the next batch, and times that
wait with its own clock.

Usage: waits_loader.py OUTDIR

Exits 3 at once when torch cannot be imported.  OUTDIR/clock.json,
rewritten about every 0.2 s once the first batch has come: the wall clock
and the seconds spent so far waiting for a batch (wait: in next(), not
freeing the last one) and working on one (step), for the test to difference over its recording; "pid" is the main
process's.  Runs on the interpreters python3-torch is built for.
"""
import json
import os
import sys
import time

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError:
    sys.exit(3)


class Slow(Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        s = 0
        for k in range(30000):
            s += k * i
        return torch.tensor([float(s % 7)])


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.rename(tmp, path)


def step(x):
    y = 0.0
    for _ in range(200):
        y += float((x * 2).sum())
    return y


def main():
    outdir = sys.argv[1]
    it = iter(DataLoader(Slow(), batch_size=4, num_workers=2))
    next(it)
    spent = {"wait": 0.0, "step": 0.0, "pid": os.getpid()}
    written = 0.0
    while True:
        t0 = time.time()
        x = next(it)
        t1 = time.time()
        step(x)
        t2 = time.time()
        # Freeing a batch unmaps its shared memory, which takes a while:
        # done here, apart from the wait for the next one, not as
        # `x = next(it)` drops it.
        del x
        spent["wait"] += t1 - t0
        spent["step"] += t2 - t1
        if t2 - written >= 0.2:
            written = t2
            write_atomically(os.path.join(outdir, "clock.json"), dict(spent, wall=t2))


if __name__ == "__main__":
    main()
