#!/usr/bin/env python3
"""first-request.py RECORD.jsonl [--json]: the first main request's shape (tools with defer_loading, the
deferred tools announced by name in the messages, model, max_tokens, anthropic-beta, User-Agent, ...)."""
import json, re, sys

def texts(content):
    if isinstance(content, str):
        yield content
    else:
        for b in content or []:
            if b.get("type") == "text":
                yield b["text"]

def announced(req):
    """Names listed after 'The following deferred tools are now available via ToolSearch' (any message)."""
    names = []
    for m in req.get("messages", []):
        for t in texts(m.get("content")):
            i = t.find("deferred tools are now available")
            if i < 0:
                continue
            rest = t[i:].split("\n")[1:]
            for line in rest:
                s = line.strip()
                if not s or " " in s:
                    break
                names.append(s)
    return names

def shape(path):
    for line in open(path):
        e = json.loads(line)
        req = e.get("request")
        if e.get("method") == "POST" and e.get("path") == "/v1/messages" and req and req.get("tools"):
            tools = req["tools"]
            h = e["headers"]
            return {
                "model": req.get("model"),
                "max_tokens": req.get("max_tokens"),
                "tools": [t["name"] for t in tools if not t.get("defer_loading")],
                "deferred_in_tools": [t["name"] for t in tools if t.get("defer_loading")],
                "announced_deferred": announced(req),
                "toolsearch": any(t["name"] == "ToolSearch" for t in tools),
                "beta": h.get("anthropic-beta", "").split(","),
                "user_agent": h.get("user-agent"),
                "thinking": req.get("thinking"),
                "effort": (req.get("output_config") or {}).get("effort"),
                "billing": next((b["text"] for b in req.get("system", []) if "billing" in b.get("text", "")), None),
            }
    return None

if __name__ == "__main__":
    s = shape(sys.argv[1])
    if "--json" in sys.argv:
        print(json.dumps(s))
    else:
        for k, v in (s or {}).items():
            print(f"{k}: {v}")
