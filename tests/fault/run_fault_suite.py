#!/usr/bin/env python3
"""The fault suite: zerort jobs with one fault injected, each bounded in time, checking the
exit status, the time to exit and the message every surviving rank prints.

    run_fault_suite.py FAULT_JOB ZRT_CKPT MPIEXEC APPS_DIR [CASE...]

FAULT_JOB is tests/fault/fault_job.c's program, ZRT_CKPT the zrt-ckpt tool, MPIEXEC
scripts/mpirun-local, APPS_DIR the folder of zrt-gpt2 and zrt-bert ("-" in a build without
them: their cases are skipped; run from the source tree, where the trainers find their
prepared data). With no CASE every case runs.
"""
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT = 4.0  # ZRT_COMM_TIMEOUT of the jobs that wait for a stuck rank
GRACE = 20.0  # what a verdict may take beyond it on 2 oversubscribed cores (MPI start too)

job, zrt_ckpt, mpiexec, apps = sys.argv[1:5]
apps = apps if os.path.exists(os.path.join(apps, "zrt-gpt2")) else None
wanted = sys.argv[5:]
failures = []
STOP_BY = 10.0  # the launcher must exit within the timeout and this after a rank stopped


def kill_session(p):
    """SIGKILL to every process of p's session (mpiexec puts its ranks in process groups of
    their own, so killing its group would leave them running), then waits until none is
    left."""
    subprocess.run(["pkill", "-KILL", "-s", str(p.pid)])
    p.wait()
    for _ in range(100):
        if subprocess.run(["pgrep", "-s", str(p.pid)], stdout=subprocess.DEVNULL).returncode != 0:
            return
        time.sleep(0.05)


def launch(cmd, env=None, limit=120, on_line=None):
    """Runs cmd in a session of its own, so that a hung job (stopped ranks included) is
    killed whole; returns (exit status or None on a hang, output, seconds). on_line(p, line)
    sees each line of output as it comes."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace", start_new_session=True)
    lines = []

    def read():
        for line in p.stdout:
            lines.append(line)
            if on_line:
                on_line(p, line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        p.wait(timeout=limit)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        kill_session(p)
        rc = None
    reader.join(timeout=10)
    return rc, "".join(lines), time.monotonic() - start


def rank_pid(session, rank):
    """The process of MPI rank `rank` among the processes of a launcher's session."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.getsid(int(pid)) != session:
                continue
            environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ:
            return int(pid)
    return None


def run(np, args, env=None, limit=120, mpi_args=()):
    return launch([mpiexec, str(np), *mpi_args, job, *args], env, limit)


def check(case, condition, what, output):
    if not condition:
        failures.append(case)
        print(f"FAIL [{case}]: {what}\n--- output ---\n{output}\n--------------")
    return condition


def survivors_name(case, output, ranks, victim, pattern):
    for r in ranks:
        if r == victim:
            continue
        line = next((l for l in output.splitlines() if l.startswith(f"rank {r}: FAILED")), None)
        if not check(case, line is not None, f"rank {r} printed no failure", output):
            return
        check(case, re.search(pattern, line) is not None,
              f"rank {r}'s message does not match /{pattern}/: {line}", output)


def stuck_rank(case, mode, np=4, victim=2, mpi_args=(), pattern=None, nonzero=True,
               named=True):
    env = {"ZRT_COMM_TIMEOUT": str(TIMEOUT)}
    rc, out, seconds = run(np, [mode, "--victim", str(victim), "--at", "3"], env,
                           limit=TIMEOUT + GRACE + 60, mpi_args=mpi_args)
    if not check(case, rc is not None, f"no exit within {TIMEOUT + GRACE + 60:.0f} s (a hang)",
                 out):
        return
    if nonzero:
        check(case, rc != 0, "exit status 0", out)
    check(case, seconds < TIMEOUT + GRACE, f"took {seconds:.1f} s (> timeout {TIMEOUT} + {GRACE})",
          out)
    survivors_name(case, out, range(np), victim,
                   pattern or rf"ZRT_ERR_TIMEOUT|timed out|did not complete within.*rank {victim}")
    print(f"ok [{case}]: every survivor failed in {seconds:.1f} s" +
          (f" naming rank {victim}" if named else ""))


