#!/usr/bin/env bash
# The shared library must export the zrt_ prefix only: no C++ internals, no symbols of
# the libraries it embeds (fmt, nlohmann-json), nothing a program could bind to by
# accident.
set -euo pipefail
lib=$1
all=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}')
ours=$(echo "$all" | grep -c '^zrt_' || true)
others=$(echo "$all" | grep -v '^zrt_' | grep -v '^$' || true)
if [ -n "$others" ]; then
  echo "FAIL: $lib exports symbols outside zrt_*:"
  echo "$others" | head -20
  exit 1
fi
if [ "$ours" -lt 20 ]; then
  echo "FAIL: $lib exports only $ours zrt_* symbols; the public API is missing"
  exit 1
fi
echo "ok: $lib exports $ours symbols, all zrt_*"
