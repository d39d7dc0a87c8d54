"""kernelbench_runner.py — the runner of KernelBench answers (docs/kernelbench.md): exec'd by
kevin-runner after its namespaces, it speaks the runner protocol (defined in protocol.h, and
held to kevin-runner's replies by runner_protocol_test) on descriptors 3-7, confines itself
with libkevin-runner-support.so and runs ModelNew on the judge's command. Usage (by
kevin-runner only): python -s -u kernelbench_runner.py libkevin-runner-support.so"""

import contextlib
import ctypes
import importlib.machinery
import importlib.util
import io
import json
import math  # noqa: F401  (imported before the root is emptied: answers may import it)
import mmap
import os
import re
import struct
import sys
import time
import traceback
import typing  # noqa: F401
import warnings

# Imported before the root is emptied, and quietly: what PyTorch prints while importing
# (no CUDA toolkit found...) is not the answer's output.
with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
    import torch
    import torch.nn  # noqa: F401
    import torch.nn.functional  # noqa: F401
    import torch.utils.cpp_extension
    from torch.utils._python_dispatch import TorchDispatchMode

    try:
        import torch._dynamo  # noqa: F401  (nn.Module's call imports it lazily in PyTorch 2.x)
    except ImportError:
        pass

COMMAND_FD, REPLY_FD, INPUTS_FD, STAGING_FD, SLOT_FD = 3, 4, 5, 6, 7
OBJECT = "candidate.so"
ANSWER = "answer.py"
# kevin_abi.h's dtype numbering.
DTYPES = {
    0: torch.float32,
    1: torch.float16,
    2: torch.bfloat16,
    3: torch.float64,
    4: torch.int8,
    5: torch.uint8,
    6: torch.int16,
    7: torch.int32,
    8: torch.int64,
    9: torch.bool,
}


def read_plumbing_ops():
    """plumbing_ops.txt beside this file: the one list of the operators an answer may run,
    which libkevin-op-log.so is built with; any other operator seen during a watched call is
    PyTorch computing the answer. Read now, while the filesystem is in view."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plumbing_ops.txt")
    with open(path, encoding="utf-8") as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


PLUMBING_OPS = read_plumbing_ops()

MASK64 = (1 << 64) - 1


class Fatal(Exception):
    """A failure that ends the runner after its reply (stage, message)."""

    def __init__(self, stage, message):
        super().__init__(message)
        self.stage = stage


# The judge's arithmetic (engine/harness_math.h), bit for bit.
def poison_word(dtype, seed):
    seed &= 0xFFFFFFFF
    if dtype == 0:
        return 0x7FC00000 | (seed & 0x3FFFFF) | 1
    if dtype == 1:
        h = 0x7E00 | (seed & 0x1FF) | 1
        return h | (h << 16)
    if dtype == 2:
        h = 0x7FC0 | (seed & 0x3F) | 1
        return h | (h << 16)
    if dtype == 3:
        return 0x7FF80000 | (seed & 0x7FFFF) | 1
    if dtype == 9:
        return (2 + seed % 250) * 0x01010101
    return seed | 0x80000001


def signed32(word):
    return word - (1 << 32) if word >= 1 << 31 else word


def signed64(value):
    value &= MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


def shifted(x, bits):
    """Logical right shift of int64 words (torch shifts arithmetically)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def device_hash(buffer):
    """harness::hash_term summed over `buffer`'s 8-byte words (a uint8 tensor on the GPU)."""
    n = buffer.numel()
    words = (n + 7) // 8
    if n % 8:
        padded = torch.zeros(words * 8, dtype=torch.uint8, device=buffer.device)
        padded[:n] = buffer
        buffer = padded
    total = 0
    chunk = 1 << 24
    for start in range(0, words, chunk):
        w = buffer[start * 8 : min(words, start + chunk) * 8].view(torch.int64)
        x = (
            w
            ^ (
                torch.arange(start, start + w.numel(), dtype=torch.int64, device=w.device)
                * signed64(0x9E3779B97F4A7C15)
            )
            ^ 0x6B657669
        )
        x = x ^ shifted(x, 30)
        x = x * signed64(0xBF58476D1CE4E5B9)
        x = x ^ shifted(x, 27)
        x = x * signed64(0x94D049BB133111EB)
        x = x ^ shifted(x, 31)
        total += int(x.sum().item())
    return total & MASK64


