"""The figures of `pystrobe record`'s summary line, for the bench scripts
written in Python (bench/scale, bench/gpu)."""
import re


def figures(err):
    """From record's standard error: the rounds sampled and the rate
    achieved (rounds, hz), rounds it fell behind (behind), the pause median and p99 in us and the longest in ms
    (med, p99, max; None without pauses), and the summary line itself."""
    line = next((l for l in err.splitlines() if " rounds in " in l), "")

    def num(pattern):
        m = re.search(pattern, line)
        return float(m.group(1)) if m else None
    return {"rounds": num(r" from (\d+) rounds"), "hz": num(r" s, ([\d.]+) Hz"), "behind": num(r"fell behind (\d+) time") or 0,
            "med": num(r"\(median ([\d.]+) us"), "p99": num(r"p99 ([\d.]+) us"),
            "max": num(r"at most ([\d.]+) ms\)"), "line": line}


def fmt(x, spec):
    """x as spec says, or "-" when there is none."""
    return "-" if x is None else spec % x
