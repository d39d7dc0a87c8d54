"""reference_worker_work_test.py — the reference worker's count of the work a task must do
(FLOPs, minimum and eager bytes) against hand-computed figures for a matrix product, a
convolution, an elementwise op and attention, its peak-rate measurement on the CPU, and the
torch.compile baseline's protocol (with a stand-in for torch.compile).
Run: python3 reference_worker_work_test.py (exit 77, skipped, without torch)."""

import importlib.util
import os
import sys
import types
import unittest

try:
    import torch
except ImportError:
    sys.exit(77)

_spec = importlib.util.spec_from_file_location(
    "reference_worker",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference_worker.py"),
)
rw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rw)
CPU = torch.device("cpu")
F32 = 4  # bytes


def task(forward, inputs, make=None):
    """A task module whose Model applies `forward` (or is built by `make`) to `inputs()`."""

    def model():
        if make is not None:
            return make()
        m = torch.nn.Module()
        m.forward = forward
        return m

    return types.SimpleNamespace(Model=model, get_inputs=inputs, get_init_inputs=lambda: [])


def work(module):
    counted, error = rw.count_work(module, 0, CPU)
    assert error is None, error
    return counted


class WorkTest(unittest.TestCase):
    def test_matrix_product_is_two_flops_per_multiply_add(self):
        m, k, n = 64, 48, 32
        w = work(task(lambda a, b: a @ b, lambda: [torch.randn(m, k), torch.randn(k, n)]))
        self.assertEqual(w["flops"], 2 * m * n * k)
        self.assertEqual(w["matmul_flops"], {"float32": 2 * m * n * k})
        self.assertEqual(w["min_bytes"], (m * k + k * n + m * n) * F32)
        self.assertEqual(w["eager_bytes"], w["min_bytes"])  # one operator: no intermediates
        self.assertEqual(w["eager_ops"], 1)

    def test_batched_product_in_bfloat16_is_counted_at_its_dtype(self):
        b, m, k, n = 3, 8, 16, 4
        w = work(
            task(
                lambda x, y: torch.bmm(x, y),
                lambda: [torch.randn(b, m, k).bfloat16(), torch.randn(b, k, n).bfloat16()],
            )
        )
        self.assertEqual(w["matmul_flops"], {"bfloat16": 2 * b * m * n * k})

    def test_linear_counts_the_product_and_its_parameters(self):
        batch, fin, fout = 16, 128, 64
        w = work(
            task(None, lambda: [torch.randn(batch, fin)], make=lambda: torch.nn.Linear(fin, fout))
        )
        self.assertEqual(w["matmul_flops"]["float32"], 2 * batch * fin * fout)
        weights = fin * fout + fout
        self.assertEqual(w["min_bytes"], (batch * fin + weights + batch * fout) * F32)

    def test_convolution_counts_each_output_against_its_receptive_field(self):
        n, cin, cout, hw, kk, groups = 2, 8, 16, 10, 3, 2
        w = work(
            task(
                None,
                lambda: [torch.randn(n, cin, hw, hw)],
                make=lambda: torch.nn.Conv2d(cin, cout, kk, groups=groups, bias=False),
            )
        )
        out = n * cout * (hw - kk + 1) ** 2
        self.assertEqual(w["flops"], 2 * out * (cin // groups) * kk * kk)
        weight = cout * (cin // groups) * kk * kk
        self.assertEqual(w["min_bytes"], (n * cin * hw * hw + weight + out) * F32)

    def test_transposed_convolution_counts_each_input_against_the_kernel(self):
        n, cin, cout, hw, kk = 1, 4, 6, 5, 3
        w = work(
            task(
                None,
                lambda: [torch.randn(n, cin, hw, hw)],
                make=lambda: torch.nn.ConvTranspose2d(cin, cout, kk, bias=False),
            )
        )
        self.assertEqual(w["flops"], 2 * n * cin * hw * hw * cout * kk * kk)

    def test_elementwise_chain_is_one_flop_per_element_and_eager_moves_intermediates(self):
        size = 1000
        w = work(task(lambda x: torch.relu(x * 2.0) + 1.0, lambda: [torch.randn(size)]))
        self.assertEqual(w["matmul_flops"], {})
        self.assertEqual(w["flops"], 3 * size)  # mul, relu, add
        self.assertEqual(w["min_bytes"], 2 * size * F32)  # read x, write the output
        self.assertEqual(w["eager_bytes"], 3 * 2 * size * F32)  # each op reads and writes
        self.assertEqual(w["eager_ops"], 3)

    def test_a_reduction_counts_the_elements_it_reads(self):
        w = work(task(lambda x: x.sum(dim=1), lambda: [torch.randn(32, 64)]))
        self.assertEqual(w["flops"], 32 * 64)
        self.assertEqual(w["min_bytes"], (32 * 64 + 32) * F32)

    def test_views_and_copies_do_no_arithmetic(self):
        w = work(
            task(lambda x: x.t().contiguous().reshape(-1).clone(), lambda: [torch.randn(8, 4)])
        )
        self.assertEqual(w["flops"], 0)
        self.assertGreater(w["eager_bytes"], 0)  # the copies move data

    @unittest.skipUnless(
        hasattr(torch.nn.functional, "scaled_dot_product_attention"), "no fused attention"
    )
    def test_attention_is_two_products(self):
        b, h, l, s, e = 2, 3, 16, 24, 8
        w = work(
            task(
                lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                lambda: [torch.randn(b, h, l, e), torch.randn(b, h, s, e), torch.randn(b, h, s, e)],
            )
        )
        self.assertGreaterEqual(w["matmul_flops"]["float32"], 2 * 2 * b * h * l * s * e)

    def test_a_forward_the_mode_cannot_run_is_reported_not_raised(self):
        def boom(x):
            raise RuntimeError("no")

        counted, error = rw.count_work(task(boom, lambda: [torch.randn(2)]), 0, CPU)
        self.assertIsNone(counted)
        self.assertIn("RuntimeError", error)


class CompiledBaselineTest(unittest.TestCase):
    """time_baseline's compile mode, with a stand-in for torch.compile that records what the
    compiled module is called with (this machine's PyTorch may predate torch.compile)."""

    def setUp(self):
        self.compiles, self.weights = 0, []
        self.had_compile = hasattr(torch, "compile")
        self.real_compile = getattr(torch, "compile", None)

        def fake_compile(model):
            self.compiles += 1

            def run(*args):
                self.weights.append(model.weight.detach().clone())
                return model(*args)

            return run

        torch.compile = fake_compile
        self.module = task(None, lambda: [torch.randn(3, 8)], make=lambda: torch.nn.Linear(8, 4))

    def tearDown(self):
        if self.had_compile:
            torch.compile = self.real_compile
        else:
            del torch.compile

    def request(self, mode):
        return {
            "seeds": [1, 2, 3],
            "timing_seeds": [11, 12, 13, 14],
            "mode": mode,
            "timing_bytes_budget": 1 << 30,
            "min_timing_sets": 1,
            "timing": {"budget_ms": 1e9, "warmup": 3, "min_calls": 1},
        }

    def test_compiles_once_and_runs_each_set_on_that_sets_weights(self):
        stats = rw.time_baseline(self.module, CPU, self.request("compile"))
        self.assertEqual(self.compiles, 1)
        self.assertEqual(stats["calls"], 4)
        # The untimed first run (seed 1), three warm-ups, then one call per timing set.
        seeds = [1, 1, 2, 3, 11, 12, 13, 14]
        self.assertEqual(len(self.weights), len(seeds))
        for seen, seed in zip(self.weights, seeds):
            want = rw.build(self.module, seed, CPU)[0].weight
            self.assertTrue(torch.equal(seen, want), f"seed {seed}")

    def test_sets_are_built_and_compiled_before_ready_and_only_calls_follow(self):
        events = []
        real_build = rw.build

        def build(module, seed, dev):
            events.append(("build", seed))
            return real_build(module, seed, dev)

        rw.build = build
        try:
            rw.time_baseline(
                self.module,
                CPU,
                self.request("compile"),
                ready=lambda: events.append(("ready", len(self.weights))),
            )
        finally:
            rw.build = real_build
        kinds = [kind for kind, _ in events]
        self.assertEqual(kinds.count("ready"), 1)
        ready_at = kinds.index("ready")
        self.assertEqual([seed for _, seed in events[:ready_at]], [1, 2, 3, 11, 12, 13, 14])
        self.assertEqual(events[ready_at][1], 1, "only the untimed compile run comes before")
        self.assertEqual(events[ready_at + 1 :], [], "nothing is built once the calls start")
        self.assertEqual(len(self.weights), 8, "three warm-ups and four timed calls after it")

    def test_eager_mode_compiles_nothing(self):
        stats = rw.time_baseline(self.module, CPU, self.request("eager"))
        self.assertEqual(self.compiles, 0)
        self.assertEqual(stats["calls"], 4)

    def test_an_unknown_mode_is_refused(self):
        with self.assertRaisesRegex(ValueError, "eager or compile"):
            rw.time_baseline(self.module, CPU, self.request("jit"))


class PeaksTest(unittest.TestCase):
    def test_cpu_peaks_are_positive_rates_of_one_thread(self):
        p = rw.peaks({"backend": "cpu"})
        self.assertTrue(p["ok"])
        self.assertEqual(p["device_name"], "cpu")
        self.assertGreater(p["bandwidth_gbps"], 0.01)
        self.assertEqual(list(p["tflops"]), ["float32"])
        self.assertGreater(p["tflops"]["float32"], 1e-5)
        self.assertEqual(torch.get_num_threads(), 1)


if __name__ == "__main__":
    unittest.main()
