#!/usr/bin/env python3
"""zerort on several nodes: a real Slurm whose nodes are network, UTS and mount namespaces of
this machine (slurm/local-cluster --nodes 4, started by the ctest fixture), so that Open MPI,
PMIx and UCX see separate nodes: shared memory inside a node, TCP over the bridge between
them.

    run_multinode_tests.py CASE SOURCE_DIR BUILD_DIR

CASE is one of:
  selfcheck  zrt-info --selfcheck at 2 nodes x 2 ranks and 4 x 1, with comm.backend auto
             (hier: shm inside a node, ucx between), ucx and mpi: every collective exact;
             zrt-info's topology names the nodes and their ranks; the inter-node traffic
             crossed the nodes' links (their byte counters grew)
  engine     the engine at ZeRO stages 0-3 in deterministic mode: zrt-gpt2's checkpoint after
             3 steps at 2 x 2 and 4 x 1 equals one node's 4 ranks' bit for bit (zrt-ckpt diff)
  gpt2job    slurm/gpt2.sbatch with GPT-2 d2 over 2 nodes x 2 ranks to completion
  lostnode   a node of a running job dies (kill-node: its slurmd and ranks): the job (--no-kill)
             continues on the node left from its checkpoint with the global batch kept and
             completes; 2 x 1 -> 1 x 1 ends with the uninterrupted job's checkpoint bit for bit;
             2 x 2 -> 1 x 2 completes, saying how the global batch was kept; the time from the
             death to training again is printed and must be under 60 s
  frozen     the ranks of one node stopped (SIGSTOP) after a checkpoint, ZRT_COMM_TIMEOUT=5:
             the run ends within the timeout and a grace, the job requeues itself, resumes on
             fresh processes and completes
  startcrash a rank that dies between MPI_Init and zrt_init (SIGSEGV, a preloaded shim) under
             an srun without --kill-on-bad-exit, which keeps the others: they fail in zrt_init
             at comm.timeout naming the meeting, the trainer ends the job with MPI_Abort, and
             srun names the task that died
  badinput   a job whose model does not fit the nodes left (--mem) stops with the numbers
             when it loses a node; a multi-node cluster without the namespace permissions
             (CAP_SYS_ADMIN, CAP_NET_ADMIN dropped) refuses, naming them, and leaves nothing
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

case, src, build = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
apps = os.path.join(build, "apps")
cluster = os.path.join(src, "slurm", "local-cluster")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def cluster_env():
    out = subprocess.run([cluster, "env"], capture_output=True, text=True, check=True).stdout
    conf = re.search(r"export SLURM_CONF=(\S+)", out).group(1)
    if not os.path.exists(conf):
        sys.exit(f"no cluster: {conf} does not exist (slurm/local-cluster --nodes 4 start, with "
                 "this ZRT_SLURM_DIR and ZRT_SLURM_PORT)")
    env = dict(os.environ, SLURM_CONF=conf,
               OPENBLAS_NUM_THREADS="1", SBATCH_GPUS_PER_NODE="0")
    # The PMIx plugin puts its session folders under TMPDIR when set: shared by all the nodes
    # of this machine, they would collide; unset, each node uses its own TmpFS.
    env.pop("TMPDIR", None)
    # A collective stuck by a fault of the cluster names its ranks within a minute.
    env.setdefault("ZRT_COMM_TIMEOUT", "60")
    return env


env = cluster_env()


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, env=kw.pop("env", env), cwd=src,
                          **kw)


def stacks(names):
    """Every thread's stack of the processes named, wherever they run (gdb reaches the nodes'
    processes: they share this machine's pid namespace), and the cluster's steps: what a
    hung run was doing, for the test's output."""
    out = []
    for name in names:
        for pid in subprocess.run(["pgrep", "-x", name], capture_output=True,
                                  text=True).stdout.split():
            status = read(f"/proc/{pid}/status")
            state = re.search(r"^State:\s*(.*)$", status, re.M)
            node = subprocess.run(["ip", "netns", "identify", pid], capture_output=True,
                                  text=True).stdout.strip()
            out.append(f"--- {name} pid {pid} ({node or 'host'}, "
                       f"{state.group(1) if state else 'gone'})")
            bt = subprocess.run(["gdb", "-p", pid, "-batch", "-ex", "thread apply all bt"],
                                capture_output=True, text=True, timeout=60).stdout
            out += [l for l in bt.splitlines() if l.startswith(("#", "Thread"))][:120]
    out.append(sh(["scontrol", "show", "step"]).stdout)
    return "\n".join(out)


