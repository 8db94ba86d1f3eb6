#!/bin/bash
# scan.sh OUTROOT VERSION...: for each version: install (install.sh), run scan.toml (default settings),
# first.toml with ENABLE_TOOL_SEARCH=false (flat tool list) and lsp.toml with the LSP plugin; append the
# summary line to OUTROOT/summary.jsonl. Deletes an install this script made once the next version's
# fingerprint equals its own (unless it is 2.1.235 / 2.1.332 or a boundary side), so at most the boundary
# pairs stay.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$1; shift
mkdir -p "$root"
cache=~/.cache/probelab/claude-code
prev=""; prevfp=""; prevmine=0; prevkeep=0
for V in "$@"; do
  mine=0
  [ -e "$cache/$V" ] || { "$here/install.sh" "$V" >> "$root/install.log" 2>&1; mine=1; }
  [ -e "$cache/$V" ] || { echo "$V: not installed" >&2; continue; }
  d=$root/$V
  "$here/run.sh" "$V" "$here/scan.toml" "$d/scan"
  RUN_ENV="ENABLE_TOOL_SEARCH=false" "$here/run.sh" "$V" "$here/first.toml" "$d/flat"
  RUN_LSP=1 "$here/run.sh" "$V" "$here/lsp.toml" "$d/lsp"
  line=$(python3 "$here/summary.py" "$d")
  echo "$line" >> "$root/summary.jsonl"
  fp=$(echo "$line" | python3 -c 'import json,sys; print(json.load(sys.stdin)["fp"])')
  keep=0
  if [ -n "$prev" ] && [ "$fp" != "$prevfp" ]; then keep=1; prevkeep=1; fi
  echo "$V fp=$fp $( [ "$fp" != "$prevfp" ] && echo CHANGED )"
  if [ -n "$prev" ] && [ $prevmine = 1 ] && [ $prevkeep = 0 ] && [ "$prev" != 2.1.235 ] && [ "$prev" != 2.1.332 ]; then
    rm -rf "$cache/$prev"; echo "  removed $prev"
  fi
  prev=$V; prevfp=$fp; prevmine=$mine; prevkeep=$keep
done
