#!/bin/bash
# install.sh V... : install @anthropic-ai/claude-code@V into ~/.cache/probelab/claude-code/V (skip if present);
# appends "V seconds bytes" to research/install-times.txt
set -u
cache=~/.cache/probelab/claude-code
here=$(dirname "$0")
mkdir -p "$cache"
for V in "$@"; do
  if [ -e "$cache/$V" ]; then echo "$V: present"; continue; fi
  t0=$(date +%s.%N)
  tmp=$(mktemp -d "$cache/.tmp-XXXX")
  if npm install --no-audit --no-fund --ignore-scripts --no-save --cache "$tmp/.npm" --prefix "$tmp" "@anthropic-ai/claude-code@$V" >"$tmp.log" 2>&1; then
    rm -rf "$tmp/.npm"
    if [ -e "$cache/$V" ]; then rm -rf "$tmp"; echo "$V: raced, present"; continue; fi
    mv -T "$tmp" "$cache/$V"
    t1=$(date +%s.%N)
    sz=$(du -sb "$cache/$V" | cut -f1)
    printf '%s %.1f %s\n' "$V" "$(echo "$t1 - $t0" | bc)" "$sz" | tee -a "$here/install-times.txt"
    rm -f "$tmp.log"
  else
    echo "$V: install failed, see $tmp.log"; rm -rf "$tmp"
  fi
done
