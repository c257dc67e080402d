"""Thread churn (tests/live/check_chaos.c's, as a file): start and join
threads in batches of 20 for argv[1] seconds, then print how many a
second.  argv[2], if given, is a file made once the churn has begun."""
import sys
import threading
import time


def work():
    sum(range(50))


n, start = 0, time.monotonic()
if len(sys.argv) > 2:
    open(sys.argv[2], "w").close()
while time.monotonic() - start < float(sys.argv[1]):
    ts = [threading.Thread(target=work) for _ in range(20)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    n += 20
print("%.0f" % (n / (time.monotonic() - start)))
