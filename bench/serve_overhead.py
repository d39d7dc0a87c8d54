#!/usr/bin/env python3
# serve_overhead.py — what `kevin serve` adds to evaluation: the same candidates judged by
# `kevin eval --batch` and through the server by S concurrent OpenEnv sessions (one
# reset + step per candidate), both with cold builds (salted sources) and warm reference data.
# Reports evaluations/minute for both, and the server's step latency p50/p99 with the part the
# engine did not spend (client latency − the evaluation's own total_ms). total_ms does not
# include waiting for one of the engine's --jobs slots, so that difference is the server's
# own cost only with --sessions <= --jobs; run with more sessions for throughput.
# Usage: bench/serve_overhead.py [--kevin build/bin/kevin] [--backend cpu|cuda] [--sessions 16]
#        [--jobs N] [--repeat R]   (run from the repository root; needs python3-websockets)
import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import websockets


def candidate_mix(backend, path):
    subprocess.run(
        ["bash", "-c", f"source bench/candidate_mix.sh && write_candidate_mix {backend} {path}"],
        check=True,
    )
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def salted(pairs, folder, salt, repeat):
    """Copies of every candidate with a unique first line, so nothing comes from the build cache."""
    out = []
    for r in range(repeat):
        for i, p in enumerate(pairs):
            with open(p["candidate"]) as f:
                source = f.read()
            name = os.path.join(folder, f"{salt}-{r}-{i}-{os.path.basename(p['candidate'])}")
            with open(name, "w") as f:
                f.write(f"// {salt} {r} {i}\n" + source)
            out.append({"task": p["task"], "candidate": name})
    return out


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_batch(args, pairs, folder, name):
    batch = os.path.join(folder, name + ".jsonl")
    with open(batch, "w") as f:
        for p in pairs:
            f.write(json.dumps(p) + "\n")
    t = time.monotonic()
    done = subprocess.run(
        [
            args.kevin,
            "eval",
            "--batch",
            batch,
            "--backend",
            args.backend,
            "--jobs",
            str(args.jobs),
            "--cache-dir",
            args.cache,
        ],
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t
    results = [json.loads(l) for l in done.stdout.splitlines() if l.startswith("{")]
    return wall, results


async def run_sessions(url, pairs, sessions):
    queue = asyncio.Queue()
    for p in pairs:
        queue.put_nowait(p)
    latencies, added, verdicts = [], [], []

    async def session():
        async with websockets.connect(url, max_size=100 * 2**20) as ws:
            while not queue.empty():
                p = queue.get_nowait()
                stem = os.path.splitext(os.path.basename(p["task"]))[0]
                await ws.send(
                    json.dumps({"type": "reset", "data": {"problem_id": stem, "max_turns": 1}})
                )
                json.loads(await ws.recv())
                with open(p["candidate"]) as f:
                    code = "```cpp\n" + f.read() + "\n```"
                t = time.monotonic()
                await ws.send(json.dumps({"type": "step", "data": {"code": code}}))
                reply = json.loads(await ws.recv())
                latency = time.monotonic() - t
                obs = reply["data"]["observation"]
                latencies.append(latency)
                verdicts.append(obs.get("verdict"))
                if obs.get("eval_ms") is not None:
                    added.append(latency * 1000 - obs["eval_ms"])

    t = time.monotonic()
    await asyncio.gather(*(session() for _ in range(sessions)))
    return time.monotonic() - t, latencies, added, verdicts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kevin", default="build/bin/kevin")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--cache", default=os.path.join(tempfile.gettempdir(), "kevin-serve-bench-cache")
    )
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="kevin-serve-bench-")
    pairs = candidate_mix(args.backend, os.path.join(folder, "mix.jsonl"))
    print(
        f"serve_overhead: {len(pairs)} candidates x {args.repeat}, backend {args.backend}, jobs {args.jobs}, "
        f"{args.sessions} sessions",
        flush=True,
    )
    warm_wall, _ = run_batch(args, pairs, folder, "warm")  # reference data and baselines, once
    print(f"reference data and baselines: {warm_wall:.1f} s", flush=True)
    batch_wall, batch_results = run_batch(
        args, salted(pairs, folder, "batch", args.repeat), folder, "batch"
    )
    print(f"kevin eval --batch: {len(batch_results)} evaluations in {batch_wall:.1f} s", flush=True)
    tasks = sorted({p["task"] for p in pairs})
    server = subprocess.Popen(
        [
            args.kevin,
            "serve",
            "--backend",
            args.backend,
            "--port",
            "0",
            "--jobs",
            str(args.jobs),
            "--cache-dir",
            args.cache,
            "--max-sessions",
            str(args.sessions + 4),
            *sum((["--tasks", t] for t in tasks), []),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = re.search(r":(\d+) ", server.stdout.readline()).group(1)
        wall, latencies, added, verdicts = asyncio.run(
            run_sessions(
                f"ws://127.0.0.1:{port}/ws",
                salted(pairs, folder, "serve", args.repeat),
                args.sessions,
            )
        )
    finally:
        server.terminate()
        server.wait()
    n = len(latencies)
    batch_rate = 60 * len(batch_results) / batch_wall
    serve_rate = 60 * n / wall
    batch_verdicts = sorted(r.get("verdict", "error") for r in batch_results)
    print(
        f"kevin eval --batch: {len(batch_results)} evaluations in {batch_wall:.1f} s = {batch_rate:.1f}/min"
    )
    print(
        f"kevin serve:        {n} evaluations in {wall:.1f} s = {serve_rate:.1f}/min "
        f"({100 * (serve_rate / batch_rate - 1):+.1f}% vs batch)"
    )
    print(
        f"step latency p50 {1000 * statistics.median(latencies):.0f} ms, p99 {1000 * percentile(latencies, 0.99):.0f} ms; "
        f"added by the server (latency - eval total_ms): p50 {statistics.median(added):.1f} ms, "
        f"p99 {percentile(added, 0.99):.1f} ms"
    )
    print(f"verdicts agree: {batch_verdicts == sorted(verdicts)}")


if __name__ == "__main__":
    sys.exit(main())
