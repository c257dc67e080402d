# -*- coding: utf-8 -*-
"""A CPU training job whose input pipeline cannot keep up, for `record
--waits` (issue 26): its main thread waits for the next batch a clear share
of the time, and its own clock says how much.  Needs PyTorch (Debian's
python3-torch in the sid root).

Usage: train_data.py OUTDIR

A small MLP trained with Adam on synthetic samples; a DataLoader of 2
worker processes (forked) whose augmentation is pure Python, slower than
the step.  Once the workers have given their first batches it writes
OUTDIR/truth.json: pid, tid (the main thread), workers (their pids),
steps (the file of its steps); it then trains for MAX_STEPS, and appends each
step to OUTDIR/steps.jsonl as it ends, a line [start, got-batch, end]
(wall clock, time.time()): the main thread waited for data from start to
got-batch, and stepped from got-batch to end.  The next step starts at
once, so the steps cover the time from the first one to the last.
"""
import json
import os
import random
import signal
import sys
import tempfile
import threading
import time

WORK = 30000            # augmentation: Python loop iterations per sample
BATCH = 64
FEATURES = 64
WARM_STEPS = 4
MAX_STEPS = 3000        # minutes; the test ends it sooner
LIFETIME_S = 600        # no target outlives a test that died: SIGALRM ends it


def augment(rng, n):
    """A hand-written transform: Python, one number at a time."""
    acc = 0.0
    for _ in range(n):
        acc += rng.random() * 0.5
        if acc > 1e6:
            acc = 0.0
    return acc


class Synthetic(object):
    """Samples made on demand, each with its own augmentation."""

    def __init__(self, torch):
        self.torch = torch

    def __len__(self):
        return 1 << 24

    def __getitem__(self, i):
        rng = random.Random(i)
        shift = augment(rng, WORK) / WORK
        g = self.torch.Generator().manual_seed(i)
        x = self.torch.randn(FEATURES, generator=g) + shift
        return x, i % 10


def model_and_optimizer(torch):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(FEATURES, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def train_step(torch, model, opt, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def next_batch(batches):
    return next(batches)


def train(torch, batches, model, opt, steps, log):
    for _ in range(steps):
        s = time.time()
        batch = next_batch(batches)
        m = time.time()
        train_step(torch, model, opt, *batch)
        # Freeing a batch unmaps the workers' shared memory, seconds in
        # all: part of the step, not of the next wait.
        del batch
        log("[%.6f, %.6f, %.6f]\n" % (s, m, time.time()))


def main(outdir):
    import torch
    from torch.utils.data import DataLoader
    torch.set_num_threads(1)
    torch.manual_seed(0)
    loader = DataLoader(Synthetic(torch), batch_size=BATCH, num_workers=2,
                        multiprocessing_context="fork", persistent_workers=True)
    batches = iter(loader)
    model, opt = model_and_optimizer(torch)
    train(torch, batches, model, opt, WARM_STEPS, lambda line: None)
    truth = os.path.join(outdir, "truth.json")
    with open(truth + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "tid": threading.get_native_id(),
                   "workers": [w.pid for w in batches._workers], "steps": "steps.jsonl"}, f)
    os.rename(truth + ".tmp", truth)    # whole when the test sees it
    with open(os.path.join(outdir, "steps.jsonl"), "w", 1) as log:
        train(torch, batches, model, opt, MAX_STEPS, log.write)
    batches._shutdown_workers()


if __name__ == "__main__":
    signal.alarm(LIFETIME_S)
    # multiprocessing's temporary directory in OUTDIR, which the test
    # removes: a job it kills leaves nothing in /tmp.
    tempfile.tempdir = sys.argv[1]
    main(sys.argv[1])
