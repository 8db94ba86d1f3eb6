#!/bin/bash
# run.sh VERSION SCRIPT.toml OUTDIR [claude args...]
# One run of claude-code@VERSION against the stub playing SCRIPT (with {cwd} / {sandbox} / {research}
# replaced), in a fresh sandbox. Extra env for claude: RUN_ENV="A=1 B=2". RUN_LSP=1 adds --plugin-dir
# with a plugin whose LSP server is research/fake-lsp.py (trace in OUTDIR/lsp-trace.jsonl; in .lsp.json, or
# under lspServers in plugin.json with RUN_LSP_IN_MANIFEST=1).
# Leaves in OUTDIR: record.jsonl (the stub's wire record), stream.jsonl (claude stdout), stderr.txt,
# stub-stderr.txt, exit.txt, version.txt.
set -u
V=$1; S=$2; OUT=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
bin=~/.cache/probelab/claude-code/$V/node_modules/@anthropic-ai/claude-code-linux-x64/claude
[ -x "$bin" ] || { echo "no binary for $V" >&2; exit 2; }
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
sb=$(mktemp -d /tmp/cc-run-XXXX)
mkdir -p "$sb/work" "$sb/home" "$sb/tmp"
# fixtures used by the research scripts
python3 - "$sb/work" <<'PY'
import sys, os
w = sys.argv[1]
line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"
def rep(n): return (line * (n // len(line) + 1))[:n]
open(os.path.join(w, "over-limit.txt"), "w").write(rep(262145))
open(os.path.join(w, "at-limit.txt"), "w").write(rep(262144))
open(os.path.join(w, "small.txt"), "w").write("one\ntwo\n")
open(os.path.join(w, "a.probe"), "w").write("class Probe:\n  def run(self): pass\n  LIMIT = 3\n")
PY
sed -e "s#{cwd}#$sb/work#g" -e "s#{sandbox}#$sb#g" -e "s#{research}#$here#g" "$S" > "$sb/script.toml"
extra=()
if [ "${RUN_LSP:-}" = 1 ]; then
  mkdir -p "$sb/plugin/.claude-plugin"
  echo '{"name": "probe-lsp", "version": "0.0.1", "description": "fake LSP for research"}' > "$sb/plugin/.claude-plugin/plugin.json"
  srv=$(printf '{"probe": {"command": "python3", "args": ["%s", "%s"], "extensionToLanguage": {".probe": "probe"}}}' "$here/fake-lsp.py" "$sb/lsp-trace.jsonl")
  if [ "${RUN_LSP_IN_MANIFEST:-}" = 1 ]; then   # the servers under lspServers in plugin.json instead of .lsp.json
    echo "{\"name\": \"probe-lsp\", \"version\": \"0.0.1\", \"description\": \"fake LSP for research\", \"lspServers\": $srv}" > "$sb/plugin/.claude-plugin/plugin.json"
  else
    echo "$srv" > "$sb/plugin/.lsp.json"
  fi
  extra=(--plugin-dir "$sb/plugin")
fi
"$repo/target/debug/stub-messages" --script "$sb/script.toml" --record "$OUT/record.jsonl" > "$sb/url" 2> "$OUT/stub-stderr.txt" &
stub=$!
for i in $(seq 50); do [ -s "$sb/url" ] && break; sleep 0.1; done
url=$(head -1 "$sb/url")
echo "$V" > "$OUT/version.txt"
t0=$(date +%s.%N)
( cd "$sb/work" && env -i PATH="$PATH" HOME="$sb/home" IS_SANDBOX=1 ANTHROPIC_BASE_URL="$url" ANTHROPIC_API_KEY=sk-ant-fake \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 TMPDIR="$sb/tmp" ${RUN_ENV:-} \
  timeout -k 5 ${RUN_TIMEOUT:-180} "$bin" -p "go" --dangerously-skip-permissions --output-format stream-json --verbose "${extra[@]}" "$@" \
  > "$OUT/stream.jsonl" 2> "$OUT/stderr.txt" < /dev/null )
echo "$? $(echo "$(date +%s.%N) - $t0" | bc)" > "$OUT/exit.txt"
sleep 0.5
kill "$stub"; wait "$stub" 2>/dev/null
[ -f "$sb/lsp-trace.jsonl" ] && cp "$sb/lsp-trace.jsonl" "$OUT/"
rm -rf "$sb"
