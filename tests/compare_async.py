"""Hold `pystrobe dump --async --json` against what an asyncio service wrote
about itself (tests/targets/async_service.py's truth.json).

Usage: compare_async.py [--nonblocking|--core|--uvloop] TRUTH.json DUMP.json
       compare_async.py --ps PS.txt PSTREE.txt DUMP.json
       compare_async.py --split ACCT0.json ACCT1.json COLLAPSED.txt
       compare_async.py --switch TRUTH.json DUMP.json

Every task the target listed must be in the dump with the same address,
name, state, coroutine frames (function, file, line, innermost first) and,
where the target could tell (3.14+), the same tasks awaiting it; `awaiting`
must be the exact inverse of `awaited_by`; dl-a and dl-b must be flagged as
one deadlock cycle and no other task as in one; where the dump says what
a task waits in (`waiting_in`, 3.14+), it must be the object the task's
own innermost frame holds as `self` (lock-a and lock-b: each the locked
lock the other holds).  Tasks the target did not
list may be only its own short-lived ones (ephemeral-N, in ephemeral() or
what it awaits), churn caught running (then its frames are its thread's,
outermost churn), the spinner (in spin() -> busy(); when it is the running
task its frames are its thread's: busy, spin) or done ones.  With
--nonblocking (a dump of a process running on), tasks may be missing when
the dump counted torn ones, but none may be shown wrong.  Prints a one-line
summary ("spinner running" when the spinner was caught running with its
thread's frames); exits 1 with the differences.

Read paused or not, a task shown running is proved so in the read that
gave its frames: it is joined (its frames are its thread's), its own
coroutine outermost; one the loop names running whose coroutine was off
its thread's stack is shown pending, in its own frames, and counted
(tasks_not_running); one loop runs one task at a time, so at most one is
either.  With --nonblocking, tasks may be missing only when the dump
counted torn ones (a list or set caught changing ends its walk: one torn
read can leave out every task after it), and churn may be read between two
of its awaits: pending, in its own frame alone, at any line of it (seen
on 3.14-dbg and 3.14: [churn:205] and [churn:203] where the target says
[sleep, churn:205]).

With --switch (tests/targets/async_switch.py, dumped --nonblocking while
its loop switches tasks at every sleep(0)): the same of each task, and
every task the target named is there unless torn, no other.

With --ps: the same process as `python3.X -m asyncio ps PID` and `pstree
PID` (3.14+) showed it: the same tasks (id, name, tid), each with the same
coroutine stack (function names, innermost first) and the same awaiters
(one row per awaiter); and the cycle pstree reports is the dump's.

Every dump must list its tasks in one stable order: by name, the numbers
in names by value (many-2 before many-10), then by address.

With --group TRUTH.json DUMP.json TEXT.txt (`dump --async --group`, the
service without churn): the dump's task_groups must be the target's own
tasks grouped by state, coroutine frames, awaiters, the tasks each awaits
and (where the dump reads it) the object it waits in: each group as a set
of addresses, the largest first; TEXT must show one block per group with
the same sizes in the same order ("20 tasks (pending, ...): ..." naming
every member, a "Task ..." line for a task alone).

With --split (tests/targets/async_split.py): the shares of the samples of
`record --async -f collapsed` rooted in "task t60", "task t30", "task t10"
must be within 3 points of the shares of CPU time the tasks counted
themselves between the two accounts, or of the wall time their turns took
(a sampler counts a task whose thread waits for a CPU, and another job on
the machine makes short turns' fixed costs weigh more: the two part).  A
miss when the two truths differ by more than a point says "disturbed"
(check_async records again).
"""
import json
import re
import sys

UNLISTED = {"ephemeral-": {"ephemeral", "sleep", "__sleep0"},
            "spinner": {"spin", "busy", "sleep", "__sleep0"}}


def frames_of(task):
    return [(f["function"], f["file"], f["line"]) for f in task["frames"]]


def check_running(d, own, errors):
    """A task shown running: joined, its own coroutine (own) outermost;
    joined is never said of another."""
    if d["state"] != "running":
        if d["joined"]:
            errors.append("%s, %s: joined" % (d["name"], d["state"]))
        return
    if not d["joined"] or not d["frames"] or d["frames"][-1]["function"] != own:
        errors.append("%s, running: joined %s, frames %s" % (d["name"], d["joined"], frames_of(d)))


