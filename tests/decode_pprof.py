#!/usr/bin/env python3
"""Decode a gzip-compressed pprof profile (profile.proto) and print a summary.

    decode_pprof.py FILE

Standard library only: gzip, and a protobuf reader of our own, so the test
does not depend on the protobuf package or on Go.  The profile is checked the
way pprof's own loader checks it (string_table[0] is "", strings are UTF-8,
ids are nonzero and unique, every reference resolves, every sample has one
value per sample type); a violation exits with status 1 and a message.

The summary is JSON, one sample and one function per line, keys sorted:

    {"sample_types": [["samples","count"], ...],
     "default_sample_type": "cpu", "period_type": [...], "period": N,
     "time_nanos": N, "duration_nanos": N, "comments": [...],
     "totals": [sum of each value over the samples], "locations": N,
     "functions": [{"id","name","system_name","filename","start_line"}, ...],
     "samples": [{"stack": [function names, leaf first], "lines": [...],
                  "values": [...], "labels": {"key": "str" or number}}, ...]}
"""
import gzip
import json
import sys


class Bad(Exception):
    pass


def varint(buf, i):
    shift = 0
    value = 0
    while True:
        if i >= len(buf):
            raise Bad("truncated varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise Bad("varint longer than 10 bytes")


def fields(buf):
    """(field number, wire type, value) for each field of a message."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise Bad("field number 0")
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise Bad("wire type %d" % wire)
        if i > len(buf):
            raise Bad("field %d runs past the end of its message" % field)
        yield field, wire, value


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def ints(wire, value):
    """A repeated integer field: packed (one blob) or one value per field."""
    if wire == 0:
        return [value]
    if wire != 2:
        raise Bad("repeated integer with wire type %d" % wire)
    out, i = [], 0
    while i < len(value):
        v, i = varint(value, i)
        out.append(v)
    return out


def message(buf, spec):
    """Decode buf into a dict; spec maps field -> (name, kind), kind one of
    'int', 'sint' (int64), 'ints', 'sints', 'msg', 'msgs', 'bytes_list'."""
    out = {}
    for name, kind in spec.values():
        out[name] = [] if kind in ("ints", "sints", "msgs", "bytes_list") else 0
    for field, wire, value in fields(buf):
        if field not in spec:
            continue
        name, kind = spec[field]
        if kind == "int":
            out[name] = value
        elif kind == "sint":
            out[name] = signed(value)
        elif kind == "ints":
            out[name] += ints(wire, value)
        elif kind == "sints":
            out[name] += [signed(v) for v in ints(wire, value)]
        elif kind in ("msgs", "bytes_list"):
            if wire != 2:
                raise Bad("field %s is not length-delimited" % name)
            out[name].append(value)
        elif kind == "msg":
            out[name] = value
    return out


PROFILE = {1: ("sample_type", "msgs"), 2: ("sample", "msgs"),
           3: ("mapping", "msgs"), 4: ("location", "msgs"),
           5: ("function", "msgs"), 6: ("string_table", "bytes_list"),
           9: ("time_nanos", "sint"), 10: ("duration_nanos", "sint"),
           11: ("period_type", "msg"), 12: ("period", "sint"),
           13: ("comment", "sints"), 14: ("default_sample_type", "sint")}
VALUE_TYPE = {1: ("type", "sint"), 2: ("unit", "sint")}
SAMPLE = {1: ("location_id", "ints"), 2: ("value", "sints"), 3: ("label", "msgs")}
LABEL = {1: ("key", "sint"), 2: ("str", "sint"), 3: ("num", "sint"),
         4: ("num_unit", "sint")}
MAPPING = {1: ("id", "int")}
LOCATION = {1: ("id", "int"), 2: ("mapping_id", "int"), 3: ("address", "int"),
            4: ("line", "msgs")}
LINE = {1: ("function_id", "int"), 2: ("line", "sint")}
FUNCTION = {1: ("id", "int"), 2: ("name", "sint"), 3: ("system_name", "sint"),
            4: ("filename", "sint"), 5: ("start_line", "sint")}


def by_id(msgs, spec, what):
    table = {}
    for m in msgs:
        d = message(m, spec)
        if d["id"] == 0:
            raise Bad("%s with id 0" % what)
        if d["id"] in table:
            raise Bad("two %ss with id %d" % (what, d["id"]))
        table[d["id"]] = d
    return table


def decode(data):
    p = message(data, PROFILE)
    strings = []
    for raw in p["string_table"]:
        try:
            strings.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise Bad("string %r is not UTF-8: %s" % (raw, e))
    if not strings or strings[0] != "":
        raise Bad('string_table[0] must be ""')

    def s(i):
        if not 0 <= i < len(strings):
            raise Bad("string index %d out of range" % i)
        return strings[i]

    def value_type(buf):
        d = message(buf, VALUE_TYPE)
        return [s(d["type"]), s(d["unit"])]

    sample_types = [value_type(m) for m in p["sample_type"]]
    mappings = by_id(p["mapping"], MAPPING, "mapping")
    functions = by_id(p["function"], FUNCTION, "function")
    locations = by_id(p["location"], LOCATION, "location")
    for loc in locations.values():
        if loc["mapping_id"] and loc["mapping_id"] not in mappings:
            raise Bad("location %d: no mapping %d" % (loc["id"], loc["mapping_id"]))
        loc["lines"] = [message(m, LINE) for m in loc["line"]]
        for ln in loc["lines"]:
            if ln["function_id"] not in functions:
                raise Bad("location %d: no function %d" % (loc["id"], ln["function_id"]))

    samples = []
    totals = [0] * len(sample_types)
    for m in p["sample"]:
        d = message(m, SAMPLE)
        if len(d["value"]) != len(sample_types):
            raise Bad("sample with %d values for %d sample types"
                      % (len(d["value"]), len(sample_types)))
        stack, lines = [], []
        for lid in d["location_id"]:
            if lid not in locations:
                raise Bad("sample refers to missing location %d" % lid)
            # A location's first line is its innermost (inlined) function,
            # so in order they continue the leaf-first stack.
            for ln in locations[lid]["lines"]:
                stack.append(s(functions[ln["function_id"]]["name"]))
                lines.append(ln["line"])
        labels = {}
        for lm in d["label"]:
            lab = message(lm, LABEL)
            labels[s(lab["key"])] = s(lab["str"]) if lab["str"] else lab["num"]
        for i, v in enumerate(d["value"]):
            totals[i] += v
        samples.append({"stack": stack, "lines": lines, "values": d["value"],
                        "labels": labels})

    funcs = [{"id": f["id"], "name": s(f["name"]),
              "system_name": s(f["system_name"]),
              "filename": s(f["filename"]), "start_line": f["start_line"]}
             for f in sorted(functions.values(), key=lambda f: f["id"])]
    period_type = value_type(p["period_type"]) if p["period_type"] else None
    return {
        "sample_types": sample_types,
        "default_sample_type": s(p["default_sample_type"]),
        "period_type": period_type,
        "period": p["period"],
        "time_nanos": p["time_nanos"],
        "duration_nanos": p["duration_nanos"],
        "comments": [s(i) for i in p["comment"]],
        "totals": totals,
        "locations": len(locations),
        "functions": funcs,
        "samples": samples,
    }


def compact(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: decode_pprof.py FILE")
    with open(sys.argv[1], "rb") as f:
        raw = f.read()
    try:
        data = gzip.decompress(raw)
        summary = decode(data)
    except (Bad, OSError, EOFError) as e:
        sys.exit("decode_pprof.py: %s: %s" % (sys.argv[1], e))
    keys = sorted(summary)
    print("{")
    for n, k in enumerate(keys):
        v = summary[k]
        end = "," if n + 1 < len(keys) else ""
        if k in ("samples", "functions"):
            print(" %s: [" % json.dumps(k))
            for i, item in enumerate(v):
                print("  %s%s" % (compact(item), "," if i + 1 < len(v) else ""))
            print(" ]%s" % end)
        else:
            print(" %s: %s%s" % (json.dumps(k), compact(v), end))
    print("}")


if __name__ == "__main__":
    main()
