"""kernelbench_check_test.py — the KernelBench-answer checker on the fixtures of
tests/fixtures/kernelbench (each names the rule its verdict must carry), on honest answers
written the ways real ones are, and on mutated text (it must never raise).
Run: python3 kernelbench_check_test.py FIXTURE_DIR"""

import json
import os
import random
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernelbench_check  # noqa: E402

FIXTURES = None


def first_rule(source):
    findings, _ = kernelbench_check.extract_extensions(source)
    return findings[0].rule if findings else "pass"


def fixture_texts():
    out = {}
    for name in sorted(os.listdir(FIXTURES)):
        if name.endswith(".py"):
            with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
                out[name] = f.read()
    return out


def expected_rule(text):
    for line in text.splitlines():
        if line.startswith("# expect: "):
            return line[len("# expect: ") :].strip()
    raise AssertionError("fixture without an '# expect:' line")


HONEST_CUDA = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
__global__ void scale_bias(const float* x, const float* b, float* y, int n, int c, int hw, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s + b[(i / hw) % c];
}
torch::Tensor launch(torch::Tensor x, torch::Tensor b, double s) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_bias<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), n,
                                         x.size(1), x.size(2) * x.size(3), (float)s);
    return y;
}
"""
cpp_src = "torch::Tensor launch(torch::Tensor x, torch::Tensor b, double s);"
fused = load_inline(name="fused", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["launch"],
                    verbose=True, extra_cflags=["-O3"], extra_ldflags=[""])
BLOCK = 256


class ModelNew(nn.Module):
    def __init__(self, channels, kernel_size, scale=2.0):
        super().__init__()
        self.kernel_size = kernel_size if isinstance(kernel_size, int) else kernel_size[0]
        self.scale = scale * 0.5
        self.bias = nn.Parameter(torch.randn(channels))
        self.fused = fused

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, channels, height, width = x.size()
        out_h = (height + 2 * (self.kernel_size // 2) - self.kernel_size) // 1 + 1
        blocks = (batch * channels * out_h * width + BLOCK - 1) // BLOCK
        assert blocks > 0 and x.is_cuda and x.dim() == 4
        if not x.is_contiguous():
            x = x.contiguous()
        y = self.fused.launch(x, self.bias, self.scale)
        return y.view(batch, channels, out_h, width)
'''


class FixtureTest(unittest.TestCase):
    def test_every_fixture_gets_its_verdict(self):
        texts = fixture_texts()
        hostile = [n for n, t in texts.items() if expected_rule(t) != "pass"]
        self.assertGreaterEqual(len(hostile), 25, "the issue asks for at least 25 hostile answers")
        for name, text in texts.items():
            with self.subTest(fixture=name):
                self.assertEqual(first_rule(text), expected_rule(text))

    def test_every_rule_has_a_fixture(self):
        covered = {expected_rule(t) for t in fixture_texts().values()}
        untested = (
            set(kernelbench_check.RULE_ORDER) - covered - {"source_too_large", "source_too_complex"}
        )
        self.assertEqual(untested, set())


RETURN = "return y.view(batch, channels, out_h, width)"
LAUNCH = "y = self.fused.launch(x, self.bias, self.scale)"


class HonestAnswerTest(unittest.TestCase):
    def test_an_answer_written_the_usual_way_passes(self):
        findings = kernelbench_check.check_answer(HONEST_CUDA)
        self.assertEqual([f.as_json() for f in findings], [])

    def test_the_same_answer_with_one_torch_op_added_is_refused(self):
        hacked = HONEST_CUDA.replace(
            "return y.view(batch, channels, out_h, width)",
            "return torch.sigmoid(y).view(batch, channels, out_h, width)",
        )
        self.assertEqual(first_rule(hacked), "pytorch_compute")

    def test_an_import_alias_does_not_hide_torch(self):
        hacked = HONEST_CUDA.replace(
            "import torch\n", "import torch\nimport torch as T\n", 1
        ).replace(
            "y = self.fused.launch(x, self.bias, self.scale)",
            "y = T.tanh(self.fused.launch(x, self.bias, 1.0))",
        )
        self.assertEqual(first_rule(hacked), "pytorch_compute")

    def test_a_local_alias_of_a_torch_function_is_torch(self):
        hacked = HONEST_CUDA.replace(
            "y = self.fused.launch(x, self.bias, self.scale)",
            "act = torch.tanh\n        y = act(self.fused.launch(x, self.bias, 1.0))",
        )
        rules = {f.rule for f in kernelbench_check.check_answer(hacked)}
        self.assertIn("pytorch_compute", rules)

    def test_module_hyperparameters_and_the_current_stream_are_not_compute(self):
        answer = HONEST_CUDA.replace(
            "self.fused = fused", "self.fused = fused\n        self.conv = nn.Conv2d(3, 3, 3)"
        ).replace(
            "blocks = (batch",
            "pad = self.conv.padding[0] * 2 + self.conv.stride[0]\n"
            "        stream = torch.cuda.current_stream().cuda_stream\n        blocks = (pad + batch",
        )
        self.assertEqual([f.as_json() for f in kernelbench_check.check_answer(answer)], [])
        hacked = answer.replace(
            "y = self.fused.launch(x, self.bias, self.scale)",
            "y = self.fused.launch(x, self.bias, self.scale) + self.conv.weight.sum()",
        )
        self.assertEqual(first_rule(hacked), "pytorch_compute")

    # (what it shows, [(old, new) edits of HONEST_CUDA], the first rule expected)
    EDITED_ANSWERS = [
        (
            "a torch function held on the class",
            [
                (
                    "class ModelNew(nn.Module):\n",
                    "class ModelNew(nn.Module):\n    act = torch.tanh\n",
                ),
                (RETURN, "return self.act(y).view(batch, channels, out_h, width)"),
            ],
            "pytorch_compute",
        ),
        (
            "one wrapped in staticmethod",
            [
                (
                    "class ModelNew(nn.Module):\n",
                    "class ModelNew(nn.Module):\n    act = staticmethod(torch.tanh)\n",
                ),
                (RETURN, "return self.act(y).view(batch, channels, out_h, width)"),
            ],
            "pytorch_compute",
        ),
        (
            "a builtin computing on a tensor",
            [(RETURN, "return abs(y).view(batch, channels, out_h, width)")],
            "pytorch_compute",
        ),
        (
            "a self attribute that is no method",
            [(RETURN, "return self.mystery(y)")],
            "dynamic_code",
        ),
        (
            "an extension function held by name",
            [
                ("BLOCK = 256", "BLOCK = 256\nlaunch = fused.launch"),
                (LAUNCH, "y = launch(x, self.bias, self.scale)"),
            ],
            "pass",
        ),
        (
            "an extension function held on self",
            [
                ("self.fused = fused", "self.launch = fused.launch"),
                (LAUNCH, "y = self.launch(x, self.bias, self.scale)"),
            ],
            "pass",
        ),
    ]

    def test_edited_answers_get_their_rule(self):
        for what, edits, rule in self.EDITED_ANSWERS:
            answer = HONEST_CUDA
            for old, new in edits:
                self.assertIn(old, answer, what)
                answer = answer.replace(old, new)
            with self.subTest(what=what):
                self.assertEqual(first_rule(answer), rule)

    def test_flags_kevin_builds_with_are_not_refused_but_linking_is(self):
        self.assertEqual(first_rule(HONEST_CUDA), "pass")
        linked = HONEST_CUDA.replace('extra_ldflags=[""]', 'extra_ldflags=["-lcudnn"]')
        self.assertEqual(first_rule(linked), "build_option_not_allowed")


class ExtractionTest(unittest.TestCase):
    def test_the_usual_answer_yields_its_extension_as_load_inline_gets_it(self):
        findings, extensions = kernelbench_check.extract_extensions(HONEST_CUDA)
        self.assertEqual(findings, [])
        self.assertEqual(len(extensions), 1)
        ext = extensions[0]
        self.assertEqual((ext["name"], ext["functions"]), ("fused", ["launch"]))
        self.assertEqual(
            ext["cpp_sources"], "torch::Tensor launch(torch::Tensor x, torch::Tensor b, double s);"
        )
        self.assertIn("__global__ void scale_bias", ext["cuda_sources"])

    def test_lists_concatenations_and_names_are_followed(self):
        text = HONEST_CUDA.replace(
            "cpp_sources=cpp_src", 'cpp_sources=[HEADER + cpp_src, "// end"]'
        ).replace("BLOCK = 256", 'BLOCK = 256\nHEADER = "#include <torch/extension.h>\\n"')
        _, extensions = kernelbench_check.extract_extensions(text)
        self.assertEqual(
            extensions[0]["cpp_sources"].split("\n")[0], "#include <torch/extension.h>"
        )
        self.assertTrue(extensions[0]["cpp_sources"].endswith("\n// end"))

    def test_a_name_bound_twice_is_not_static(self):
        text = HONEST_CUDA.replace(
            "BLOCK = 256", 'BLOCK = 256\ncpp_src = cpp_src.replace("s)", "t)")'
        )
        findings, extensions = kernelbench_check.extract_extensions(text)
        self.assertEqual(extensions, [])
        self.assertIn("build_arguments_not_static", [f.rule for f in findings])
        self.assertIn(
            "cpp_sources", [f.detail for f in findings if f.rule == "build_arguments_not_static"][0]
        )

    def test_a_name_that_is_not_an_identifier_is_refused(self):
        findings, extensions = kernelbench_check.extract_extensions(
            HONEST_CUDA.replace('name="fused"', 'name="a-b"')
        )
        self.assertEqual(extensions, [])
        self.assertEqual(
            [f.detail for f in findings], ["extension name 'a-b' is not an identifier"]
        )

    def test_the_command_extracts_from_standard_input(self):
        out = subprocess.run(
            [sys.executable, kernelbench_check.__file__, "--extract", "-"],
            input=HONEST_CUDA,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        self.assertEqual(json.loads(out)["extensions"][0]["functions"], ["launch"])


class RobustnessTest(unittest.TestCase):
    def test_mutated_answers_never_raise(self):
        rng = random.Random(18)
        corpus = list(fixture_texts().values()) + [HONEST_CUDA]
        for i in range(600):
            text = rng.choice(corpus)
            cut = rng.randrange(len(text) + 1)
            mutated = (
                text[:cut]
                + rng.choice(["", "(", ")", ":", "\n    ", "\x00", "\udcff", "[" * 50, "@"])
                + text[cut + rng.randrange(4) :]
            )
            with self.subTest(iteration=i):
                findings, _ = kernelbench_check.extract_extensions(mutated)
                self.assertTrue(all(f.rule in kernelbench_check.RULE_ORDER for f in findings))

    def test_deep_nesting_and_size_are_findings_not_crashes(self):
        self.assertIn(
            first_rule("x = " + "(" * 100000 + ")" * 100000), ("syntax_error", "source_too_complex")
        )
        self.assertEqual(
            first_rule("#" * (kernelbench_check.MAX_SOURCE_BYTES + 1)), "source_too_large"
        )

    def test_the_command_prints_json(self):
        path = os.path.join(FIXTURES, "try_except_fallback.py")
        out = subprocess.run(
            [sys.executable, kernelbench_check.__file__, path],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        self.assertEqual(json.loads(out)["findings"][0]["rule"], "try_except_fallback")


if __name__ == "__main__":
    FIXTURES = (
        sys.argv.pop(1)
        if len(sys.argv) > 1
        else os.path.join(
            os.path.dirname(os.path.abspath(__file__)),
            "..",
            "..",
            "tests",
            "fixtures",
            "kernelbench",
        )
    )
    unittest.main()
