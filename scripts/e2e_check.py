#!/usr/bin/env python3
"""The checks of scripts/e2e-fluvio.sh (python3, standard library only).

  key FORMAT IN.jsonl OUTDIR   split a log into runs of keyed lines (KEY 0x1f LINE) and unkeyed
                               lines, files OUTDIR/NNN-keyed|plain, one produce call each, in
                               order; a line's key is the one `agent-fold run` gives it
  frames NAME RUN.jsonl GOT    the frames view consumed from the cluster (KEY 0x1f VALUE lines)
                               against `agent-fold run`: byte-equal, else contract §6 invariants
  pressure NAME RUN.jsonl GOT  the sibling topic read back (PARTITION 0x1f OFFSET 0x1f KEY 0x1f
                               VALUE lines) against `agent-fold run --pressure-out`: every record
                               there, in order per session, keyed by it; duplicates counted
Exit status 1 on a failed check, with the reason.
"""

import json
import sys
from collections import defaultdict

SEP = "\x1f"


def obj(line):
    try:
        v = json.loads(line)
    except ValueError:
        return None
    return v if isinstance(v, dict) else None


def names(fmt, v):
    """The session a line names, per format (what the module's adapter reads)."""
    if v is None:
        return None
    if fmt in ("agent-fold", "claude-stream"):
        s = v.get("session_id")
    elif fmt == "claude-code":
        s = v.get("sessionId")
    elif fmt == "codex":
        p = v.get("payload")
        s = p.get("id") if v.get("type") == "session_meta" and isinstance(p, dict) else None
    elif fmt == "gemini-cli":
        s = v.get("sessionId")
    elif fmt == "opencode":
        info = v.get("info")
        s = info.get("id") if "messages" in v and isinstance(info, dict) else v.get("sessionID")
    else:
        sys.exit(f"unknown format {fmt}")
    return s if isinstance(s, str) else None


def minified(out, paths):
    """Each JSON document (a Gemini CLI chat, an `opencode export`) as one line, written twice
    (as the agent writes a session again as it grows): one record each."""
    with open(out, "w", encoding="utf-8") as f:
        for p in paths:
            with open(p, encoding="utf-8") as d:
                line = json.dumps(json.load(d), separators=(",", ":"), ensure_ascii=False)
            f.write(line + "\n" + line + "\n")


def utf8(path):
    """Leaves out of the file the lines that are not UTF-8, saying how many: `fluvio produce -f`
    stops at such a line and loses the rest of its file, so the topic could not hold them."""
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    kept = []
    for line in lines:
        try:
            line.decode("utf-8")
            kept.append(line)
        except UnicodeDecodeError:
            pass
    with open(path, "wb") as f:
        f.write(b"\n".join(kept))
    print(len(lines) - len(kept))


def key(fmt, path, outdir):
    """Frames (agent-fold) are keyed by their session_id, unkeyed without one, as `run` keys
    them; an agent's own lines by the session they name, else the session of the line before
    (the adapter's rule), unkeyed before any."""
    runs, last = [], None
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            line = line.rstrip("\n").rstrip("\r")
            if not line:
                continue
            k = names(fmt, obj(line))
            if k is None and fmt != "agent-fold":
                k = last
            if k is not None:
                last = k
            keyed = k is not None
            if not runs or runs[-1][0] != keyed:
                runs.append((keyed, []))
            runs[-1][1].append(k + SEP + line if keyed else line)
    for i, (keyed, lines) in enumerate(runs):
        name = f"{outdir}/{i:03d}-{'keyed' if keyed else 'plain'}"
        with open(name, "w", encoding="utf-8", errors="surrogateescape") as out:
            out.write("\n".join(lines) + "\n")
        print(name)


