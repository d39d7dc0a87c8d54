#!/usr/bin/env python3
# reference_worker.py — kevin's trusted reference worker, the one Python program of the
# system. It loads KernelBench-format task files with PyTorch and, per request, writes the
# correctness and timing sets with their expected outputs and the work the task must do, times
# the eager baseline, or measures the device's peak rates (reference protocol 3; layout in
# src/engine/run/reference.h). JSON requests on stdin, one JSON reply per line on stdout.
import contextlib
import hashlib
import importlib.util
import inspect
import io
import json
import math
import os
import random
import sys
import threading
import time
import traceback

PROTOCOL = 3
ALIGN = 256
EXIT_NO_TORCH = 3
EXIT_ORPHANED = 4
MIN_TIMING_SETS = 5
PASS_CHUNK = 1 << 22  # elements compared at a time by passes()
WATCHDOG_PERIOD_S = 0.25

try:
    import torch
except Exception as exc:  # noqa: BLE001 — any import failure means this interpreter cannot serve
    sys.stdout.write(
        json.dumps({"ok": False, "no_torch": True, "error": f"cannot import torch: {exc}"}) + "\n"
    )
    sys.stdout.flush()
    sys.exit(EXIT_NO_TORCH)
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402 — needs torch first


class TaskError(Exception):
    """The task file itself is broken (raises, returns unsupported values...)."""


# Replies go to a private copy of the original stdout; fd 1 then points at stderr, so a task
# that prints (from Python or from C code) cannot interleave text with the protocol.
_protocol = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr


def reply(obj):
    _protocol.write(json.dumps(obj) + "\n")
    _protocol.flush()


def device_for(backend, ordinal):
    if backend == "cuda":
        if not torch.cuda.is_available():
            raise TaskError("the CUDA backend was requested but PyTorch sees no CUDA device")
        return torch.device("cuda", ordinal)
    return torch.device("cpu")


def device_name(dev):
    return torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"


def load_task(path, backend):
    name = "kevin_task_" + hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:16]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskError(f"{path} is not a loadable Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        raise TaskError(
            f"the task file raised while loading: {type(exc).__name__}: {exc}{load_hint(exc)}"
        ) from exc
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise TaskError(f"the task file defines no {attr}")
    if backend == "cpu":
        for key, value in getattr(module, "KEVIN_CPU_SIZES", {}).items():
            if not hasattr(module, key):
                raise TaskError(f"KEVIN_CPU_SIZES names {key}, which the module does not define")
            setattr(module, key, value)
    return module


def load_hint(exc):
    """What to do about the usual reasons a task does not load here: a package this
    interpreter lacks, or (KernelBench's level 4) a model config fetched from the Hugging Face
    hub on a machine without network access."""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return f" (the task needs the Python package '{exc.name}', which {sys.executable} cannot import)"
    text = f"{type(exc).__name__} {exc}".lower()
    if any(
        word in text
        for word in (
            "huggingface",
            "hf_hub",
            "offline",
            "connection",
            "resolve host",
            "max retries",
            "name or service not known",
            "network is unreachable",
        )
    ):
        return (
            " (the task downloads from the Hugging Face hub while loading and this machine could not reach"
            " it: fill the hub cache on a machine with network access and set HF_HUB_OFFLINE=1 here)"
        )
    return ""


def call_task(fn, what):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return fn()
    except Exception as exc:  # noqa: BLE001
        raise TaskError(f"{what} raised {type(exc).__name__}: {exc}") from exc


def build(module, seed, dev):
    """Model and forward arguments for one seed, on `dev`."""
    torch.manual_seed(seed)
    init = call_task(module.get_init_inputs, "get_init_inputs()")
    model = call_task(lambda: module.Model(*init), "Model(...)")
    model = model.to(dev)
    torch.manual_seed(seed)
    args = call_task(module.get_inputs, "get_inputs()")
    if not isinstance(args, (list, tuple)):
        raise TaskError("get_inputs() must return a list")
    args = [a.to(dev) if isinstance(a, torch.Tensor) else a for a in args]
    return model, args


def forward_arg_names(model, count):
    try:
        params = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        params = []
    names = [p for p in params if p != "self"]
    return [names[i] if i < len(names) else f"arg{i}" for i in range(count)]