def release(version):
    """A PyTorch version's release number, "2.11.0" of "2.11.0+cu130" or "1.13.0a0+git": builds
    of one release share their C++ ABI."""
    match = re.match(r"\d+\.\d+(\.\d+)?", version or "")
    return match.group(0) if match else None


class DispatchLog(TorchDispatchMode):
    """Records the ATen operators run while it is active: the fallback of OpLog where
    libkevin-op-log.so cannot be used (tens of microseconds an operator: correctness calls only)."""

    def __init__(self):
        super().__init__()
        self.compute = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name not in PLUMBING_OPS and name not in self.compute:
            self.compute.append(name)
        return func(*args, **(kwargs or {}))


class OpLog:
    """The ATen operators an answer's forward dispatches beyond allocation, views and copies.
    Native (libkevin-op-log.so, a RecordFunction callback in C++) it watches every call, timed
    ones included, out of the answer's reach, at about 2 us an operator (bench/op_log_cost.py); it
    is loaded only into the PyTorch it was built against. Otherwise correctness calls are
    watched through a dispatch mode, and the reply says timed calls were not."""

    def __init__(self, library, torch_version):
        self.native, self.why_not = None, None
        if not library:
            self.why_not = "kevin was built without libtorch"
        elif release(torch_version) != release(torch.__version__):
            self.why_not = "kevin's libtorch is %s, this PyTorch %s" % (
                torch_version or "unknown",
                torch.__version__,
            )
        else:
            lib = ctypes.CDLL(library)
            lib.kevin_op_log_end.restype = ctypes.c_size_t
            lib.kevin_op_log_end.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            if lib.kevin_op_log_start() == 0:
                self.native = lib
            else:
                self.why_not = "PyTorch refused its callback"
        self.names = ctypes.create_string_buffer(256)

    def watches_timed_calls(self):
        return self.native is not None

    def watching(self, timed):
        """A context that watches what runs inside (a timed call only natively) and raises
        Fatal(pytorch_compute) as it closes when PyTorch computed."""
        return _Watch(self, timed)


class _Watch:
    """OpLog.watching's context (a class, not a generator: the answer's code runs inside, and a
    generator's frame is what the audit hook refuses to show)."""

    def __init__(self, log, timed):
        self.log, self.timed, self.mode = log, timed, None

    def __enter__(self):
        if self.log.native is not None:
            self.log.native.kevin_op_log_begin()
        elif not self.timed:
            self.mode = DispatchLog()
            self.mode.__enter__()
        return self

    def __exit__(self, kind, value, traceback_):
        computed = []
        if self.log.native is not None:
            count = self.log.native.kevin_op_log_end(self.log.names, len(self.log.names))
            computed = self.log.names.value.decode().split(",") if count else []
        elif self.mode is not None:
            self.mode.__exit__(kind, value, traceback_)
            computed = self.mode.compute
        if computed and kind is None:
            raise Fatal(
                "call",
                "pytorch_compute: PyTorch computed part of the answer (aten::%s); only the "
                "answer's own kernels may compute" % ", aten::".join(computed[:5]),
            )
        return False


