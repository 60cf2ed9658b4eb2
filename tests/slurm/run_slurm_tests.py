#!/usr/bin/env python3
"""The job scripts under a real Slurm (slurm/local-cluster, started by the ctest fixture):

    run_slurm_tests.py CASE SOURCE_DIR BUILD_DIR

CASE is one of:
  selfcheck   srun --mpi=pmix -n 4 zrt-info: ranks and local ranks as Slurm set them, and
              the self-check passes
  gpt2        sbatch slurm/gpt2.sbatch with a small model to completion: exit code 0, the
              log, the checkpoint, the metrics
  bert        the same for slurm/bert.sbatch
  operator    an operator's preemption: scancel --signal=USR1 --full mid-run; the job
              checkpoints, exits 75, requeues itself, resumes and finishes, and its final
              checkpoint (--deterministic) equals an uninterrupted job's (zrt-ckpt diff 0)
  timelimit   preemption by the time limit: --time=1 --signal=USR1@55; the job receives the
              signal, checkpoints, exits 75, requeues itself and resumes (its restart is
              given more time and finishes), and ends with an uninterrupted job's final
              checkpoint (zrt-ckpt diff 0)
  badinput    jobs that cannot run fail at once with the reason in their log: data not
              prepared, a --resume checkpoint of another model, more tasks than the global
              batch splits into, a template argument without its value
  bertoperator  the operator case for slurm/bert.sbatch
  requeue     scontrol requeue mid-run (SIGTERM): the job checkpoints, restarts, resumes and
              ends with an uninterrupted job's checkpoint
  requeuecap  a program that fails after its checkpoint: requeued once, then the job stops
              because it failed the same way twice, saying so
  rankstop    one task stopped (SIGSTOP) mid-run, ZRT_COMM_TIMEOUT=5: the survivors name it
              within the timeout and abort, and the run ends at once (not at its time limit):
              FAILED without a checkpoint; requeued from its last checkpoint with one, and
              the restart completes
  rankdeath   one task killed (SIGKILL) mid-run: the job ends at once (not at its time
              limit), Slurm records the failure, and the log names the task
Jobs run from SOURCE_DIR, as a user submits them from the repository root; their files go
to a scratch folder.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

case, src, build = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def cluster_env():
    out = subprocess.run([os.path.join(src, "slurm", "local-cluster"), "env"],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"export SLURM_CONF=(\S+)", out)
    env = dict(os.environ, SLURM_CONF=m.group(1), OPENBLAS_NUM_THREADS="1")
    # The job scripts' GPU lines are neutralised here by sbatch's input variable, not by a
    # copy of the script: this node has no GPUs.
    env["SBATCH_GPUS_PER_NODE"] = "0"
    return env


env = cluster_env()


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=src, **kw)


def job_fields(job):
    out = sh(["scontrol", "-o", "show", "job", str(job)]).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def wait_job(job, states=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                          "OUT_OF_MEMORY"), timeout=240, on_pending=None):
    """Polls scontrol (sbatch --wait polls after 2, 8, 32 s) until the job ends."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        f = job_fields(job)
        if f.get("JobState") in states:
            return f
        if on_pending and f.get("JobState") == "PENDING":
            on_pending(f)
        time.sleep(0.3)
    return job_fields(job)


def submit(script, out, log, args, extra=(), exports=""):
    """sbatch SCRIPT with its named arguments --out OUT and ARGS; returns the job id and the
    job's folder (OUT/NAME-JOBID)."""
    r = sh(["sbatch", "--parsable", "-N", "1", "--ntasks-per-node=2", "--cpus-per-task=1",
            f"--output={log}", f"--export=ALL{exports}", *extra, script, "--out", out] + args)
    check(r.returncode == 0, f"sbatch {os.path.basename(script)} ({r.stderr.strip()})")
    if r.returncode != 0:
        return None, os.path.join(out, "none")
    job = int(r.stdout.strip().split(";")[0])
    return job, os.path.join(out, os.path.basename(script).split(".")[0] + f"-{job}")


