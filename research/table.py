#!/usr/bin/env python3
"""table.py SUMMARY.jsonl: the markdown full-scan table (one row per version) with legends for the tool,
beta and result variants (each distinct value gets a letter in order of first appearance)."""
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]

class Ids:
    def __init__(self, prefix): self.p, self.v = prefix, []
    def __call__(self, x):
        k = json.dumps(x, sort_keys=True)
        if k not in self.v: self.v.append(k)
        return f"{self.p}{self.v.index(k) + 1}"
top, dfr, flat, beta = Ids("T"), Ids("D"), Ids("F"), Ids("B")
res = {i: Ids(f"r{i}.") for i in (3, 4, 5, 13)}
rows = []
for d in L:
    r = d["results"]
    lsp = d["lsp"]
    sd = lsp.get("shutdown_raw")
    sd = "—" if sd is None else ("{}" if '"params":{}' in sd else ("absent" if '"params"' not in sd else sd))
    rows.append([d["version"], top(sorted(d["tools"])), dfr(d["announced_deferred"] + [f"{x}(defer_loading)" for x in d["deferred_in_tools"]]),
                 "yes" if d["toolsearch"] else "no", flat(sorted(d["flat_tools"] or [])), d["model"], str(d["max_tokens"]), d["effort"],
                 (d["thinking"] or {}).get("display", "—"), beta(d["beta"]),
                 "ok" if d["user_agent"] == f"claude-cli/{d['version']} (external, sdk-cli)" else d["user_agent"],
                 res[3](r[2][:3]), res[4](r[3][:3]), res[5](r[4][:3]), res[13](r[12][:3]),
                 "".join("1" if x else "0" for x in lsp.get("lsp_in_request", [])), sd])
hdr = ["version", "tools[] (top-level)", "deferred (announced / defer_loading)", "ToolSearch", "tools with ENABLE_TOOL_SEARCH=false",
       "model", "max_tokens", "effort", "thinking.display", "anthropic-beta", "User-Agent", "r3 Bash silent $$", "r4 Bash noisy",
       "r5 Read 262145 B", "r13 TaskOutput nope", "LSP in req 1,2,3", "LSP shutdown params"]
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
for row in rows:
    print("| " + " | ".join(row) + " |")
def legend(name, ids, fmt=lambda x: x):
    print(f"\n{name}:\n")
    for i, k in enumerate(ids.v, 1):
        print(f"- **{ids.p}{i}**: {fmt(json.loads(k))}")
lst = lambda x: ", ".join(x) if x else "(none)"
legend("Top-level tools (sorted)", top, lst)
legend("Deferred tools (announced by name in the first request's system message, in its order; then tools[] entries with defer_loading)", dfr, lst)
legend("Tools with ENABLE_TOOL_SEARCH=false (sorted)", flat, lst)
legend("anthropic-beta (in header order)", beta, lambda x: "`" + ",".join(x) + "`")
for i in (3, 4, 5, 13):
    legend(f"Result {i} ([tool, is_error, text], normalised: <sb> sandbox, <slug>, <uuid>, <id>)", res[i], lambda x: "`" + json.dumps(x, ensure_ascii=False) + "`")
