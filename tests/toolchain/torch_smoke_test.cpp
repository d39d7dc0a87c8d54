// torch_smoke_test.cpp — the build finds and links libtorch (Debian's 1.13 on development
// machines, PyTorch's own on the GPU machine) and it computes; on a GPU machine it sees CUDA.
// The trainer module will replace this with real tests.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include "gpu.h"

namespace {

TEST(TorchToolchain, MatmulOnCpu) {
  const torch::Tensor a = torch::arange(6, torch::kFloat).reshape({2, 3});
  const torch::Tensor b = torch::ones({3, 2});
  const torch::Tensor c = a.matmul(b);
  EXPECT_FLOAT_EQ(c[0][0].item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(c[1][1].item<float>(), 12.0f);
}

TEST(TorchToolchain, CudaWhenPresent) {
  KEVIN_REQUIRE_GPU();
  ASSERT_TRUE(torch::cuda::is_available()) << "a GPU is present but this libtorch has no CUDA";
  const torch::Tensor x = torch::ones({1024}, torch::TensorOptions().device(torch::kCUDA));
  EXPECT_FLOAT_EQ(x.sum().item<float>(), 1024.0f);
}

}  // namespace
