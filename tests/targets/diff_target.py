"""A target for the `pystrobe diff` tests: a fixed amount of work, and a
knob that changes it in three known ways.

Usage: diff_target.py [--after] [--rounds N] [--unit-ms MS]

Runs on CPython 3.7 to 3.14 (3.7 syntax, stdlib only).

Each round calls, in this order, functions that spin for a slice of the
thread's own CPU clock (time.thread_time()), in units of --unit-ms
(default 10):

    before (default)          after (--after)
    steady_a    2 units       steady_a    2 units
    slowed_b    1 unit        slowed_b    3 units   (made 3x slower)
    removed_c   3 units       (not called)          (removed)
    (absent)                  added_e     1 unit    (added)
    steady_d    2 units       steady_d    2 units

Both versions burn 8 units per round, so the shares of the unchanged
functions (2/8 each) stay the same and only the three changes show, with
or without normalisation.  The process exits after --rounds rounds
(default 25), which ends a `pystrobe record -- ...` of it.
"""
import sys
import time

thread_time = time.thread_time


# Each function spins in its own body, not in a shared helper, so that
# its time is its own (self) time and the diff colours the function itself.

def steady_a(unit_s):
    end = thread_time() + 2 * unit_s
    while thread_time() < end:
        pass


def slowed_b(unit_s, after):
    end = thread_time() + (3 if after else 1) * unit_s
    while thread_time() < end:
        pass


def removed_c(unit_s):
    end = thread_time() + 3 * unit_s
    while thread_time() < end:
        pass


def added_e(unit_s):
    end = thread_time() + 1 * unit_s
    while thread_time() < end:
        pass


def steady_d(unit_s):
    end = thread_time() + 2 * unit_s
    while thread_time() < end:
        pass


def one_round(unit_s, after):
    steady_a(unit_s)
    slowed_b(unit_s, after)
    if after:
        added_e(unit_s)
    else:
        removed_c(unit_s)
    steady_d(unit_s)


def main(argv):
    after = "--after" in argv
    rounds = 25
    unit_ms = 10.0
    for i, arg in enumerate(argv):
        if arg == "--rounds":
            rounds = int(argv[i + 1])
        elif arg == "--unit-ms":
            unit_ms = float(argv[i + 1])
    for _ in range(rounds):
        one_round(unit_ms / 1000.0, after)


if __name__ == "__main__":
    main(sys.argv[1:])