def read_lines(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return [l.rstrip("\n") for l in f if l.rstrip("\n")]


def session_of(v):
    s = v.get("session_id") if v is not None else None
    return s if isinstance(s, str) else ""


def is_counter(v):
    if v is None or v.get("type") != "thinking/tokens":
        return False
    extras = v.get("extras")
    return not (isinstance(extras, dict) and isinstance(extras.get("parent_tool_use_id"), str))


def shape(values):
    """Per session: the frames that are no main counter, in order; Σ delta and Σ counters."""
    out = defaultdict(lambda: [[], 0, 0])
    for line in values:
        v = obj(line)
        s = out[session_of(v)]
        if is_counter(v):
            d, n = v.get("estimated_tokens_delta"), v.get("folded_frames", 1)
            s[1] += d if isinstance(d, int) and not isinstance(d, bool) else 0
            s[2] += n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else 1
        else:
            s[0].append(line)
    return out


def frames(name, ref_path, got_path):
    ref = read_lines(ref_path)
    got = [l.split(SEP, 1)[-1] for l in read_lines(got_path)]
    if got == ref:
        print(f"frames {name}: {len(got)} records, byte-equal to agent-fold run")
        return
    a, b = shape(ref), shape(got)
    fail = []
    for s in sorted(set(a) | set(b)):
        (na, da, ca), (nb, db, cb) = a[s], b[s]
        # Unkeyed records spread over partitions: ordered within each, not across them.
        if na != nb and not (s == "" and sorted(na) == sorted(nb)):
            i = next((i for i, (x, y) in enumerate(zip(na, nb)) if x != y), min(len(na), len(nb)))
            fail.append(f"session {s!r}: non-counter frames differ at #{i} ({len(na)} vs {len(nb)})")
        if (da, ca) != (db, cb):
            fail.append(f"session {s!r}: counters not conserved: Σdelta {da} vs {db}, Σframes {ca} vs {cb}")
    if fail:
        sys.exit(f"frames {name}: FAILED: " + "; ".join(fail[:5]))
    kept = sum(len(v[0]) for v in a.values())
    print(
        f"frames {name}: cluster {len(got)} records, run {len(ref)} (batch cuts differ): "
        f"{kept} non-counter frames identical in order per session (the unkeyed as a multiset), "
        f"counters conserved "
        f"(Σdelta {sum(v[1] for v in a.values())}, Σframes {sum(v[2] for v in a.values())}) "
        f"in {len(a)} sessions"
    )


def pressure(name, ref_path, got_path):
    want = defaultdict(list)
    for line in read_lines(ref_path):
        want[obj(line)["session"]].append(line)
    offsets, got = defaultdict(list), defaultdict(list)
    bad_keys = 0
    for line in read_lines(got_path):
        part, off, k, value = line.split(SEP, 3)
        offsets[int(part)].append(int(off))
        v = obj(value)
        if v is None or v.get("session") != k:
            bad_keys += 1
        got[k].append(value)
    gaps = [p for p, o in offsets.items() if o != list(range(len(o)))]
    lost = dups = unexpected = 0
    for s in set(want) | set(got):
        w, at, seen = want[s], 0, set()
        for value in got[s]:
            if at < len(w) and w[at] == value:
                seen.add(value)
                at += 1
            elif value in seen:
                dups += 1
            else:
                unexpected += 1
        lost += len(w) - at
    total = sum(len(w) for w in want.values())
    n = sum(len(g) for g in got.values())
    line = (
        f"pressure {name}: {total} records expected (agent-fold run --pressure-out), {n} in the "
        f"sibling topic: {dups} duplicates, {lost} lost, {unexpected} unexpected, "
        f"{bad_keys} not keyed by their session; offsets contiguous in "
        f"{len(offsets) - len(gaps)} of {len(offsets)} partitions"
    )
    print(line)
    if lost or unexpected or bad_keys or gaps or total == 0:
        sys.exit(f"pressure {name}: FAILED")


def layout_of(described):
    """(partitions, replication) of a `fluvio topic describe -O json` answer."""
    topics = json.loads(described)
    if not topics:
        return None
    replicas = topics[0]["spec"]["replicas"]
    if "computed" in replicas:
        c = replicas["computed"]
        return (c["partitions"], c["replicationFactor"])
    status = topics[0]["status"]["replicaMap"]
    return (len(status), min(len(r) for r in status.values()))


def layout(name, events_json, sibling_json):
    """The sibling topic the relay made is laid out as the event topic is."""
    want, got = layout_of(open(events_json).read()), layout_of(open(sibling_json).read())
    if got is None or got != want:
        sys.exit(f"layout {name}: the sibling topic is {got}, the event topic {want}: FAILED")
    print(f"e2e: layout {name}: {got[0]} partitions, replication {got[1]}, as the event topic: ok")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "minified":
        minified(args[0], args[1:])
        sys.exit(0)
    {"utf8": utf8, "key": key, "frames": frames, "pressure": pressure, "layout": layout}[cmd](*args)
