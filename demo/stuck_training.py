"""A small stand-in for a training job that hangs.

The main loop waits for batches from a loader thread; the loader is stuck
on a lock that a checkpoint thread took and never released; a metrics thread
keeps burning CPU.  `pystrobe dump` shows all of it at once.
"""
import os
import queue
import sys
import threading
import time

checkpoint_lock = threading.Lock()
batches = queue.Queue(maxsize=4)


def save_checkpoint(step):
    with checkpoint_lock:
        # Forgot to time out on a remote store: holds the lock forever.
        threading.Event().wait()


def checkpointer():
    save_checkpoint(step=1000)


def decode_batch(i):
    with checkpoint_lock:      # blocks: the checkpointer holds it
        return [i] * 32


def loader():
    i = 0
    while True:
        batches.put(decode_batch(i))
        i += 1


def update_metrics(values):
    total = 0.0
    for _ in range(10 ** 9):
        total += sum(values) / len(values)
    return total


def metrics():
    update_metrics([0.1, 0.2, 0.3])


def train(ready_file):
    for name, target in (("checkpointer", checkpointer), ("loader", loader),
                         ("metrics", metrics)):
        threading.Thread(target=target, name=name, daemon=True).start()
        time.sleep(0.05)
    if ready_file:
        open(ready_file, "w").close()
    for step in range(10 ** 6):
        batch = batches.get()          # the main loop is starved here
        time.sleep(0.001 * len(batch))


if __name__ == "__main__":
    train(sys.argv[1] if len(sys.argv) > 1 else None)
