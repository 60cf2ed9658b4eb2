#!/usr/bin/env bash
# Runs the examples of the manual, README.md and then every chapter of docs/ (in the order
# README.md's "Where to go next" lists them, then any other docs/*.md), so the manual cannot
# drift from the code.
#   run_readme_examples.sh README.md BUILD_DIR [PAGE.md...]
# With pages named, only those run (README.md's own blocks only if it is one of them).
# Every page runs in one scratch folder, in turn, so a chapter may use what an earlier one
# made (docs/onnx.md exports the checkpoint that docs/trainers.md trained).
#   <!-- readme-test: c FILE -->  the next ```c block is written to FILE
#   <!-- readme-test: sh -->      the next ```sh block runs, line by line, and must succeed
#   <!-- readme-test: output CMD --> CMD runs (and must succeed), and the next ``` block
#                                 must be what it prints (compare_output.py: timings and
#                                 resident sizes as placeholders, every other figure exact)
# With README_REFRESH_DIR=DIR a quote that differs is kept in DIR with what the program
# printed, and the run goes on: tests/readme/refresh_quoted.py DIR then rewrites those quotes
# from this run's output (after a change that changes the figures, such as a loss).
# They run in a scratch folder where build/, runtime/, scripts/, apps/, slurm/ and every
# folder with an include/ point at the real ones, so the manual can show the paths a user
# types from the repository root.
set -euo pipefail
readme=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
build=$(cd "$2" && pwd)
src=$(cd "$(dirname "$readme")" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# The pages, in reading order: README.md, the chapters as its "Where to go next" lists them,
# then any other chapter.
pages=()
add_page() {
  local p
  for p in "${pages[@]}"; do
    if [ "$p" = "$1" ]; then return 0; fi
  done
  pages+=("$1")
}
if [ $# -gt 2 ]; then
  for p in "${@:3}"; do add_page "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"; done
else
  add_page "$readme"
  for p in $(sed -n '/^## Where to go next/,/^## [^W]/p' "$readme" |
    grep -o '](docs/[^)#]*\.md' | sed 's/^](//'); do
    if [ -f "$src/$p" ]; then add_page "$src/$p"; fi
  done
  for p in "$src"/docs/*.md; do add_page "$p"; done
fi

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
# The folders the examples name, and every layer with public headers (LAYER/include), so
# `-ILAYER/include` works wherever the headers live. Not the whole tree: a source tree's
# own run/ or runs/ (make run's output) must not mix with the examples'.
for d in runtime scripts apps slurm "$src"/*/include; do
  d=${d%/include}
  d=${d##*/}
  if [ -d "$src/$d" ] && [ ! -e "$work/$d" ]; then ln -s "$src/$d" "$work/$d"; fi
done
cd "$work"

# Runs the tested blocks of one page.
blocks=0 outputs=0
run_page() {
  local page=$1 name=${1#"$src/"} started page_started=$SECONDS page_blocks=$blocks
  local mode="" file="" command="" in_block=0 line
  echo "==== $name"
  if [ ! -f "$page" ]; then
    echo "FAIL: $page is not a file"
    exit 1
  fi
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
        echo "== block $blocks ($name) is the output of: $command"
        bash -euo pipefail -c "$command" > output.txt 2>&1 < /dev/null || {
          cat output.txt
          echo "FAIL: $name: '$command' failed"
          exit 1
        }
        python3 "$here/compare_output.py" block.txt output.txt || {
          echo "== in $name; what it printed:"
          cat output.txt
          if [ -n "${README_REFRESH_DIR:-}" ]; then
            # Kept for refresh_quoted.py, which rewrites the quote from this run's output.
            n=$(find "$README_REFRESH_DIR" -name '*.page' | wc -l)
            printf '%s\n' "$page" > "$README_REFRESH_DIR/$n.page"
            cp block.txt "$README_REFRESH_DIR/$n.quoted"
            cp output.txt "$README_REFRESH_DIR/$n.printed"
          else
            exit 1
          fi
        }
      else
        echo "== running block $blocks ($name):"
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
  done < "$page"
  if [ $in_block -ne 0 ]; then
    echo "FAIL: $name: a tested block is not closed"
    exit 1
  fi
  echo "==== $name: $((blocks - page_blocks)) blocks in $((SECONDS - page_started)) s"
}

for page in "${pages[@]}"; do run_page "$page"; done

if [ $# -le 2 ] && [ $outputs -lt 2 ]; then
  echo "FAIL: found only $outputs quoted outputs in the manual"
  exit 1
fi
if [ $# -le 2 ] && [ $blocks -lt 3 ]; then
  echo "FAIL: found only $blocks tested blocks in the manual"
  exit 1
fi
echo "ok: $blocks blocks of ${#pages[@]} pages ran ($outputs of them outputs compared) in $SECONDS s"
