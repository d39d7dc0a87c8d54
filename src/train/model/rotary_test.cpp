// rotary_test.cpp — apply_rotary() against the rotation written out in fp64 (pairs i and
// i + D/2 turned by each position's angle): values and input gradients on the CPU path, and
// on CUDA the fused kernel for fp32/bf16/fp16 with a strided input like the fused q/k/v
// projection's output.
#include "train/model/rotary.h"

#include <gtest/gtest.h>

#include "train/model/token_scores.h"

namespace kevin::train {
namespace {

constexpr int64_t kB = 2, kT = 5, kH = 3, kD = 8;

torch::Tensor reference(const torch::Tensor& x, const torch::Tensor& cos,
                        const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const auto lo = x.narrow(-1, 0, half), hi = x.narrow(-1, half, half);
  const auto c = cos.unsqueeze(2), s = sin.unsqueeze(2);
  return torch::cat({lo * c.narrow(-1, 0, half) - hi * s.narrow(-1, 0, half),
                     hi * c.narrow(-1, half, half) + lo * s.narrow(-1, half, half)},
                    -1);
}

void check(const torch::Device& device, torch::Dtype dtype) {
  SCOPED_TRACE(device.str() + " " + std::string(c10::toString(dtype)));
  torch::manual_seed(9);
  // The heads sit inside a wider row, as when q is split off a fused q/k/v output.
  const auto wide = torch::randn({kB, kT, kH * kD + 6}).to(dtype);
  const auto angles = torch::rand({kB, kT, kD / 2}) * 6.0;
  const auto cos = torch::cat({angles.cos(), angles.cos()}, -1),
             sin = torch::cat({angles.sin(), angles.sin()}, -1);
  const auto grad_out = torch::randn({kB, kT, kH, kD});

  auto input = wide.to(device).clone().requires_grad_();
  const auto x = input.narrow(-1, 0, kH * kD).view({kB, kT, kH, kD});
  const auto got = apply_rotary(x, cos.to(device), sin.to(device));
  ASSERT_EQ(got.sizes(), x.sizes());
  ASSERT_EQ(got.scalar_type(), dtype);
  (got.to(torch::kFloat32) * grad_out.to(device)).sum().backward();

  auto expected_input = wide.to(torch::kFloat64).requires_grad_();
  const auto expected = reference(expected_input.narrow(-1, 0, kH * kD).view({kB, kT, kH, kD}),
                                  cos.to(torch::kFloat64), sin.to(torch::kFloat64));
  (expected * grad_out.to(torch::kFloat64)).sum().backward();

  const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 2e-2;
  EXPECT_TRUE(torch::allclose(got.cpu().to(torch::kFloat64), expected, tolerance, tolerance));
  EXPECT_TRUE(torch::allclose(input.grad().cpu().to(torch::kFloat64), expected_input.grad(),
                              tolerance, tolerance));
}

TEST(Rotary, StockPathMatchesTheDefinition) { check(torch::kCPU, torch::kFloat32); }

TEST(Rotary, FusedKernelMatchesTheDefinition) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ASSERT_TRUE(fused_kernels_available())
      << "a CUDA build of libtorch, but the kernels were not compiled";
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16, torch::kHalf})
    check(torch::Device(torch::kCUDA, 0), dtype);
}

}  // namespace
}  // namespace kevin::train