def abi_arguments(model, args):
    """(tensor specs with roles, tensors, scalar names, scalars) in ABI order."""
    names = forward_arg_names(model, len(args))
    specs, tensors, scalar_names, scalars = [], [], [], []
    for name, value in zip(names, args):
        if isinstance(value, torch.Tensor):
            specs.append({"name": name, "role": "input"})
            tensors.append(value)
        elif isinstance(value, (bool, int, float)):
            scalar_names.append(name)
            scalars.append(float(value))
        else:
            raise TaskError(f"forward argument {name} has unsupported type {type(value).__name__}")
    param_names = {n for n, _ in model.named_parameters()}
    for key, value in model.state_dict().items():
        specs.append({"name": key, "role": "parameter" if key in param_names else "buffer"})
        tensors.append(value)
    for spec, tensor in zip(specs, tensors):
        spec["dtype"] = str(tensor.dtype).replace("torch.", "")
        spec["shape"] = list(tensor.shape)
    return specs, tensors, scalar_names, scalars


def as_outputs(result):
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    if not outs or not all(isinstance(o, torch.Tensor) for o in outs):
        raise TaskError("forward must return a tensor or a tuple of tensors")
    return outs


SUPPORTED = {
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "bool",
}


def set_bytes(tensors):
    """Padded size of a set holding `tensors` (the layout of src/engine/run/reference.h)."""
    at = sum(-(-t.numel() * t.element_size() // ALIGN) * ALIGN for t in tensors)
    return max(at, ALIGN)


def write_set(handle, tensors):
    """Writes tensors at 256-byte-aligned offsets; returns bytes written (padded)."""
    at = 0
    for t in tensors:
        name = str(t.dtype).replace("torch.", "")
        if name not in SUPPORTED:
            raise TaskError(f"tensor dtype {name} is not supported by the kernel ABI")
        data = t.detach().contiguous().reshape(-1).cpu()
        raw = data.view(torch.uint8).numpy().tobytes() if data.numel() else b""
        handle.write(raw)
        at += len(raw)
        pad = (-at) % ALIGN
        handle.write(b"\0" * pad)
        at += pad
    if at == 0:
        handle.write(b"\0" * ALIGN)
        at = ALIGN
    return at


def timing_set_count(bytes_per_set, budget, min_sets, available):
    """T: as many timing sets as `budget` bytes hold (inputs plus expected outputs), but at
    least `min_sets` (a timing needs enough distinct sets whatever their size) and at most
    `available` (the seeds given)."""
    return max(0, min(available, max(min_sets, budget // max(bytes_per_set, 1))))


def configure(dev):
    if dev.type == "cuda":
        # The reference is exact fp32: no TF32 in matmuls or convolutions.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    else:
        torch.set_num_threads(1)  # candidates run single-threaded on the CPU backend


def output_specs(outs):
    return [
        {
            "name": "output" if len(outs) == 1 else f"output{i}",
            "dtype": str(o.dtype).replace("torch.", ""),
            "shape": list(o.shape),
        }
        for i, o in enumerate(outs)
    ]


def reference_outputs(model, args):
    with torch.no_grad():
        outs = as_outputs(call_task(lambda: model(*args), "forward()"))
    for o in outs:
        if o.is_floating_point() and not torch.isfinite(o).all():
            raise TaskError("the reference output contains NaN or Inf")
    return outs


class Abi:
    """The argument list and outputs of the first set written; every later set (correctness
    or timing) must match it, since the candidate is built for one ABI."""

    def __init__(self):
        self.first = None
        self.bytes_per_set = 0  # one input set plus its expected outputs
        self.scalar_kinds = []  # "bool" / "int" / "float" per scalar: what ModelNew.forward gets
        self.forward_args = []  # "tensor" / "scalar" in forward's order

    def check(self, specs, out_specs, scalar_names, in_bytes, out_bytes):
        shape = (specs, out_specs, scalar_names)
        if self.first is None:
            self.first, self.bytes_per_set = shape, in_bytes + out_bytes
        elif shape != self.first:
            raise TaskError("tensor shapes or dtypes change with the seed")


def write_sets(module, seeds, dev, paths, abi):
    """Builds each seed's model and inputs and appends them and the expected outputs to the
    files `paths` (inputs, expected), one set at a time so memory holds a single set.
    Returns the scalars of each set."""
    all_scalars = []
    with open(paths[0], "wb") as fin, open(paths[1], "wb") as fexp:
        for seed in seeds:
            model, args = build(module, seed, dev)
            specs, tensors, scalar_names, scalars = abi_arguments(model, args)
            abi.scalar_kinds = [scalar_kind(a) for a in args if not isinstance(a, torch.Tensor)]
            abi.forward_args = ["tensor" if isinstance(a, torch.Tensor) else "scalar" for a in args]
            in_bytes = write_set(
                fin, tensors
            )  # before forward: a task may modify its inputs in place
            outs = reference_outputs(model, args)
            out_bytes = write_set(fexp, outs)
            abi.check(specs, output_specs(outs), scalar_names, in_bytes, out_bytes)
            all_scalars.append(scalars)
            del model, args, tensors, outs
    return all_scalars


def scalar_kind(value):
    return "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "float"


def init_inputs_json(module, seed):
    """get_init_inputs() as JSON (what a KernelBench answer's ModelNew is built with), or None
    when it holds something JSON cannot carry (tensors, objects)."""
    torch.manual_seed(seed)
    init = call_task(module.get_init_inputs, "get_init_inputs()")
    try:
        text = json.dumps(list(init), allow_nan=False)
    except (TypeError, ValueError):
        return None
    return json.loads(text)


def flush_buffer(dev):
    if dev.type == "cuda":
        l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 64 << 20) or (64 << 20)
        return torch.empty(2 * l2, dtype=torch.uint8, device=dev)
    return torch.empty(64 << 20, dtype=torch.uint8)


def median_ci_ranks(n):
    """1-based ranks of a 95 % interval of the median in n sorted times (the judge's
    engine::median_ci_ranks: the same formula, so candidate and baseline intervals agree)."""
    half, spread = n / 2, 0.98 * math.sqrt(n)
    return max(1, math.floor(half - spread)), min(n, math.ceil(1 + half + spread))


def timing_stats(ms):
    ms = sorted(ms)
    n = len(ms)
    median = ms[n // 2] if n % 2 else 0.5 * (ms[n // 2 - 1] + ms[n // 2])
    mean = sum(ms) / n
    var = sum((v - mean) ** 2 for v in ms) / (n - 1) if n > 1 else 0.0
    p90 = ms[min(n - 1, math.ceil(0.9 * n) - 1)]
    lo, hi = median_ci_ranks(n)
    return {
        "median_ms": median,
        "min_ms": ms[0],
        "p90_ms": p90,
        "mean_ms": mean,
        "stdev_ms": math.sqrt(var),
        "calls": n,
        "median_lo_ms": ms[lo - 1],
        "median_hi_ms": ms[hi - 1],
    }


class CallTimer:
    """Times one call the way the judge times a candidate's: the cache is flushed (2 x L2 on
    a GPU, 64 MiB on the CPU) outside the timed region, then CUDA events on the current
    stream bracket the call. On the CPU the clock is this thread's CPU time, as the judge
    charges a candidate its runner's CPU time: time spent waiting for a core on a busy machine
    counts on neither side (PyTorch runs single-threaded here, configure())."""

    def __init__(self, dev):
        self.dev = dev
        self.flush = flush_buffer(dev)
        self.rng = random.Random(0x6B6576696E)

    def __call__(self, model, args):
        self.flush.fill_(self.rng.randrange(256))
        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(*args)
            end.record()
            torch.cuda.synchronize(self.dev)
            return start.elapsed_time(end)
        t0 = time.thread_time()
        model(*args)
        return (time.thread_time() - t0) * 1000.0


def on_device(dev):
    return torch.cuda.device(dev) if dev.type == "cuda" else contextlib.nullcontext()


def median(values):
    return sorted(values)[len(values) // 2]


def call_count(probe_ms, timing, limit):
    """Timed calls: as many as the time budget allows at the probed speed, at least
    min_calls, at most `limit`."""
    per_call = max(median(probe_ms), 1e-3)
    wanted = max(timing.get("budget_ms", 2000.0) / per_call, timing.get("min_calls", 10))
    return int(min(wanted, limit))


def time_eager(models, arg_sets, dev, timing):
    """Eager time of prebuilt models rotating over their input sets (bench/task_table.py's
    measure; the baseline op below is the judge's protocol)."""
    timer = CallTimer(dev)
    rng = random.Random(0x6B6576696E)
    with torch.no_grad(), on_device(dev):
        sets = len(models)
        probe = [
            timer(models[k % sets], arg_sets[k % sets])
            for k in range(max(3, timing.get("warmup", 3)))
        ]
        calls = call_count(probe, timing, timing.get("max_calls", 100))
        order = []
        while len(order) < calls:
            round_ = list(range(sets))
            rng.shuffle(round_)
            order += round_
        return timing_stats([timer(models[k], arg_sets[k]) for k in order[:calls]])


class Compiled:
    """The torch.compile baseline's model: the first set's model compiled once (and run once,
    untimed, so compiling and autotuning stay out of every timed call); each later set's
    parameters and buffers are copied into it in place before its call, so the compiled code
    runs on that set's weights and inputs without compiling again."""

    def __init__(self):
        self.model = None
        self.compiled = None

    def __call__(self, model, args):
        if self.compiled is None:
            if not hasattr(torch, "compile"):  # the engine checks first (ReferenceWorker)
                raise RuntimeError(f"PyTorch {torch.__version__} has no torch.compile")
            self.model = model
            self.compiled = torch.compile(model)
            call_task(lambda: self.compiled(*args), "torch.compile(Model)(...)")
        else:
            mine, theirs = self.model.state_dict(), model.state_dict()
            for name, tensor in mine.items():
                tensor.copy_(theirs[name])
        return self.compiled


def time_baseline(module, dev, req, ready=None):
    """The judge's timing protocol on PyTorch (eager, or with mode "compile" torch.compile's
    code): warm-up calls on the correctness seeds (which also probe the call time), then one
    call on each timing set in turn, each set timed once, as many as the time budget allows
    (at least min_calls, at most T: the timing sets the data for this budget would hold).
    Every set is built on the device first, and a compiled model compiled, then `ready()` is
    called (the engine takes the device alone then), and only the calls follow."""
    seeds, timing_seeds = req["seeds"], req["timing_seeds"]
    if not seeds or not timing_seeds:
        raise ValueError("baseline needs seeds and timing_seeds")
    mode = req.get("mode", "eager")
    if mode not in ("eager", "compile"):
        raise ValueError(f"baseline mode must be eager or compile, not {mode!r}")
    runnable = Compiled() if mode == "compile" else (lambda model, args: model)
    timing = req.get("timing", {})
    timer = CallTimer(dev)
    with torch.no_grad(), on_device(dev):
        warm = [
            build(module, seeds[i % len(seeds)], dev)
            for i in range(max(3, timing.get("warmup", 3)))
        ]
        # T's byte bound needs a set's size; a failing forward is the task's error.
        model, args = warm[0]
        bytes_per_set = set_bytes(abi_arguments(model, args)[1]) + set_bytes(
            reference_outputs(model, args)
        )
        limit = timing_set_count(
            bytes_per_set,
            req.get("timing_bytes_budget", 2 << 30),
            req.get("min_timing_sets", MIN_TIMING_SETS),
            len(timing_seeds),
        )
        sets = [build(module, seed, dev) for seed in timing_seeds[:limit]]
        if mode == "compile":
            runnable(model, args)  # compiles, and runs once untimed
        if ready is not None:
            ready()
        probe = [timer(runnable(model, args), args) for model, args in warm]
        ms = [
            timer(runnable(model, args), args)
            for model, args in sets[: call_count(probe, timing, limit)]
        ]
    return timing_stats(ms)


def wait_for_go():
    """The two-step baseline: tells the engine that the sets are built and waits for its go
    (the engine takes the device alone meanwhile). An engine that is gone ends the worker."""
    reply({"interim": "sets_built"})
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    if not json.loads(line).get("go"):
        raise RuntimeError("the engine did not let the baseline be timed")


# ---- The work a task must do (docs/eval.md, "Speed of light") ----
# Counted on one forward of the reference under a dispatch mode that sees every ATen operator
# eager PyTorch runs. FLOPs: 2 per multiply-add for matrix products, convolutions and
# attention; 1 per element of the largest tensor any other computing operator reads or writes;
# 0 for views, copies and allocation. Bytes: `min_bytes` is what any implementation must move
# (each forward input, parameter and buffer read once, each output written once);
# `eager_bytes` is what eager PyTorch's operators read and write, one by one.

VIEW_OPS = {
    "view", "_unsafe_view", "_reshape_alias", "reshape", "t", "transpose", "permute",
    "expand", "squeeze", "unsqueeze", "as_strided", "slice", "select", "split",
    "split_with_sizes", "chunk", "unbind", "narrow", "detach", "alias", "lift_fresh",
    "view_as_real", "view_as_complex", "unfold", "diagonal", "movedim", "empty",
    "empty_like", "empty_strided", "new_empty", "new_empty_strided", "set_", "resize_",
    "_local_scalar_dense", "is_same_size",
}  # fmt: skip
MOVE_OPS = {
    "clone", "copy_", "_to_copy", "contiguous", "cat", "stack", "flip", "roll", "repeat",
    "index_select", "gather", "index", "constant_pad_nd", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "fill_", "zero_", "new_zeros", "new_ones", "new_full",
    "lift_fresh_copy", "arange", "copy", "expand_copy", "permute_copy", "transpose_copy",
    "view_copy", "slice_copy", "select_copy", "masked_select", "tril", "triu", "scatter",
    "index_put_", "index_put", "reflection_pad2d", "replication_pad2d", "_unsafe_index",
}  # fmt: skip
ATTENTION_OPS = {
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
}  # fmt: skip


def tensors_in(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from tensors_in(v)


def tensor_bytes(t):
    return t.numel() * t.element_size()


def inner(t, dim=-1):
    return int(t.shape[dim]) if t.dim() else 1


def conv_flops(args, out):
    x, w = args[0], args[1]
    transposed = bool(args[6]) if len(args) > 6 and isinstance(args[6], bool) else False
    per_output = w[0].numel()  # [C_out, C_in/groups, k...]: C_in/groups x kernel per output
    if transposed:  # weight [C_in, C_out/groups, k...]: each input element feeds that many
        return 2 * x.numel() * w[0].numel()
    return 2 * out.numel() * per_output


def attention_flops(args, out):
    q, k, v = args[0], args[1], args[2]  # [B, H, L, E], [B, H, S, E], [B, H, S, Ev]
    rows = q.numel() // max(inner(q), 1)
    return 2 * rows * inner(k, -2) * (inner(q) + inner(v))


# name -> (FLOPs of one call, index of the operand whose dtype names the rate).
MATMUL_FLOPS = {
    "mm": (lambda a, o: 2 * o.numel() * inner(a[0]), 0),
    "bmm": (lambda a, o: 2 * o.numel() * inner(a[0]), 0),
    "addmm": (lambda a, o: 2 * o.numel() * inner(a[1]), 1),
    "_addmm_activation": (lambda a, o: 2 * o.numel() * inner(a[1]), 1),
    "baddbmm": (lambda a, o: 2 * o.numel() * inner(a[1]), 1),
    "addbmm": (lambda a, o: 2 * o.numel() * inner(a[1]) * inner(a[1], 0), 1),
    "mv": (lambda a, o: 2 * a[0].numel(), 0),
    "addmv": (lambda a, o: 2 * a[1].numel(), 1),
    "dot": (lambda a, o: 2 * a[0].numel(), 0),
    "vdot": (lambda a, o: 2 * a[0].numel(), 0),
    "convolution": (conv_flops, 0),
    "_convolution": (conv_flops, 0),
    "cudnn_convolution": (conv_flops, 0),
    "mkldnn_convolution": (conv_flops, 0),
    "cudnn_convolution_transpose": (lambda a, o: 2 * a[0].numel() * a[1][0].numel(), 0),
}
MATMUL_FLOPS.update({name: (attention_flops, 0) for name in ATTENTION_OPS})


class WorkCounter(TorchDispatchMode):
    """Counts FLOPs and bytes of the operators run under it (the conventions above)."""

    def __init__(self):
        super().__init__()
        self.flops, self.eager_bytes, self.ops = 0, 0, 0
        self.matmul_flops = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in VIEW_OPS:
            return out
        ins, outs = list(tensors_in(args)), list(tensors_in([out]))
        self.ops += 1
        self.eager_bytes += sum(tensor_bytes(t) for t in ins + outs)
        if name in MOVE_OPS or not outs:
            return out
        if name in MATMUL_FLOPS and ins:
            count, operand = MATMUL_FLOPS[name]
            flops = int(count(args, outs[0]))
            dtype = dtype_name(tensors_operand(args, operand).dtype)
            self.matmul_flops[dtype] = self.matmul_flops.get(dtype, 0) + flops
        else:
            flops = max(t.numel() for t in ins + outs)
        self.flops += flops
        return out


def tensors_operand(args, index):
    return args[index] if isinstance(args[index], torch.Tensor) else next(tensors_in(args))


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def count_work(module, seed, dev):
    """The work of one forward at seed `seed` (shapes do not change with the seed), or None
    with the reason when the forward cannot run under the counting mode."""
    model, args = build(module, seed, dev)
    tensors = abi_arguments(model, args)[1]
    counter = WorkCounter()
    try:
        with torch.no_grad(), counter:
            outs = as_outputs(model(*args))
    except Exception as exc:  # noqa: BLE001 — an unusual forward only loses this report
        return None, f"{type(exc).__name__}: {exc}"
    return {
        "flops": counter.flops,
        "matmul_flops": counter.matmul_flops,
        "min_bytes": sum(tensor_bytes(t) for t in tensors + outs),
        "eager_bytes": counter.eager_bytes,
        "eager_ops": counter.ops,
    }, None


# ---- The device's peak rates, measured once per device model by kevin ----
PEAK_REPEATS = 10


def best_ms(dev, fn, repeats=PEAK_REPEATS):
    """The fastest of `repeats` calls of fn after one warm-up (a peak is the best the device
    did; slower calls are interference)."""
    fn()
    times = []
    for _ in range(repeats):
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(dev)
            times.append(start.elapsed_time(end))
        else:
            t0 = time.thread_time()
            fn()
            times.append((time.thread_time() - t0) * 1000.0)
    return max(min(times), 1e-6)


def copy_gbps(dev, nbytes):
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=dev).uniform_()
    dst = torch.empty_like(src)
    return 2 * tensor_bytes(src) / best_ms(dev, lambda: dst.copy_(src)) / 1e6


def matmul_tflops(dev, n, dtype, tf32=False):
    a = torch.randn(n, n, device=dev).to(dtype)
    b = torch.randn(n, n, device=dev).to(dtype)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return 2 * n**3 / best_ms(dev, lambda: torch.mm(a, b)) / 1e9
    finally:
        configure(dev)


def peaks(req):
    """The device's peak memory bandwidth (a device-to-device copy: bytes read plus written)
    and matrix-product rates per dtype (fp32 without TF32, as the reference computes; TF32,
    bf16 and fp16 on CUDA), each the best of PEAK_REPEATS calls. The CPU backend measures one
    thread, as candidates run there."""
    backend = req.get("backend", "cpu")
    dev = device_for(backend, int(req.get("device", 0)))
    configure(dev)
    cuda = dev.type == "cuda"
    n, nbytes = (8192, 1 << 30) if cuda else (256, 64 << 20)
    with on_device(dev):
        tflops = {"float32": matmul_tflops(dev, n, torch.float32)}
        if cuda:
            tflops["tf32"] = matmul_tflops(dev, n, torch.float32, tf32=True)
            tflops["bfloat16"] = matmul_tflops(dev, n, torch.bfloat16)
            tflops["float16"] = matmul_tflops(dev, n, torch.float16)
        gbps = copy_gbps(dev, nbytes)
    return {
        "ok": True,
        "device_name": device_name(dev),
        "torch_version": torch.__version__,
        "bandwidth_gbps": gbps,
        "tflops": tflops,
        "method": {"copy_bytes": nbytes, "matmul_n": n, "repeats": PEAK_REPEATS},
    }


def prepare(req):
    """Writes the K correctness sets (inputs.bin, expected.bin) and T timing sets
    (timing_inputs.bin, timing_expected.bin) into req["out"], then meta.json last, so a
    directory with meta.json is complete."""
    backend = req["backend"]
    dev = device_for(backend, int(req.get("device", 0)))
    configure(dev)
    module = load_task(req["task"], backend)
    out_dir = req["out"]
    os.makedirs(out_dir, exist_ok=True)
    seeds, timing_seeds = req["seeds"], req.get("timing_seeds", [])
    if not seeds or not timing_seeds:
        raise ValueError("prepare needs seeds and timing_seeds")
    abi = Abi()
    files = [
        os.path.join(out_dir, f)
        for f in ("inputs.bin", "expected.bin", "timing_inputs.bin", "timing_expected.bin")
    ]
    scalars = write_sets(module, seeds, dev, files[0:2], abi)
    count = timing_set_count(
        abi.bytes_per_set,
        req.get("timing_bytes_budget", 2 << 30),
        req.get("min_timing_sets", MIN_TIMING_SETS),
        len(timing_seeds),
    )
    timing_scalars = write_sets(module, timing_seeds[:count], dev, files[2:4], abi)
    work, work_error = count_work(module, seeds[0], dev)
    specs, out_specs, scalar_names = abi.first
    meta = {
        "protocol": PROTOCOL,
        "task": os.path.splitext(os.path.basename(req["task"]))[0],
        "backend": backend,
        "device_name": device_name(dev),
        "torch_version": torch.__version__,
        "num_sets": len(seeds),
        "scalar_names": scalar_names,
        "scalars": scalars,
        "num_timing_sets": count,
        "timing_scalars": timing_scalars,
        "inputs": specs,
        "outputs": out_specs,
        "scalar_kinds": abi.scalar_kinds,
        "forward_args": abi.forward_args,
        "init_inputs": init_inputs_json(module, seeds[0]),
        "work": work,
        "has_cpu_sizes": hasattr(module, "KEVIN_CPU_SIZES"),
    }
    if work_error:
        meta["work_error"] = work_error
    with open(os.path.join(out_dir, "meta.json.tmp"), "w") as f:
        json.dump(meta, f)
    os.replace(os.path.join(out_dir, "meta.json.tmp"), os.path.join(out_dir, "meta.json"))
    return {"ok": True, "meta": meta}


def baseline(req):
    """Times PyTorch (req["mode"]: eager, or compile) on fresh sets built from the request's
    seeds; writes nothing."""
    backend = req["backend"]
    dev = device_for(backend, int(req.get("device", 0)))
    configure(dev)
    module = load_task(req["task"], backend)
    return {
        "ok": True,
        "baseline": time_baseline(
            module, dev, req, wait_for_go if req.get("wait_to_time") else None
        ),
        "device_name": device_name(dev),
        "torch_version": torch.__version__,
    }


def describe(req):
    """The ABI argument list at the backend's sizes, without writing data."""
    backend = req.get("backend", "cpu")
    module = load_task(req["task"], backend)
    model, args = build(module, 0, torch.device("cpu"))
    specs, _, scalar_names, scalars = abi_arguments(model, args)
    with torch.no_grad():
        try:  # shapes only: meta tensors skip the arithmetic where PyTorch supports it
            outs = as_outputs(
                model.to("meta")(
                    *[a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
                )
            )
        except Exception:  # noqa: BLE001 — fall back to computing for real
            model, args = build(module, 0, torch.device("cpu"))
            outs = as_outputs(call_task(lambda: model(*args), "forward()"))
    out_specs = output_specs(outs)
    return {
        "ok": True,
        "inputs": specs,
        "scalar_names": scalar_names,
        "scalars": scalars,
        "outputs": out_specs,
        "family": getattr(module, "KEVIN_FAMILY", ""),
        "has_cpu_sizes": hasattr(module, "KEVIN_CPU_SIZES"),
        "init_inputs": init_inputs_json(module, 0),
    }


def passes(out, ref, atol, rtol):
    """Every element of `out` (a tensor, or one number for all) within atol + rtol*|ref|; NaN
    and Inf never pass. Compared PASS_CHUNK elements at a time in float64, so a check of the
    largest outputs holds a chunk's float64 copies, not whole ones."""
    ref_flat = ref.reshape(-1)
    out_flat = out.reshape(-1) if isinstance(out, torch.Tensor) else None
    if out_flat is None and not math.isfinite(out):
        return False
    for start in range(0, ref_flat.numel(), PASS_CHUNK):
        r = ref_flat[start : start + PASS_CHUNK].double()
        o = out_flat[start : start + PASS_CHUNK].double() if out_flat is not None else out
        if out_flat is not None and not torch.isfinite(o).all():
            return False
        if not bool(((o - r).abs() <= atol + rtol * r.abs()).all()):
            return False
    return True


def all_pass(outs, refs, atol, rtol):
    return all(
        (not isinstance(o, torch.Tensor) or o.shape == r.shape) and passes(o, r, atol, rtol)
        for o, r in zip(outs, refs)
    )


def run_forward(model, args):
    with torch.no_grad():
        return [
            o.detach().float() if o.is_floating_point() else o.detach()
            for o in as_outputs(model(*args))
        ]


def perturbed(t):
    if t.is_floating_point():
        spread = t.std().item() if t.numel() > 1 else 0.0
        if not spread > 0:  # constant tensors (ones, zeros): perturb on their own scale
            spread = max(abs(t.mean().item()), 1.0)
        return torch.randn_like(t) * spread + t.mean()
    if t.dtype == torch.bool:
        return ~t
    return t.flip(0) if t.dim() > 0 else t + 1


def check(req):
    """Degeneracy checks: which trivial or low-precision outputs would pass the tolerances,
    which inputs the output ignores, and whether outputs are finite and seed-dependent.
    Numerics as for prepare (configure: no TF32 on CUDA). Memory: the model, its inputs and
    the reference outputs stay; each probe's copies are dropped before the next probe."""
    backend = req.get("backend", "cpu")
    dev = device_for(backend, int(req.get("device", 0)))
    configure(dev)
    module = load_task(req["task"], backend)
    loose, tight = 1e-2, 1e-4
    flags = []
    model, args = build(module, 11, dev)
    ref = run_forward(model, args)
    floats = [r for r in ref if r.is_floating_point()]
    if any(not torch.isfinite(r).all() for r in floats):
        flags.append("nonfinite: the reference output contains NaN or Inf")
    if floats and all_pass([r.mean().item() for r in floats], floats, loose, loose):
        flags.append("constant: a constant output (the mean) passes atol=rtol=1e-2")
    if floats and all_pass([0.0 for _ in floats], floats, loose, loose):
        flags.append("zero: an all-zero output passes atol=rtol=1e-2")
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    for i, a in enumerate(tensors):
        if (
            len(ref) == 1
            and a.shape == ref[0].shape
            and a.is_floating_point()
            and passes(a, ref[0], loose, loose)
        ):
            flags.append(f"identity: returning input {i} passes atol=rtol=1e-2")
    if floats and all_pass(
        [l.float() for l in low_precision_outputs(module, dev) if l.is_floating_point()],
        floats,
        tight,
        tight,
    ):
        flags.append("low_precision: computing in bfloat16 passes the fp32 tolerance 1e-4")
    if all_pass(seed_outputs(module, 12, dev), ref, loose, loose):
        flags.append("seed_independent: another seed gives the same output within 1e-2")
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            changed = list(args)
            changed[i] = perturbed(a)
            if all_pass(run_forward(model, changed), ref, tight, tight):
                flags.append(
                    f"ignores_input: replacing forward argument {i} does not change the output"
                )
            del changed
    for name, p in list(model.named_parameters()):
        saved = p.data.clone()
        p.data = perturbed(p.data)
        if all_pass(run_forward(model, args), ref, tight, tight):
            flags.append(f"ignores_parameter: changing {name} does not change the output")
        p.data = saved
    return {"ok": True, "flags": flags}


def seed_outputs(module, seed, dev):
    model, args = build(module, seed, dev)
    return run_forward(model, args)


def low_precision_outputs(module, dev):
    """The task's outputs computed in bfloat16 (or, where the backend lacks bf16 kernels, on
    inputs and parameters rounded to bfloat16)."""
    try:
        model, args = build(module, 11, dev)
        return run_forward(
            model.to(torch.bfloat16),
            [
                a.to(torch.bfloat16) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                for a in args
            ],
        )
    except Exception:  # noqa: BLE001 — bf16 kernels missing on this backend: round instead
        model, args = build(module, 11, dev)
        for p in model.parameters():
            p.data = p.data.to(torch.bfloat16).float()
        return run_forward(
            model,
            [
                a.to(torch.bfloat16).float()
                if isinstance(a, torch.Tensor) and a.is_floating_point()
                else a
                for a in args
            ],
        )


def start_watchdog():
    """Ends this process within WATCHDOG_PERIOD_S of kevin's end, even while a task's code
    runs: kevin may die without a chance to stop us (SIGKILL, the OOM killer), and an
    orphaned worker would hold memory and a GPU context for good. Its sign is a new parent
    (we are re-parented to init or a subreaper); an idle worker also ends at stdin's EOF
    (main). PR_SET_PDEATHSIG is not used: it fires when the *thread* that spawned us exits,
    and kevin starts the worker lazily from whichever thread first needs reference data, so
    a short-lived thread would kill a healthy worker. Limit: a task stuck in C code that
    holds the GIL stops this thread too; kevin's request timeouts cover that while kevin
    lives."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(WATCHDOG_PERIOD_S)
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, name="kevin-watchdog", daemon=True).start()


OPS = {
    "prepare": prepare,
    "baseline": baseline,
    "describe": describe,
    "check": check,
    "peaks": peaks,
}


def main():
    start_watchdog()
    devices = (
        [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        if torch.cuda.is_available()
        else []
    )
    reply(
        {
            "ok": True,
            "hello": True,
            "protocol": PROTOCOL,
            "torch_version": torch.__version__,
            "python": sys.executable,
            "cuda_devices": devices,
        }
    )
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "exit":
                return
            if op not in OPS:
                reply({"ok": False, "error": f"unknown op {op!r}"})
                continue
            reply(OPS[op](req))
        except TaskError as exc:
            reply({"ok": False, "task_error": True, "error": str(exc)})
        except Exception as exc:  # noqa: BLE001 — report, keep serving
            reply(
                {
                    "ok": False,
                    "error": f"{type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc(limit=5),
                }
            )


if __name__ == "__main__":
    main()
