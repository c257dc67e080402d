"""A 3-rank torch.distributed (gloo) job on this host whose rank 1 stops
making progress in its third step: ranks 0 and 2 then wait in all_reduce
for it.  README's "When your job hangs" watches it:

    pystrobe watch --stall 30 -D hangs -- python3 doc/examples/stuck_rank.py
"""
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist


def load_batch(rank, step):
    if rank == 1 and step == 3:
        time.sleep(10 ** 6)     # a read from a filesystem that hangs
    return torch.ones(4) * step


def train(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    for step in range(1000):
        batch = load_batch(rank, step)
        dist.all_reduce(batch)
        time.sleep(0.2)


def main():
    world = 3
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT="29533", USE_LIBUV="0")
    ranks = [subprocess.Popen([sys.executable, __file__, str(r), str(world)],
                              env=dict(env, RANK=str(r))) for r in range(world)]
    for p in ranks:
        p.wait()


if __name__ == "__main__":
    if len(sys.argv) > 2:
        train(int(sys.argv[1]), int(sys.argv[2]))
    else:
        main()
