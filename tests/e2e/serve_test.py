#!/usr/bin/env python3
# serve_test.py — end-to-end tests of `kevin serve` on the CPU backend with the real engine,
# driven the way RL stacks drive it: an OpenEnv-style WebSocket client (python3-websockets)
# sending exactly OpenEnv's messages, and KernelGYM's REST calls with its field names.
# Usage: serve_test.py KEVIN_BINARY SOURCE_DIR WORK_DIR   (CTest passes them; loopback only)
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

try:
    import websockets
except ImportError:
    print("serve_test: skipped: python3-websockets is not installed", file=sys.stderr)
    sys.exit(77)

KEVIN, SOURCE, WORK = sys.argv[1:4]
del sys.argv[1:4]
TASKS = os.path.join(SOURCE, "tests/fixtures/tasks")
KERNELS = os.path.join(SOURCE, "tests/fixtures/kernels/cpu")
MAX_SESSIONS = 20
CALL_TIMEOUT_S = 3


def kernel(name):
    with open(os.path.join(KERNELS, name)) as f:
        return f.read()


def reply(code, prose="Here is the kernel."):
    """A model's whole reply, as an RL stack forwards it: prose, reasoning, fenced code."""
    return f"<think>plan the loop</think>\n{prose}\n```cpp\n{code}\n```\nI fused the loop."


class Server:
    """A `kevin serve` child on a free loopback port, with its own TMPDIR and cache."""

    def __init__(self, name, *extra):
        self.tmp = os.path.join(WORK, name, "tmp")
        os.makedirs(self.tmp, exist_ok=True)
        env = dict(os.environ, TMPDIR=self.tmp)
        self.log = open(os.path.join(WORK, name, "serve.log"), "w")
        self.proc = subprocess.Popen(
            [
                KEVIN,
                "serve",
                "--backend",
                "cpu",
                "--port",
                "0",
                "--tasks",
                TASKS,
                "--cache-dir",
                os.path.join(WORK, "cache"),
                "--jobs",
                "4",
                "--timeout",
                str(CALL_TIMEOUT_S),
                "--turns",
                "2",
                "--max-sessions",
                str(MAX_SESSIONS),
                "--accept-reference-code",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
        )
        line = self.proc.stdout.readline()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"kevin serve did not start: {line!r}; see {self.log.name}")
        self.port = int(match.group(1))
        self.http = f"http://127.0.0.1:{self.port}"
        self.ws = f"ws://127.0.0.1:{self.port}/ws"

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rest = self.proc.communicate(timeout=120)[0]
        self.proc.stdout.close()
        self.log.close()
        return self.proc.returncode, rest


def http(server, method, path, body=None, timeout=120):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        server.http + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


async def send(ws, message):
    await ws.send(json.dumps(message))
    return json.loads(await asyncio.wait_for(ws.recv(), 120))


def connect(server):
    return websockets.connect(server.ws, max_size=100 * 2**20, open_timeout=10)


SERVER = None


def setUpModule():
    global SERVER
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    SERVER = Server("main")


def tearDownModule():
    code, out = SERVER.stop()
    assert code == 0, f"kevin serve exited {code} on SIGTERM: {out}"
    assert "stopped after" in out, out