def case_step_stop():
    stuck_rank("step-stop", "step-stop",
               pattern=r"agreement #\d+ in zrt_engine_step did not complete within 4 s: "
                       r"rank 2 did not answer")


def case_collective_stop():
    stuck_rank("collective-stop", "collective-stop",
               pattern=r"all_reduce #\d+ .* did not complete within 4 s: rank 2 did not answer")


def case_kill():
    # A launcher that keeps the survivors alive when a rank dies (Open MPI's recovery mode).
    # In that mode Open MPI's mpiexec exits 0 even after MPI_Abort: the ranks' messages and
    # the time to exit are what count.
    stuck_rank("kill", "kill", mpi_args=("--mca", "orte_enable_recovery", "1"),
               pattern=r"did not complete within 4 s: rank 2 did not answer", nonzero=False)


def case_init_stop():
    # zrt_init's first meeting comes before any watch: a deadline of its own, no verdict
    # (the survivors cannot ask a rank that never came), the job ended by MPI_Abort.
    stuck_rank("init-stop", "init-stop",
               pattern=r"FAILED timed out: .*MPI_Comm_dup\(comm\) in zrt_init did not "
                       r"complete within 4 s \(comm\.timeout\): a rank of the communicator "
                       r"did not arrive", named=False)


def case_init_kill():
    # A rank dead before zrt_init (a crash in MPI_Init) under a launcher that keeps the
    # others, as srun does without --kill-on-bad-exit.
    stuck_rank("init-kill", "init-kill", mpi_args=("--mca", "orte_enable_recovery", "1"),
               pattern=r"FAILED timed out: .*MPI_Comm_dup\(comm\) in zrt_init did not "
                       r"complete within 4 s", nonzero=False, named=False)


def case_settings():
    for key, values in [("ZRT_COMM_BACKEND", ("shm", "mpi")), ("ZRT_FP16", ("false", "true")),
                        ("ZRT_ZERO_STAGE", ("2", "3")),
                        ("ZRT_REDUCE_BUCKET_SIZE", ("1000000", "2000000"))]:
        case = f"settings {key}"
        flags = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        cmd = ["mpiexec", "--oversubscribe", *flags, "-n", "1", "-x", f"{key}={values[0]}", job,
               "none", ":", "-n", "1", "-x", f"{key}={values[1]}", job, "none"]
        rc, out, seconds = launch(cmd, limit=60)
        if not check(case, rc is not None, "no exit within 60 s (a hang)", out):
            continue
        check(case, rc != 0, "exit status 0", out)
        name = {"ZRT_COMM_BACKEND": "comm.backend", "ZRT_FP16": "fp16.enabled",
                "ZRT_ZERO_STAGE": "zero_optimization.stage",
                "ZRT_REDUCE_BUCKET_SIZE": "zero_optimization.reduce_bucket_size"}[key]
        survivors_name(case, out, range(2), -1,
                       rf"ZRT_ERR_MISMATCH|differ.*{re.escape(name)} is '{values[1]}' here"
                       rf".* but '{values[0]}' on rank 0")
        if case not in failures:
            print(f"ok [{case}]: both ranks refused in {seconds:.1f} s naming {name}")


def case_register_fail():
    case = "register-fail"
    rc, out, seconds = run(2, ["register-fail", "--victim", "1"], {"ZRT_COMM_TIMEOUT": "30"},
                           limit=60)
    if not check(case, rc is not None, "no exit within 60 s (a hang)", out):
        return
    check(case, rc != 0, "exit status 0", out)
    check(case, seconds < 25, f"took {seconds:.1f} s: waited for a timeout", out)
    survivors_name(case, out, [0], 1,
                   r"zrt_engine_commit.*rank 1: zrt_param_register\('w1'\) failed on this rank")
    check(case, "rank 1: zrt_param_register failed here" in out, "rank 1 printed nothing", out)
    if case not in failures:
        print(f"ok [{case}]: rank 0's commit failed with rank 1's reason in {seconds:.1f} s")


