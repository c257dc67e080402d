# -*- coding: utf-8 -*-
"""A torch training job of gloo ranks across the nodes of a Slurm job, one
rank stalled, for the tests of `--slurm` (issue 38).  Needs PyTorch
(Debian's python3-torch in the sid root).

Usage: one task of `srun` per rank, e.g. in an sbatch script
    srun -N2 --ntasks-per-node=2 chroot ROOT python3.14 slurm_gloo_train.py DIR
DIR (as the rank names it) is shared by every rank: the gloo file store is
DIR/store, the ranks' logs DIR/rank-<rank>.json.  Rank from SLURM_PROCID
(RANK wins), world from SLURM_NTASKS (WORLD_SIZE wins); STALL_RANK names
the stalled rank (default: the last).

Each rank trains a small MLP with SGD: per step a forward and backward, its
gradients averaged over the ranks in one all_reduce, the optimizer step.
After WARM_STEPS steps rank STALL_RANK goes to fetch_shard() and never
comes back: the others wait in the next step's all_reduce for ever (the
group's timeout is longer than LIFETIME_S).  Each rank says where it is as
it gets there, in DIR/rank-<rank>.json (written whole, then renamed):
  {"rank", "world", "node", "pid", "tid", "job", "step", "localid",
   "state": "all_reduce" | "fetch_shard", "function", "file", "line"}
function, file and line: this script's frame it sits in (average_gradients
at its all_reduce call, or fetch_shard at its sleep); the stalled rank's
innermost Python frame is that line, the others' is inside torch's
all_reduce.  That log is the ground truth.
"""
import datetime
import json
import os
import signal
import sys
import threading
import time

WARM_STEPS = 3
BATCH = 32
FEATURES = 32
LIFETIME_S = 600        # no rank outlives a test that died: SIGALRM ends it
QUIET = {"USE_LIBUV": "0", "UCX_LOG_LEVEL": "fatal", "OMP_NUM_THREADS": "1",
         "GLOO_SOCKET_IFNAME": "lo"}


def env_int(names, default):
    for n in names:
        if os.environ.get(n, "") != "":
            return int(os.environ[n])
    return default


def report(outdir, rank, world, state, fn, line):
    env = os.environ
    truth = {"rank": rank, "world": world, "node": env.get("SLURMD_NODENAME"),
             "pid": os.getpid(), "tid": threading.get_native_id(),
             "job": env.get("SLURM_JOB_ID"), "step": env.get("SLURM_STEP_ID"),
             "localid": env_int(["LOCAL_RANK", "SLURM_LOCALID"], -1), "state": state,
             "function": fn, "file": os.path.abspath(__file__), "line": line}
    path = os.path.join(outdir, "rank-%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump(truth, f)
    os.rename(path + ".tmp", path)


def fetch_shard(outdir, rank, world):
    report(outdir, rank, world, "fetch_shard", "fetch_shard", sys._getframe().f_lineno + 2)
    while True:
        time.sleep(0.1)                 # the shard never comes: the job hangs


def average_gradients(torch, dist, model, last, where):
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    if last:                            # the others will wait here for good
        report(*where, "all_reduce", "average_gradients", sys._getframe().f_lineno + 1)
    dist.all_reduce(flat)
    flat /= where[2]
    at = 0
    for g in grads:
        g.copy_(flat[at:at + g.numel()].view_as(g))
        at += g.numel()


def train(outdir, rank, world, stall):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(outdir, "store"),
                            rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=2 * LIFETIME_S))
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    gen = torch.Generator().manual_seed(rank)
    for step in range(WARM_STEPS + 1):
        if rank == stall and step == WARM_STEPS:
            fetch_shard(outdir, rank, world)
        opt.zero_grad()
        x = torch.randn(BATCH, FEATURES, generator=gen)
        y = torch.randint(0, 10, (BATCH,), generator=gen)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        average_gradients(torch, dist, model, step == WARM_STEPS, (outdir, rank, world))
        opt.step()


def main():
    os.environ.update(QUIET)
    signal.alarm(LIFETIME_S)
    rank = env_int(["RANK", "SLURM_PROCID"], -1)
    world = env_int(["WORLD_SIZE", "SLURM_NTASKS"], -1)
    if len(sys.argv) != 2 or rank < 0 or world < 1:
        sys.stderr.write("slurm_gloo_train.py: usage: slurm_gloo_train.py DIR, as a task of "
                         "srun (SLURM_PROCID, SLURM_NTASKS)\n")
        sys.exit(2)
    train(sys.argv[1], rank, world, env_int(["STALL_RANK"], world - 1))


if __name__ == "__main__":
    main()
