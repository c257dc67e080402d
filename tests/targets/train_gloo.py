# -*- coding: utf-8 -*-
"""A data-parallel CPU training job on torch.distributed's gloo backend,
for `record --waits` (issue 26): 3 ranks, one of them slower, so that the
others wait for it in all_reduce, and each rank's own clock says how long.
Needs PyTorch (Debian's python3-torch in the sid root).

Usage: train_gloo.py OUTDIR

The launcher (as torchrun would be) starts the 3 rank processes, which
join one gloo group through a file store in OUTDIR.
Each rank trains its copy of a small MLP with SGD: per step, its
micro-batches' forward and backward (rank SLOW_RANK does SLOW_MICRO of
them, the others 1: more compute per step), then the gradients averaged
over the ranks in one all_reduce, then the optimizer step.  Once every
rank has taken its first steps the launcher writes OUTDIR/truth.json:
pid (its own), ranks: [{rank, pid, tid, micro_batches, steps}] (tid: the
rank's main thread; steps: the file of its steps).  They train for MAX_S
(rank 0's clock, which it gives the others in the all_reduce itself, so
that every rank stops at the same step); each rank appends each step to
its file as it ends, a line [start, into all_reduce, out of it, end]
(wall clock, time.time()).  The next step starts at once, so the steps
cover the time from the first one to the last.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

WORLD = 3
SLOW_RANK = 1
SLOW_MICRO = 4
BATCH = 64
FEATURES = 64
WARM_STEPS = 4
MAX_S = 300            # minutes; the test ends it sooner
LIFETIME_S = 600        # no target outlives a test that died: SIGALRM ends it
# Debian's torch has no libuv for its store, and its UCX (through Open MPI)
# complains of a root without /proc.
QUIET = {"USE_LIBUV": "0", "UCX_LOG_LEVEL": "fatal", "OMP_NUM_THREADS": "1",
         "GLOO_SOCKET_IFNAME": "lo"}


def write_json(outdir, name, data):
    tmp = os.path.join(outdir, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.rename(tmp, os.path.join(outdir, name))


def read_json(outdir, name):
    with open(os.path.join(outdir, name)) as f:
        return json.load(f)


def wait_files(outdir, names, procs, timeout):
    deadline = time.time() + timeout
    while not all(os.path.exists(os.path.join(outdir, n)) for n in names):
        if time.time() > deadline or any(p.poll() not in (None, 0) for p in procs):
            sys.stderr.write("train_gloo.py: no %s\n" % names)
            for p in procs:
                p.kill()
            sys.exit(3)
        time.sleep(0.05)


def launch(outdir):
    store = "file://" + os.path.join(outdir, "store")
    procs = [subprocess.Popen([sys.executable, __file__, outdir, "rank", str(rank), store],
                              env=dict(os.environ, **QUIET))
             for rank in range(WORLD)]
    names = ["rank-%d.json" % r for r in range(WORLD)]
    wait_files(outdir, names, procs, 240)
    write_json(outdir, "truth.json", {"pid": os.getpid(),
                                      "ranks": [read_json(outdir, n) for n in names]})
    sys.exit(max(p.wait() for p in procs))


def model_and_optimizer(torch):
    nn = torch.nn
    torch.manual_seed(0)                # every rank starts from the same weights
    model = nn.Sequential(nn.Linear(FEATURES, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    return model, torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)


def micro_batch(torch, model, gen):
    x = torch.randn(BATCH, FEATURES, generator=gen)
    y = torch.randint(0, 10, (BATCH,), generator=gen)
    torch.nn.functional.cross_entropy(model(x), y).backward()


def average_gradients(torch, dist, model, stop):
    """One all_reduce of every gradient and the stop flag; whether to stop."""
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads] + [torch.tensor([1.0 if stop else 0.0])])
    a = time.time()
    dist.all_reduce(flat)               # the fast ranks wait here for the slow one
    b = time.time()
    flat /= WORLD
    at = 0
    for g in grads:
        g.copy_(flat[at:at + g.numel()].view_as(g))
        at += g.numel()
    return a, b, flat[-1].item() > 0


def train_step(torch, dist, model, opt, gen, micro, stop):
    s = time.time()
    opt.zero_grad(set_to_none=False)
    for _ in range(micro):
        micro_batch(torch, model, gen)
    a, b, stopping = average_gradients(torch, dist, model, stop)
    opt.step()
    return [s, a, b, time.time()], stopping


def rank_main(outdir, rank, store):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=store, rank=rank, world_size=WORLD)
    model, opt = model_and_optimizer(torch)
    gen = torch.Generator().manual_seed(rank)
    micro = SLOW_MICRO if rank == SLOW_RANK else 1
    for _ in range(WARM_STEPS):
        train_step(torch, dist, model, opt, gen, micro, False)
    steps = "steps-rank-%d.jsonl" % rank
    write_json(outdir, "rank-%d.json" % rank, {
        "rank": rank, "pid": os.getpid(), "tid": threading.get_native_id(),
        "micro_batches": micro, "steps": steps})
    end, stopping = time.time() + MAX_S, False
    with open(os.path.join(outdir, steps), "w", 1) as log:
        while not stopping:
            step, stopping = train_step(torch, dist, model, opt, gen, micro,
                                        rank == 0 and time.time() > end)
            log.write("[%.6f, %.6f, %.6f, %.6f]\n" % tuple(step))
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.update(QUIET)
    signal.alarm(LIFETIME_S)
    if len(sys.argv) > 2:
        rank_main(sys.argv[1], int(sys.argv[3]), sys.argv[4])
    else:
        launch(sys.argv[1])
