"""`python -m pystrobe ARGS`: the pystrobe program with ARGS, in place of
this interpreter (same pid, same exit status, signals go to pystrobe)."""
import os
import sys

from pystrobe import binary


def main():
    try:
        path = binary()
    except FileNotFoundError as e:
        sys.exit(str(e))
    os.execv(path, ["pystrobe"] + sys.argv[1:])


if __name__ == "__main__":
    main()
