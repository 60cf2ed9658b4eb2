#!/usr/bin/env bash
# Runs the examples of README.md, so the manual cannot drift from the code.
#   <!-- readme-test: c FILE -->  the next ```c block is written to FILE
#   <!-- readme-test: sh -->      the next ```sh block runs, line by line, and must succeed
#   <!-- readme-test: output CMD --> CMD runs (and must succeed), and the next ``` block
#                                 must be what it prints (compare_output.py: timings and
#                                 resident sizes as placeholders, every other figure exact)
# They run in a scratch folder where build/, runtime/, scripts/ and apps/ point at the real
# ones, so the README can show the paths a user types from the repository root.
set -euo pipefail
readme=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
build=$(cd "$2" && pwd)
src=$(cd "$(dirname "$readme")" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
# A block that fails after starting the README's local Slurm must not leave it running.
cleanup() {
  if [ -n "${ZRT_SLURM_DIR:-}" ] && [ -d "$ZRT_SLURM_DIR" ]; then
    "$src/slurm/local-cluster" stop > /dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
ln -s "$build" "$work/build"
ln -s "$src/runtime" "$work/runtime"
ln -s "$src/scripts" "$work/scripts"
ln -s "$src/apps" "$work/apps"
ln -s "$src/slurm" "$work/slurm"
cd "$work"

mode="" file="" command="" in_block=0 blocks=0 outputs=0
while IFS= read -r line || [ -n "$line" ]; do
  if [ $in_block -eq 0 ]; then
    if [[ $line =~ ^\<!--\ readme-test:\ output\ (.+)\ --\>$ ]]; then
      mode=output
      command=${BASH_REMATCH[1]}
    elif [[ $line =~ ^\<!--\ readme-test:\ (c|sh)\ ?([^ ]*)\ --\>$ ]]; then
      mode=${BASH_REMATCH[1]}
      file=${BASH_REMATCH[2]}
    elif [[ -n $mode && $line =~ ^\`\`\` ]]; then
      in_block=1
      : > block.txt
    fi
    continue
  fi
  if [[ $line =~ ^\`\`\`$ ]]; then
    in_block=0
    blocks=$((blocks + 1))
    started=$SECONDS
    if [ "$mode" = c ]; then
      cp block.txt "$file"
      echo "== wrote $file"
    elif [ "$mode" = output ]; then
      outputs=$((outputs + 1))
      echo "== block $blocks is the output of: $command"
      bash -euo pipefail -c "$command" > output.txt 2>&1 < /dev/null || {
        cat output.txt
        echo "FAIL: '$command' failed"
        exit 1
      }
      python3 "$here/compare_output.py" block.txt output.txt || {
        echo "== what it printed:"
        cat output.txt
        exit 1
      }
    else
      echo "== running block $blocks:"
      cat block.txt
      # Continuation lines (ending in a backslash) belong to one command.
      bash -euo pipefail block.txt < /dev/null
    fi
    # Each block's time, so a slow example shows in the test's log.
    echo "== block $blocks took $((SECONDS - started)) s"
    mode=""
    continue
  fi
  printf '%s\n' "$line" >> block.txt
done < "$readme"

if [ $outputs -lt 2 ]; then
  echo "FAIL: found only $outputs quoted outputs in $readme"
  exit 1
fi
if [ $blocks -lt 3 ]; then
  echo "FAIL: found only $blocks tested blocks in $readme"
  exit 1
fi
echo "ok: $blocks README blocks ran ($outputs of them outputs compared)"