def case_load_fail():
    # One rank names another checkpoint (its node's own copy, say): MPI-IO's collective open
    # of two files hangs, so the paths are compared first and every rank fails naming both.
    # Then a checkpoint that is missing: every rank says so (the check runs on each rank, so
    # a file that one node cannot see is named the same way).
    case = "load-fail"
    with tempfile.TemporaryDirectory() as d:
        rc, out, _ = run(2, ["save-loop", "--steps", "1", "--save", d])
        if not check(case, rc == 0, f"the first save failed ({rc})", out):
            return
        flags = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        good, missing = os.path.join(d, "ckpt.h5"), os.path.join(d, "elsewhere", "ckpt.h5")
        cmd = ["mpiexec", "--oversubscribe", *flags, "-n", "1", job, "save-loop", "--steps", "1",
               "--save", d, "--load", good, ":", "-n", "1", job, "save-loop", "--steps", "1",
               "--save", d, "--load", missing]
        rc, out, seconds = launch(cmd, limit=60)
        if not check(case, rc is not None, "no exit within 60 s (a hang)", out):
            return
        check(case, rc != 0, "exit status 0", out)
        survivors_name(case, out, range(2), -1,
                       r"zrt_checkpoint_load: rank 1: zrt_checkpoint_load was given "
                       r".*elsewhere/ckpt.h5 here but .*/ckpt.h5 on rank 0")
        rc2, out2, _ = run(2, ["save-loop", "--steps", "1", "--save", d, "--load", missing])
        check(case, rc2 is not None and rc2 != 0, f"loading a missing file: exit {rc2}", out2)
        survivors_name(case, out2, range(2), -1,
                       r"rank 0: cannot open checkpoint .*elsewhere/ckpt.h5: No such file or "
                       r"directory")
        if case not in failures:
            print(f"ok [{case}]: different paths refused on both ranks in {seconds:.1f} s, "
                  f"naming both; a missing file named on both")


