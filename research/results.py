#!/usr/bin/env python3
"""results.py RECORD.jsonl [--json]: every tool_result the subject sent, in tool_use order:
(n, tool name, is_error key as sent, text). Texts joined from text blocks; system-reminder suffixes kept."""
import json, sys

def results(path):
    uses, res = {}, {}
    order = []
    for line in open(path):
        e = json.loads(line)
        req = e.get("request")
        if not req or e.get("path") != "/v1/messages":
            continue
        for m in req.get("messages", []):
            c = m.get("content")
            if isinstance(c, str):
                continue
            for b in c:
                if b.get("type") == "tool_use" and b["id"] not in uses:
                    uses[b["id"]] = b["name"]; order.append(b["id"])
                if b.get("type") == "tool_result" and b["tool_use_id"] not in res:
                    cc = b.get("content")
                    if isinstance(cc, list):
                        cc = "\n".join(x.get("text", f"<{x.get('type')}>") for x in cc)
                    res[b["tool_use_id"]] = (b.get("is_error", "absent"), cc)
    out = []
    for n, i in enumerate(order, 1):
        ie, t = res.get(i, ("none", None))
        out.append({"n": n, "tool": uses[i], "is_error": ie, "text": t})
    return out

if __name__ == "__main__":
    r = results(sys.argv[1])
    if "--json" in sys.argv:
        print(json.dumps(r))
    else:
        for x in r:
            print(f"--- {x['n']} {x['tool']} is_error={x['is_error']}\n{x['text']}")
