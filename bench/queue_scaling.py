#!/usr/bin/env python3
# queue_scaling.py — distributed evaluation on one machine: evaluations/minute through Redis
# with 1, 2 and 4 `kevin worker`s (one job each), against the local engine with the same
# number of jobs, on the benchmark's candidate mix (bench/candidate_mix.sh) with cold builds
# (salted sources) and warm reference data. The difference in wall time per job is what the
# queue adds. Starts its own redis-server on a loopback port and stops it.
# Usage: bench/queue_scaling.py [--kevin build/bin/kevin] [--backend cpu|cuda] [--workers 1,2,4]
#        [--jobs-per-worker J] [--repeat R]   (a GPU machine: --workers 1 --jobs-per-worker 16)
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def salted_batch(pairs, folder, salt):
    path = os.path.join(folder, f"{salt}.jsonl")
    with open(path, "w") as out:
        for i, p in enumerate(pairs):
            with open(p["candidate"]) as f:
                source = f"// {salt} {i}\n" + f.read()
            candidate = os.path.join(folder, f"{salt}-{i}-{os.path.basename(p['candidate'])}")
            with open(candidate, "w") as f:
                f.write(source)
            out.write(json.dumps({"task": p["task"], "candidate": candidate}) + "\n")
    return path


def wait_for_workers(kevin, url, n, name_prefix, limit_s=120):
    """Until `kevin workers` lists n live workers: their start-up is not the queue's cost."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        shown = subprocess.run(
            [kevin, "workers", "--queue", url], capture_output=True, text=True
        ).stdout
        if sum(1 for l in shown.splitlines() if l.startswith(name_prefix)) >= n:
            return
        time.sleep(0.2)
    raise RuntimeError(f"{n} workers did not come up in {limit_s} s")


def timed_batch(args, batch, jobs, extra):
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
            str(jobs),
            "--cache-dir",
            args.cache,
            *extra,
        ],
        capture_output=True,
        text=True,
    )
    lines = [json.loads(l) for l in done.stdout.splitlines() if l.startswith("{")]
    return time.monotonic() - t, lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kevin", default="build/bin/kevin")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument(
        "--jobs-per-worker",
        type=int,
        default=1,
        help="each worker's --jobs; the local engine gets workers × this",
    )
    ap.add_argument("--only", default="", help="keep the candidates whose task path contains this")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="the candidate mix this many times (salted apart) per batch",
    )
    ap.add_argument(
        "--cache", default=os.path.join(tempfile.gettempdir(), "kevin-queue-bench-cache")
    )
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="kevin-queue-bench-")
    mix = os.path.join(folder, "mix.jsonl")
    subprocess.run(
        [
            "bash",
            "-c",
            f"source bench/candidate_mix.sh && write_candidate_mix {args.backend} {mix}",
        ],
        check=True,
    )
    with open(mix) as f:
        pairs = [
            p for p in (json.loads(l) for l in f if l.strip()) if args.only in p["task"]
        ] * args.repeat
    if not pairs:
        sys.exit(f"queue_scaling: no candidate of the mix has a task path containing {args.only!r}")
    with open(mix, "w") as f:
        f.writelines(json.dumps(p) + "\n" for p in pairs[: len(pairs) // args.repeat])
    warm_wall, _ = timed_batch(
        args, mix, 2 * args.jobs_per_worker, []
    )  # reference data and baselines, once
    print(f"reference data and baselines: {warm_wall:.1f} s", flush=True)
    port = free_port()
    redis = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            folder,
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/bench"
    print(f"queue_scaling: {len(pairs)} candidates, backend {args.backend}", flush=True)
    try:
        for n in [int(x) for x in args.workers.split(",")]:
            jobs = n * args.jobs_per_worker
            local_wall, local = timed_batch(
                args, salted_batch(pairs, folder, f"local{n}"), jobs, []
            )
            print(
                f"local engine, --jobs {jobs}: {len(local)} evaluations in {local_wall:.1f} s",
                flush=True,
            )
            workers = [
                subprocess.Popen(
                    [
                        args.kevin,
                        "worker",
                        "--queue",
                        url,
                        "--backend",
                        args.backend,
                        "--jobs",
                        str(args.jobs_per_worker),
                        "--name",
                        f"b{n}-{i}",
                        "--cache-dir",
                        args.cache,
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for i in range(n)
            ]
            wait_for_workers(args.kevin, url, n, f"b{n}-")
            queue_wall, queued = timed_batch(
                args, salted_batch(pairs, folder, f"queue{n}"), 4 * jobs, ["--queue", url]
            )
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(120)
            agree = sorted(l.get("verdict") for l in local) == sorted(
                l.get("verdict") for l in queued
            )
            print(
                f"{n} worker(s): queue {60 * len(queued) / queue_wall:.1f}/min ({queue_wall:.1f} s), local engine with "
                f"--jobs {jobs} {60 * len(local) / local_wall:.1f}/min ({local_wall:.1f} s); "
                f"added per job {1000 * (queue_wall - local_wall) / len(pairs):.0f} ms of wall time; verdicts agree: {agree}"
            )
    finally:
        redis.terminate()
        redis.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
