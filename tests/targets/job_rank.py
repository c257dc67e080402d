"""A target for tests/live/check_dump_node.c: one process of a job, as
its own environment names it.

Usage: job_rank.py OUTDIR

Runs on CPython 3.7 and newer (3.7 syntax, the standard library).  Writes
OUTDIR/truth.json (tmp + rename, so a reader never sees half a file):

  pid, ppid, nthreads (1: no thread but the main one), and env: the value
  os.environ has for each variable a job's identity is read from (null
  when it is not set)

then waits in rank_park() until it is killed.
"""
import json
import os
import sys
import time

NAMES = ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURMD_NODENAME", "SLURM_PROCID",
         "SLURM_LOCALID", "SLURM_NTASKS", "RANK", "LOCAL_RANK", "WORLD_SIZE")


def rank_park():
    while True:
        time.sleep(3600)


def main():
    out = sys.argv[1]
    truth = {"pid": os.getpid(), "ppid": os.getppid(), "nthreads": 1,
             "env": dict((n, os.environ.get(n)) for n in NAMES)}
    tmp = os.path.join(out, "truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump(truth, f)
    os.rename(tmp, os.path.join(out, "truth.json"))
    rank_park()


main()