def check_one_running(proc, errors):
    """One loop runs one task at a time: shown running, or named running
    and shown pending (tasks_not_running)."""
    n = sum(d["state"] == "running" for d in proc["tasks"]) + proc["tasks_not_running"]
    if n > 1:
        errors.append("%d tasks running or named running on one loop" % n)


def between_awaits(t, d, nonblocking):
    """churn, read --nonblocking while it ran between two awaits: its own
    coroutine is then anywhere in its loop (the await line, or making the
    next short-lived task), the awaited coroutine (sleep) finished or not
    yet made, and the loop's running task may have been read before it
    began: shown pending, in its own frame alone (any line of churn), the
    awaited ones cut."""
    got, want = frames_of(d), frames_of(t)
    return (nonblocking and t["name"] == "churn" and d["state"] == "pending"
            and len(got) == 1 and len(want) > 1 and got[0][:2] == want[-1][:2])


def check_listed(t, d, errors, nonblocking=False):
    name = t["name"]
    # churn runs every millisecond: caught running, its frames are its
    # thread's, the outermost its own coroutine's.
    if name == "churn" and d["state"] == "running":
        check_running(d, "churn", errors)
        return
    check_running(d, None, errors)
    if d["name"] != name:
        errors.append("%s: name %r" % (name, d["name"]))
    if d["state"] != t["state"]:
        errors.append("%s: state %s, the target says %s" % (name, d["state"], t["state"]))
    if frames_of(d) != frames_of(t) and not between_awaits(t, d, nonblocking):
        errors.append("%s: frames %s, the target says %s" % (name, frames_of(d), frames_of(t)))
    if t["awaited_by"] is not None and sorted(d["awaited_by"]) != sorted(t["awaited_by"]):
        errors.append("%s: awaited_by %s, the target says %s"
                      % (name, d["awaited_by"], t["awaited_by"]))
    check_waiting_in(t, d, errors)


WAITS = {"n": 0}


def check_waiting_in(t, d, errors):
    """The object a task waits in: where the dump says (3.14+), exactly
    what the task's own innermost frame holds as `self`."""
    if "waiting_in" not in d or "waiting_in" not in t:
        return
    w, g = t["waiting_in"], d["waiting_in"]
    if w is None or g is None:
        if w != g:
            errors.append("%s: waiting in %s, the target says %s" % (t["name"], g, w))
        return
    want = (w["type"], w["address"], "locked" if w.get("locked") else None)
    got = (g["type"], g["address"], g["state"] if w.get("locked") else None)
    if want != got:
        errors.append("%s: waiting in %s, the target says %s" % (t["name"], got, want))
    WAITS["n"] += 1


def check_unlisted(d, errors):
    if d["state"] == "done":
        return
    funcs = {f["function"].rsplit(".", 1)[-1] for f in d["frames"]}
    allowed = [f for prefix, f in UNLISTED.items() if d["name"].startswith(prefix)]
    # Caught running, a task's frames are its thread's: whatever it called
    # (the loop's create_future under sleep()), its own coroutine outermost.
    if allowed and d["state"] == "running":
        check_running(d, {"ephemeral-": "ephemeral", "spinner": "spin"}[
            next(p for p in UNLISTED if d["name"].startswith(p))], errors)
        funcs = {d["frames"][-1]["function"]} if d["frames"] else funcs
    if not allowed or not funcs <= allowed[0]:
        errors.append("a task the target did not list: %r with %s"
                      % (d["name"], frames_of(d)))


def check_graph(tasks, errors):
    by_addr = {d["address"]: d for d in tasks}
    for d in tasks:
        for a in d["awaiting"]:
            if a in by_addr and d["address"] not in by_addr[a]["awaited_by"]:
                errors.append("%s awaits %s, which does not list it" % (d["name"], a))
        for a in d["awaited_by"]:
            if a in by_addr and d["address"] not in by_addr[a]["awaiting"]:
                errors.append("%s is awaited by %s, which does not say so" % (d["name"], a))
    cycles = {d["name"]: d["cycle"] for d in tasks if d["cycle"]}
    # lock-a and lock-b wait on each other's locks, which asyncio does not
    # record a holder of: not a cycle of tasks.
    if set(cycles) != {"dl-a", "dl-b"} or len(set(cycles.values())) != 1:
        errors.append("deadlock cycles: %s, expected dl-a and dl-b in one" % cycles)