def srun(nodes, per_node, args, extra_env=None, timeout=180):
    """srun's result; one that outlives its timeout prints the stacks of its ranks and of
    Slurm's processes before it is cancelled, and returns returncode None."""
    e = dict(env, **(extra_env or {}))
    cmd = ["srun", "--mpi=pmix", "-N", str(nodes), f"--ntasks-per-node={per_node}",
           "--cpus-per-task=1", *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=e, cwd=src)
    try:
        out, err = p.communicate(timeout=timeout)
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        print(f"srun outlived {timeout} s: {' '.join(cmd)}\n"
              f"{stacks([os.path.basename(args[0]), 'slurmstepd', 'srun'])}", flush=True)
        p.send_signal(signal.SIGINT)  # srun passes a first SIGINT on to the ranks
        time.sleep(1)
        p.send_signal(signal.SIGINT)  # and a second within a second cancels the step
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        print(f"its output:\n{out[-3000:]}\n{err[-3000:]}", flush=True)
        return subprocess.CompletedProcess(cmd, None, out, err + f"\n(timed out after {timeout} s)")


def job_fields(job):
    out = sh(["scontrol", "-o", "show", "job", str(job)]).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def wait_job(job, timeout=300, on_pending=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        f = job_fields(job)
        if f.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
            return f
        if f.get("JobState") == "PENDING" and on_pending:
            on_pending(f)
        time.sleep(0.5)
    sh(["scancel", str(job)])
    return job_fields(job)


def hurry_restart(job):
    """A requeued job waits out Slurm's start-time delay (about 2 minutes): start it 5 s
    after its requeue, as an operator could."""
    done = set()

    def hurry(f):
        if f.get("Reason") == "BeginTime" and f.get("Restarts") not in done:
            sh(["scontrol", "update", f"JobId={job}", "StartTime=now+5"])
            done.add(f.get("Restarts"))

    return hurry


def submit(nodes, per_node, out, log, args, extra=()):
    r = sh(["sbatch", "--parsable", "-N", str(nodes), f"--ntasks-per-node={per_node}",
            "--cpus-per-task=1", f"--output={log}", *extra,
            os.path.join(src, "slurm", "gpt2.sbatch"), "--out", out] + args)
    check(r.returncode == 0, f"sbatch -N {nodes} --ntasks-per-node={per_node} ({r.stderr.strip()})")
    if r.returncode != 0:
        return None, None
    job = int(r.stdout.strip().split(";")[0])
    return job, os.path.join(out, f"gpt2-{job}")


def read(path):
    return open(path, errors="replace").read() if os.path.exists(path) else ""


def job_nodes(job):
    nodelist = job_fields(job).get("NodeList", "")
    return sh(["scontrol", "show", "hostnames", nodelist]).stdout.split()


def node_pids(node):
    """The processes on a node (in its network namespace)."""
    settings = read(os.path.join(os.environ["ZRT_SLURM_DIR"], "cluster.env"))
    port = os.environ.get("ZRT_SLURM_PORT", "6817")
    r = subprocess.run(["ip", "netns", "pids", f"zrt{port}-{node}"], capture_output=True,
                       text=True)
    return [int(p) for p in r.stdout.split()] if settings else []


def link_bytes():
    """Bytes sent and received by every node's link, summed."""
    port = os.environ.get("ZRT_SLURM_PORT", "6817")
    total = 0
    for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                             text=True).stdout.split("\n"):
        name = ns.split(" ")[0]
        if re.fullmatch(rf"zrt{port}-node\d+", name):
            out = subprocess.run(["ip", "-n", name, "-s", "-j", "link", "show", "eth0"],
                                 capture_output=True, text=True).stdout
            stats = json.loads(out)[0]["stats64"]
            total += stats["rx"]["bytes"] + stats["tx"]["bytes"]
    return total


