#!/usr/bin/env python3
"""diff-summary.py SUMMARY.jsonl [A B]: the fields that differ between consecutive versions (or A and B),
ignoring version / user_agent / exit / fp."""
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
by = {x["version"]: x for x in L}
IGN = {"version", "user_agent", "exit", "fp"}
def diff(a, b):
    print(f"=== {a['version']} -> {b['version']}")
    for k in a:
        if k in IGN or a[k] == b.get(k):
            continue
        if k == "results":
            for i, (x, y) in enumerate(zip(a[k], b[k]), 1):
                if x != y:
                    print(f"  result {i}:\n    - {x}\n    + {y}")
        elif isinstance(a[k], list) and all(isinstance(v, str) for v in a[k] + (b.get(k) or [])):
            sa, sb = set(a[k]), set(b.get(k) or [])
            print(f"  {k}: -{sorted(sa - sb)} +{sorted(sb - sa)}" + ("  (order)" if sa == sb else ""))
        else:
            print(f"  {k}:\n    - {a[k]}\n    + {b.get(k)}")
if len(sys.argv) > 3:
    diff(by[sys.argv[2]], by[sys.argv[3]])
else:
    for a, b in zip(L, L[1:]):
        diff(a, b)
