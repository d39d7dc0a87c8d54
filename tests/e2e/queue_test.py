#!/usr/bin/env python3
# queue_test.py — end-to-end tests of distributed evaluation: a real redis-server (AOF on) on a
# loopback port, three CPU `kevin worker` processes, and `kevin eval --batch --queue` as the
# producer. A batch completes with one result per job (KernelBench answers too); a worker killed
# with SIGKILL mid-job loses nothing; Redis restarted mid-batch is waited out; a producer given
# no --backend judges on the live CPU workers, and one forced to cuda fails after its worker wait.
# Usage: queue_test.py KEVIN_BINARY SOURCE_DIR WORK_DIR   (exit 77 = skipped: no redis-server)
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import unittest

KEVIN, SOURCE, WORK = sys.argv[1:4]
del sys.argv[1:4]
REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
if not os.access(REDIS, os.X_OK) or not shutil.which("redis-cli"):
    print("queue_test: skipped: redis-server (with redis-cli) is not installed", file=sys.stderr)
    sys.exit(77)
KERNELS = os.path.join(SOURCE, "tests/fixtures/kernels/cpu")
TASKS = os.path.join(SOURCE, "tests/fixtures/tasks")
LEASE_S = 4
CALL_TIMEOUT_S = (
    "3"  # workers and producers judge with the same call timeout (it travels with each job)
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    def __init__(self, folder):
        self.port = free_port()
        self.dir = folder
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [
                REDIS,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--dir",
                self.dir,
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
        )
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}/e2e"


class Worker:
    def __init__(self, redis, name):
        self.log = open(os.path.join(WORK, f"{name}.log"), "a")
        self.proc = subprocess.Popen(
            [
                KEVIN,
                "worker",
                "--queue",
                redis.url,
                "--backend",
                "cpu",
                "--jobs",
                "1",
                "--name",
                name,
                "--lease",
                str(LEASE_S),
                "--timeout",
                CALL_TIMEOUT_S,
                "--cache-dir",
                os.path.join(WORK, "cache"),
            ],
            stdout=self.log,
            stderr=self.log,
        )
        self.name = name

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(120)
        self.log.close()


def batch_file(name, pairs, salt):
    """Pairs of (task stem, kernel file) as a batch with salted candidate copies (distinct jobs)."""
    folder = os.path.join(WORK, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "batch.jsonl")
    with open(path, "w") as out:
        for i, (task, kernel) in enumerate(pairs):
            with open(os.path.join(KERNELS, kernel)) as f:
                source = f"// {salt} {i}\n" + f.read()
            candidate = os.path.join(folder, f"{i}-{kernel}")
            with open(candidate, "w") as f:
                f.write(source)
            out.write(
                json.dumps({"task": os.path.join(TASKS, task + ".py"), "candidate": candidate})
                + "\n"
            )
    return path


