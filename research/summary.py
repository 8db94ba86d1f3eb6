#!/usr/bin/env python3
"""summary.py DIR: one JSON line for a version measured by scan.sh (DIR/scan, DIR/flat, DIR/lsp).
The fields named in FP make the behaviour fingerprint used to spot boundaries."""
import json, os, re, sys, hashlib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runpy
first = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "first-request.py"))["shape"]
results = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.py"))["results"]

def norm(t):
    if t is None:
        return None
    t = re.sub(r"-tmp-cc-run-[A-Za-z0-9]+-work", "<slug>", t)
    t = re.sub(r"/tmp/cc-run-\w+", "<sb>", t)
    t = re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>", t)
    t = re.sub(r"\(ID: \w+\)", "(ID: <id>)", t)
    t = re.sub(r"ID: \w+\.", "ID: <id>.", t)
    t = re.sub(r"tasks/\w+\.output", "tasks/<id>.output", t)
    return t

def main(d):
    V = open(os.path.join(d, "scan", "version.txt")).read().strip()
    s = {"version": V}
    sh = first(os.path.join(d, "scan", "record.jsonl")) or {}
    s.update({k: sh.get(k) for k in ["model", "max_tokens", "tools", "deferred_in_tools", "announced_deferred", "toolsearch", "beta", "user_agent", "thinking", "effort"]})
    fl = first(os.path.join(d, "flat", "record.jsonl")) or {}
    s["flat_tools"] = fl.get("tools")
    s["flat_deferred"] = (fl.get("deferred_in_tools") or []) + (fl.get("announced_deferred") or [])
    s["results"] = [[r["tool"], r["is_error"], norm(r["text"])] for r in results(os.path.join(d, "scan", "record.jsonl"))]
    lsp = {}
    lr = os.path.join(d, "lsp", "record.jsonl")
    if os.path.exists(lr):
        rs = results(lr)
        lsp["results"] = [[r["tool"], r["is_error"], norm(r["text"])] for r in rs]
        reqs = [json.loads(l) for l in open(lr)]
        reqs = [e for e in reqs if e.get("request") and e["request"].get("tools")]
        lsp["lsp_in_request"] = [any(t["name"] == "LSP" for t in e["request"]["tools"]) for e in reqs]
    tr = os.path.join(d, "lsp", "lsp-trace.jsonl")
    if os.path.exists(tr):
        ms = [json.loads(l) for l in open(tr)]
        lsp["methods"] = [m.get("msg", {}).get("method", "<eof>" if m.get("eof") else "<response>") for m in ms]
        sd = [m for m in ms if m.get("msg", {}).get("method") == "shutdown"]
        lsp["shutdown_raw"] = sd[0]["raw"] if sd else None
    s["lsp"] = lsp
    s["exit"] = {k: open(os.path.join(d, k, "exit.txt")).read().split() for k in ["scan", "flat", "lsp"] if os.path.exists(os.path.join(d, k, "exit.txt"))}
    FP = ["model", "max_tokens", "tools", "deferred_in_tools", "announced_deferred", "toolsearch", "flat_tools", "flat_deferred", "results"]
    fpo = {k: s[k] for k in FP}
    fpo["lsp"] = {k: lsp.get(k) for k in ["results", "shutdown_raw", "lsp_in_request"]}
    s["fp"] = hashlib.sha256(json.dumps(fpo, sort_keys=True).encode()).hexdigest()[:12]
    print(json.dumps(s))

main(sys.argv[1])
