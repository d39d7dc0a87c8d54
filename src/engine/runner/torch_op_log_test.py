"""torch_op_log_test.py — libkevin-op-log.so in the interpreter it serves: the operators a call
dispatches beyond allocation, views and copies are named, those are not, nested ones (a
composite's parts, PyTorch reached from inside another operator) are seen, and recording
happens only between begin and end.
Run: python3 torch_op_log_test.py LIBRARY TORCH_VERSION_FILE (exit 77: no matching PyTorch here)"""

import ctypes
import re
import sys
import unittest

LIBRARY = VERSION_FILE = None


def load():
    try:
        import torch
    except ImportError:
        return None, "no torch"
    with open(VERSION_FILE) as f:
        built = f.read().strip()
    release = re.compile(r"\d+\.\d+(\.\d+)?")  # as kernelbench_runner.py compares them
    if release.match(torch.__version__).group(0) != release.match(built).group(0):
        return None, "PyTorch %s here, the library was built against %s" % (
            torch.__version__,
            built,
        )
    lib = ctypes.CDLL(LIBRARY)
    lib.kevin_op_log_end.restype = ctypes.c_size_t
    lib.kevin_op_log_end.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    assert lib.kevin_op_log_start() == 0
    return lib, None


class OpLogTest(unittest.TestCase):
    def recorded(self, fn):
        import torch

        out = ctypes.create_string_buffer(256)
        with torch.no_grad():
            self.lib.kevin_op_log_begin()
            fn()
            count = self.lib.kevin_op_log_end(out, len(out))
        return count, out.value.decode()

    def test_computing_operators_are_named(self):
        import torch

        a, b = torch.randn(8, 8), torch.randn(8, 8)
        count, names = self.recorded(lambda: torch.mm(a, b).relu())
        self.assertGreaterEqual(count, 2)  # relu may dispatch its own parts
        self.assertEqual(names.split(",")[:2], ["mm", "relu"])

    def test_allocation_views_and_copies_are_plumbing(self):
        import torch

        x = torch.randn(4, 6)

        def plumbing():
            y = torch.empty_like(x)
            y.copy_(x.t().contiguous().t())
            y.view(-1).reshape(6, 4).clone().zero_()
            torch.zeros(3).fill_(1.0)
            x.to(torch.float64)

        self.assertEqual(self.recorded(plumbing), (0, ""))

    def test_an_indexing_is_computing(self):
        import torch

        y = torch.randn(5, 3)
        rows = torch.empty(5, dtype=torch.long)
        for i in range(5):
            rows[i] = i
        count, names = self.recorded(lambda: y[rows])
        self.assertGreater(count, 0)
        self.assertIn("index", names)

    def test_nothing_is_recorded_outside_begin_and_end(self):
        import torch

        a = torch.randn(8, 8)
        self.recorded(lambda: None)
        torch.mm(a, a)  # between two recordings
        self.assertEqual(self.recorded(lambda: a.view(64)), (0, ""))

    def test_names_are_distinct_and_bounded(self):
        import torch

        a = torch.randn(4)
        count, names = self.recorded(lambda: [a.exp() for _ in range(50)])
        self.assertGreaterEqual(count, 50)
        self.assertEqual(names.split(",")[0], "exp")
        self.assertEqual(len(names.split(",")), len(set(names.split(","))))
        out = ctypes.create_string_buffer(4)
        self.lib.kevin_op_log_begin()
        a.exp()
        a.sin()
        self.assertGreaterEqual(self.lib.kevin_op_log_end(out, len(out)), 2)
        self.assertEqual(out.value.decode(), "exp")  # cut to the buffer, NUL-terminated


if __name__ == "__main__":
    LIBRARY, VERSION_FILE = sys.argv[1], sys.argv[2]
    OpLogTest.lib, why_not = load()
    if OpLogTest.lib is None:
        print("skipped:", why_not)
        sys.exit(77)
    sys.exit(0 if unittest.main(argv=sys.argv[:1], exit=False).result.wasSuccessful() else 1)