class OpenEnvEpisodes(unittest.TestCase):
    def test_a_full_episode_goes_from_wrong_to_correct(self):
        async def episode():
            async with connect(SERVER) as ws:
                first = await send(
                    ws,
                    {
                        "type": "reset",
                        "data": {"problem_id": "vector_add", "seed": 1, "episode_id": "ep-1"},
                    },
                )
                self.assertEqual(first["type"], "observation")
                self.assertIsNone(first["data"]["reward"])
                self.assertFalse(first["data"]["done"])
                obs = first["data"]["observation"]
                self.assertEqual(obs["problem_id"], "tasks/vector_add")
                self.assertIn("kevin_forward", obs["problem_description"])
                wrong = await send(
                    ws, {"type": "step", "data": {"code": reply(kernel("wrong_formula.cpp"))}}
                )
                self.assertEqual(wrong["data"]["observation"]["verdict"], "wrong_answer")
                self.assertEqual(wrong["data"]["reward"], 0.0)
                self.assertFalse(wrong["data"]["done"])
                self.assertIn("incorrect", wrong["data"]["observation"]["feedback"])
                right = await send(
                    ws, {"type": "step", "data": {"code": reply(kernel("good_vector_add.cpp"))}}
                )
                o = right["data"]["observation"]
                self.assertEqual(o["verdict"], "correct", o["feedback"])
                self.assertTrue(right["data"]["done"])
                self.assertGreater(o["speedup"], 0)
                self.assertAlmostEqual(right["data"]["reward"], 0.3 + o["speedup"], places=6)
                state = await send(ws, {"type": "state"})
                self.assertEqual(state["data"]["episode_id"], "ep-1")
                self.assertEqual(state["data"]["step_count"], 2)
                await ws.send(json.dumps({"type": "close"}))
                with self.assertRaises(websockets.ConnectionClosed):
                    await asyncio.wait_for(ws.recv(), 10)

        asyncio.run(episode())

    def test_every_bad_input_gets_its_error_and_the_session_goes_on(self):
        async def bad_inputs():
            async with connect(SERVER) as ws:

                async def code_of(raw):
                    await ws.send(raw if isinstance(raw, str) else json.dumps(raw))
                    answer = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    self.assertEqual(answer["type"], "error", answer)
                    return answer["data"]["code"]

                self.assertEqual(await code_of("{oops"), "INVALID_JSON")
                self.assertEqual(await code_of({"type": "jump"}), "UNKNOWN_TYPE")
                self.assertEqual(
                    await code_of({"type": "state", "surprise": 1}), "VALIDATION_ERROR"
                )
                self.assertEqual(
                    await code_of({"type": "step", "data": {"code": "x"}}), "EXECUTION_ERROR"
                )
                self.assertEqual(
                    await code_of({"type": "reset", "data": {"problem_id": "../../etc/passwd"}}),
                    "EXECUTION_ERROR",
                )
                self.assertEqual(
                    await code_of({"type": "reset", "data": {"max_turns": 10**6}}),
                    "VALIDATION_ERROR",
                )
                ok = await send(
                    ws, {"type": "reset", "data": {"problem_id": "vector_add", "max_turns": 1}}
                )
                self.assertEqual(ok["type"], "observation")
                self.assertEqual(
                    await code_of({"type": "step", "data": {"answer": "x"}}), "VALIDATION_ERROR"
                )
                done = await send(ws, {"type": "step", "data": {"code": "no code here"}})
                self.assertEqual(done["data"]["observation"]["verdict"], "parse_error")
                self.assertTrue(done["data"]["done"])
                self.assertEqual(
                    await code_of({"type": "step", "data": {"code": "x"}}), "EXECUTION_ERROR"
                )
                state = await send(ws, {"type": "state"})
                self.assertEqual(state["data"]["step_count"], 1)

        asyncio.run(bad_inputs())

    def test_sixteen_sessions_at_once_and_capacity_reached_beyond_the_limit(self):
        good = reply(kernel("good_vector_add.cpp"))

        async def one(i):
            async with connect(SERVER) as ws:
                await send(
                    ws,
                    {"type": "reset", "data": {"problem_id": "vector_add", "episode_id": f"s{i}"}},
                )
                # Distinct sources: each session's evaluation really runs.
                step = await send(
                    ws,
                    {
                        "type": "step",
                        "data": {
                            "code": good.replace("I fused", f"Variant {i}").replace(
                                "#include", f"// {i}\n#include", 1
                            )
                        },
                    },
                )
                return step["data"]["observation"]["verdict"]

        async def sessions_become(n):
            deadline = time.monotonic() + 60
            while (active := http(SERVER, "GET", "/health")[1]["active_sessions"]) != n:
                self.assertLess(time.monotonic(), deadline, f"{active} sessions open, not {n}")
                await asyncio.sleep(0.1)

        async def sessions():
            verdicts = await asyncio.gather(*(one(i) for i in range(16)))
            self.assertEqual(verdicts, ["correct"] * 16)
            # A busy machine's server notices the sixteen closes a little later: the sessions
            # held next must all be admitted for the one beyond them to be refused.
            await sessions_become(0)
            held = [await connect(SERVER).__aenter__() for _ in range(MAX_SESSIONS)]
            await sessions_become(MAX_SESSIONS)
            try:
                async with connect(SERVER) as extra:
                    refused = json.loads(await asyncio.wait_for(extra.recv(), 10))
                    self.assertEqual(refused["type"], "error")
                    self.assertEqual(refused["data"]["code"], "CAPACITY_REACHED")
                    self.assertEqual(refused["data"]["max_sessions"], MAX_SESSIONS)
                    with self.assertRaises(websockets.ConnectionClosed):
                        await asyncio.wait_for(extra.recv(), 10)
            finally:
                for ws in held:
                    await ws.close()

        asyncio.run(sessions())

    def test_a_hanging_candidate_holds_another_session_back_one_call_timeout_at_most(self):
        async def race():
            async with connect(SERVER) as hanging, connect(SERVER) as quick:
                for ws in (hanging, quick):
                    await send(ws, {"type": "reset", "data": {"problem_id": "vector_add"}})
                # Warm the quick candidate's build so its reply measures evaluation, not compiling.
                await send(
                    quick, {"type": "step", "data": {"code": reply(kernel("good_vector_add.cpp"))}}
                )
                await send(quick, {"type": "reset", "data": {"problem_id": "vector_add"}})
                started = time.monotonic()
                await hanging.send(
                    json.dumps(
                        {
                            "type": "step",
                            "data": {"code": reply(kernel("hostile_infinite_loop.cpp"))},
                        }
                    )
                )
                await asyncio.sleep(0.3)
                pong = await hanging.ping()
                await asyncio.wait_for(pong, 2)  # answered while the candidate spins
                pinged = time.monotonic() - started
                t = time.monotonic()
                fast = await send(
                    quick, {"type": "step", "data": {"code": reply(kernel("good_vector_add.cpp"))}}
                )
                quick_s = time.monotonic() - t
                slow = json.loads(await asyncio.wait_for(hanging.recv(), 120))
                hang_s = time.monotonic() - started
                self.assertEqual(fast["data"]["observation"]["verdict"], "correct")
                self.assertEqual(slow["data"]["observation"]["verdict"], "timeout")
                self.assertGreaterEqual(hang_s, CALL_TIMEOUT_S)
                self.assertLess(pinged, 2.5)
                # The bound: a cached candidate's evaluation takes about a second here. Its
                # calibration and timing hold the device alone, so they wait for the hanging
                # call to reach its timeout (under CALL_TIMEOUT_S from `pinged`), but not for a
                # retry of the hang with the device held alone, which no neighbour's load
                # could have caused when the quick one was only waiting.
                self.assertLess(
                    quick_s,
                    5.0,
                    f"quick reply took {quick_s:.2f} s beside a hang of {hang_s:.2f} s",
                )
                print(
                    f"serve: quick reply {quick_s:.2f} s while another session hung {hang_s:.2f} s; "
                    f"ping answered {pinged:.2f} s after the hang began",
                    file=sys.stderr,
                )

        asyncio.run(race())


