"""A coding-agent runtime of ~40 lines: the official Anthropic SDK and two tools, Read and Write, named and
shaped as Claude Code's. probelab runs it as a command subject (see probelab.toml beside it)."""
import sys

import anthropic

TOOLS = [
    {"name": "Read", "description": "Reads a file, numbering its lines.",
     "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}},
                      "required": ["file_path"]}},
    {"name": "Write", "description": "Writes a file.",
     "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                      "required": ["file_path", "content"]}},
]


def run_tool(name, args):
    """The tool's result text and whether it is an error."""
    try:
        if name == "Read":
            with open(args["file_path"], encoding="utf-8") as f:
                return "".join(f"{n}\t{line}" for n, line in enumerate(f, 1)), False
        if name == "Write":
            with open(args["file_path"], "w", encoding="utf-8") as f:
                f.write(args["content"])
            return f"File created successfully at: {args['file_path']}", False
        return f"No such tool available: {name}", True
    except OSError as e:
        return str(e), True


client = anthropic.Anthropic()  # ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from the environment
messages = [{"role": "user", "content": sys.argv[1]}]
while True:
    reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, tools=TOOLS, messages=messages)
    messages.append({"role": "assistant", "content": reply.content})
    calls = [block for block in reply.content if block.type == "tool_use"]
    if reply.stop_reason != "tool_use" or not calls:
        break
    results = []
    for call in calls:
        text, is_error = run_tool(call.name, call.input)
        results.append({"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": is_error})
    messages.append({"role": "user", "content": results})
