// swiglu_test.cpp — swiglu() against silu(gate) · up written out in fp64: values and input
// gradients on the CPU path, and on CUDA the fused kernels for fp32/bf16/fp16, widths that
// do and do not allow vector loads, and 3-D inputs.
#include "train/model/swiglu.h"

#include <gtest/gtest.h>

#include "train/model/token_scores.h"

namespace kevin::train {
namespace {

torch::Tensor reference(const torch::Tensor& gate_up) {
  const auto halves = gate_up.chunk(2, -1);
  return halves[0] * torch::sigmoid(halves[0]) * halves[1];
}

void check(const torch::Device& device, torch::Dtype dtype, int64_t width) {
  SCOPED_TRACE(device.str() + " " + std::string(c10::toString(dtype)) + " width " +
               std::to_string(width));
  torch::manual_seed(5);
  const auto base = (torch::randn({2, 7, 2 * width}) * 3).to(dtype);
  const auto grad_out = torch::randn({2, 7, width});

  auto input = base.to(device).clone().requires_grad_();
  const auto got = swiglu(input);
  ASSERT_EQ(got.sizes(), grad_out.sizes());
  ASSERT_EQ(got.scalar_type(), dtype);
  (got.to(torch::kFloat32) * grad_out.to(device)).sum().backward();

  auto expected_input = base.to(torch::kFloat64).requires_grad_();
  const auto expected = reference(expected_input);
  (expected * grad_out.to(torch::kFloat64)).sum().backward();

  const double rtol = dtype == torch::kFloat32 ? 1e-5 : (dtype == torch::kHalf ? 2e-3 : 1e-2);
  const double atol = dtype == torch::kFloat32 ? 1e-5 : 1e-2;
  EXPECT_TRUE(torch::allclose(got.cpu().to(torch::kFloat64), expected, rtol, atol));
  EXPECT_TRUE(
      torch::allclose(input.grad().cpu().to(torch::kFloat64), expected_input.grad(), rtol, atol))
      << "max gradient difference "
      << (input.grad().cpu().to(torch::kFloat64) - expected_input.grad())
             .abs()
             .max()
             .item<double>();
}

TEST(Swiglu, StockPathMatchesTheDefinition) { check(torch::kCPU, torch::kFloat32, 12); }

TEST(Swiglu, FusedKernelsMatchTheDefinition) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ASSERT_TRUE(fused_kernels_available())
      << "a CUDA build of libtorch, but the kernels were not compiled";
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kHalf}) {
    for (const int64_t width : {64, 37, 4864})
      check(torch::Device(torch::kCUDA, 0), dtype, width);  // vectors; odd; Qwen's
  }
}

}  // namespace
}  // namespace kevin::train