class KernelGymRest(unittest.TestCase):
    def test_evaluate_is_synchronous_idempotent_and_reports_kernelgyms_fields(self):
        with open(os.path.join(TASKS, "vector_add.py")) as f:
            reference = f.read()
        request = {
            "task_id": "gym-1",
            "reference_code": reference,
            "kernel_code": kernel("good_vector_add.cpp"),
            "backend": "cuda",
            "num_correct_trials": 5,
            "num_perf_trials": 100,
        }
        status, first, _ = http(SERVER, "POST", "/evaluate", request)
        self.assertEqual(status, 200, first)
        self.assertEqual(first["status"], "completed")
        self.assertTrue(first["compiled"])
        self.assertTrue(first["correctness"], first["error_message"])
        self.assertFalse(first["decoy_kernel"])
        self.assertGreater(first["speedup"], 0)
        t = time.monotonic()
        status, again, _ = http(
            SERVER, "POST", "/evaluate", dict(request, kernel_code="int broken(")
        )
        self.assertLess(time.monotonic() - t, 0.5)
        self.assertEqual(again, first)
        self.assertEqual(http(SERVER, "GET", "/status/gym-1")[1]["status"], "completed")
        self.assertEqual(http(SERVER, "GET", "/results/gym-1")[1], first)
        self.assertEqual(http(SERVER, "GET", "/status/nope")[0], 404)
        status, bad, headers = http(SERVER, "POST", "/evaluate", {"task_id": "gym-2"})
        self.assertEqual(status, 400)
        self.assertEqual(headers.get("X-Error-Code"), "VALIDATION_ERROR")
        status, hack, _ = http(
            SERVER,
            "POST",
            "/evaluate",
            {
                "task_id": "gym-3",
                "problem_id": "vector_add",
                "kernel_code": kernel("hostile_system.cpp"),
            },
        )
        self.assertEqual(status, 200)
        self.assertTrue(hack["decoy_kernel"])
        self.assertFalse(hack["correctness"])

    def test_a_batch_is_evaluated_concurrently(self):
        good = kernel("good_vector_add.cpp")
        tasks = [
            {
                "task_id": f"batch-{i}",
                "problem_id": "vector_add",
                "kernel_code": f"// batch variant {i}\n" + good,
            }
            for i in range(6)
        ]
        t = time.monotonic()
        status, batch, _ = http(
            SERVER, "POST", "/evaluate/batch", {"batch_id": "B1", "tasks": tasks}
        )
        wall = time.monotonic() - t
        self.assertEqual(status, 200, batch)
        self.assertEqual(batch["completed_tasks"], 6)
        self.assertEqual(batch["batch_status"], "completed")
        self.assertTrue(all(r["correctness"] for r in batch["results"]))
        serial = sum(r["processing_time"] for r in batch["results"])
        print(
            f"serve: batch of 6 took {wall:.2f} s; its evaluations {serial:.2f} s summed",
            file=sys.stderr,
        )
        self.assertLess(wall, 0.8 * serial, "the batch ran one evaluation after another")

    def test_metrics_count_evaluations_by_verdict(self):
        status, _, _ = http(SERVER, "GET", "/health")
        self.assertEqual(status, 200)
        with urllib.request.urlopen(SERVER.http + "/metrics", timeout=10) as r:
            text = r.read().decode()
        self.assertIn("# TYPE kevin_evaluation_seconds histogram", text)
        self.assertRegex(text, r'kevin_evaluations_total\{verdict="correct"\} [1-9]')


