#!/usr/bin/env python3
"""Rewrites calls of the former diagnose entry points into diagnose.Run.

  diagnose.Check(S, SRC, N)              -> diagnose.Run(diagnose.Data{Latest: S, Source: SRC, Notes: N})
  diagnose.CheckWindow(W, SRC, N)        -> diagnose.Run(diagnose.Data{Window: W, Source: SRC, Notes: N})
  diagnose.CheckRecording(S, W, SRC, N)  -> diagnose.Run(diagnose.Data{Latest: S, Window: W, Source: SRC, Notes: N})
  diagnose.CheckInterval(E, S, SRC, N)   -> diagnose.Run(diagnose.Data{Latest: S, Earlier: E, Source: SRC, Notes: N})

Notes of nil are left out. usage: scripts/migrate-check-calls.py FILE...
"""
import re
import sys

FIELDS = {
    "Check": ["Latest", "Source", "Notes"],
    "CheckWindow": ["Window", "Source", "Notes"],
    "CheckRecording": ["Latest", "Window", "Source", "Notes"],
    "CheckInterval": ["Earlier", "Latest", "Source", "Notes"],
}
ORDER = ["Latest", "Earlier", "Window", "Source", "Notes"]
CALL = re.compile(r"\bdiagnose\.(CheckWindow|CheckRecording|CheckInterval|Check)\(")


def args(s, i):
    """Splits the arguments starting at s[i] (just after the parenthesis);
    returns them and the index after the closing parenthesis."""
    out, depth, start, q = [], 0, i, None
    while True:
        c = s[i]
        if q:
            if c == "\\" and q != "`":
                i += 1
            elif c == q:
                q = None
        elif c in "\"'`":
            q = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                out.append(s[start:i].strip())
                return out, i + 1
            depth -= 1
        elif c == "," and depth == 0:
            out.append(s[start:i].strip())
            start = i + 1
        i += 1


def rewrite(s):
    while True:
        m = CALL.search(s)
        if not m:
            return s
        a, end = args(s, m.end())
        kv = dict(zip(FIELDS[m.group(1)], a))
        if kv.get("Notes") == "nil":
            del kv["Notes"]
        lit = ", ".join(f"{k}: {kv[k]}" for k in ORDER if k in kv)
        s = s[: m.start()] + "diagnose.Run(diagnose.Data{" + lit + "})" + s[end:]


for f in sys.argv[1:]:
    src = open(f).read()
    out = rewrite(src)
    if out != src:
        open(f, "w").write(out)