class Support:
    """libkevin-runner-support.so: the sandbox stages and the judge's host hash."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.kevin_runner_hash.restype = ctypes.c_uint64
        self.lib.kevin_runner_hash.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.lib.kevin_runner_flush.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.lib.kevin_runner_close_doors.argtypes = [
            ctypes.c_uint64,
            ctypes.c_uint64,
            ctypes.c_uint64,
            ctypes.c_uint64,
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        self.lib.kevin_runner_allow_loading.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        self.lib.kevin_runner_seal.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        self.lib.kevin_runner_preload.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        # With the GIL held: it adds an audit hook to this interpreter.
        self.guard = ctypes.PyDLL(path).kevin_runner_guard_interpreter
        self.guard.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lifeline = int(os.environ.get("KEVIN_LIFELINE_FD", "-1"))
        self.lib.kevin_runner_adopt(int(os.environ.get("KEVIN_PARENT_PID", "0")), lifeline)

    def call(self, fn, *args):
        err = ctypes.create_string_buffer(512)
        if fn(*args, err, len(err)) != 0:
            raise Fatal("sandbox", err.value.decode(errors="replace"))

    def close_doors(self, cpu_seconds, output_bytes, address_space, data):
        enforced = ctypes.create_string_buffer(512)
        self.call(
            self.lib.kevin_runner_close_doors,
            cpu_seconds,
            output_bytes,
            address_space,
            data,
            enforced,
            len(enforced),
        )
        return [e for e in enforced.value.decode().split(",") if e]

    def host_hash(self, tensor):
        return self.lib.kevin_runner_hash(tensor.data_ptr(), tensor.numel())


def read_exact(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_frame():
    (n,) = struct.unpack("<I", read_exact(COMMAND_FD, 4))
    return json.loads(read_exact(COMMAND_FD, n))


def write_frame(obj):
    payload = json.dumps(obj).encode()
    os.write(REPLY_FD, struct.pack("<I", len(payload)) + payload)


def host_map(fd, size, writable):
    """The shared memory behind `fd` as a uint8 tensor (the descriptor is closed after)."""
    length = max(size, 1)
    m = mmap.mmap(fd, length, prot=mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0))
    os.close(fd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a read-only mapping: torch warns that it is not writable
        return (
            torch.frombuffer(m, dtype=torch.uint8, count=size)
            if size
            else torch.empty(0, dtype=torch.uint8),
            m,
        )


class Slot:
    def __init__(self, spec):
        self.dtype = DTYPES[spec["dtype"]]
        self.abi_dtype = spec["dtype"]
        self.shape = [int(d) for d in spec["shape"]]
        self.offset, self.bytes = int(spec["offset"]), int(spec["bytes"])

    def view(self, base):
        return base[self.offset : self.offset + self.bytes].view(self.dtype).view(self.shape)


class Runner:
    def __init__(self, support_path):
        self.sandboxed = os.environ.get("KEVIN_SANDBOX") == "1"
        self.enforced = [e for e in os.environ.get("KEVIN_SANDBOX_ENFORCED", "").split(",") if e]
        self.startup_error = os.environ.get("KEVIN_SANDBOX_ERROR")
        self.support = Support(support_path)
        self.model = None
        self.returned = []  # what the last call returned: poisoned before the next
        self.pending = []  # (returned tensor, output slot) of the last call, until downloaded

    # setup: the device, the K correctness sets and the timing slot, staging; then the doors.
    def setup(self, cmd):
        if self.startup_error:
            raise Fatal("sandbox", self.startup_error)
        self.cuda = cmd["backend"] == "cuda"
        self.device = torch.device("cuda", 0) if self.cuda else torch.device("cpu")
        torch.set_num_threads(1)  # no thread pool is started once the doors are closed
        self.sets, self.set_bytes = int(cmd["sets"]), int(cmd["set_bytes"])
        self.out_bytes = int(cmd["output_bytes"])
        self.scalars = [list(s) for s in cmd["scalars"]] + [list(cmd["scalars"][0])]
        self.inputs = [Slot(s) for s in cmd["inputs"]]
        self.outputs = [Slot(s) for s in cmd["outputs"]]
        inputs_host, inputs_map = host_map(INPUTS_FD, self.sets * self.set_bytes, False)
        self.set_base = []
        for k in range(self.sets + 1):
            base = torch.zeros(self.set_bytes, dtype=torch.uint8, device=self.device)
            if k < self.sets:
                base.copy_(inputs_host[k * self.set_bytes : (k + 1) * self.set_bytes])
            self.set_base.append(base)
        del inputs_host
        inputs_map.close()
        self.out_base = torch.empty(
            (self.out_bytes + 3) // 4 * 4, dtype=torch.uint8, device=self.device
        )
        self.staging, self.staging_map = host_map(STAGING_FD, self.out_bytes, True)
        self.slot_host, self.slot_map = host_map(SLOT_FD, self.set_bytes, True)
        if self.cuda:
            self.pin(self.staging)
            self.pin(self.slot_host)
            props = torch.cuda.get_device_properties(0)
            l2 = getattr(props, "L2_cache_size", 0) or (64 << 20)
            self.flush_buffer = torch.zeros(2 * l2, dtype=torch.uint8, device=self.device)
            self.start_event = torch.cuda.Event(enable_timing=True)
            self.end_event = torch.cuda.Event(enable_timing=True)
            # PyTorch's caching allocator takes its device memory now, before the doors close:
            # the answer's allocations are then served from its cache, not by the driver.
            reserve = torch.empty(  # noqa: F841  (held until the del below)
                4 * self.out_bytes + 2 * self.set_bytes + (64 << 20),
                dtype=torch.uint8,
                device=self.device,
            )
            small = torch.empty(1024, dtype=torch.uint8, device=self.device)  # noqa: F841
            del reserve, small
            torch.cuda.synchronize()
        # Loaded while the filesystem is in view; it watches every call from C++.
        self.op_log = OpLog(cmd.get("op_log_library", ""), cmd.get("op_log_torch", ""))
        self.warm_up()
        if self.sandboxed:
            # No address-space cap: PyTorch builds with CUDA reserve address space by the
            # terabyte, even on the CPU. The answer's host memory is capped instead as private
            # writable memory, which those reservations (and the driver's shared mappings) are
            # not: what the runner holds now, the judge's sets and outputs, and the room
            # kevin-runner gives a CPU candidate. On the GPU the same cap leaves the answer
            # that room for host tensors of its own.
            data = (
                self.held_bytes()
                + (self.sets + 2) * self.set_bytes
                + 3 * self.out_bytes
                + (3 << 30)
            )
            self.enforced += self.support.close_doors(
                int(cmd["cpu_seconds"]), int(cmd["output_limit"]), 0, data
            )
        self.poison(cmd)
        skipped = [] if self.sandboxed else ["all confinement (--no-sandbox)"]
        if not self.op_log.watches_timed_calls():
            skipped.append("the operator log of timed calls (%s)" % self.op_log.why_not)
        return {
            "ok": True,
            "device": torch.cuda.get_device_name(0) if self.cuda else "cpu",
            "workspace_bytes": 0,
            "input_hashes": self.input_hashes(),
            "sandbox": {"enforced": self.enforced, "skipped": skipped},
        }

    @staticmethod
    def held_bytes():
        """The process's private writable memory now (VmData), what RLIMIT_DATA counts."""
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
        raise Fatal("sandbox", "VmData missing from /proc/self/status")

    @staticmethod
    def pin(host):
        """Registers shared memory with the driver, as kevin-runner does: copies to and from it
        are then DMA, not CPU-bound paging, so a large output's download costs the same in a
        timed call as in the calibration however busy the machine's cores are."""
        if host.numel():
            torch.cuda.cudart().cudaHostRegister(host.data_ptr(), host.numel(), 0)

    def warm_up(self):
        """Runs what a call runs (a module call, the operator log, the output copy) once, while
        the files PyTorch imports lazily are still in view."""
        probe = torch.zeros(4, device=self.device)
        with torch.no_grad(), self.op_log.watching(timed=False):
            torch.nn.Identity()(probe).view(2, 2).contiguous().reshape(-1).view(torch.uint8)
        probe.copy_(probe)
        if self.cuda:
            torch.cuda.synchronize()

    def input_hashes(self):
        if self.cuda:
            return [device_hash(self.set_base[k]) for k in range(self.sets)]
        return [self.support.host_hash(self.set_base[k]) for k in range(self.sets)]

    def poison(self, cmd):
        seed = int(cmd["next_poison"])
        for out in self.outputs:
            words = (out.bytes + 3) // 4
            region = self.out_base[out.offset : out.offset + 4 * words].view(torch.int32)
            region.fill_(signed32(poison_word(out.abi_dtype, seed)))
        for tensor, dtype in self.returned:
            # Memory the answer's outputs lay in goes back to PyTorch's allocator: poisoned, it
            # cannot hand the next call an earlier answer. An output that is a view of an input
            # set is left alone (the input check judges it).
            if self.in_input_sets(tensor):
                continue
            if tensor.is_floating_point():
                tensor.fill_(float("nan"))
            elif dtype != torch.bool:
                tensor.fill_(-1)
        self.returned = []
        if self.cuda:
            torch.cuda.synchronize()

    def in_input_sets(self, tensor):
        at = tensor.data_ptr()
        return any(
            base.data_ptr() <= at < base.data_ptr() + self.set_bytes for base in self.set_base
        )

    # load: the answer's module, with load_inline served by the object kevin built. Nothing of
    # the answer runs before the strict allowlist is in force and the interpreter is guarded:
    # the object is mapped first (the loader runs no code of the answer's: the object gate),
    # then sealed, and only then are its modules initialised and the answer's text run.
    def load(self, cmd):
        self.forward_args = cmd["forward_args"]  # "tensor" / "scalar" in forward's order
        self.scalar_kinds = cmd["scalar_kinds"]
        self.params = [(a["name"], i) for i, a in enumerate(cmd["args"]) if a["role"] != "input"]
        self.tensor_inputs = [i for i, a in enumerate(cmd["args"]) if a["role"] == "input"]
        extensions = cmd["extensions"]
        object_path = ("/" if self.sandboxed else "./") + OBJECT
        answer_path = ("/" if self.sandboxed else "./") + ANSWER
        with open(answer_path, encoding="utf-8", errors="surrogateescape") as f:
            source = f.read()
        try:
            code = compile(source, ANSWER, "exec")  # parsing only: none of it runs yet
        except (SyntaxError, ValueError):
            raise Fatal("load", "the answer is not valid Python:\n" + short_traceback())
        if self.sandboxed:
            probe = os.open(object_path, os.O_RDONLY | os.O_CLOEXEC)
            os.close(probe)
            self.support.call(self.support.lib.kevin_runner_allow_loading, probe, int(self.cuda))
        self.support.call(self.support.lib.kevin_runner_preload, object_path.encode())
        if self.sandboxed:
            self.support.call(self.support.lib.kevin_runner_seal, int(self.cuda))
        loaded = {}

        # The one object holds every extension, each its own module (PyInit_<name>); it is
        # mapped already, so importing it opens nothing.
        def load_inline(name, *args, **kwargs):
            if name not in extensions:
                raise RuntimeError(
                    "load_inline(%r): kevin built the answer's extensions %s"
                    % (name, ", ".join(map(repr, extensions)))
                )
            if name not in loaded:
                spec = importlib.util.spec_from_file_location(
                    name,
                    object_path,
                    loader=importlib.machinery.ExtensionFileLoader(name, object_path),
                )
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                loaded[name] = module
            return loaded[name]

        torch.utils.cpp_extension.load_inline = load_inline
        namespace = {"__name__": "answer"}
        self.support.call(self.support.guard)
        try:
            exec(code, namespace)  # noqa: S102  (the sandboxed answer)
            model_class = namespace["ModelNew"]
            self.seed_generators(0)
            model = model_class(*cmd["init_inputs"])
            if isinstance(model, torch.nn.Module):
                model = model.to(self.device).eval()
        except Exception:  # noqa: BLE001  (the answer's failure is its verdict)
            raise Fatal("load", "building ModelNew failed:\n" + short_traceback())
        self.model = model
        self.bindings = self.bind_parameters(model)
        self.poison(cmd)
        return {"ok": True, "static_bytes": 0}

    def seed_generators(self, seed):
        """torch.manual_seed(seed) without its lazy CUDA call, which on a machine without CUDA
        records a stack trace (sys._getframe: the audit hook would end the runner)."""
        torch.default_generator.manual_seed(seed)
        if self.cuda:
            torch.cuda.manual_seed_all(seed)

    def bind_parameters(self, model):
        """(ModelNew tensor, reference argument index) pairs: the reference's weights of each
        set are given to ModelNew by name, or by position when the names differ but the
        shapes line up; otherwise the answer cannot be run on the reference's weights."""
        if not self.params:
            return []
        if not isinstance(model, torch.nn.Module):
            raise Fatal(
                "load", "ModelNew is not an nn.Module, so it cannot take the task's parameters"
            )
        own = dict(model.named_parameters())
        own.update(dict(model.named_buffers()))
        want = [(name, self.inputs[i]) for name, i in self.params]
        if all(name in own and list(own[name].shape) == slot.shape for name, slot in want):
            return [(own[name], i) for name, i in self.params]
        ordered = list(model.state_dict().keys())
        tensors = [own[k] for k in ordered if k in own]
        if len(tensors) == len(want) and all(
            list(t.shape) == slot.shape for t, (_, slot) in zip(tensors, want)
        ):
            return [(t, i) for t, (_, i) in zip(tensors, self.params)]
        have = ", ".join("%s%s" % (k, list(own[k].shape)) for k in ordered if k in own) or "none"
        need = ", ".join("%s%s" % (n, s.shape) for n, s in want)
        raise Fatal(
            "load",
            "ModelNew's parameters and buffers (%s) do not match the task's (%s): kevin gives "
            "ModelNew the task's weights of each input set, by name or in order" % (have, need),
        )

    def arguments(self, index):
        base = self.set_base[index]
        for tensor, i in self.bindings:
            tensor.data = self.inputs[i].view(base)
        tensors = iter(self.inputs[i].view(base) for i in self.tensor_inputs)
        scalars = iter(zip(self.scalars[index], self.scalar_kinds))
        args = []
        for kind in self.forward_args:
            if kind == "tensor":
                args.append(next(tensors))
            else:
                value, scalar_kind = next(scalars)
                args.append(
                    bool(value)
                    if scalar_kind == "bool"
                    else int(value)
                    if scalar_kind == "int"
                    else value
                )
        return args

    def forward(self, index, timed):
        args = self.arguments(index)
        with torch.no_grad(), self.op_log.watching(timed):
            result = self.model(*args)
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(outs) != len(self.outputs) or not all(isinstance(o, torch.Tensor) for o in outs):
            raise Fatal(
                "call",
                "ModelNew.forward returned %s; the task returns %d tensor(s)"
                % (describe(result), len(self.outputs)),
            )
        for got, slot in zip(outs, self.outputs):
            if (
                got.dtype != slot.dtype
                or list(got.shape) != slot.shape
                or got.device != self.device
            ):
                raise Fatal(
                    "call",
                    "ModelNew.forward returned %s %s on %s; the task returns %s %s"
                    % (
                        str(got.dtype).replace("torch.", ""),
                        list(got.shape),
                        got.device,
                        str(slot.dtype).replace("torch.", ""),
                        slot.shape,
                    ),
                )
            self.returned.append((got, got.dtype))
        self.pending = list(zip(outs, self.outputs))

    def run_call(self, index, window_end=None):
        """forward, then `window_end` (a timed call's end mark: what the baseline's window
        holds, the answer's work and no copy of ours), then the device's errors."""
        try:
            self.forward(index, timed=window_end is not None)
            if window_end is not None:
                window_end()
            if self.cuda:
                torch.cuda.synchronize()
        except Fatal:
            raise
        except Exception:  # noqa: BLE001
            raise Fatal("call", "ModelNew.forward raised:\n" + short_traceback())

    def watch_nothing(self):
        """A calibration call's stand-in for the answer: the operator log's own work, which
        every timed call of the answer's also does."""
        with self.op_log.watching(timed=True):
            pass

    def download(self):
        """The returned tensors (without a model: the poisoned output buffer, the same bytes,
        which is what calibration measures) straight into the judge's staging memory."""
        pending, self.pending = self.pending, []
        if not pending:
            self.staging.copy_(self.out_base[: self.out_bytes])
            return
        for got, slot in pending:
            flat = got.contiguous().reshape(-1).view(torch.uint8)
            self.staging[slot.offset : slot.offset + slot.bytes].copy_(flat)

    def call(self, cmd):
        index = int(cmd["set"])
        if not 0 <= index < self.sets:
            raise Fatal("harness", "set out of range")
        self.run_call(index)
        self.download()
        return {"ok": True, "rc": 0, "input_hashes": self.input_hashes()}

    def time_call(self, cmd):
        if "slot_scalars" in cmd:
            index = self.sets
            self.scalars[index] = list(cmd["slot_scalars"])
            self.set_base[index].copy_(self.slot_host)
        else:
            index = int(cmd["set"])
        if self.cuda:
            self.flush_buffer.zero_()
            torch.cuda.synchronize()
            self.start_event.record()
            if self.model is not None:
                self.run_call(index, self.end_event.record)
            else:
                self.watch_nothing()
                self.end_event.record()
            self.end_event.synchronize()
            event_ms = self.start_event.elapsed_time(self.end_event)
        else:
            self.support.lib.kevin_runner_flush(self.set_base[index].data_ptr(), self.set_bytes)
            ends = []
            start = time.perf_counter()
            if self.model is not None:
                self.run_call(index, lambda: ends.append(time.perf_counter()))
            else:
                self.watch_nothing()
            event_ms = ((ends[0] if ends else time.perf_counter()) - start) * 1000
        self.download()
        return {"ok": True, "rc": 0, "event_ms": event_ms}


