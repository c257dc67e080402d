# -*- coding: utf-8 -*-
"""A light rank of a Slurm job (no torch), for the tests of `--slurm`:
many of them fit on the 2 CPUs of the tests' cluster (tests/slurm-cluster.sh).

Usage (one task of `srun`, e.g. `srun -N2 --ntasks-per-node=2 python3
slurm_light_rank.py`); the environment says the rest:
  SLURM_PROCID      its rank (Slurm sets it; RANK, as torchrun's, wins)
  SLURMD_NODENAME   its node (Slurm sets it)
  LIGHT_DIR         the directory of the ranks' logs (required)
  STALL_RANK        the rank that is stuck (none if unset or -1)
  LIGHT_SECONDS     how long it lives at most (600: none outlives its test)

Every rank waits in allreduce_wait(), as ranks waiting for one another in a
collective would, but rank STALL_RANK, which sits in fetch_shard().  Once
there each rank writes LIGHT_DIR/rank-<rank>.json (written whole, then
renamed: a file that exists is complete), the ground truth of the tests:
  {"rank", "node", "pid", "ppid", "job", "step", "localid", "ntasks",
   "function", "file", "line"}
where function, file and line name the line it now sleeps on, the innermost
Python frame a dump of it must show.
"""
import json
import os
import signal
import sys
import time

NAP = 0.05


def report(fn, line):
    env = os.environ
    rank = int(env.get("RANK", env.get("SLURM_PROCID", "-1")))
    truth = {"rank": rank, "node": env.get("SLURMD_NODENAME"), "pid": os.getpid(),
             "ppid": os.getppid(), "job": env.get("SLURM_JOB_ID"),
             "step": env.get("SLURM_STEP_ID"),
             "localid": int(env.get("SLURM_LOCALID", "-1")),
             "ntasks": int(env.get("SLURM_NTASKS", "-1")),
             "function": fn, "file": os.path.abspath(__file__), "line": line}
    path = os.path.join(env["LIGHT_DIR"], "rank-%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump(truth, f)
    os.rename(path + ".tmp", path)


def allreduce_wait():
    report("allreduce_wait", sys._getframe().f_lineno + 2)
    while True:
        time.sleep(NAP)                 # the others, waiting for the stalled rank


def fetch_shard():
    report("fetch_shard", sys._getframe().f_lineno + 2)
    while True:
        time.sleep(NAP)                 # the stalled rank: its data never comes


# SIGUSR2 marks the rank's own clock (its node's wall clock): time.time() is
# appended as a line to LIGHT_DIR/rank-<rank>.clock, so that a test can hold
# the times of a recording to the ranks' clocks (tests/check_job_trace.py).
# Below the functions above, whose lines the README's example shows.
def mark_clock(signum, frame):
    env = os.environ
    rank = int(env.get("RANK", env.get("SLURM_PROCID", "-1")))
    with open(os.path.join(env["LIGHT_DIR"], "rank-%d.clock" % rank), "a") as f:
        f.write("%.6f\n" % time.time())


def main():
    signal.alarm(int(os.environ.get("LIGHT_SECONDS", "600")))
    signal.signal(signal.SIGUSR2, mark_clock)
    env = os.environ
    rank = int(env.get("RANK", env.get("SLURM_PROCID", "-1")))
    if rank == int(env.get("STALL_RANK", "-1")):
        fetch_shard()
    else:
        allreduce_wait()


if __name__ == "__main__":
    main()
