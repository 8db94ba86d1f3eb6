#!/usr/bin/env python3
"""A minimal LSP server over stdio: logs every JSON-RPC message it receives (one JSON line each, with the
arrival time) to the file named by argv[1], answers initialize / definition / shutdown, exits on `exit`."""
import json, sys, time

trace = open(sys.argv[1], "a", buffering=1)
inp, out = sys.stdin.buffer, sys.stdout.buffer

def send(obj):
    body = json.dumps(obj).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()

while True:
    headers = {}
    while True:
        line = inp.readline()
        if not line:
            trace.write(json.dumps({"t": time.time(), "eof": True}) + "\n")
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        k, _, v = line.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
    body = inp.read(int(headers.get("content-length", "0")))
    msg = json.loads(body)
    # keep the raw params text too: {} vs null vs absent matters
    trace.write(json.dumps({"t": time.time(), "msg": msg, "has_params": "params" in msg, "raw": body.decode()}) + "\n")
    m, i = msg.get("method"), msg.get("id")
    if i is None:
        if m == "exit":
            sys.exit(0)
        continue
    if m == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {"capabilities": {"textDocumentSync": 1, "definitionProvider": True, "hoverProvider": True}, "serverInfo": {"name": "fake-lsp-py"}}})
    elif m == "textDocument/definition":
        uri = msg["params"]["textDocument"]["uri"]
        send({"jsonrpc": "2.0", "id": i, "result": [{"uri": uri, "range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 9}}}]})
    elif m == "shutdown":
        send({"jsonrpc": "2.0", "id": i, "result": None})
    else:
        send({"jsonrpc": "2.0", "id": i, "result": None})
