"""Benchmark target for bench/dataloader: a small CPU training job.

  dataloader_job.py SECONDS_HINT OUT

A few conv and linear layers trained on random images fed by a DataLoader
with 4 worker processes, whose Dataset does some Python work per item.
Runs a fixed number of batches (so that slowdown shows as more wall time);
SECONDS_HINT scales that number.  Writes to OUT, as its own ground truth:
"import_s train_s batches" -- the seconds spent importing torch and in the
training loop, by its own monotonic clock.
"""
import sys
import time

t0 = time.monotonic()
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402
t1 = time.monotonic()


class Noise(Dataset):
    """Random 3x32x32 images; each item also does Python work (a pure
    Python checksum over a list), as a decoding or augmenting step would."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        acc = 0
        for k in range(3000):
            acc = (acc * 31 + k + i) % 1000003
        g = torch.Generator().manual_seed(i)
        return torch.randn(3, 32, 32, generator=g), acc % 10


def model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10))


def main():
    hint, out = float(sys.argv[1]), sys.argv[2]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batches = max(4, int(hint * 25))
    loader = DataLoader(Noise(batches * 32), batch_size=32, num_workers=4,
                        persistent_workers=False)
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    t2 = time.monotonic()
    done = 0
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        done += 1
    t3 = time.monotonic()
    with open(out, "w") as f:
        f.write("%.3f %.3f %d\n" % (t1 - t0, t3 - t2, done))


if __name__ == "__main__":
    main()
