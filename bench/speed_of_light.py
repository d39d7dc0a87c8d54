#!/usr/bin/env python3
"""speed_of_light.py — checks kevin's speed-of-light figures (docs/eval.md) on the GPU: the
table of every correct result of a `kevin eval --batch --json` run (bound, limit, fraction of
the roofline reached by kernel and baseline), the work kevin counted for three tasks against
hand-computed formulas (a matrix product, a convolution, an elementwise op), kevin's measured
copy bandwidth against the card's theoretical one, and, where Nsight Compute runs here, the
eager baseline's DRAM traffic and FP32 instructions as the hardware counts them.
Usage: python3 bench/speed_of_light.py RESULTS.jsonl TASKS_DIR OUT.json"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

F32 = 4


def hand_work(task, module):
    """(FLOPs, min_bytes) by formula for the three hand-checked tasks, else None."""
    if task == "001_square_matmul":
        n = module.N
        return 2 * n**3, 3 * n * n * F32
    if task == "015_conv2d_3x3":
        b, cin, cout, h, w = module.BATCH, module.CIN, module.COUT, module.H, module.W
        out = b * cout * h * w  # padding 1, stride 1: same size
        weights = cout * cin * 9 + cout
        return 2 * out * cin * 9, (b * cin * h * w + weights + out) * F32
    if task == "028_gelu":
        elements = module.M * module.N
        return elements, 2 * elements * F32
    return None


def load(path):
    spec = importlib.util.spec_from_file_location("task", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def theoretical_gbps():
    """Peak DRAM bandwidth from the card's own figures: max memory clock x bus width x 2 (DDR)."""
    import torch

    props = torch.cuda.get_device_properties(0)
    clock_khz = getattr(props, "memory_clock_rate", 0)
    bus_bits = getattr(props, "memory_bus_width", 0)
    return 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9 if clock_khz and bus_bits else None


NCU_METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
]


def ncu_counts(task_path):
    """The last forward's kernels as Nsight Compute counts them (DRAM bytes, time, FP32 FLOPs
    from FMA/ADD/MUL instructions), or the reason it could not."""
    ncu = shutil.which("ncu") or next(
        (
            p
            for p in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")
            if os.path.exists(p)
        ),
        None,
    )
    if not ncu:
        return {"error": "ncu not found"}
    script = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    script.write(
        "import importlib.util, torch\n"
        f"spec = importlib.util.spec_from_file_location('t', {task_path!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False\n"
        "model = m.Model(*m.get_init_inputs()).cuda()\n"
        "args = [a.cuda() for a in m.get_inputs()]\n"
        "with torch.no_grad():\n"
        "    model(*args); torch.cuda.synchronize()\n"
        "    torch.cuda.nvtx.range_push('measured'); model(*args); torch.cuda.synchronize()\n"
        "    torch.cuda.nvtx.range_pop()\n"
    )
    script.close()
    cmd = [ncu, "--nvtx", "--nvtx-include", "measured/", "--metrics", ",".join(NCU_METRICS),
           "--csv", "--page", "raw", sys.executable, script.name]  # fmt: skip
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    rows = [line for line in run.stdout.splitlines() if line.startswith('"')]
    if run.returncode != 0 or len(rows) < 3:
        return {"error": (run.stdout + run.stderr)[-600:]}
    import csv

    table = list(csv.reader(rows))
    header, data = table[0], table[2:]  # row 1 holds the units
    total = {m: 0.0 for m in NCU_METRICS}
    for row in data:
        for m in NCU_METRICS:
            value = row[header.index(m)].replace(",", "")
            total[m] += float(value) if value not in ("", "n/a") else 0.0
    units = dict(zip(header, table[1]))
    seconds = total["gpu__time_duration.sum"] * {
        "nsecond": 1e-9,
        "usecond": 1e-6,
        "msecond": 1e-3,
    }.get(units.get("gpu__time_duration.sum", "nsecond"), 1e-9)
    dram = total["dram__bytes_read.sum"] + total["dram__bytes_write.sum"]
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(
        units.get("dram__bytes_read.sum", "byte"), 1
    )
    dram *= scale
    flops = (
        2 * total["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"]
        + total["sm__sass_thread_inst_executed_op_fadd_pred_on.sum"]
        + total["sm__sass_thread_inst_executed_op_fmul_pred_on.sum"]
    )
    return {"kernels": len(data), "dram_bytes": dram, "ms": seconds * 1e3, "fp32_flops": flops,
            "dram_gbps": dram / seconds / 1e9 if seconds else None}  # fmt: skip


def main():
    results_path, tasks_dir, out_path = sys.argv[1:4]
    rows, checks = [], []
    for line in open(results_path):
        r = json.loads(line)
        sol = r.get("speed_of_light")
        task = os.path.splitext(os.path.basename(r.get("task", "")))[0]
        if not sol:
            rows.append({"task": task, "verdict": r.get("verdict"), "speed_of_light": None})
            continue
        rows.append({"task": task, "verdict": r.get("verdict"), "speed_of_light": sol})
        path = os.path.join(tasks_dir, "level1", task + ".py")
        if not os.path.exists(path):
            continue
        module = load(path)
        hand = hand_work(task, module)
        if hand is None:
            continue
        check = {
            "task": task,
            "kevin_flops": sol["work"]["flops"],
            "hand_flops": hand[0],
            "kevin_min_bytes": sol["work"]["min_bytes"],
            "hand_min_bytes": hand[1],
            "kevin_baseline_ms": sol.get("baseline", {}).get("ms"),
            "kevin_baseline_gbps": sol.get("baseline", {}).get("gbps"),
            "ncu": ncu_counts(path) if os.environ.get("NCU", "1") == "1" else {"error": "skipped"},
        }
        checks.append(check)
    peaks = {"theoretical_gbps": theoretical_gbps()}
    measured = [r["speed_of_light"]["peak_gbps"] for r in rows if r["speed_of_light"]]
    peaks["kevin_copy_gbps"] = measured[0] if measured else None
    json.dump({"rows": rows, "checks": checks, "peaks": peaks}, open(out_path, "w"), indent=1)
    print(
        f"{'task':28} {'limit':8} {'bound ms':>10} {'kernel':>8} {'eager':>8} {'kernel GB/s':>12} {'kernel TF/s':>12}"
    )
    for r in rows:
        s = r["speed_of_light"]
        if not s:
            print(f"{r['task']:28} {r['verdict']} (no speed of light)")
            continue
        c, b = s.get("candidate", {}), s.get("baseline", {})
        print(f"{r['task']:28} {s['limit']:8} {s['bound_ms']:10.4f} {c.get('fraction', 0):8.1%} "
              f"{b.get('fraction', 0):8.1%} {c.get('gbps', 0):12.0f} {c.get('tflops', 0):12.2f}")  # fmt: skip
    for c in checks:
        print(json.dumps(c))
    print(json.dumps(peaks))


if __name__ == "__main__":
    main()
