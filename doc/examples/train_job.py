"""A training job whose input pipeline cannot keep up: the README's
example for `record --training`.  Needs PyTorch (CPU is enough).

    python3 train_job.py [SECONDS]

A small MLP trained with Adam; a DataLoader of 2 worker processes whose
augmentation is pure Python, slower than the step.  Every 5 s the job
prints how much of its own wall time the main thread spent waiting for
the next batch, measured by itself: the figure to hold a profile to.
"""
import random
import sys
import time

import torch
from torch.utils.data import DataLoader

FEATURES = 64


def augment(rng, n=30000):
    """A hand-written transform, one number at a time."""
    acc = 0.0
    for _ in range(n):
        acc += rng.random() * 0.5
    return acc / n


class Synthetic(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 24

    def __getitem__(self, i):
        shift = augment(random.Random(i))
        return torch.randn(FEATURES) + shift, i % 10


def train_step(model, opt, x, y):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


def main(seconds):
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(Synthetic(), batch_size=64, num_workers=2)
    start = report = time.time()
    for x, y in iter_timed(loader):
        train_step(model, opt, x, y)
        now = time.time()
        if now - report >= 5:
            print("waited for data %.0f%% of %.0f s" % (100 * WAITED[0] / (now - report),
                                                         now - report), flush=True)
            WAITED[0], report = 0.0, now
        if now - start >= seconds:
            break


WAITED = [0.0]


def iter_timed(loader):
    """The loader's batches, the time spent waiting for each added up."""
    batches = iter(loader)
    while True:
        t = time.time()
        batch = next(batches)
        WAITED[0] += time.time() - t
        yield batch


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60)