def wait_for(path, pattern, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if re.search(pattern, read(path), re.M):
            return True
        time.sleep(0.2)
    return False


def diff(a, b):
    d = sh([os.path.join(apps, "zrt-ckpt"), "diff", a, b])
    return d.returncode, (d.stdout.strip().splitlines() or [""])[-1]


gpt2_args = ["--seq", "32", "--batch", "2", "--eval-batches", "1", "--sample-every", "-1"]
data = os.path.join(src, "apps", "data", "cache", "moby-dick")

with tempfile.TemporaryDirectory(dir=os.path.join(build, "Testing")) as tmp:
    if case == "selfcheck":
        for nodes, per_node in ((2, 2), (4, 1)):
            for backend in ("auto", "ucx", "mpi"):
                before = link_bytes()
                r = srun(nodes, per_node, [os.path.join(apps, "zrt-info"), "--selfcheck"],
                         {"ZRT_COMM_BACKEND": backend})
                moved = link_bytes() - before
                check(r.returncode == 0 and "self-check: all passed" in r.stdout and
                      re.search(rf"4 ranks on {nodes} nodes", r.stdout) is not None,
                      f"{nodes} x {per_node}, comm.backend={backend}: every collective exact "
                      f"({r.returncode}) {r.stderr[-300:]}")
                check(moved > 1_000_000, f"{nodes} x {per_node}, {backend}: the nodes' links "
                      f"carried the inter-node traffic ({moved} bytes)")
                if backend == "auto" and per_node > 1:
                    m = re.search(r"comm\.backend=auto: host memory -> (\w+).*\[(\d+) nodes of (\d+)",
                                  r.stdout)
                    check(m is not None and m.groups() == ("hier", str(nodes), str(per_node)),
                          f"{nodes} x {per_node}: auto chooses hier over {nodes} nodes of "
                          f"{per_node} ({m.groups() if m else r.stdout[-400:]})")
                    inter = re.search(r'"inter":\{"backend":"(\w+)"', r.stdout)
                    intra = re.search(r'"intra":\{"backend":"(\w+)"', r.stdout)
                    check(inter is not None and inter.group(1) == "ucx" and intra is not None and
                          intra.group(1) == "shm", "hier: ucx between the nodes, shm inside")
                elif backend == "auto":
                    check(f"host memory -> ucx (mpi below 65536 bytes) [{nodes} nodes of one "
                          "rank]" in r.stdout, f"{nodes} x 1: auto chooses ucx, one rank a node")
            r = srun(nodes, per_node, [os.path.join(apps, "zrt-info"), "--json"])
            try:
                ranks = json.loads(r.stdout)["ranks"]
            except (ValueError, KeyError):
                ranks = []
            hosts = [x["topology"].get("hostname") for x in ranks]
            local = [(x["topology"]["local_rank"], x["topology"]["local_size"]) for x in ranks]
            want_hosts = [f"node{1 + i // per_node}" for i in range(4)]
            check(hosts == want_hosts, f"{nodes} x {per_node}: each rank's node as Slurm placed "
                  f"it ({hosts}; zrt-info exited {r.returncode}: {r.stderr[-400:]})")
            check(local == [(i % per_node, per_node) for i in range(4)],
                  f"{nodes} x {per_node}: local ranks from the launcher ({local})")

    elif case == "engine":
        for stage in (0, 1, 2, 3):
            args = [os.path.join(apps, "zrt-gpt2"), "--config", "d1", *gpt2_args, "--steps", "3",
                    "--data", data, "--device", "host", "--deterministic",
                    "--zero-stage", str(stage)]
            ref = os.path.join(tmp, f"one-node-{stage}.h5")
            r = subprocess.run([os.path.join(src, "scripts", "mpirun-local"), "4", *args,
                                "--save", ref], capture_output=True, text=True, cwd=src,
                               env=dict(os.environ, OPENBLAS_NUM_THREADS="1"), timeout=300)
            check(r.returncode == 0, f"stage {stage}: 4 ranks on one node ({r.stderr[-300:]})")
            for nodes, per_node in ((2, 2), (4, 1)):
                out = os.path.join(tmp, f"{nodes}x{per_node}-{stage}.h5")
                r = srun(nodes, per_node, args + ["--save", out], timeout=300)
                rc, last = diff(ref, out) if r.returncode == 0 else (None, r.stderr[-300:])
                check(rc == 0, f"stage {stage}: {nodes} nodes x {per_node} equal one node bit for "
                      f"bit (zrt-ckpt diff {rc}: {last})")

    elif case == "startcrash":
        timeout = 10
        shim = os.path.join(build, "tests", "zrt_die_before_init.so")
        args = [os.path.join(apps, "zrt-gpt2"), "--config", "d1", *gpt2_args, "--steps", "3",
                "--data", data, "--device", "host"]
        start = time.monotonic()
        r = srun(4, 1, args, {"LD_PRELOAD": shim, "DIE_BEFORE_ZRT_INIT": "2",
                              "ZRT_COMM_TIMEOUT": str(timeout)}, 120)
        took = time.monotonic() - start
        said = re.findall(r"zrt-gpt2: rank (\d+): zrt_init: MPI_Comm_dup\(comm\) in zrt_init did "
                          rf"not complete within {timeout} s \(comm\.timeout\)", r.stderr)
        check(r.returncode not in (0, None), f"the job failed (srun exited {r.returncode})")
        check(took < timeout + 30, f"the job ended {took:.1f} s after its start ({timeout} s "
              "timeout, 30 s grace)")
        check(re.search(r"task 2: Segmentation fault", r.stderr) is not None,
              "srun names the task that died")
        check(len(said) > 0 and "2" not in said,
              f"survivors say which meeting timed out (ranks {sorted(said)})")
        if failures:
            print(r.stderr[-3000:])

    elif case == "gpt2job":
        log = os.path.join(tmp, "job.out")
        job, run_dir = submit(2, 2, os.path.join(tmp, "runs"), log,
                              ["--model", "d2", *gpt2_args, "--steps", "6"])
        f = wait_job(job) if job else {}
        text = read(log)
        check(f.get("JobState") == "COMPLETED" and f.get("ExitCode") == "0:0",
              f"the job completes ({f.get('JobState')}, {f.get('ExitCode')})")
        check(f"job {job} (restart 0) on 2 node(s), 4 task(s)" in text and "step 6/6" in text,
              "the log holds the job line (2 nodes, 4 tasks) and the last step")
        check("ZeRO stage 2 on 4 rank(s)" in text, "the engine ran on the 4 ranks")
        run = next((json.loads(l) for l in read(os.path.join(run_dir or tmp, "metrics.jsonl"))
                    .splitlines() if '"type":"run"' in l.replace(" ", "")), {})
        check(run.get("slurm", {}).get("nodelist") == "node[1-2]",
              f"the metrics name the job's nodes ({run.get('slurm')})")
        if failures:
            print(text[-3000:])

    elif case == "lostnode":
        args = ["--model", "d1", *gpt2_args, "--steps", "40", "--save-every", "5",
                "--deterministic"]
        # The uninterrupted references first, side by side (2 x 1 and 2 x 2 fit the 4 nodes).
        refs = {}
        for shape in ((2, 1), (2, 2)):
            refs[shape] = submit(*shape, os.path.join(tmp, f"ref{shape[1]}"),
                                 os.path.join(tmp, f"ref{shape[1]}.out"), args)
        for shape, (job, _) in refs.items():
            f = wait_job(job) if job else {}
            check(f.get("JobState") == "COMPLETED",
                  f"the uninterrupted {shape[0]} x {shape[1]} job completes ({f.get('JobState')})")
        for nodes, per_node in ((2, 1), (2, 2)):
            log = os.path.join(tmp, f"lost{per_node}.out")
            job, run_dir = submit(nodes, per_node, os.path.join(tmp, f"lost{per_node}"), log, args)
            reached = job and wait_for(log, r"^step +12/")
            victim = job_nodes(job)[-1] if reached else None
            died = time.time()
            k = subprocess.run([cluster, "kill-node", victim or "none"], capture_output=True,
                               text=True)
            check(reached and k.returncode == 0, f"{nodes} x {per_node}: {victim} killed mid-run "
                  f"({k.stdout.strip()} {k.stderr.strip()})")
            again = wait_for(log, r"continuing on[\s\S]*^step +\d+/40", timeout=120)
            seconds = time.time() - died
            print(f"{nodes} x {per_node}: training again {seconds:.1f} s after {victim} died",
                  flush=True)
            check(again and seconds < 60, f"{nodes} x {per_node}: training again within 60 s of "
                  f"the node's death ({seconds:.1f} s)")
            f = wait_job(job) if job else {}
            text = read(log)
            check(f.get("JobState") == "COMPLETED" and f.get("ExitCode") == "0:0",
                  f"{nodes} x {per_node}: the job completes on the node left "
                  f"({f.get('JobState')}, {f.get('ExitCode')})")
            check(f"lost node(s) {victim}" in text and "step 40/40" in text,
                  f"{nodes} x {per_node}: the log names the lost node and reaches the last step")
            tasks = nodes // 2 * per_node
            m = re.search(r"continuing on 1 node\(s\) \(\S+\), (\d+) task\(s\), from \S+: "
                          r"global batch (\d+) kept: \d+ task\(s\) x batch 2 x (\d+) micro", text)
            check(m is not None and m.groups() == (str(tasks), str(2 * nodes * per_node),
                                                   str(nodes)),
                  f"{nodes} x {per_node}: continued on {tasks} task(s), global batch "
                  f"{2 * nodes * per_node} kept with {nodes} micro-steps "
                  f"({m.groups() if m else 'no such line'})")
            rc, last = diff(os.path.join(refs[(nodes, per_node)][1], "checkpoint.h5"),
                            os.path.join(run_dir, "checkpoint.h5"))
            if per_node == 1:
                check(rc == 0, f"2 x 1 -> 1 x 1: the final checkpoint equals the uninterrupted "
                      f"job's (zrt-ckpt diff {rc}: {last})")
            else:
                # Deterministic mode adds in rank order within each micro-step: 4 ranks add
                # ((g0+g1)+g2)+g3, 2 ranks with 2 micro-steps (g0+g1)+(g2+g3). Equal to
                # rounding, not bitwise: the loss of the last step to 3 decimals.
                losses = [re.findall(r"^step 40/40 \| loss (\d+\.\d+)", read(p), re.M)
                          for p in (os.path.join(tmp, "ref2.out"), log)]
                check(rc is not None and losses[0] and losses[1] and
                      abs(float(losses[0][-1]) - float(losses[1][-1])) < 2e-3,
                      f"2 x 2 -> 1 x 2: the last step's loss as the uninterrupted job's "
                      f"({losses})")
            subprocess.run([cluster, "revive-node", victim or "none"], capture_output=True)
            if failures:
                print(text[-3000:])

    elif case == "frozen":
        log = os.path.join(tmp, "job.out")
        job, run_dir = submit(2, 2, os.path.join(tmp, "runs"), log,
                              ["--model", "d1", *gpt2_args, "--steps", "30", "--save-every", "5",
                               "--deterministic"], extra=["--export=ALL,ZRT_COMM_TIMEOUT=5"])
        reached = job and wait_for(log, r"^checkpoint: .* \(step 5,")
        victim = job_nodes(job)[-1] if reached else None
        ranks = [p for p in (node_pids(victim) if victim else [])
                 if b"zrt-gpt2" in open(f"/proc/{p}/cmdline", "rb").read()]
        for p in ranks:
            os.kill(p, signal.SIGSTOP)
        stopped = time.time()
        check(reached and len(ranks) == 2, f"the 2 ranks on {victim} stopped after the first "
              f"checkpoint ({ranks})")
        ended = wait_for(log, r"requeueing job", timeout=90)
        seconds = time.time() - stopped
        check(ended and seconds < 5 + 25, f"the run ended and the job requeued itself "
              f"{seconds:.1f} s after the stop (timeout 5 s, grace 25 s)")
        f = wait_job(job, on_pending=hurry_restart(job)) if job else {}
        text = read(log)
        named = re.search(r"did not complete within 5 s: ranks 2-3 did not answer", text)
        check(named is not None, "a survivor names the stopped node's ranks, 2-3 (" +
              " | ".join(l for l in text.splitlines() if "did not complete" in l)[:600] + ")")
        check(f.get("JobState") == "COMPLETED" and f.get("Restarts") == "1",
              f"the requeued job resumes and completes ({f.get('JobState')}, restarts "
              f"{f.get('Restarts')})")
        check("step 30/30" in text and f"job {job} (restart 1)" in text,
              "the restart ran to the last step")
        if failures:
            print(text[-3000:])

    elif case == "badinput":
        # d1 at stage 2 with 2 ranks a node: 4 ranks need about 48 MiB each, 2 ranks with 2
        # micro-steps 70 MiB; --mem=120M gives each of a node's 2 ranks 60 MiB.
        log = os.path.join(tmp, "job.out")
        job, run_dir = submit(2, 2, os.path.join(tmp, "runs"), log,
                              ["--model", "d1", *gpt2_args, "--steps", "40", "--save-every", "5"],
                              extra=["--mem=120M"])
        reached = job and wait_for(log, r"^step +8/")
        victim = job_nodes(job)[-1] if reached else None
        subprocess.run([cluster, "kill-node", victim or "none"], capture_output=True)
        f = wait_job(job) if job else {}
        text = read(log)
        check(f.get("JobState") == "FAILED", f"the job fails ({f.get('JobState')})")
        check(re.search(r"d1 at stage 2 does not fit the 1 node\(s\) left: 2 task\(s\) would "
                        r"each need [\d.]+ MiB of the 60 MiB each rank has: does not fit "
                        r"\(--mem=120 MiB a node over 2 task\(s\)\); not continued", text)
              is not None,
              "it says why, with the numbers: " +
              "".join(l for l in text.splitlines(True) if "does not fit" in l).strip())
        subprocess.run([cluster, "revive-node", victim or "none"], capture_output=True)

        # No namespaces without their capabilities: a clear refusal, nothing left behind.
        port = "6857"
        e = dict(os.environ, ZRT_SLURM_DIR=os.path.join(tmp, "nocaps"), ZRT_SLURM_PORT=port)
        r = subprocess.run(["setpriv", "--bounding-set", "-sys_admin,-net_admin", cluster,
                            "--nodes", "2", "start"], capture_output=True, text=True, env=e)
        check(r.returncode != 0 and "CAP_SYS_ADMIN and CAP_NET_ADMIN" in r.stderr,
              f"without CAP_SYS_ADMIN/CAP_NET_ADMIN: refused, naming them ({r.stderr.strip()})")
        subprocess.run([cluster, "stop"], capture_output=True, env=e)
        left = [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                          text=True).stdout.split() if n.startswith(f"zrt{port}")]
        check(not left, f"no namespace left behind ({left})")

    else:
        sys.exit(f"unknown case {case}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
