"""Hold `pystrobe dump --slurm-node=JOB`'s reply against what its targets
wrote of themselves (tests/targets/job_rank.py).

Usage: check_dump_node.py REPLY EXPECT

REPLY is pystrobe's standard output.  EXPECT (written by
tests/live/check_dump_node.c):
  {"node": "hnode1", "job": "J",
   "want": [{"truth": PATH, "tree": null | {"id", "step", "node"}}],
   "unwanted": [{"pid": N, "what": "..."}],
   "traced": PID | 0, "cut": true | false}
"traced" is a wanted process another tracer holds: listed with an error and
no threads, and the end status 4.  "cut": run with --timeout=0.1, which
the first read outlasts: processes after it are listed as not read (at
least one), and the end status is 1.
"tree" is the identity of a target whose environment names no job, from
the fake step daemon that started it.

The reply must be framed as design38 says (the first line
"#pystrobe-node NODE", then "=" lines, the last "#pystrobe-end 0 BYTES"),
every line at most 400 bytes, the pieces joined exactly BYTES long and one
JSON document; that document must list exactly the wanted processes, each
with the job and rank its own environment gave it, its parent, and its
main thread in rank_park().

Prints what it found; one line per failure; exits 1 on any failure.
"""
import json
import socket
import sys

LINE_MAX = 400
failures = []


def fail(msg):
    failures.append(msg)


def unframe(data, node, status):
    """The JSON text of the reply, or None."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    else:
        fail("the reply does not end with a newline")
    for n, line in enumerate(lines, 1):
        if len(line) + 1 > LINE_MAX:
            fail("line %d is %d bytes, over %d" % (n, len(line) + 1, LINE_MAX))
    if len(lines) < 3:
        fail("%d lines: no document" % len(lines))
        return None
    if lines[0] != b"#pystrobe-node " + node.encode():
        fail("first line %r, want '#pystrobe-node %s'" % (lines[0][:80], node))
    end = lines[-1].split(b" ")
    if len(end) != 3 or end[0] != b"#pystrobe-end" or not end[2].isdigit():
        fail("last line %r is no end line" % lines[-1][:80])
        return None
    body = lines[1:-1]
    bad = [n for n, l in enumerate(body, 2) if not l.startswith(b"=")]
    if bad:
        fail("lines %s are not '=' pieces" % bad[:5])
    payload = b"".join(l[1:] for l in body)
    if end[1] != str(status).encode():
        fail("end status %s, want %d" % (end[1].decode(), status))
    if int(end[2]) != len(payload):
        fail("end says %s bytes, the pieces are %d" % (end[2].decode(), len(payload)))
    print("framing: %d lines, %d bytes of JSON" % (len(lines), len(payload)))
    return payload


def expected_job(env, tree):
    """The job object the target's own environment (or its step daemon)
    gives it: torchrun's rank over Slurm's."""
    if tree:
        return dict(tree, rank=None, local_rank=None, world_size=None, rank_from=None)
    job = {"id": env["SLURM_JOB_ID"], "step": env["SLURM_STEP_ID"],
           "node": env["SLURMD_NODENAME"]}
    if env["RANK"] is not None:
        names, source = ("RANK", "LOCAL_RANK", "WORLD_SIZE"), "torchrun"
    else:
        names, source = ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"), "slurm"
    for key, name in zip(("rank", "local_rank", "world_size"), names):
        job[key] = int(env[name]) if env[name] is not None else None
    job["rank_from"] = source
    return job


def check_traced(proc, truth):
    """Listed, with why it could not be read, and its job all the same."""
    if "traces it already" not in (proc.get("error") or ""):
        fail("pid %d: error %r, not another tracer" % (truth["pid"], proc.get("error")))
    if proc.get("threads") != []:
        fail("pid %d: threads %r, want none" % (truth["pid"], proc.get("threads"))[:200])
    if proc.get("job") != expected_job(truth["env"], None):
        fail("pid %d: job %s" % (truth["pid"], proc.get("job")))


def check_cut(proc, truth, tree):
    """Listed as not read, with its job all the same."""
    if proc.get("threads") != []:
        fail("pid %d: threads %r, want none" % (truth["pid"], proc.get("threads"))[:200])
    if proc.get("job") != expected_job(truth["env"], tree):
        fail("pid %d: job %s" % (truth["pid"], proc.get("job")))


def check_process(proc, truth, tree, traced):
    pid = truth["pid"]
    if pid == traced:
        check_traced(proc, truth)
        return
    if "--timeout of 0.1 s ran out" in (proc.get("error") or ""):
        check_cut(proc, truth, tree)
        return
    if tree and any(v is not None for v in truth["env"].values()):
        fail("pid %d: its environment has %s: not the case meant" % (pid, truth["env"]))
    if "error" in proc:
        fail("pid %d: error %r" % (pid, proc["error"]))
    want = expected_job(truth["env"], tree)
    if proc.get("job") != want:
        fail("pid %d: job %s, its environment says %s" % (pid, proc.get("job"), want))
    if proc.get("ppid") != truth["ppid"]:
        fail("pid %d: ppid %s, it says %d" % (pid, proc.get("ppid"), truth["ppid"]))
    main = [t for t in proc.get("threads", []) if t.get("tid") == pid]
    funcs = [f.get("function") for f in main[0]["frames"]] if main else []
    if "rank_park" not in funcs:
        fail("pid %d: main thread's frames %s, no rank_park" % (pid, funcs[:6]))


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    with open(sys.argv[2]) as f:
        expect = json.load(f)
    payload = unframe(data, expect["node"],
                      4 if expect["traced"] else 1 if expect["cut"] else 0)
    if payload is None:
        return
    try:
        doc = json.loads(payload.decode("utf-8"))
    except ValueError as e:
        fail("the pieces joined are no JSON: %s" % e)
        return
    for key, want in (("node", expect["node"]), ("job", expect["job"]),
                      ("host", socket.gethostname())):
        if doc.get(key) != want:
            fail("top-level %s: %r, want %r" % (key, doc.get(key), want))
    procs = dict((p["pid"], p) for p in doc.get("processes", []))
    wanted = set()
    for w in expect["want"]:
        with open(w["truth"]) as f:
            truth = json.load(f)
        wanted.add(truth["pid"])
        if truth["pid"] not in procs:
            fail("pid %d (%s) not listed" % (truth["pid"], truth["env"]))
        else:
            check_process(procs[truth["pid"]], truth, w["tree"], expect["traced"])
    cut = [p for p in procs.values() if "ran out" in (p.get("error") or "")]
    if expect["cut"] and not cut:
        fail("--timeout=0.1: every process read, none listed as not read")
    if not expect["cut"] and cut:
        fail("no --timeout: %d listed as not read" % len(cut))
    if cut:
        print("cut: %d of %d not read" % (len(cut), len(procs)))
    named = dict((u["pid"], u["what"]) for u in expect["unwanted"])
    for pid in sorted(set(procs) - wanted):
        fail("pid %d listed: %s" % (pid, named.get(pid, "not a target of the test")))
    print("processes: %s, want %s" % (sorted(procs), sorted(wanted)))


main()
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok")
