#!/usr/bin/env bash
# The tools' man1 pages (docs/man/man1, installed by cmake --install): one for each tool
# the manual names, each well-formed troff (groff -man -ww prints no warning) whose NAME
# is its file's.
set -euo pipefail
src=$1
dir=$src/docs/man/man1
status=0
for tool in zrt-info zrt-ckpt zrt-plan zrt-bench zrt-gpt2 zrt-bert; do
  page=$dir/$tool.1
  if [ ! -f "$page" ]; then
    echo "FAIL: no man page for $tool ($page)"
    status=1
    continue
  fi
  if ! grep -q "^$tool \\\\- " "$page"; then
    echo "FAIL: $page's NAME line is not '$tool \\- ...'"
    status=1
  fi
  if command -v groff > /dev/null; then
    warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1 || true)
    if [ -n "$warnings" ]; then
      echo "FAIL: $page: $warnings"
      status=1
    fi
  fi
done
[ $status -eq 0 ] && echo "ok: the man1 pages of the tools are there and well-formed"
exit $status