class Recovery(unittest.TestCase):
    def test_after_kill_9_a_restart_leaves_no_runner_or_scratch_folder(self):
        victim = Server("victim")

        async def start_hang():
            ws = await connect(victim).__aenter__()
            await send(ws, {"type": "reset", "data": {"problem_id": "vector_add"}})
            await ws.send(
                json.dumps(
                    {"type": "step", "data": {"code": reply(kernel("hostile_infinite_loop.cpp"))}}
                )
            )
            await asyncio.sleep(1.5)  # compiled and running by now
            return ws

        asyncio.run(start_hang())
        victim.proc.kill()
        victim.proc.stdout.close()
        victim.proc.wait()
        victim.log.close()
        restarted = Server("victim")
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                leftovers = [
                    n
                    for n in os.listdir(victim.tmp)
                    if n.startswith(f"kevin-run-{victim.proc.pid}-")
                ]
                runners = subprocess.run(
                    ["pgrep", "-f", "kevin-runner"], capture_output=True, text=True
                ).stdout.split()
                orphans = [
                    p for p in runners if _environ_has(p, f"KEVIN_PARENT_PID={victim.proc.pid}")
                ]
                if not leftovers and not orphans:
                    break
                time.sleep(0.2)
            self.assertEqual(leftovers, [])
            self.assertEqual(orphans, [])
            self.assertEqual(http(restarted, "GET", "/health")[1]["status"], "healthy")
        finally:
            restarted.stop()


def _environ_has(pid, entry):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return entry.encode() in f.read().split(b"\0")
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main(verbosity=2)
