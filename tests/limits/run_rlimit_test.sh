#!/usr/bin/env bash
# The trainers under the process limits a site or a user sets: ulimit -v (RLIMIT_AS, which
# counts the pools' reserved address space) and ulimit -d (RLIMIT_DATA). A model that fits
# trains; one whose model states or activations do not fit stops before training, with
# status 1 and a message that names the need, the limit and what to change.
#   run_rlimit_test.sh BUILD_DIR DATA_DIR MPIRUN_LOCAL (DATA_DIR holds moby-dick/ and
#   bert/moby-dick/)
set -uo pipefail
build=$1
data=$2
mpirun=$3
gpt2=$build/apps/zrt-gpt2
bert=$build/apps/zrt-bert
tmp=$(mktemp -d /tmp/zrt-rlimit-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
quiet=(--steps 2 --eval-every 0 --sample-every -1)
core=$(taskset -pc $$ | sed 's/.*: //; s/[,-].*//')  # the first core this test may use

# run NAME LIMIT PROGRAM ARGS...: the program under `ulimit LIMIT` (e.g. -v 1500000, in
# KiB) on one core (the threads a process runs, and so the address space it maps besides the
# pools, grow with its cores: one keeps the case the same on every machine); its output in
# $tmp/NAME.log, its status in $rc. Killed after 120 s: a run that hangs (a library spinning
# on a failed allocation) fails the test instead of holding it.
run() {
  local name=$1 limit=$2
  shift 2
  (cd "$tmp" && ulimit $limit && OPENBLAS_NUM_THREADS=1 exec taskset -c "$core" \
    timeout -s KILL 120 "$@") > "$tmp/$name.log" 2>&1
  rc=$?
  echo "== $name (ulimit $limit): status $rc"
  tail -n 3 "$tmp/$name.log"
}
# expect NAME STATUS TEXT...: the run ended with STATUS and its output holds every TEXT.
expect() {
  local name=$1 status=$2 text
  shift 2
  [ "$rc" = "$status" ] || fail "$name: status $rc, expected $status"
  for text in "$@"; do
    grep -qF -- "$text" "$tmp/$name.log" || fail "$name: the output lacks '$text'"
  done
}

# 1.43 GiB of address space: GPT-2 d2 (133 MiB of model states) trains. The host pool used
# to reserve the node's physical memory and failed at once.
run d2_as -v1500000 "$gpt2" --config d2 --data "$data/moby-dick" "${quiet[@]}"
expect d2_as 0 "memory per rank: model states 133 MiB"

# GPT-2 124M needs 2.05 GiB of model states at stage 2 on one rank: more than the host pool
# the address space leaves room for.
run gpt2_as -v1500000 "$gpt2" --config gpt2 --data "$data/moby-dick" "${quiet[@]}"
expect gpt2_as 1 "zrt_engine_commit: rank 0: the model states need 2.05 GiB of host memory on this rank at ZeRO stage 2 over 1 rank" \
  "and its host pool may hold" "(memory.host.limit = 0: by default half of what RLIMIT_AS (ulimit -v) of 1.43 GiB leaves free" \
  "To fit: more ranks at ZeRO stage 3" "a larger memory.host.limit or a larger limit behind its default"

# A pool limit set by hand beyond the address space: the reservation fails naming RLIMIT_AS.
run d2_pool_by_hand -v1500000 env ZRT_MEMORY_HOST_LIMIT=2G "$gpt2" --config d2 \
  --data "$data/moby-dick" "${quiet[@]}"
expect d2_pool_by_hand 1 "cannot reserve 2 GiB of address space: mmap: Cannot allocate memory (RLIMIT_AS, ulimit -v, is 1.43 GiB)"

# RLIMIT_DATA counts the memory the pools commit: the same model, before anything is
# allocated.
run gpt2_data -d1500000 "$gpt2" --config gpt2 --data "$data/moby-dick" "${quiet[@]}"
expect gpt2_data 1 "the model states need 2.05 GiB of host memory on this rank" \
  "and this rank may use" "more under RLIMIT_DATA (ulimit -d) of 1.43 GiB (it uses" "or a larger ulimit -d"

# Each of two ranks has its own RLIMIT_DATA: at stage 0 a rank holds 1.85 GiB, at stages 2
# and 3 less, which fits; the message computes both.
run gpt2_np2_stage0 -d1500000 "$mpirun" 2 "$gpt2" --config gpt2 --zero-stage 0 \
  --data "$data/moby-dick" "${quiet[@]}"
[ "$rc" -ne 0 ] || fail "gpt2_np2_stage0: status 0, expected a failure"
expect gpt2_np2_stage0 "$rc" "rank 0: the model states need 1.85 GiB of host memory on this rank at ZeRO stage 0 over 2 ranks" \
  "To fit: ZeRO stage 2 (1.35 GiB) or 3 (1.12 GiB) (zero_optimization.stage), more ranks at ZeRO stage 3"

# The model states fit, the activations of 16 x 1024 tokens (3.81 GiB) do not: the trainer
# says so before it allocates them.
run d2_acts -d1500000 "$gpt2" --config d2 --batch 16 --seq 1024 --data "$data/moby-dick" "${quiet[@]}"
expect d2_acts 1 "zrt-gpt2: this rank needs 3.81 GiB more host memory (activations for 16 x 1024 tokens: 3.81 GiB)" \
  "under RLIMIT_DATA (ulimit -d) of 1.43 GiB" "To fit: a smaller --batch or --seq, --recompute or --offload-activations, or a larger ulimit -d"

# ZeRO-Offload keeps the optimizer state in pinned (mlocked) host memory, which RLIMIT_MEMLOCK
# (ulimit -l) bounds for a process without CAP_IPC_LOCK (setpriv takes root's away): past it
# the engine fails at commit with the numbers, rather than train on pageable memory. With
# the capability the same limit does not apply, and the job trains.
nocap=(setpriv --bounding-set -ipc_lock --inh-caps -ipc_lock)
offload=(--config d2 --device emulated --zero-stage 2 --offload-optimizer cpu)
run d2_memlock -l1024 "${nocap[@]}" "$gpt2" "${offload[@]}" --data "$data/moby-dick" "${quiet[@]}"
expect d2_memlock 1 "the offloaded state needs" "of pinned host memory on this rank, and RLIMIT_MEMLOCK (ulimit -l) lets this process lock 1 MiB" \
  "raise the limit (ulimit -l unlimited"
run d2_memlock_cap -l1024 "$gpt2" "${offload[@]}" --data "$data/moby-dick" "${quiet[@]}"
expect d2_memlock_cap 0 "(optimizer state and step offloaded to the CPU)"

if [ -x "$bert" ] && [ -d "$data/bert/moby-dick" ]; then
  run bert_acts -d1500000 "$bert" --config bert-mini --batch 64 --seq 512 \
    --data "$data/bert/moby-dick" --steps 2 --eval-every 0
  expect bert_acts 1 "zrt-bert: this rank needs" "(activations for 64 x 512 tokens:" \
    "under RLIMIT_DATA (ulimit -d) of 1.43 GiB" "To fit: a smaller --batch or --seq, or a larger ulimit -d"
fi

[ "$failures" -eq 0 ] && echo "rlimits: every case as expected"
exit $((failures > 0))
