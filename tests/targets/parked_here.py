# -*- coding: utf-8 -*-
"""parked.py with OUTDIR as its working directory.

Usage: parked_here.py OUTDIR   (parked.py must be next to it)

A kernel core goes to the working directory of the process (core_pattern
"core" or "core.%p"): tests/live/check_core.c sends this target SIGQUIT
once parked.py has written truth.json, and finds the core in OUTDIR.
"""
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
outdir = os.path.abspath(sys.argv[1])
os.chdir(outdir)
sys.argv = [os.path.join(here, "parked.py"), outdir]
runpy.run_path(sys.argv[0], run_name="__main__")
