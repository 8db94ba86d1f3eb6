#!/bin/bash
# measure.sh OUTROOT VERSION...: the three runs of scan.sh (scan.toml, flat first.toml, lsp.toml) for installed
# versions, without installing or deleting anything; appends summaries to OUTROOT/summary.jsonl.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$1; shift
mkdir -p "$root"
export RUN_TIMEOUT=${RUN_TIMEOUT:-90}
for V in "$@"; do
  d=$root/$V
  "$here/run.sh" "$V" "$here/scan.toml" "$d/scan"
  RUN_ENV="ENABLE_TOOL_SEARCH=false" "$here/run.sh" "$V" "$here/first.toml" "$d/flat"
  RUN_LSP=1 "$here/run.sh" "$V" "$here/lsp.toml" "$d/lsp"
  python3 "$here/summary.py" "$d" >> "$root/summary.jsonl"
  echo "$V $(tail -1 "$root/summary.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["fp"])')"
done