def case_nan():
    for dtype in ("fp32", "bf16", "fp16"):
        case = f"nan {dtype}"
        with tempfile.TemporaryDirectory() as d:
            rc, out, seconds = run(2, ["nan", "--victim", "1", "--at", "3", "--dtype", dtype,
                                       "--save", d], limit=120)
            if not check(case, rc == 0, f"exit status {rc}", out):
                continue
            for r in (0, 1):
                check(case, re.search(rf"rank {r}: step 3 skipped 1 \(skipped so far 1\), "
                                      r"grad_norm (nan|inf).*parameters unchanged yes", out),
                      f"rank {r} did not skip step 3 leaving its parameters unchanged", out)
            diff = subprocess.run([zrt_ckpt, "diff", f"{d}/before.h5", f"{d}/after.h5"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            check(case, diff.returncode == 0,
                  "the checkpoints before and after the skipped step differ", diff.stdout)
            if case not in failures:
                print(f"ok [{case}]: step skipped on both ranks, state bitwise unchanged "
                      f"(zrt-ckpt diff: exit 0)")


def case_nan_unchecked():
    # With the check off (ZRT_CHECK_GRAD_OVERFLOW=0) the NaN reaches the parameters, and
    # zrt-ckpt verify refuses the checkpoint that holds it.
    case = "nan unchecked"
    with tempfile.TemporaryDirectory() as d:
        rc, out, _ = run(2, ["nan", "--victim", "1", "--at", "3", "--save", d],
                         {"ZRT_CHECK_GRAD_OVERFLOW": "0"}, limit=120)
        if not check(case, rc == 0, f"exit status {rc}", out):
            return
        check(case, "rank 0: step 3 skipped 0" in out and "parameters unchanged no" in out,
              "the step was skipped with the check off", out)
        verify = subprocess.run([zrt_ckpt, "verify", f"{d}/after.h5"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        check(case, verify.returncode == 1 and re.search(r"holds \d+ NaN", verify.stdout),
              f"zrt-ckpt verify exit {verify.returncode} on a checkpoint holding NaN",
              verify.stdout)
        if case not in failures:
            print(f"ok [{case}]: the NaN reached the parameters; zrt-ckpt verify refused them")


def case_killed_saves():
    # A job killed at 10 moments while it saves over and over: what is left at PATH always
    # verifies, and the next save removes the PATH.tmp a killed one left.
    case = "killed saves"
    import random
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as d:
        kinds = {"no checkpoint yet": 0, "intact": 0, "tmp left": 0}
        for i in range(10):
            wait = rng.uniform(1.0, 3.0)
            p = subprocess.Popen([mpiexec, "2", job, "save-loop", "--steps", "1000", "--save", d],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
            time.sleep(wait)
            kill_session(p)
            path = os.path.join(d, "ckpt.h5")
            if os.path.exists(path + ".tmp"):
                kinds["tmp left"] += 1
            if not os.path.exists(path):
                kinds["no checkpoint yet"] += 1
                continue
            v = subprocess.run([zrt_ckpt, "verify", path], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            if not check(case, v.returncode == 0,
                         f"kill {i} after {wait:.2f} s: the checkpoint does not verify", v.stdout):
                return
            kinds["intact"] += 1
        tmp_before = os.path.exists(os.path.join(d, "ckpt.h5.tmp"))
        if not tmp_before:  # make one, as a kill between the create and the rename leaves it
            with open(os.path.join(d, "ckpt.h5.tmp"), "wb") as f:
                f.write(b"\0" * 4096)
        rc, out, _ = run(2, ["save-loop", "--steps", "1", "--save", d, "--load",
                             os.path.join(d, "ckpt.h5")], {"ZRT_LOG_LEVEL": "info"})
        check(case, rc == 0 and "rank 1: resumed from" in out,
              f"resuming from the last checkpoint and saving again failed ({rc})", out)
        check(case, not os.path.exists(os.path.join(d, "ckpt.h5.tmp")),
              "the next save left the .tmp of a killed one", out)
        check(case, "left by a save that did not finish" in out,
              "the next save did not say it removed the .tmp", out)
        if case not in failures:
            print(f"ok [{case}]: 10 kills ({kinds['intact']} intact checkpoints verified, the last "
                  f"one resumed, "
                  f"{kinds['tmp left']} .tmp left and removed by the next save, "
                  f"{kinds['no checkpoint yet']} before the first save)")


def case_disk_full():
    case = "disk full"
    with tempfile.TemporaryDirectory() as d:
        rc, out, _ = run(2, ["disk-full", "--at", "2", "--steps", "3", "--save", d], limit=120)
        if not check(case, rc == 0, f"exit status {rc}", out):
            return
        for r in (0, 1):
            check(case, re.search(rf"rank {r}: save under the limit: I/O error: .*File too large",
                                  out), f"rank {r} did not report the cause", out)
        v = subprocess.run([zrt_ckpt, "verify", os.path.join(d, "good.h5")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(case, v.returncode == 0, "the previous checkpoint does not verify", v.stdout)
        check(case, not os.path.exists(os.path.join(d, "full.h5.tmp")),
              "the save after the failed one left its .tmp", out)
        if case not in failures:
            print(f"ok [{case}]: the save failed on both ranks saying 'File too large'; the "
                  f"previous checkpoint verifies; the next save succeeded")


def released_without_waiting(case, output, ranks, victim):
    """Every survivor released its engine and context at once, and zrt_finalize told it that
    the ranks are out of step (so it ended the job with MPI_Abort)."""
    for r in ranks:
        if r == victim:
            continue
        m = re.search(rf"^rank {r}: released in ([\d.]+) s \(zrt_engine_destroy: (\w[\w ]*), "
                      r"zrt_finalize: timed out: zrt_finalize: the context is finalized without "
                      r"waiting for other ranks", output, re.M)
        if not check(case, m is not None,
                     f"rank {r} did not release its engine and context, or zrt_finalize did "
                     f"not say the ranks are out of step", output):
            return
        check(case, float(m.group(1)) < 2.0,
              f"rank {r} took {m.group(1)} s to release what it holds (it waited)", output)


def stop_then_end(case, cmd, np, victim, stop_on, env, pattern, limit=120, stop_marker=None):
    """Runs cmd; stop_on(line) says when the victim stops (the fault job stops itself and
    says so; a trainer is sent SIGSTOP). Checks that the launcher exits non-zero within
    TIMEOUT + STOP_BY s of the stop and that every survivor names the victim."""
    stopped = []

    def on_line(p, line):
        if stopped or not stop_on(line):
            return
        if stop_marker is None:  # a trainer: stop its process now
            pid = rank_pid(p.pid, victim)
            if pid:
                os.kill(pid, signal.SIGSTOP)
        stopped.append(time.monotonic())

    full_env = {"ZRT_COMM_TIMEOUT": str(TIMEOUT)}
    full_env.update(env)
    start = time.monotonic()
    rc, out, seconds = launch(cmd, full_env, limit=limit, on_line=on_line)
    if not check(case, rc is not None, f"no exit within {limit} s (a hang)", out):
        return None
    if not check(case, bool(stopped), "the victim never stopped", out):
        return None
    after = start + seconds - stopped[0]
    check(case, rc != 0, "exit status 0", out)
    check(case, after < TIMEOUT + STOP_BY,
          f"the launcher exited {after:.1f} s after the stop (> timeout {TIMEOUT} + {STOP_BY})",
          out)
    return out, after


def case_stopped_jobs():
    """fault_job (C) with a rank stopped in the step, in a save, in the commit, at np 2 and 4,
    on the shm, mpi and ucx backends: every survivor fails naming the victim, releases at
    once, and the job ends."""
    where = {"step-stop": r"agreement #\d+ in zrt_engine_step|reduce_scatter #\d+",
             "save-stop": r"in zrt_checkpoint_save",
             "commit-stop": r"in zrt_engine_commit"}
    def one(backend, np, mode, what):
        case = f"stopped {mode} np{np} {backend}"
        victim = np - 1
        with tempfile.TemporaryDirectory() as d:
            r = stop_then_end(
                case, [mpiexec, str(np), job, mode, "--victim", str(victim), "--at", "3",
                       "--save", d], np, victim,
                lambda line: line.startswith(f"rank {victim}: stopping itself"),
                {"ZRT_COMM_BACKEND": backend}, what, stop_marker=True)
        if r is None:
            return
        out, after = r
        survivors_name(case, out, range(np), victim,
                       rf"({what}).* did not complete within {TIMEOUT:g} s: rank "
                       rf"{victim} did not answer")
        released_without_waiting(case, out, range(np), victim)
        if case not in failures:
            print(f"ok [{case}]: every survivor named rank {victim}, released at once; the job "
                  f"ended {after:.1f} s after the stop", flush=True)

    # Two jobs at a time: their survivors spend the timeout asleep.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = [pool.submit(one, backend, np, mode, what) for backend in ("shm", "mpi", "ucx")
                for np in (2, 4) for mode, what in where.items()]
        for r in runs:
            r.result()


def case_async_save_stop():
    case = "stopped async save"
    with tempfile.TemporaryDirectory() as d:
        r = stop_then_end(case, [mpiexec, "2", job, "async-save-stop", "--victim", "1", "--at",
                                 "3", "--save", d], 2, 1,
                          lambda line: line.startswith("rank 1: stopping itself"), {}, "",
                          stop_marker=True)
    if r is None:
        return
    out, after = r
    survivors_name(case, out, range(2), 1,
                   r"zrt_request_wait: checkpoint .* was not saved: .* did not complete "
                   rf"within {TIMEOUT:g} s: rank 1 did not answer")
    released_without_waiting(case, out, range(2), 1)
    if case not in failures:
        print(f"ok [{case}]: the wait failed naming rank 1, released at once; the job ended "
              f"{after:.1f} s after the stop")


def case_destroy_early():
    # One rank destroys its engine and finalizes (an error of its own) while the other
    # steps: the stepping rank times out in the step; the destroying one times out in the
    # destroy's meeting instead of waiting in MPI_Win_free for ever; both end.
    case = "destroy early"
    rc, out, seconds = run(2, ["destroy-early", "--victim", "1", "--at", "3"],
                           {"ZRT_COMM_TIMEOUT": str(TIMEOUT)}, limit=TIMEOUT + GRACE + 60)
    if not check(case, rc is not None, "no exit (a hang)", out):
        return
    check(case, rc != 0, "exit status 0", out)
    check(case, seconds < TIMEOUT + GRACE, f"took {seconds:.1f} s", out)
    survivors_name(case, out, [0], 1, r"agreement #\d+ in zrt_engine_step did not complete "
                   rf"within {TIMEOUT:g} s: rank 1 did not answer")
    released_without_waiting(case, out, [0], 1)
    check(case, re.search(r"^rank 1: released in [\d.]+ s \(zrt_engine_destroy: timed out, "
                          r"zrt_finalize: timed out", out, re.M) is not None,
          "rank 1's destroy did not time out and say so", out)
    if case not in failures:
        print(f"ok [{case}]: the stepping rank and the destroying rank both ended, in "
              f"{seconds:.1f} s")


# The trainers, stopped from outside: in the step (after rank 0's step 3 line), in a save
# (when the victim's debug log says it wrote its blocks, before the save's last agreement),
# in the commit (when the victim's engine exists, before its parameters are registered).
TRAINER_STOPS = {
    "step": (lambda v, n: (lambda line: re.match(r"step +3/", line) is not None)),
    "save": (lambda v, n: (lambda line: line.startswith(
        f"[zerort {v}/{n} debug] checkpoint write on this rank"))),
    "commit": (lambda v, n: (lambda line: line.startswith(f"[zerort {v}/{n} debug] engine: "))),
}


def case_trainers_stopped():
    if apps is None:
        print("skip [trainers stopped]: this build has no zrt-gpt2 (Kokkos off)")
        return
    runs = [("zrt-gpt2", "step", 4, "shm"), ("zrt-gpt2", "save", 2, "mpi"),
            ("zrt-gpt2", "commit", 4, "ucx"), ("zrt-bert", "step", 2, "ucx"),
            ("zrt-bert", "save", 4, "shm"), ("zrt-bert", "commit", 2, "mpi")]
    for program, where, np, backend in runs:
        case = f"{program} stopped in the {where} np{np} {backend}"
        victim = np - 1
        with tempfile.TemporaryDirectory() as d:
            model = (["--config", "d2"] if program == "zrt-gpt2" else
                     ["--config", "bert-tiny", "--seq", "32"])
            cmd = [mpiexec, str(np), os.path.join(apps, program), *model, "--steps", "1000",
                   "--batch", "2", "--log-every", "1", "--eval-every", "0", "--save",
                   os.path.join(d, "ckpt.h5"), "--save-every", "2"]
            if program == "zrt-gpt2":
                cmd += ["--sample-every", "-1"]
            env = {"ZRT_COMM_BACKEND": backend, "ZRT_LOG_LEVEL": "debug",
                   "OPENBLAS_NUM_THREADS": "1"}
            r = stop_then_end(case, cmd, np, victim, TRAINER_STOPS[where](victim, np), env, "",
                              limit=180)
        if r is None:
            continue
        out, after = r
        check(case, re.search(rf"{program}: rank \d+: .*did not complete within {TIMEOUT:g} s: "
                              rf"rank {victim} did not answer", out) is not None,
              f"no survivor named rank {victim}", out)
        if case not in failures:
            print(f"ok [{case}]: the job ended {after:.1f} s after rank {victim} stopped")


CASES = {
    "step-stop": case_step_stop,
    "collective-stop": case_collective_stop,
    "kill": case_kill,
    "init-stop": case_init_stop,
    "init-kill": case_init_kill,
    "settings": case_settings,
    "register-fail": case_register_fail,
    "load-fail": case_load_fail,
    "nan": case_nan,
    "nan-unchecked": case_nan_unchecked,
    "killed-saves": case_killed_saves,
    "disk-full": case_disk_full,
    "stopped-jobs": case_stopped_jobs,
    "async-save-stop": case_async_save_stop,
    "destroy-early": case_destroy_early,
    "trainers-stopped": case_trainers_stopped,
}

for name, fn in CASES.items():
    if not wanted or name in wanted:
        fn()
if failures:
    print(f"FAILED: {', '.join(failures)}")
    sys.exit(1)
print("ok: every fault case")
