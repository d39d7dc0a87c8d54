#!/usr/bin/env python3
# queue_test.py — end-to-end tests of distributed evaluation: a real redis-server (AOF on) on a
# loopback port, three CPU `kevin worker` processes, and `kevin eval --batch --queue` as the
# producer. A batch completes with one result per job; a worker killed with SIGKILL mid-job
# loses nothing; Redis restarted mid-batch is waited out.
# Usage: queue_test.py KEVIN_BINARY SOURCE_DIR WORK_DIR   (exit 77 = skipped: no redis-server)
import json
import os
import shutil
import signal
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
        self.proc = subprocess.Popen([REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--appendonly", "yes",
                                      "--appendfsync", "always", "--save", "", "--dir", self.dir, "--loglevel", "warning"],
                                     stdout=subprocess.DEVNULL)
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
        self.proc = subprocess.Popen([KEVIN, "worker", "--queue", redis.url, "--backend", "cpu", "--jobs", "1", "--name", name,
                                      "--lease", str(LEASE_S), "--timeout", "3", "--cache-dir", os.path.join(WORK, "cache")],
                                     stdout=self.log, stderr=self.log)
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
            out.write(json.dumps({"task": os.path.join(TASKS, task + ".py"), "candidate": candidate}) + "\n")
    return path


def producer(redis, batch):
    return subprocess.Popen([KEVIN, "eval", "--batch", batch, "--queue", redis.url, "--backend", "cpu", "--jobs", "32"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def results_of(proc, timeout=900):
    out, err = proc.communicate(timeout=timeout)
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return lines, err


GOOD = [("vector_add", "good_vector_add.cpp"), ("row_softmax", "good_row_softmax.cpp"),
        ("row_sum_scaled", "good_row_sum_scaled.cpp"), ("vector_add", "wrong_formula.cpp")]


class Distributed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(os.path.join(WORK, "redis"))
        cls.redis = Redis(os.path.join(WORK, "redis"))
        cls.workers = [Worker(cls.redis, f"w{i}") for i in range(3)]

    @classmethod
    def tearDownClass(cls):
        for w in cls.workers:
            w.stop()
        cls.redis.stop()

    def check_one_result_per_job(self, lines, n):
        self.assertEqual(sorted(l["index"] for l in lines), list(range(n)), "exactly one result per job")
        errors = [l for l in lines if "error" in l]
        self.assertEqual(errors, [])

    def test_a_batch_of_sixty_completes_with_one_result_per_job(self):
        pairs = [GOOD[i % len(GOOD)] for i in range(60)]
        started = time.monotonic()
        lines, err = results_of(producer(self.redis, batch_file("sixty", pairs, "sixty")))
        self.check_one_result_per_job(lines, 60)
        verdicts = [l["verdict"] for l in sorted(lines, key=lambda l: l["index"])]
        self.assertEqual(verdicts, ["correct" if "good" in k else "wrong_answer" for _, k in pairs], err)
        print(f"queue: 60 evaluations over 3 CPU workers in {time.monotonic() - started:.1f} s", file=sys.stderr)

    def test_a_worker_killed_mid_job_loses_nothing(self):
        pairs = [("vector_add", "hostile_infinite_loop.cpp")] + GOOD * 2
        proc = producer(self.redis, batch_file("kill", pairs, "kill"))
        victim = None
        deadline = time.monotonic() + 60
        while victim is None and time.monotonic() < deadline:
            # The consumer holding an unacknowledged job is judging it right now.
            pending = subprocess.run(["redis-cli", "-p", str(self.redis.port), "XPENDING", "e2e:jobs:any-cpu", "workers",
                                      "-", "+", "10"], capture_output=True, text=True).stdout.split()
            holders = [w for w in self.workers if w.name in pending]
            victim = holders[0] if holders else None
            time.sleep(0.1)
        self.assertIsNotNone(victim, "no worker took a job")
        victim.proc.kill()
        victim.proc.wait()
        lines, err = results_of(proc)
        self.check_one_result_per_job(lines, len(pairs))
        self.assertEqual(lines[[l["index"] for l in lines].index(0)]["verdict"], "timeout")
        logs = "".join(open(os.path.join(WORK, f"{w.name}.log")).read() for w in self.workers if w is not victim)
        self.assertIn("reclaimed job", logs, "the killed worker's job was finished by another worker")
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
