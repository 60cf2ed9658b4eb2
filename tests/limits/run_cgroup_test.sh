#!/usr/bin/env bash
# The trainers in a memory cgroup of 1.5 GiB, as Slurm's cgroup plugin confines a job that
# asked for --mem=1536M: a model that fits trains; one whose model states or activations do
# not fit stops before training with status 1 and a message naming the need, the cgroup's
# limit and its file, the ranks sharing it and what to change, instead of being killed by
# the kernel without a word. Needs a cgroup it can make: cgroup v2 with the memory
# controller enabled for this process's cgroup's children, or v1's memory hierarchy, and
# the right to write there (root); otherwise it skips (status 77), saying why.
#   run_cgroup_test.sh BUILD_DIR DATA_DIR MPIRUN_LOCAL
set -uo pipefail
build=$1
data=$2
mpirun=$3
gpt2=$build/apps/zrt-gpt2
limit=$((1536 << 20))
skip() { echo "SKIP: $*"; exit 77; }

# This process's cgroup in the hierarchy that has the memory controller, and where it is.
v2_path=$(awk -F: '$1 == "0" && $2 == "" {print $3}' /proc/self/cgroup)
v1_path=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
v2_mount=$(awk '$0 ~ / - cgroup2 / && $4 == "/" {print $5; exit}' /proc/self/mountinfo)
v1_mount=$(awk '$0 ~ / - cgroup / && $NF ~ /(^|,)memory(,|$)/ && $4 == "/" {print $5; exit}' /proc/self/mountinfo)
cg=
if [ -n "$v2_mount" ] && [ -n "$v2_path" ] &&
  grep -qw memory "$v2_mount$v2_path/cgroup.subtree_control" 2>/dev/null; then
  cg=$v2_mount${v2_path%/}/zrt-limits-test-$$
  file=memory.max
elif [ -n "$v1_mount" ] && [ -n "$v1_path" ]; then
  cg=$v1_mount${v1_path%/}/zrt-limits-test-$$
  file=memory.limit_in_bytes
elif [ -n "$v2_mount" ]; then
  skip "cgroup v2 at $v2_mount, but memory is not in $v2_mount$v2_path/cgroup.subtree_control (enabling it needs that cgroup to hold no process) and there is no v1 memory hierarchy"
else
  skip "no cgroup hierarchy with the memory controller is mounted"
fi
mkdir "$cg" 2>/dev/null || skip "cannot make a cgroup at $cg (not root, or a read-only hierarchy)"
cleanup() {
  # The kernel lets go of a cgroup a moment after its last process has exited.
  for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
  [ -d "$cg" ] && echo "warning: could not remove $cg"
  rm -rf "$tmp"
}
tmp=$(mktemp -d /tmp/zrt-cgroup-test.XXXXXX)
trap cleanup EXIT
echo "$limit" > "$cg/$file" 2>/dev/null || skip "cannot set $cg/$file"
[ "$(cat "$cg/$file")" = "$limit" ] || skip "$cg/$file reads $(cat "$cg/$file") after writing $limit"
# The limit must be the tightest one: a node whose two ranks' share of its memory is smaller
# would make physical memory the limit the messages name.
physical=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024))
[ "$physical" -ge $((4 * limit)) ] || skip "this node has $physical bytes of memory, less than 4 x 1.5 GiB"
echo "cgroup: $cg ($file = 1.5 GiB)"

failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
quiet=(--steps 2 --eval-every 0 --sample-every -1)
# run NAME COMMAND...: the command in the cgroup, its output in $tmp/NAME.log, its status in
# $rc; killed after 120 s.
run() {
  local name=$1
  shift
  (cd "$tmp" && exec bash -c 'echo $$ > "$0/cgroup.procs" && exec timeout -s KILL 120 "$@"' \
    "$cg" "$@") > "$tmp/$name.log" 2>&1
  rc=$?
  echo "== $name: status $rc"
  tail -n 3 "$tmp/$name.log"
}
expect() {  # expect NAME STATUS TEXT...
  local name=$1 status=$2 text
  shift 2
  [ "$rc" = "$status" ] || fail "$name: status $rc, expected $status"
  for text in "$@"; do
    grep -qF -- "$text" "$tmp/$name.log" || fail "$name: the output lacks '$text'"
  done
}
named="the memory cgroup's limit of 1.5 GiB ($cg/$file)"

# GPT-2 124M: 2.05 GiB of model states at stage 2 on one rank.
run gpt2 "$gpt2" --config gpt2 --data "$data/moby-dick" "${quiet[@]}"
expect gpt2 1 "zrt_engine_commit: rank 0: the model states need 2.05 GiB of host memory on this rank at ZeRO stage 2 over 1 rank" \
  "more under $named (it uses" "To fit: more ranks at ZeRO stage 3" "Slurm: --mem or --mem-per-cpu"

# Two ranks in the cgroup share it: 768 MiB each, less than a rank's 1.35 GiB at stage 2.
run gpt2_np2 "$mpirun" 2 "$gpt2" --config gpt2 --data "$data/moby-dick" "${quiet[@]}"
[ "$rc" -ne 0 ] && [ "$rc" -ne 137 ] || fail "gpt2_np2: status $rc, expected a failure without a kill"
expect gpt2_np2 "$rc" "zrt_engine_commit: rank 0: the model states need 1.35 GiB of host memory on this rank at ZeRO stage 2 over 2 ranks" \
  "$named, shared by 2 ranks on this node (it uses"

# The model states fit, the activations of 16 x 1024 tokens (3.81 GiB) do not.
run d2_acts "$gpt2" --config d2 --batch 16 --seq 1024 --data "$data/moby-dick" "${quiet[@]}"
expect d2_acts 1 "zrt-gpt2: this rank needs 3.81 GiB more host memory (activations for 16 x 1024 tokens: 3.81 GiB)" \
  "under the memory cgroup's limit of 1.5 GiB (it uses" "or a larger memory limit for the job (Slurm: --mem or --mem-per-cpu)"

# What fits trains.
run d2 "$gpt2" --config d2 --data "$data/moby-dick" "${quiet[@]}"
expect d2 0 "memory per rank: model states 133 MiB"

[ "$failures" -eq 0 ] && echo "cgroup: every case as expected"
exit $((failures > 0))
