"""The figures of `pystrobe record`'s summary line, for the bench scripts
written in Python (bench/scale, bench/gpu, bench/native_shares), read by
exact patterns as bench/summary.sh reads them for those in shell."""
import re
import sys

LINE = re.compile(r"^pystrobe: (\d+) samples? from (\d+) rounds in (\d+\.\d\d) s, (\d+\.\d) Hz[ ,;]")
PAUSE = re.compile(r", target paused \d+ us per round \(median (\d+) us, p99 (\d+) us, "
                   r"at most (\d+\.\d) ms\)")
LAG = re.compile(r", sampling fell behind (\d+) times? \(up to [\d.]+ ms late, (\d+) rounds? skipped")
LATE = re.compile(r", (\d+) samples? without native frames \(")


def changed(why, line):
    """A summary this cannot read: the bench stops, rather than print a
    figure read from the wrong field."""
    sys.exit("bench: %s (record's summary line changed? fix bench/record_summary.py):\n    %s"
             % (why, line))


def figures(err):
    """From record's standard error: the samples (thread stacks), the rounds
    (each samples every thread once) and the rounds a second (samples,
    rounds, hz), the times it fell behind and the rounds it skipped
    (behind, skipped), the late threads' samples (late), the pause median
    and p99 in us and the longest in ms (med, p99, max; None without
    pauses), and the summary line itself.  All None but the line where
    record wrote no summary (it failed: the line is then empty); a summary
    in another form ends the bench (SystemExit)."""
    # The per-thread loss lines after it are not the summary.
    lines = [l for l in err.splitlines() if l.startswith("pystrobe: ") and
             (" samples" in l or " rounds" in l or " Hz" in l) and
             not l.startswith("pystrobe: thread ") and "% of rounds lost whole" not in l]
    fig = dict.fromkeys(("samples", "rounds", "hz", "med", "p99", "max"))
    fig.update(behind=0, skipped=0, late=0, line="")
    if not lines:
        return fig
    line = fig["line"] = lines[-1]
    m = LINE.match(line)
    if not m:
        changed('no "pystrobe: N samples from R rounds in E s, H Hz"', line)
    samples, rounds, secs, hz = int(m[1]), int(m[2]), float(m[3]), float(m[4])
    if abs(hz * secs - rounds) > 0.01 * rounds + hz * 0.006 + 1:
        changed("%s Hz is not %d rounds in %s s" % (m[4], rounds, m[3]), line)
    fig.update(samples=samples, rounds=rounds, hz=hz)
    for name, pattern, keys, conv in (("target paused ", PAUSE, ("med", "p99", "max"), float),
                                      ("sampling fell behind ", LAG, ("behind", "skipped"), int),
                                      (" without native frames", LATE, ("late",), int)):
        if name not in line:
            continue
        m = pattern.search(line)
        if not m:
            changed('"%s" not in the form this reads' % name.strip(), line)
        fig.update(zip(keys, map(conv, m.groups())))
    return fig


def fmt(x, spec):
    """x as spec says, or "-" when there is none."""
    return "-" if x is None else spec % x
