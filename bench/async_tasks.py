"""A target for bench/async: N pending asyncio tasks, each three coroutines
deep in an Event.wait(), on one idle event loop, for SECONDS.

Usage: async_tasks.py N SECONDS
Prints "ready" once every task is parked.
"""
import asyncio
import sys


async def inner(ev):
    await ev.wait()


async def middle(ev):
    await inner(ev)


async def outer(ev):
    await middle(ev)


async def main(n, secs):
    ev = asyncio.Event()
    for i in range(n):
        asyncio.get_running_loop().create_task(outer(ev), name="task-%d" % i)
    await asyncio.sleep(0.2)
    print("ready", flush=True)
    await asyncio.sleep(secs)
    ev.set()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
