#!/usr/bin/env bash
# The job scripts' shared logic (slurm/zrt-job) outside Slurm: the named arguments, the job's
# folder, the GPU switch and the decision after each run, from the variables Slurm would
# set. The same logic runs under a real Slurm in the slurm label's tests.
#   test_zrt_job.sh SOURCE_DIR
set -uo pipefail
src=$1
failures=0
check() {  # check WHAT EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; failures=$((failures + 1)); fi
}
ZRT_JOB_NAME=zrt-gpt2 ZRT_JOB_MODEL=d6 ZRT_JOB_STEPS=5000 ZRT_JOB_DATA=moby-dick
source "$src/slurm/zrt-job"

# Named arguments and the ones passed through.
zrt_job_parse --model d1 --steps=40 --out /tmp/o --batch 2 --seq 32 --resume a.h5 -- --model x
check "--model, --steps=, --out, --resume" "d1 40 /tmp/o a.h5" \
  "$ZRT_JOB_MODEL $ZRT_JOB_STEPS $ZRT_JOB_OUT $ZRT_JOB_RESUME"
check "the rest passes through, all of it after --" "--batch 2 --seq 32 --model x" "${ZRT_JOB_PASS[*]}"
check "--config is --model" "bert-base" "$(zrt_job_parse --config bert-base; echo "$ZRT_JOB_MODEL")"
check "the default data is in the source tree's data folder" "$(cd "$src" && pwd)/apps/data/cache/moby-dick" \
  "$(unset ZRT_DATA_DIR; ZRT_JOB_DATA=moby-dick; zrt_job_parse; echo "$ZRT_JOB_DATA")"
check "ZRT_DATA_DIR moves it, as it moves prepare's" "/data/zrt/moby-dick $(ZRT_DATA_DIR=/data/zrt "$src/apps/data/prepare" --where)" \
  "$(ZRT_DATA_DIR=/data/zrt; ZRT_JOB_DATA=moby-dick; zrt_job_parse; echo "$ZRT_JOB_DATA") /data/zrt"
check "an absolute default stays" "/x/y" "$(ZRT_JOB_DATA=/x/y; zrt_job_parse; echo "$ZRT_JOB_DATA")"
out=$( (zrt_job_parse --steps many) 2>&1); check "--steps must be a number" \
  "zrt-gpt2 job: --steps must be a number, got 'many'" "$out"
out=$( (zrt_job_parse --save=x.h5) 2>&1); check "--save is refused" 1 "$(echo "$out" | grep -c -- '--save: the job writes its checkpoint, metrics and plots in its folder')"
out=$( (zrt_job_parse --json-metrics m.jsonl) 2>&1); check "--json-metrics is refused" 1 "$(echo "$out" | grep -c -- '--json-metrics: the job writes')"
check "--init-from is named" "w.safetensors" "$(zrt_job_parse --init-from w.safetensors; echo "$ZRT_JOB_INIT_FROM ${ZRT_JOB_PASS[*]}" | xargs)"
out=$( (zrt_job_parse --model) 2>&1); check "a named argument without its value" "zrt-gpt2 job: --model needs a value" "$out"

# The job's folder name.
check "a job" 812 "$(SLURM_JOB_ID=812 zrt_job_id)"
check "an array task" 800_3 "$(SLURM_JOB_ID=812 SLURM_ARRAY_JOB_ID=800 SLURM_ARRAY_TASK_ID=3 zrt_job_id)"

# GPUs: none (SBATCH_GPUS_PER_NODE=0) -> host memory; one task per GPU -> the device;
# more tasks than GPUs -> refused, saying what to change.
check "no GPUs: host memory" "--device host" "$(unset SLURM_GPUS_ON_NODE; zrt_job_gpus; echo "${ZRT_JOB_DEVICE[*]}")"
check "4 GPUs, 4 tasks per node: the device" "--device device" \
  "$(SLURM_GPUS_ON_NODE=4 SLURM_NTASKS_PER_NODE=4 zrt_job_gpus; echo "${ZRT_JOB_DEVICE[*]}")"
check "4 GPUs, tasks per node as Slurm writes them (4(x2))" "--device device" \
  "$(unset SLURM_NTASKS_PER_NODE; SLURM_GPUS_ON_NODE=4 SLURM_TASKS_PER_NODE='4(x2)' zrt_job_gpus; echo "${ZRT_JOB_DEVICE[*]}")"
out=$( (SLURM_GPUS_ON_NODE=4 SLURM_NTASKS_PER_NODE=8 zrt_job_gpus) 2>&1)
check "8 tasks on 4 GPUs: refused" 1 "$(echo "$out" | grep -c '8 tasks per node but 4 GPU(s) per node: give one task per GPU')"

# After a run: status, progress (a checkpoint at a later step), the run before, restarts.
decide() { zrt_job_decide "$@" | cut -d' ' -f1; }
check "finished" done "$(decide 0 none '' 0)"
check "stopped by the signal with a checkpoint" requeue "$(decide 75 progress '' 0)"
check "the signal before any checkpoint: once more" requeue "$(decide 75 none '' 0)"
check "the signal twice without a new checkpoint" stop \
  "$(decide 75 none 'restart 0 status 75 progress none checkpoint step 4' 1)"
check "a fault after a new checkpoint (a node lost): continue" requeue "$(decide 1 progress '' 0)"
check "a fault before any checkpoint (bad input): stop at once" stop "$(decide 1 none '' 0)"
check "the same fault twice without progress" stop \
  "$(decide 3 none 'restart 0 status 3 progress progress checkpoint step 4' 1)"
check "a fault unlike the run before: once more" requeue \
  "$(decide 1 none 'restart 0 status 75 progress progress checkpoint step 4' 1)"
check "the restart cap" stop "$(ZRT_JOB_MAX_RESTARTS=3 decide 75 progress '' 3)"
check "the reason says so" "stop it failed the same way twice (status 3, and no new checkpoint this time)" \
  "$(zrt_job_decide 3 none 'restart 0 status 3 progress progress checkpoint step 4' 1)"
check "a preemption, then the signal before a new checkpoint: once more" requeue \
  "$(decide 75 none 'restart 0 status 75 progress progress checkpoint step 4' 1)"

# Continuing after a lost node: the checkpoint's metadata, and the batch options the
# continuation replaces.
meta='{"accumulation_steps":1,"batch":2,"model":{"n_embd":64,"name":"d1"},"ranks":4,"seq":32}'
check "the checkpoint's numbers" "2 4 1 32 d1" \
  "$(echo "$(zrt_job_meta batch "$meta") $(zrt_job_meta ranks "$meta") $(zrt_job_meta accumulation_steps "$meta") $(zrt_job_meta seq "$meta") $(zrt_job_meta name "$meta")")"
ZRT_JOB_PASS=(--seq 32 --batch 2 --global-batch=16 --grad-accum 2 --lr 1e-3)
zrt_job_pass_without_batch
check "the batch options left out, the rest kept" "--seq 32 --lr 1e-3" "${ZRT_JOB_PASS_KEPT[*]}"
check "a pass-through option's value" "16" "$(zrt_job_pass_value --global-batch)"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
