#!/usr/bin/env python3
# task_table.py — measures the shipped task suite on a GPU for docs/tasks.md: PyTorch eager
# time (the reference worker's own timing protocol), torch.compile time, and input/parameter
# and output sizes. Results are appended to a JSON-lines file one task at a time, so a run cut
# short by its time limit resumes where it stopped; --markdown renders the table.
# --warm-jobs N first compiles every task in N parallel processes (no timing), filling
# inductor's on-disk caches so that the serial, timed pass spends little time compiling.
# Usage: python3 bench/task_table.py --out results.jsonl [--suite level1] [--no-compile] [--warm-jobs 8]
#        python3 bench/task_table.py --out results.jsonl --markdown > table.md
import argparse
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
rw = torch = None  # imported by import_torch(): --markdown runs without PyTorch


def import_torch():
    global rw, torch
    sys.path.insert(0, os.path.join(ROOT, "src", "tasks"))
    import reference_worker  # the worker's loading, building and timing code
    import torch as torch_module

    rw, torch = reference_worker, torch_module


MIB = 1 << 20


def tensor_bytes(values):
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def measure(path, compile_too, timing):
    dev = torch.device("cuda", 0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    module = rw.load_task(path, "cuda")
    models, arg_sets = [], []
    for seed in (1, 2, 3):
        model, args = rw.build(module, seed, dev)
        models.append(model)
        arg_sets.append(args)
    with torch.no_grad():
        outs = rw.as_outputs(models[0](*arg_sets[0]))
    row = {
        "task": os.path.relpath(path, os.path.join(ROOT, "tasks"))[:-3],
        "family": getattr(module, "KEVIN_FAMILY", ""),
        "inputs_mib": (
            tensor_bytes(arg_sets[0]) + tensor_bytes(list(models[0].state_dict().values()))
        )
        / MIB,
        "outputs_mib": tensor_bytes(outs) / MIB,
        "eager_ms": rw.time_eager(models, arg_sets, dev, timing)["median_ms"],
    }
    if compile_too:
        t0 = time.time()
        compiled = [torch.compile(m) for m in models]
        with torch.no_grad():
            for c, a in zip(compiled, arg_sets):
                c(*a)
        torch.cuda.synchronize()
        row["compile_build_s"] = time.time() - t0
        row["compile_ms"] = rw.time_eager(compiled, arg_sets, dev, timing)["median_ms"]
    del models, arg_sets, outs
    torch.cuda.empty_cache()
    return row


def warm_compile(path):
    dev = torch.device("cuda", 0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, args = rw.build(rw.load_task(path, "cuda"), 1, dev)
    with torch.no_grad():
        torch.compile(model)(*args)
    torch.cuda.synchronize()


def warm_in_parallel(paths, jobs, suite):
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--out",
                os.devnull,
                "--suite",
                suite,
                "--compile-only",
                f"{k}/{jobs}",
            ]
        )
        for k in range(jobs)
    ]
    t0 = time.time()
    codes = [p.wait() for p in procs]
    print(
        f"warm compile of {len(paths)} tasks in {jobs} processes: {time.time() - t0:.0f} s, exit codes {codes}",
        flush=True,
    )


def render(rows):
    print("| task | family | eager ms | torch.compile ms | inputs+params MiB | outputs MiB |")
    print("|---|---|---:|---:|---:|---:|")
    for r in sorted(rows, key=lambda r: r["task"]):
        if "error" in r:
            print(f"| {r['task']} | | error: {r['error']} | | | |")
            continue
        comp = f"{r['compile_ms']:.3f}" if "compile_ms" in r else "-"
        print(
            f"| {r['task']} | {r['family']} | {r['eager_ms']:.3f} | {comp} | {r['inputs_mib']:.1f} | {r['outputs_mib']:.1f} |"
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--suite", default="level*")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--warm-jobs", type=int, default=0)
    ap.add_argument(
        "--compile-only", metavar="K/N", help="internal: compile shard K of N, time nothing"
    )
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(ROOT, "tasks", args.suite, "*.py")))
    if args.compile_only:
        import_torch()
        k, n = map(int, args.compile_only.split("/"))
        for path in paths[k::n]:
            try:
                warm_compile(path)
            except Exception as exc:  # noqa: BLE001 — the timed pass records the error
                print(f"{path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return
    done = {}
    if os.path.exists(args.out):
        for line in open(args.out):
            if line.strip():
                row = json.loads(line)
                done[row["task"]] = row
    if args.markdown:
        render(done.values())
        return
    import_torch()
    timing = {"budget_ms": 500.0, "warmup": 3, "min_calls": 10, "max_calls": 50}
    if args.warm_jobs > 0 and not args.no_compile:
        warm_in_parallel(paths, args.warm_jobs, args.suite)
    for path in paths:
        name = os.path.relpath(path, os.path.join(ROOT, "tasks"))[:-3]
        if name in done and ("compile_ms" in done[name] or args.no_compile):
            continue
        try:
            row = measure(path, not args.no_compile, timing)
        except Exception as exc:  # noqa: BLE001 — record and go on
            row = {"task": name, "error": f"{type(exc).__name__}: {exc}"}
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
