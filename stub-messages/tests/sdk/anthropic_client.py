"""A real client of stub-messages: the official Anthropic Python SDK.

Usage: anthropic_client.py BASE_URL SCENARIO
Prints one JSON object on stdout describing what the SDK saw; exits 1 on an SDK exception
(printed as {"error": ...}) so the Rust test can assert on both.
"""
import json
import sys

import anthropic

TOOLS = [
    {
        "name": "Read",
        "description": "Read a file",
        "input_schema": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}},
            "required": ["file_path"],
        },
    }
]


def blocks(message):
    return [b.model_dump(exclude_none=True) for b in message.content]


def main() -> int:
    base_url, scenario = sys.argv[1], sys.argv[2]
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-api03-probelab-SECRET-key", max_retries=2)
    first = [{"role": "user", "content": "read f.txt"}]
    kw = dict(model="claude-opus-5", max_tokens=1024, tools=TOOLS)
    out = {}
    try:
        if scenario == "stream":
            with client.messages.stream(messages=first, **kw) as stream:
                kinds = [event.type for event in stream]
                message = stream.get_final_message()
            out = {"events": kinds, "content": blocks(message), "stop_reason": message.stop_reason,
                   "id": message.id, "usage": message.usage.model_dump(exclude_none=True)}
        elif scenario == "json":
            message = client.messages.create(messages=first, **kw)
            out = {"content": blocks(message), "stop_reason": message.stop_reason, "id": message.id}
        elif scenario == "loop":
            # Two round trips: the tool_use is answered with a tool_result, then the final text.
            with client.messages.stream(messages=first, **kw) as stream:
                m1 = stream.get_final_message()
            uses = [b for b in m1.content if b.type == "tool_use"]
            second = first + [
                {"role": "assistant", "content": blocks(m1)},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "1\tdata"} for u in uses]},
            ]
            with client.messages.stream(messages=second, **kw) as stream:
                m2 = stream.get_final_message()
            out = {"first": blocks(m1), "second": blocks(m2), "stop_reasons": [m1.stop_reason, m2.stop_reason]}
        elif scenario == "strict":
            # What an ordinary program sends, for the strict stub to judge: a cached system prompt and tool,
            # metadata, thinking; a streamed turn replayed whole (thinking, text, tool_use) with its results
            # and a note after them; a non-streamed turn with stop sequences and tool_choice; an assistant
            # prefill; count_tokens with the same system and tools.
            cached = {"type": "ephemeral"}
            system = [{"type": "text", "text": "You are terse.", "cache_control": cached}]
            tools = [dict(TOOLS[0], cache_control=cached)]
            kw2 = dict(model="claude-opus-5", max_tokens=2048, tools=tools, system=system,
                       metadata={"user_id": "probelab"}, thinking={"type": "enabled", "budget_tokens": 1024})
            with client.messages.stream(messages=first, **kw2) as stream:
                m1 = stream.get_final_message()
            uses = [b for b in m1.content if b.type == "tool_use"]
            second = first + [
                {"role": "assistant", "content": blocks(m1)},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "1\tdata"} for u in uses]
                 + [{"type": "text", "text": "That was the file."}]},
            ]
            m2 = client.messages.create(messages=second, stop_sequences=["END"], tool_choice={"type": "auto"}, **kw2)
            third = second + [{"role": "assistant", "content": blocks(m2)}, {"role": "user", "content": "Say it again."},
                              {"role": "assistant", "content": "Again:"}]
            m3 = client.messages.create(messages=third, model="claude-opus-5", max_tokens=64, system="Be brief.")
            n = client.messages.count_tokens(model="claude-opus-5", messages=second, system=system, tools=tools)
            out = {"stop_reasons": [m1.stop_reason, m2.stop_reason, m3.stop_reason], "input_tokens": n.input_tokens,
                   "first": blocks(m1)}
        elif scenario == "unpaired":
            bad = first + [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x_1", "name": "Read", "input": {}}]},
                {"role": "user", "content": "no result"},
            ]
            client.messages.create(messages=bad, **kw)
            out = {"unexpected": "no error"}
        elif scenario == "count_tokens":
            r = client.messages.count_tokens(model="claude-opus-5", messages=first)
            out = {"input_tokens": r.input_tokens}
        elif scenario == "models":
            page = client.models.list()
            out = {"ids": [m.id for m in page.data]}
        else:
            raise SystemExit(f"unknown scenario {scenario}")
    except anthropic.APIStatusError as e:
        print(json.dumps({"error": type(e).__name__, "status": e.status_code, "body": e.body}))
        return 1
    except anthropic.APIError as e:
        print(json.dumps({"error": type(e).__name__, "message": str(e), "body": getattr(e, "body", None)}))
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