def producer(redis, batch):
    return subprocess.Popen(
        [
            KEVIN,
            "eval",
            "--batch",
            batch,
            "--queue",
            redis.url,
            "--backend",
            "cpu",
            "--jobs",
            "32",
            "--timeout",
            CALL_TIMEOUT_S,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def results_of(proc, timeout=900):
    out, err = proc.communicate(timeout=timeout)
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return lines, err


GOOD = [
    ("vector_add", "good_vector_add.cpp"),
    ("row_softmax", "good_row_softmax.cpp"),
    ("row_sum_scaled", "good_row_sum_scaled.cpp"),
    ("vector_add", "wrong_formula.cpp"),
]


class Cluster:
    """One redis-server and three CPU workers, shared by every test of the module."""

    redis = None
    workers = []


def setUpModule():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(os.path.join(WORK, "redis"))
    Cluster.redis = Redis(os.path.join(WORK, "redis"))
    Cluster.workers = [Worker(Cluster.redis, f"w{i}") for i in range(3)]


def tearDownModule():
    for w in Cluster.workers:
        w.stop()
    Cluster.redis.stop()


class Distributed(unittest.TestCase):
    @property
    def redis(self):
        return Cluster.redis

    @property
    def workers(self):
        return Cluster.workers

    def check_one_result_per_job(self, lines, n):
        self.assertEqual(
            sorted(l["index"] for l in lines), list(range(n)), "exactly one result per job"
        )
        errors = [l for l in lines if "error" in l]
        self.assertEqual(errors, [])

    def test_a_batch_of_sixty_completes_with_one_result_per_job(self):
        pairs = [GOOD[i % len(GOOD)] for i in range(60)]
        started = time.monotonic()
        lines, err = results_of(producer(self.redis, batch_file("sixty", pairs, "sixty")))
        self.check_one_result_per_job(lines, 60)
        verdicts = [l["verdict"] for l in sorted(lines, key=lambda l: l["index"])]
        self.assertEqual(
            verdicts, ["correct" if "good" in k else "wrong_answer" for _, k in pairs], err
        )
        print(
            f"queue: 60 evaluations over 3 CPU workers in {time.monotonic() - started:.1f} s",
            file=sys.stderr,
        )

    def test_kernelbench_answers_are_judged_by_the_workers_in_their_format(self):
        answers = os.path.join(SOURCE, "tests/fixtures/kernelbench")
        batch = os.path.join(WORK, "kernelbench.jsonl")
        task = os.path.join(SOURCE, "tasks/level1/026_relu.py")
        with open(batch, "w") as out:
            for answer in ("good_relu.py", "try_except_fallback.py"):
                out.write(
                    json.dumps({"task": task, "candidate": os.path.join(answers, answer)}) + "\n"
                )
        lines, err = results_of(
            producer(self.redis, batch)
        )  # kevin eval's --format auto: ModelNew files
        self.check_one_result_per_job(lines, 2)
        got = {os.path.basename(l["candidate"]): (l["verdict"], l["reason"]) for l in lines}
        # The judge's own words last, where a log cut to its end still shows them.
        said = (
            err
            + "\n"
            + "\n".join(
                f"{l['candidate']}: {l.get('feedback')} {l.get('clock_check')}" for l in lines
            )
        )
        self.assertEqual(got["good_relu.py"], ("correct", ""), said)
        self.assertEqual(got["try_except_fallback.py"], ("rejected", "try_except_fallback"), said)

    def test_kevin_workers_lists_the_live_workers_and_the_streams(self):
        names = {w.name for w in self.workers if w.proc.poll() is None}
        deadline = time.monotonic() + 20
        while True:
            shown = subprocess.run(
                [KEVIN, "workers", "--queue", self.redis.url],
                capture_output=True,
                text=True,
                timeout=30,
            )
            self.assertEqual(shown.returncode, 0, shown.stderr)
            rows = [l.split() for l in shown.stdout.splitlines()]
            listed = {r[0] for r in rows if r and r[0] in names}
            if listed == names or time.monotonic() > deadline:
                break
            time.sleep(1)
        self.assertEqual(listed, names, shown.stdout)
        for r in rows:
            if r and r[0] in names:
                self.assertEqual(r[1:3], ["CPU", "-"], f"device CPU, no GPU ordinals: {r}")
        self.assertTrue(any(r and r[0] == "e2e:jobs:any-cpu" for r in rows), shown.stdout)

    def test_a_producer_given_no_backend_follows_the_live_cpu_workers(self):
        candidate = os.path.join(WORK, "follow.cpp")
        with open(os.path.join(KERNELS, "good_vector_add.cpp")) as f, open(candidate, "w") as out:
            out.write("// follow\n" + f.read())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the heartbeats the producer follows
            beats = subprocess.run(
                ["redis-cli", "-p", str(self.redis.port), "--scan", "--pattern", "e2e:worker:*"],
                capture_output=True,
                text=True,
            ).stdout.split()
            if beats:
                break
            time.sleep(0.2)
        command = [
            KEVIN,
            "eval",
            "--task",
            os.path.join(TASKS, "vector_add.py"),
            "--candidate",
            candidate,
            "--queue",
            self.redis.url,
            "--timeout",
            CALL_TIMEOUT_S,
            "--json",
        ]
        auto = subprocess.run(command, capture_output=True, text=True, timeout=300)
        self.assertEqual(auto.returncode, 0, auto.stderr)
        self.assertEqual(json.loads(auto.stdout)["verdict"], "correct", auto.stdout)
        self.assertRegex(auto.stderr, r"queue: judging on cpu: \d+ live workers")
        started = time.monotonic()
        forced = subprocess.run(
            command + ["--backend", "cuda", "--queue-worker-wait", "2"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(forced.returncode, 1, forced.stderr)
        self.assertLess(time.monotonic() - started, 30, "the worker wait, not the 3 h limit")
        self.assertIn("waited 2 s: no live worker takes e2e:jobs:any-cuda", forced.stderr)
        self.assertRegex(forced.stderr, r"live workers: \S+ \(cpu, CPU\)")
        self.assertIn("--backend cpu", forced.stderr)

    def test_a_worker_killed_mid_job_loses_nothing(self):
        pairs = [("vector_add", "hostile_infinite_loop.cpp")] + GOOD * 2
        proc = producer(self.redis, batch_file("kill", pairs, "kill"))
        victim = None
        deadline = time.monotonic() + 60
        while victim is None and time.monotonic() < deadline:
            # The consumer holding an unacknowledged job is judging it right now.
            pending = subprocess.run(
                [
                    "redis-cli",
                    "-p",
                    str(self.redis.port),
                    "XPENDING",
                    "e2e:jobs:any-cpu",
                    "workers",
                    "-",
                    "+",
                    "10",
                ],
                capture_output=True,
                text=True,
            ).stdout.split()
            holders = [w for w in self.workers if w.name in pending]
            victim = holders[0] if holders else None
            time.sleep(0.1)
        self.assertIsNotNone(victim, "no worker took a job")
        victim.proc.kill()
        victim.proc.wait()
        lines, err = results_of(proc)
        self.check_one_result_per_job(lines, len(pairs))
        self.assertEqual(lines[[l["index"] for l in lines].index(0)]["verdict"], "timeout")
        logs = "".join(
            open(os.path.join(WORK, f"{w.name}.log")).read()
            for w in self.workers
            if w is not victim
        )
        self.assertIn(
            "reclaimed job", logs, "the killed worker's job was finished by another worker"
        )
        # A replacement, so later tests keep three workers.
        self.workers[self.workers.index(victim)] = Worker(self.redis, victim.name + "b")

    def test_redis_restarted_mid_batch_is_waited_out(self):
        pairs = GOOD * 5
        proc = producer(self.redis, batch_file("restart", pairs, "restart"))
        time.sleep(3)
        self.redis.stop()
        time.sleep(2)
        self.redis.start()
        lines, err = results_of(proc)
        self.check_one_result_per_job(lines, len(pairs))


class RunParity(unittest.TestCase):
    """`kevin run --queue` records what the local engine records, on a scripted policy."""

    def test_run_through_the_queue_matches_the_local_engine(self):
        redis = Cluster.redis
        script = os.path.join(WORK, "parity-script.jsonl")
        with open(script, "w") as f:
            for task, first, second in (
                ("vector_add", "wrong_formula.cpp", "good_vector_add.cpp"),
                ("row_softmax", "good_row_softmax.cpp", "good_row_softmax.cpp"),
            ):
                for kernel in (first, second) * 2:  # two trajectories of two turns
                    with open(os.path.join(KERNELS, kernel)) as k:
                        code = k.read()
                    f.write(
                        json.dumps({"match": task, "response": f"```cpp\n{code}\n```\nDone."})
                        + "\n"
                    )
        records = {}
        for mode, extra in (("local", []), ("queue", ["--queue", redis.url])):
            out = os.path.join(WORK, f"parity-{mode}")
            shutil.rmtree(out, ignore_errors=True)
            done = subprocess.run(
                [
                    KEVIN,
                    "run",
                    "--tasks",
                    os.path.join(TASKS, "vector_add.py"),
                    "--tasks",
                    os.path.join(TASKS, "row_softmax.py"),
                    "--policy",
                    f"scripted:{script}",
                    "-m",
                    "2",
                    "-n",
                    "2",
                    "--parallel",
                    "1",
                    "--backend",
                    "cpu",
                    "--timeout",
                    CALL_TIMEOUT_S,
                    "--cache-dir",
                    os.path.join(WORK, "cache"),
                    "--out",
                    out,
                    *extra,
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            self.assertEqual(done.returncode, 0, done.stderr[-2000:])
            with open(os.path.join(out, "trajectories.jsonl")) as f:
                rows = [json.loads(l) for l in f if l.strip()]
            records[mode] = sorted(
                (r["task"], r["trajectory"], r["turn"], r["verdict"], r["code"]) for r in rows
            )
        self.assertEqual(len(records["local"]), 8)
        self.assertEqual(records["queue"], records["local"])


class PoisonJob(unittest.TestCase):
    """A job that kills every worker that takes it ends in the dead-letter stream."""

    def test_a_job_that_kills_its_workers_is_dead_lettered_and_the_rest_complete(self):
        redis = Cluster.redis
        url = f"redis://127.0.0.1:{redis.port}/poison"
        folder = os.path.join(WORK, "poison")
        os.makedirs(folder, exist_ok=True)
        batch = os.path.join(folder, "batch.jsonl")
        with open(batch, "w") as out:
            for i in range(6):
                candidate = os.path.join(folder, f"{i}.cpp")
                with open(candidate, "w") as f:
                    f.write(
                        "// fake: process_exit\n"
                        if i == 2
                        else f"// fake: correct speedup=2\n// {i}\n"
                    )
                out.write(
                    json.dumps(
                        {"task": os.path.join(TASKS, "vector_add.py"), "candidate": candidate}
                    )
                    + "\n"
                )
        log = open(os.path.join(folder, "workers.log"), "a")

        def start(name):
            return subprocess.Popen(
                [
                    KEVIN,
                    "worker",
                    "--fake-engine",
                    "--queue",
                    url,
                    "--jobs",
                    "1",
                    "--name",
                    name,
                    "--lease",
                    "2",
                    "--max-deliveries",
                    "2",
                    "--cache-dir",
                    os.path.join(WORK, "cache"),
                ],
                stdout=log,
                stderr=log,
            )

        workers = [start(f"p{i}") for i in range(2)]
        deaths = 0
        proc = producer_at(url, batch)
        try:
            while proc.poll() is None:  # a supervisor, as systemd's Restart=always would be
                for i, w in enumerate(workers):
                    if w.poll() is not None:
                        deaths += 1
                        workers[i] = start(f"p{i}-{deaths}")
                time.sleep(0.1)
            lines, err = results_of(proc)
        finally:
            for w in workers:
                w.terminate()
                w.wait(60)
            log.close()
        by_index = {l["index"]: l for l in lines}
        self.assertEqual(sorted(by_index), list(range(6)))
        self.assertIn("dead-lettered", by_index[2].get("error", ""), by_index[2])
        self.assertEqual([by_index[i]["verdict"] for i in (0, 1, 3, 4, 5)], ["correct"] * 5)
        self.assertEqual(
            deaths, 2, "delivered twice (each time its worker died), then dead-lettered"
        )
        dead = subprocess.run(
            ["redis-cli", "-p", str(redis.port), "XLEN", "poison:dead:any-cpu"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        self.assertEqual(dead, "1")


def producer_at(url, batch):
    return subprocess.Popen(
        [
            KEVIN,
            "eval",
            "--batch",
            batch,
            "--queue",
            url,
            "--backend",
            "cpu",
            "--jobs",
            "8",
            "--timeout",
            CALL_TIMEOUT_S,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


if __name__ == "__main__":
    unittest.main(verbosity=2)
