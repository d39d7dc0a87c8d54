"""op_log_cost.py — what the KernelBench runner's operator log costs a call: a forward of three
plumbing operators (empty_like, two views) timed plain, with libkevin-op-log.so's callback
registered, and recording between begin and end as the runner does, then with the dispatch
mode the runner falls back to. Prints microseconds a call (best of three runs of 20,000).
Usage: python3 bench/op_log_cost.py build/bin/libkevin-op-log.so [cpu|cuda]"""

import ctypes
import sys
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class Recording(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def per_call(step, calls=20000):
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            step()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main():
    torch.set_num_threads(1)
    device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
    x = torch.randn(1024, device=device)

    def forward():
        return torch.empty_like(x).view(-1).view(32, 32)

    plain = per_call(forward)
    log = ctypes.CDLL(sys.argv[1])
    log.kevin_op_log_end.restype = ctypes.c_size_t
    log.kevin_op_log_end.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    assert log.kevin_op_log_start() == 0
    names = ctypes.create_string_buffer(256)
    registered = per_call(forward)

    def recorded():
        log.kevin_op_log_begin()
        forward()
        log.kevin_op_log_end(names, len(names))

    recording = per_call(recorded)

    def dispatch_mode():
        with Recording():
            forward()

    mode = per_call(dispatch_mode, calls=2000)
    print(
        "op_log_cost on %s (torch %s), us per call of 3 operators: plain %.2f, callback registered %.2f, "
        "recording %.2f, dispatch mode %.2f"
        % (device, torch.__version__, plain, registered, recording, mode)
    )


if __name__ == "__main__":
    main()