def describe(value):
    if isinstance(value, torch.Tensor):
        return "a tensor"
    if isinstance(value, (tuple, list)):
        return "%d value(s)" % len(value)
    return type(value).__name__


def short_traceback():
    """The answer's part of the current exception: its frames and the message."""
    lines = traceback.format_exc().splitlines()
    kept = [line for line in lines if "kernelbench_runner.py" not in line]
    return "\n".join(kept[-12:])


def serve(runner):
    handlers = {
        "setup": runner.setup,
        "load": runner.load,
        "call": runner.call,
        "time_call": runner.time_call,
    }
    while True:
        try:
            cmd = read_frame()
        except EOFError:
            os._exit(0)
        op = cmd.get("cmd", "")
        if op == "exit":
            os._exit(0)
        try:
            if op not in handlers:
                raise Fatal("harness", "unknown command '%s'" % op)
            reply = handlers[op](cmd)
        except Fatal as f:
            reply = {"ok": False, "stage": f.stage, "error": str(f)}
        except Exception:  # noqa: BLE001
            reply = {"ok": False, "stage": "harness", "error": short_traceback()}
        write_frame(reply)
        if not reply.get("ok"):
            os._exit(0)
        if op in ("call", "time_call"):
            if op == "time_call" and not runner.cuda:
                resume = read_frame()
                if resume.get("cmd") != "resume":
                    os._exit(0)
            try:
                runner.poison(cmd)
                write_frame({"ready": True})
            except Exception:  # noqa: BLE001
                write_frame({"ready": False, "error": short_traceback()})
                os._exit(0)


def main():
    serve(Runner(sys.argv[1]))


if __name__ == "__main__":
    main()
