// fused_adamw_test.cpp — FusedAdamW against libtorch's AdamW: the same parameters after
// several steps (weight decay, bias correction, a parameter without a gradient), and
// optimizer checkpoints that load into either class; and the moments kept in host memory
// (bucketed step, moved state, checkpoints). The fused path needs CUDA.
#include "train/grpo/fused_adamw.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

namespace kevin::train {
namespace {

torch::optim::AdamWOptions options() {
  return torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1);
}

std::vector<torch::Tensor> make_params(const torch::Device& device) {
  torch::manual_seed(3);
  return {torch::randn({33, 17}, device).requires_grad_(),
          torch::randn({1000}, device).requires_grad_(),
          torch::randn({5}, device).requires_grad_()};
}

// Gradients that differ per step; the last parameter never gets one.
void set_grads(std::vector<torch::Tensor>& params, int step) {
  for (size_t i = 0; i + 1 < params.size(); ++i) {
    params[i].mutable_grad() = torch::sin(params[i].detach() * (step + 1) + static_cast<double>(i));
  }
}

template <typename Optimizer>
void run_steps(Optimizer& optimizer, std::vector<torch::Tensor>& params, int first, int count) {
  for (int s = first; s < first + count; ++s) {
    set_grads(params, s);
    optimizer.step();
  }
}

void expect_close(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i].cpu(), b[i].cpu(), 1e-5, 1e-6))
        << "parameter " << i << " differs by " << (a[i] - b[i]).abs().max().item<double>();
  }
}

void matches_adamw_on(const torch::Device& device) {
  auto reference_params = make_params(device);
  auto fused_params = make_params(device);
  torch::optim::AdamW reference(reference_params, options());
  FusedAdamW fused(fused_params, options());
  run_steps(reference, reference_params, 0, 5);
  run_steps(fused, fused_params, 0, 5);
  expect_close(reference_params, fused_params);
  EXPECT_TRUE(torch::equal(fused_params[2], make_params(device)[2]))
      << "a parameter without a gradient moved";
}

TEST(FusedAdamW, MatchesAdamWOnCpu) { matches_adamw_on(torch::kCPU); }

TEST(FusedAdamW, FusedPathMatchesAdamWOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto params = make_params(torch::kCUDA);
  FusedAdamW fused(params, options());
  set_grads(params, 0);
  EXPECT_TRUE(fused.fused_eligible());
  matches_adamw_on(torch::kCUDA);
}

TEST(FusedAdamW, CheckpointsInterchangeWithAdamW) {
  const torch::Device device =
      torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  const auto file = std::filesystem::temp_directory_path() /
                    ("fused_adamw_test_" + std::to_string(::getpid()) + ".pt");
  auto fused_params = make_params(device);
  FusedAdamW fused(fused_params, options());
  run_steps(fused, fused_params, 0, 3);
  torch::save(fused, file.string());

  // Resume from the fused optimizer's checkpoint in libtorch's AdamW, and compare with a
  // fused optimizer that simply kept going.
  std::vector<torch::Tensor> resumed_params;
  for (const auto& p : fused_params) resumed_params.push_back(p.detach().clone().requires_grad_());
  torch::optim::AdamW resumed(resumed_params, options());
  torch::load(resumed, file.string());
  std::filesystem::remove(file);
  run_steps(fused, fused_params, 3, 2);
  run_steps(resumed, resumed_params, 3, 2);
  expect_close(fused_params, resumed_params);
}

// Every moment of `optimizer` that exists is where `on_host` wants it for parameters on
// `device`: in host memory (page-locked for CUDA parameters), or on `device`.
void expect_moments_placed(FusedAdamW& optimizer, bool on_host, const torch::Device& device) {
  size_t moments = 0;
  for (const auto& item : optimizer.state()) {
    const auto& state = static_cast<const torch::optim::AdamWParamState&>(*item.second);
    for (const auto& m : {state.exp_avg(), state.exp_avg_sq()}) {
      ++moments;
      EXPECT_EQ(m.device(), on_host ? torch::Device(torch::kCPU) : device);
      if (on_host && device.is_cuda()) {
        EXPECT_TRUE(m.is_pinned());
      }
    }
  }
  EXPECT_EQ(moments, 4u) << "two parameters have gradients";
}

// Buckets of 4000 bytes: the 33×17 matrix alone, then the 1000-vector alone (its own bucket
// though larger than the cap), so the step crosses bucket boundaries.
constexpr int64_t kSmallBuckets = 4000;

void host_state_matches_adamw_on(const torch::Device& device) {
  auto reference_params = make_params(device);
  auto host_params = make_params(device);
  torch::optim::AdamW reference(reference_params, options());
  FusedAdamW host(host_params, options());
  host.set_state_on_host(true, kSmallBuckets);
  run_steps(reference, reference_params, 0, 5);
  run_steps(host, host_params, 0, 5);
  expect_close(reference_params, host_params);
  expect_moments_placed(host, true, device);
  EXPECT_TRUE(torch::equal(host_params[2], make_params(device)[2]));
}

TEST(FusedAdamW, HostStateMatchesAdamWOnCpu) { host_state_matches_adamw_on(torch::kCPU); }

TEST(FusedAdamW, HostStateMatchesAdamWOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  host_state_matches_adamw_on(torch::kCUDA);
}

TEST(FusedAdamW, StateMovesToTheHostAndBackMidRun) {
  const torch::Device device =
      torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  auto reference_params = make_params(device);
  auto moved_params = make_params(device);
  torch::optim::AdamW reference(reference_params, options());
  FusedAdamW moved(moved_params, options());
  run_steps(reference, reference_params, 0, 6);
  run_steps(moved, moved_params, 0, 2);
  moved.set_state_on_host(true, kSmallBuckets);
  expect_moments_placed(moved, true, device);
  run_steps(moved, moved_params, 2, 2);
  moved.set_state_on_host(false);
  expect_moments_placed(moved, false, device);
  run_steps(moved, moved_params, 4, 2);
  expect_close(reference_params, moved_params);
}

TEST(FusedAdamW, HostStateCheckpointsLoadAndArePlacedAgain) {
  const torch::Device device =
      torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  const auto file = std::filesystem::temp_directory_path() /
                    ("fused_adamw_host_test_" + std::to_string(::getpid()) + ".pt");
  auto params = make_params(device);
  FusedAdamW host(params, options());
  host.set_state_on_host(true, kSmallBuckets);
  run_steps(host, params, 0, 3);
  torch::save(host, file.string());

  std::vector<torch::Tensor> resumed_params;
  for (const auto& p : params) resumed_params.push_back(p.detach().clone().requires_grad_());
  FusedAdamW resumed(resumed_params, options());
  torch::load(resumed, file.string(), device);
  std::filesystem::remove(file);
  resumed.set_state_on_host(true, kSmallBuckets);
  expect_moments_placed(resumed, true, device);
  run_steps(host, params, 3, 2);
  run_steps(resumed, resumed_params, 3, 2);
  expect_close(params, resumed_params);
}

}  // namespace
}  // namespace kevin::train