def hurry_restarts(job, time_limit=None):
    """An on_pending for wait_job: a requeued job waits out Slurm's start-time delay (about
    2 minutes); this starts each restart 5 s after its requeue instead, as an operator could.
    (At once, slurmd may still be tearing down the previous run's step, whose id the restart
    reuses, and the restart's launch fails.) With time_limit, the restart also gets that
    limit, as an operator granting more time would."""
    hurried = set()

    def hurry(fields):
        restarts = fields.get("Restarts")
        if fields.get("Reason") == "BeginTime" and restarts not in hurried:
            update = ["scontrol", "update", f"JobId={job}", "StartTime=now+5"]
            if time_limit:
                update.append(f"TimeLimit={time_limit}")
            sh(update)
            hurried.add(restarts)

    return hurry


def check_same_checkpoint(ref_dir, run_dir):
    """The job's final checkpoint equals the uninterrupted job's (zrt-ckpt diff exit 0)."""
    d = sh([os.path.join(build, "apps", "zrt-ckpt"), "diff",
            os.path.join(ref_dir, "checkpoint.h5"), os.path.join(run_dir, "checkpoint.h5")])
    check(d.returncode == 0, f"the final checkpoint equals the uninterrupted job's "
          f"(zrt-ckpt diff exit {d.returncode}: {d.stdout.strip().splitlines()[-1:]})")


def read(path):
    return open(path, errors="replace").read() if os.path.exists(path) else ""


def task_process(job, procid):
    """The pid of zrt-gpt2's task `procid` of a running job (the process whose environment
    names the job and the task), or None."""
    found = None
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if (b"zrt-gpt2" in cmd and f"SLURM_JOB_ID={job}".encode() in environ and
                f"SLURM_PROCID={procid}".encode() in environ):
            found = int(pid)
    return found


gpt2_args = ["--model", "d1", "--seq", "32", "--batch", "2", "--eval-batches", "1",
             "--sample-every", "-1"]
bert_args = ["--model", "bert-tiny", "--seq", "32", "--batch", "4", "--eval-batches", "1"]