def check_lock_pair(truth, by_addr, errors):
    """3.14+: lock-a and lock-b each shown waiting in the locked lock the
    other holds, as each task's own frame says."""
    if tuple(truth["version"]) < (3, 14):
        return
    pair = {t["name"]: t for t in truth["tasks"] if t["name"] in ("lock-a", "lock-b")}
    if len(pair) != 2:
        errors.append("the target did not list lock-a and lock-b")
        return
    a, b = pair["lock-a"]["waiting_in"], pair["lock-b"]["waiting_in"]
    if not a or not b or a["address"] == b["address"] or not a["locked"] or not b["locked"]:
        errors.append("the target's lock pair is not deadlocked: %s %s" % (a, b))
    for t in pair.values():
        d = by_addr.get(t["address"])
        if d is not None and (d.get("waiting_in") or {}).get("address") != t["waiting_in"]["address"]:
            errors.append("%s: not shown waiting in lock 0x%x" % (t["name"], t["waiting_in"]["address"]))


def spinner_running(tasks):
    for d in tasks:
        if d["name"] == "spinner" and d["state"] == "running" and d["joined"]:
            return [f["function"] for f in d["frames"]] == ["busy", "spin"]
    return False


def ps_rows(text):
    """Rows of `asyncio ps`: fixed-width columns under a header."""
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("tid"))
    cols = ["tid", "task id", "task name", "coroutine stack", "awaiter chain",
            "awaiter name", "awaiter id"]
    starts = [lines[head].index(c) for c in cols] + [None]
    rows = []
    for line in lines[head + 2:]:
        if not line.strip():
            continue
        rows.append({c: line[starts[i]:starts[i + 1]].strip() for i, c in enumerate(cols)})
    return rows


def untruncated(row, want):
    """asyncio ps cuts a long coroutine stack to its column's width: such
    a row stands for ours if it is the start of our stack."""
    cut = row[3].rstrip(" ->")
    for w in want:
        if w[:3] == row[:3] and w[4] == row[4] and w[3] != row[3] and len(row[3]) >= 40 \
                and w[3].startswith(cut):
            return w
    return row


def compare_ps(ps_text, pstree_text, dump):
    tasks = [d for p in dump["processes"] for d in p["tasks"]]
    errors = []
    want = set()
    for d in tasks:
        stack = " -> ".join(f["function"] for f in d["frames"])
        for a in d["awaited_by"] or [0]:
            want.add((d["thread"], d["address"], d["name"], stack, a))
    if not any(l.startswith("tid") for l in ps_text.splitlines()):
        print("asyncio ps printed no table: %s" % ps_text[:500])
        return 1
    got = set()
    for r in ps_rows(ps_text):
        row = (int(r["tid"]), int(r["task id"], 16), r["task name"], r["coroutine stack"],
               int(r["awaiter id"], 16))
        got.add(untruncated(row, want))
    for x in sorted(want - got, key=str):
        errors.append("pystrobe shows, asyncio ps does not: %s" % (x,))
    for x in sorted(got - want, key=str):
        errors.append("asyncio ps shows, pystrobe does not: %s" % (x,))
    cyc = [l for l in pstree_text.splitlines() if l.startswith("cycle:")]
    names = set(cyc[0][6:].replace("\u2192", " ").split()) if cyc else set()
    ours = {d["name"] for d in tasks if d["cycle"]}
    if names != ours:
        errors.append("pstree's cycle %s, pystrobe's %s" % (sorted(names), sorted(ours)))
    print("asyncio ps: %d rows, %d from pystrobe; pstree cycle %s" % (len(got), len(want),
                                                                   sorted(names)))
    for e in errors[:40]:
        print("  " + e)
    return 1 if errors else 0