with tempfile.TemporaryDirectory() as tmp:
    if case == "selfcheck":
        r = sh(["srun", "--mpi=pmix", "-n", "4", os.path.join(build, "apps", "zrt-info"),
                "--selfcheck"], timeout=120)
        check(r.returncode == 0 and "self-check: all passed" in r.stdout,
              f"srun -n 4 zrt-info --selfcheck passes ({r.returncode}) {r.stderr[-300:]}")
        r = sh(["srun", "--mpi=pmix", "-n", "4", os.path.join(build, "apps", "zrt-info"),
                "--json"], timeout=120)
        ranks = json.loads(r.stdout)["ranks"] if r.returncode == 0 else []
        check([x["rank"] for x in ranks] == [0, 1, 2, 3] and all(x["size"] == 4 for x in ranks),
              "zrt-info sees ranks 0-3 of 4, as Slurm numbered the tasks")
        check([x["topology"]["local_rank"] for x in ranks] == [0, 1, 2, 3] and
              all(x["topology"]["local_size"] == 4 for x in ranks),
              "local ranks 0-3 on the one node")
        pus = [x["topology"]["binding"] for x in ranks]
        check(all(x["topology"]["bound_pus"] == 1 for x in ranks) and len(set(pus)) == 2,
              f"each rank bound to one PU, the 4 spread over the 2 (bindings {pus})")
        ids = sh(["srun", "--mpi=pmix", "-n", "4", "sh", "-c",
                  "echo $SLURM_PROCID $SLURM_LOCALID"], timeout=60).stdout.split("\n")
        check(sorted(l for l in ids if l) == ["0 0", "1 1", "2 2", "3 3"],
              "Slurm's own SLURM_PROCID/SLURM_LOCALID agree")

    elif case in ("gpt2", "bert"):
        out, log = os.path.join(tmp, "runs"), os.path.join(tmp, "job.out")
        if case == "gpt2":
            args = gpt2_args + ["--steps", "4"]
        else:
            args = bert_args + ["--steps", "4"]
        job, run_dir = submit(os.path.join(src, "slurm", f"{case}.sbatch"), out, log, args)
        f = wait_job(job) if job else {}
        text = read(log)
        check(f.get("JobState") == "COMPLETED" and f.get("ExitCode") == "0:0",
              f"the job completes with exit code 0 ({f.get('JobState')}, {f.get('ExitCode')})")
        check(f"job {job} (restart 0) on 1 node(s), 2 task(s)" in text and "step 4/4" in text,
              "the log holds the job line and the last step")
        check(os.path.exists(os.path.join(run_dir, "checkpoint.h5")),
              f"the checkpoint exists in the job's folder {os.path.basename(run_dir)}")
        check(os.path.realpath(os.path.join(run_dir, "job.out")) == os.path.realpath(log),
              "the job's folder links to its log")
        check(read(os.path.join(run_dir, "attempts")).strip() ==
              "restart 0 status 0 progress progress checkpoint step 4",
              f"the job's folder records the run ({read(os.path.join(run_dir, 'attempts')).strip()})")
        metrics = os.path.join(run_dir, "metrics.jsonl")
        lines = [json.loads(l) for l in open(metrics)] if os.path.exists(metrics) else []
        check(sum(1 for l in lines if l.get("type") == "step") == 4 and
              any(l.get("type") == "end" and l.get("reason") == "done" for l in lines),
              "the metrics hold 4 steps and the end")
        run = next((l for l in lines if l.get("type") == "run"), {})
        check(run.get("slurm", {}).get("job_id") == str(job) and
              run["slurm"].get("nodelist") == "localhost",
              f"the metrics' run record names the job and its nodes ({run.get('slurm')})")
        meta = sh([os.path.join(build, "apps", "zrt-ckpt"), "inspect", "--json",
                   os.path.join(run_dir, "checkpoint.h5")])
        try:
            metadata = json.loads(meta.stdout)["attributes"]["metadata"]
            if isinstance(metadata, str):
                metadata = json.loads(metadata)
        except (ValueError, KeyError, TypeError):
            metadata = {}
        check(metadata.get("slurm", {}).get("job_id") == str(job),
              f"the checkpoint's metadata names the job ({metadata.get('slurm')})")
        if not all(os.path.exists(os.path.join(run_dir, f"{case}_{p}.png"))
                   for p in ("loss", "memory")):
            check(False, "the plots exist")
        if failures:
            print(text[-3000:])

    elif case in ("operator", "bertoperator"):
        model = "bert" if case == "bertoperator" else "gpt2"
        args = (bert_args if model == "bert" else gpt2_args) + ["--steps", "40", "--deterministic"]
        script = os.path.join(src, "slurm", f"{model}.sbatch")
        # The uninterrupted reference first.
        ref_log = os.path.join(tmp, "ref.out")
        job, ref_dir = submit(script, os.path.join(tmp, "ref"), ref_log, args)
        f = wait_job(job) if job else {}
        check(f.get("JobState") == "COMPLETED", f"the uninterrupted job completes ({f.get('JobState')})")
        log = os.path.join(tmp, "job.out")
        job, run_dir = submit(script, os.path.join(tmp, "runs"), log, args)
        deadline = time.time() + 120
        while job and time.time() < deadline and not re.search(r"^step +5/", read(log), re.M):
            time.sleep(0.2)
        r = sh(["scancel", "--signal=USR1", "--full", str(job)])
        check(r.returncode == 0, "scancel --signal=USR1 --full")

        f = wait_job(job, on_pending=hurry_restarts(job)) if job else {}
        text = read(log)
        check(f.get("JobState") == "COMPLETED" and f.get("ExitCode") == "0:0",
              f"the job completes after its requeue ({f.get('JobState')}, {f.get('ExitCode')})")
        check(f.get("Restarts") == "1", f"Slurm restarted it once ({f.get('Restarts')})")
        m = re.search(r"stopping after step (\d+): SIGUSR1 received", text)
        check(m is not None, "the first run stopped on SIGUSR1 after a step")
        check("checkpoint written; requeueing job" in text, "the script requeued the job")
        check(m is not None and f"resumed from {run_dir}/checkpoint.h5 at step {m.group(1)}" in text,
              "the restart resumed from the checkpoint at that step")
        check(f"job {job} (restart 1)" in text and "step 40/40" in text,
              "the restart ran to the last step")
        records = [json.loads(l) for l in read(os.path.join(run_dir, "metrics.jsonl")).splitlines()]
        steps = [r["step"] for r in records if r.get("type") == "step"]
        check(steps == list(range(1, 41)) and
              [r.get("type") for r in records].count("run") == 2,
              f"the job's metrics hold both runs, steps 1-40 once each ({len(steps)} steps)")
        check_same_checkpoint(ref_dir, run_dir)
        if failures:
            print(text[-3000:])
    elif case == "timelimit":
        # Slurm sends the signal 55 s before the 1-minute limit, at its next time-limit check
        # (every 30 s), so 5-35 s into the run. 600 steps beside the reference job are about
        # 65 s of training here (2026-12-03: 1200 took 130 s, signalled at step 188), so the
        # first run is cut short. Its restart gets 10 minutes and finishes: each cut costs a
        # restart (20-40 s here), and one shows the whole path (signal, checkpoint, exit 75,
        # requeue, resume).
        args = gpt2_args + ["--steps", "600", "--deterministic", "--log-every", "100"]
        script = os.path.join(src, "slurm", "gpt2.sbatch")
        ref, ref_dir = submit(script, os.path.join(tmp, "ref"), os.path.join(tmp, "ref.out"), args)
        log = os.path.join(tmp, "job.out")
        job, run_dir = submit(script, os.path.join(tmp, "runs"), log, args,
                              extra=["--time=1", "--signal=USR1@55"])
        f = wait_job(job, on_pending=hurry_restarts(job, time_limit=10), timeout=540) if job else {}
        r = wait_job(ref, timeout=120) if ref else {}
        text = read(log)
        # The restarts, by where they resumed. (The log is rank 0's output and srun's own
        # messages in one file, whose lines may interleave: count what each restart says.)
        resumed = re.findall(r"resumed from \S+ at step (\d+)", text)
        check(f.get("JobState") == "COMPLETED" and f.get("ExitCode") == "0:0",
              f"the job completes ({f.get('JobState')}, {f.get('ExitCode')}, "
              f"{f.get('Restarts')} restart(s))")
        check("SIGUSR1 received" in text and len(resumed) >= 1 and
              int(f.get("Restarts", "0")) == len(resumed),
              f"each run cut short by the limit's signal was requeued (resumed at steps "
              f"{resumed}, {f.get('Restarts')} restart(s))")
        check(all(re.search(rf"checkpoint: {re.escape(run_dir)}/checkpoint.h5 \(step {s_},", text)
                  for s_ in resumed),
              "each restart resumed from the checkpoint the previous run wrote when it stopped")
        check(r.get("JobState") == "COMPLETED", "the uninterrupted job completes")
        check_same_checkpoint(ref_dir, run_dir)
        if failures:
            print(text[-3000:])

    elif case == "badinput":
        script = os.path.join(src, "slurm", "gpt2.sbatch")
        # A checkpoint of d1 to resume a d2 run from.
        job, d1_dir = submit(script, os.path.join(tmp, "d1"), os.path.join(tmp, "d1.out"),
                             gpt2_args + ["--steps", "1"])
        wait_job(job) if job else None
        cases = [
            ("data not prepared", gpt2_args + ["--steps", "1", "--data", os.path.join(tmp, "none")],
             "cannot open"),
            ("a checkpoint of another model", gpt2_args[2:] + [
                "--model", "d2", "--steps", "1", "--resume",
                os.path.join(d1_dir, "checkpoint.h5")], "the checkpoint is of another model"),
            ("more tasks than the batch splits into", gpt2_args + ["--steps", "1",
             "--global-batch", "2"], "--global-batch 2 is smaller than one micro-step of 2 rank(s)"),
            ("a template argument without its value", gpt2_args + ["--steps"],
             "--steps needs a value"),
        ]
        for what, args, words in cases:
            log = os.path.join(tmp, what.replace(" ", "_") + ".out")
            t0 = time.time()
            job, _ = submit(script, os.path.join(tmp, "runs"), log, args)
            f = wait_job(job, timeout=120) if job else {}
            text = read(log)
            check(f.get("JobState") == "FAILED" and time.time() - t0 < 60,
                  f"{what}: the job fails at once ({f.get('JobState')} after "
                  f"{time.time() - t0:.0f} s)")
            check(words in text, f"{what}: its log says '{words}'")
            check("step 1/" not in text, f"{what}: nothing trained")

    elif case == "requeue":
        # An operator's scontrol requeue mid-run: Slurm sends SIGTERM to the job, which
        # checkpoints, and starts it again; the restart resumes and finishes.
        script = os.path.join(src, "slurm", "gpt2.sbatch")
        args = gpt2_args + ["--steps", "150", "--deterministic"]
        ref, ref_dir = submit(script, os.path.join(tmp, "ref"), os.path.join(tmp, "ref.out"), args)
        log = os.path.join(tmp, "job.out")
        job, run_dir = submit(script, os.path.join(tmp, "runs"), log, args)
        deadline = time.time() + 120
        while job and time.time() < deadline and not re.search(r"^step +5/", read(log), re.M):
            time.sleep(0.2)
        r = sh(["scontrol", "requeue", str(job)])
        check(r.returncode == 0, f"scontrol requeue ({r.stderr.strip()})")
        f = wait_job(job, on_pending=hurry_restarts(job)) if job else {}
        wait_job(ref, timeout=120) if ref else None
        text = read(log)
        m = re.search(r"stopping after step (\d+): SIGTERM received", text)
        check(f.get("JobState") == "COMPLETED" and f.get("Restarts") == "1",
              f"the job completes after one restart ({f.get('JobState')}, {f.get('Restarts')})")
        check(m is not None, "the first run stopped on SIGTERM after a step, with a checkpoint")
        check(m is not None and f"at step {m.group(1)}" in text.split("(restart 1)")[-1],
              "the restart resumed from that step")
        check_same_checkpoint(ref_dir, run_dir)
        if failures:
            print(text[-3000:])

    elif case == "requeuecap":
        # A program that fails after its work (a fault at the end, a node lost): the first run
        # wrote a checkpoint, so the job requeues itself once; the restart fails the same way
        # without a new checkpoint, and the job stops, saying so, rather than run again.
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        wrapper = os.path.join(bindir, "zrt-gpt2")
        with open(wrapper, "w") as w:
            w.write(f"#!/bin/sh\n{build}/apps/zrt-gpt2 \"$@\" || exit $?\n"
                    "echo 'a fault after the work' >&2\nexit 3\n")
        os.chmod(wrapper, 0o755)
        os.symlink(os.path.join(build, "apps", "zrt-ckpt"), os.path.join(bindir, "zrt-ckpt"))
        log = os.path.join(tmp, "job.out")
        job, run_dir = submit(os.path.join(src, "slurm", "gpt2.sbatch"), os.path.join(tmp, "runs"),
                              log, gpt2_args + ["--steps", "3", "--program", wrapper])
        f = wait_job(job, on_pending=hurry_restarts(job)) if job else {}
        text = read(log)
        attempts = read(os.path.join(run_dir, "attempts")).splitlines()
        check(f.get("JobState") == "FAILED" and f.get("ExitCode") == "3:0" and
              f.get("Restarts") == "1",
              f"Slurm records the failure after one restart ({f.get('JobState')}, "
              f"{f.get('ExitCode')}, {f.get('Restarts')} restart(s))")
        check("status 3 after a new checkpoint: continuing from it; requeueing job" in text,
              "the first failure, after a checkpoint, requeued the job")
        check("zrt-gpt2 job: it failed the same way twice (status 3, and no new checkpoint this "
              "time); stopping" in text, "the second says why the job stops")
        check(attempts == ["restart 0 status 3 progress progress checkpoint step 3",
                           "restart 1 status 3 progress none checkpoint step 3"],
              f"the job's folder records both runs ({attempts})")
        if failures:
            print(text[-3000:])

    elif case == "rankstop":
        # A node that hangs (a stopped task) rather than dies: the survivors' collectives
        # time out, they name the task and abort, and the job ends instead of holding its
        # nodes until the time limit. Without a checkpoint yet it ends FAILED; with one it
        # requeues itself, resumes and completes.
        def stop_task_1(job, log, at_step):
            deadline = time.time() + 120
            while job and time.time() < deadline and not re.search(rf"^step +{at_step}/", read(log),
                                                                   re.M):
                time.sleep(0.2)
            victim = task_process(job, 1)
            check(victim is not None, "found task 1's process")
            if victim:
                os.kill(victim, 19)  # SIGSTOP
            return time.time()

        def first_run_ended(job, stopped_at):
            while job and time.time() < stopped_at + 120:
                f = job_fields(job)
                if f.get("Restarts") == "1" or f.get("JobState") in ("FAILED", "COMPLETED"):
                    return time.time() - stopped_at, f
                time.sleep(0.2)
            return None, {}

        for saves in ("none", "every 5"):
            log = os.path.join(tmp, f"job-{len(saves)}.out")
            args = gpt2_args + ["--steps", "40", "--save-every", "5" if saves != "none" else "0"]
            job, run_dir = submit(os.path.join(src, "slurm", "gpt2.sbatch"),
                                  os.path.join(tmp, f"runs-{len(saves)}"), log, args,
                                  extra=["--time=10"], exports=",ZRT_COMM_TIMEOUT=5")
            stopped_at = stop_task_1(job, log, 12)
            took, f = first_run_ended(job, stopped_at)
            check(took is not None and took < 5 + 15,
                  f"checkpoints {saves}: the run ended {took} s after the stop (timeout 5 s; its "
                  f"limit: 10 minutes)")
            if saves == "none":
                f = wait_job(job, timeout=60) if job else {}
                check(f.get("JobState") == "FAILED" and f.get("Restarts") == "0",
                      f"without a checkpoint Slurm records a failure, not requeued "
                      f"({f.get('JobState')}, {f.get('ExitCode')}, {f.get('Restarts')} restarts)")
            else:
                f = wait_job(job, on_pending=hurry_restarts(job), timeout=300) if job else {}
                check(f.get("JobState") == "COMPLETED" and f.get("Restarts") == "1",
                      f"with checkpoints the job requeues itself, resumes and completes "
                      f"({f.get('JobState')}, {f.get('Restarts')} restarts)")
            text = read(log)
            check(re.search(r"did not complete within 5 s: rank 1 did not answer", text)
                  is not None, f"checkpoints {saves}: a survivor named task 1 in the log")
            if failures:
                print(text[-3000:])

    elif case == "rankdeath":
        log = os.path.join(tmp, "job.out")
        job, run_dir = submit(os.path.join(src, "slurm", "gpt2.sbatch"), os.path.join(tmp, "runs"),
                              log, gpt2_args + ["--steps", "100000", "--seed", "4242"],
                              extra=["--time=10"])
        deadline = time.time() + 120
        while job and time.time() < deadline and not re.search(r"^step +3/", read(log), re.M):
            time.sleep(0.2)
        victim = task_process(job, 1)
        check(victim is not None, "found task 1's process")
        killed_at = time.time()
        if victim:
            os.kill(victim, 9)
        f = wait_job(job, timeout=120) if job else {}
        took = time.time() - killed_at
        text = read(log)
        check(f.get("JobState") == "FAILED" and f.get("ExitCode", "0:0") != "0:0",
              f"Slurm records a failure ({f.get('JobState')}, exit code {f.get('ExitCode')})")
        check(took < 60, f"the job ended {took:.0f} s after the kill (its limit: 10 minutes)")
        check(re.search(r"task 1: Killed", text) is not None,
              "the log names the task that died")
        if failures:
            print(text[-3000:])
    else:
        check(False, f"unknown case {case}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