def compare_switch(truth, dump):
    procs = [p for p in dump["processes"] if p["pid"] == truth["pid"] or p["ns_pid"] == truth["pid"]]
    if len(procs) != 1:
        print("the dump has no process %d" % truth["pid"])
        return 1
    p, errors = procs[0], []
    names = {d["name"] for d in p["tasks"]}
    missing = [n for n in truth["tasks"] if n not in names]
    if missing and not p["tasks_torn"]:
        errors.append("missing %s, %d torn" % (missing, p["tasks_torn"]))
    for d in p["tasks"]:
        own = d["name"].split("-")[0]
        if d["name"] not in truth["tasks"]:
            errors.append("a task the target did not name: %r" % d["name"])
        elif d["state"] != "pending" or not d["frames"] or d["joined"]:
            check_running(d, own, errors)
        elif d["frames"][-1]["function"] != own:
            errors.append("%s, pending: frames %s" % (d["name"], frames_of(d)))
    check_one_running(p, errors)
    running = [d["name"] for d in p["tasks"] if d["state"] == "running"]
    print("%d tasks named by the target, %d in the dump (%d torn), running: %s, "
          "%d named running off the stack" % (len(truth["tasks"]), len(p["tasks"]),
                                              p["tasks_torn"], running or "none",
                                              p["tasks_not_running"]))
    for e in errors[:40]:
        print("  " + e)
    return 1 if errors else 0


def compare_split(acct0, acct1, collapsed):
    a0, a1 = acct0["cpu"], acct1["cpu"]
    cpu = {k: a1[k] - a0[k] for k in a0}
    wall = {k: acct1["wall"][k] - acct0["wall"][k] for k in a0} if "wall" in acct0 else cpu
    counts = {k: 0 for k in a0}
    for line in collapsed.splitlines():
        stack, n = line.rsplit(" ", 1)
        root = stack.split(";")[0]
        if root.startswith("task ") and root[5:] in counts:
            counts[root[5:]] += int(n)
    tc, tw, ts = sum(cpu.values()), sum(wall.values()), sum(counts.values())
    if tc <= 0 or tw <= 0 or ts < 100:
        print("too little to compare: %.3f s of CPU, %d samples" % (tc, ts))
        return 1
    bad = {"cpu": [], "wall": []}
    parts = []
    for k in sorted(cpu, key=lambda k: -cpu[k]):
        own, turns, seen = 100 * cpu[k] / tc, 100 * wall[k] / tw, 100 * counts[k] / ts
        parts.append("%s %.1f%% by its own count (%.1f%% of the wall time), %.1f%% sampled"
                     % (k, own, turns, seen))
        bad["cpu"] += [k] if abs(own - seen) > 3 else []
        bad["wall"] += [k] if abs(turns - seen) > 3 else []
    off = bad["cpu"] and bad["wall"]
    skew = max(abs(100 * cpu[k] / tc - 100 * wall[k] / tw) for k in cpu)
    print("%d samples: %s%s" % (ts, ", ".join(parts),
                                "; OFF: " + " ".join(bad["cpu"]) if off else
                                "; within 3 points of the wall time" if bad["cpu"] else "")
          + ("; disturbed (CPU and wall shares %.1f points apart)" % skew
             if off and skew > 1 else ""))
    return 1 if off else 0


def natural(name):
    """The dump's order of names: runs of digits by their value."""
    return [int(p) if i % 2 else p for i, p in enumerate(re.split(r"(\d+)", name or ""))]


def check_order(tasks, errors):
    keys = [(natural(d["name"]), d["address"]) for d in tasks]
    if keys != sorted(keys):
        errors.append("tasks not in name order: %s" % [d["name"] for d in tasks][:40])


def truth_groups(truth, with_wait):
    """The target's tasks grouped as the dump should group them."""
    awaiting = {}
    for t in truth["tasks"]:
        for a in t["awaited_by"] or ():
            awaiting.setdefault(a, []).append(t["address"])
    groups = {}
    for t in truth["tasks"]:
        wait = t["waiting_in"] and (t["waiting_in"]["type"], t["waiting_in"]["address"])
        key = json.dumps([t["state"], frames_of(t), sorted(t["awaited_by"] or ()),
                          sorted(awaiting.get(t["address"], ())), wait if with_wait else None])
        groups.setdefault(key, set()).add(t["address"])
    return sorted(groups.values(), key=lambda g: (-len(g), sorted(g)))


def text_group_sizes(text):
    sizes = []
    for line in text.split("\n"):
        m = re.match(r"^(\d+) tasks \(.*?\):((?: 0x[0-9a-f]+ \"[^\"]*\")+)$", line)
        if m:
            sizes.append((int(m.group(1)), len(re.findall(r" 0x", m.group(2)))))
        elif line.startswith("Task 0x"):
            sizes.append((1, 1))
    return sizes


def compare_group(truth, dump, text):
    proc = [p for p in dump["processes"] if p["pid"] == truth["pid"]][0]
    with_wait = any(d.get("waiting_in") for d in proc["tasks"])
    want = truth_groups(truth, with_wait)
    got = [set(g["members"]) for g in proc.get("task_groups") or []]
    errors = []
    if sorted(map(sorted, got)) != sorted(map(sorted, want)):
        errors.append("task groups %s, the target's %s"
                      % ([len(g) for g in got], [len(g) for g in want]))
    sizes = [len(g) for g in got]
    if sizes != sorted(sizes, reverse=True):
        errors.append("task groups not largest first: %s" % sizes)
    text_sizes = text_group_sizes(text)
    if text_sizes != [(n, n) for n in sizes]:
        errors.append("text's task blocks (size, members named) %s, JSON's sizes %s"
                      % (text_sizes, sizes))
    print("task groups %s%s" % (sizes, ", waits compared" if with_wait else ""))
    for e in errors[:40]:
        print("  " + e)
    return 1 if errors else 0


def main():
    args = sys.argv[1:]
    if args[0] == "--group":
        return compare_group(json.load(open(args[1])), json.load(open(args[2])),
                             open(args[3], encoding="utf-8").read())
    if args[0] == "--split":
        return compare_split(json.load(open(args[1])), json.load(open(args[2])),
                             open(args[3]).read())
    if args[0] == "--switch":
        return compare_switch(json.load(open(args[1])), json.load(open(args[2])))
    if args[0] == "--ps":
        return compare_ps(open(args[1]).read(), open(args[2]).read(), json.load(open(args[3])))
    nonblocking = args[0] == "--nonblocking"
    # A core is read as a paused process; uvloop's tasks are asyncio's.
    if nonblocking or args[0] in ("--core", "--uvloop"):
        args = args[1:]
    truth = json.load(open(args[0]))
    dump = json.load(open(args[1]))
    procs = [p for p in dump["processes"] if p["pid"] == truth["pid"] or p["ns_pid"] == truth["pid"]]
    if len(procs) != 1:
        print("the dump has no process %d" % truth["pid"])
        return 1
    tasks = procs[0]["tasks"]
    by_addr = {d["address"]: d for d in tasks}
    listed = {t["address"] for t in truth["tasks"]}
    errors = []
    missing = []
    for t in truth["tasks"]:
        d = by_addr.get(t["address"])
        if d is None:
            missing.append("%r (0x%x)" % (t["name"], t["address"]))
        else:
            check_listed(t, d, errors, nonblocking)
    # Read from a process running on, a task that changed while it was
    # read is left out, and counted (a walk that meets a list or set
    # changing ends there: the tasks after it are left out with it).
    if missing and (not nonblocking or not procs[0]["tasks_torn"]):
        errors.append("missing: %s (%d torn)" % (", ".join(missing), procs[0]["tasks_torn"]))
    for d in tasks:
        if d["address"] not in listed:
            check_unlisted(d, errors)
    check_one_running(procs[0], errors)
    check_graph(tasks, errors)
    check_order(tasks, errors)
    check_lock_pair(truth, by_addr, errors)
    print("%d tasks listed by the target, %d in the dump (%d torn), %d frames compared%s%s"
          % (len(truth["tasks"]), len(tasks), procs[0]["tasks_torn"],
             sum(len(t["frames"]) for t in truth["tasks"]),
             ", awaited_by compared" if truth["tasks"] and truth["tasks"][0]["awaited_by"] is not None
             else "", ", spinner running" if spinner_running(tasks) else "")
          + (", %d waits compared" % WAITS["n"] if WAITS["n"] else ""))
    for e in errors[:40]:
        print("  " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
