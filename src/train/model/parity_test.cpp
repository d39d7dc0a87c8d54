// parity_test.cpp — kevin's Qwen2 against HF transformers on a random tiny model
// (tests/fixtures/parity, written by dev/train/make_parity_fixture.py on the GPU machine):
// fp32 logits of a left-padded batch, and one GRPO step's loss and gradient norms against a
// plain PyTorch reference of the same loss. Runs on the CPU, and on CUDA when present.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/file.h"
#include "core/json.h"
#include "train/grpo/grpo_update.h"
#include "train/io/model_io.h"
#include "train/io/safetensors.h"

namespace kevin::train {
namespace {
namespace fs = std::filesystem;

// KEVIN_PARITY_FIXTURE overrides the committed fixture (the GPU session checks a fresh one).
fs::path fixture_dir() {
  if (const char* dir = std::getenv("KEVIN_PARITY_FIXTURE")) return dir;
  return fs::path(KEVIN_SOURCE_DIR) / "tests" / "fixtures" / "parity";
}

std::vector<torch::Device> devices() {
  std::vector<torch::Device> out{torch::kCPU};
  if (torch::cuda::is_available()) out.emplace_back(torch::kCUDA, 0);
  return out;
}

class Parity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fixture_dir() / "grpo_step.json")) {
      GTEST_SKIP() << "no parity fixture at " << fixture_dir()
                   << " (make it with dev/train/make_parity_fixture.py)";
    }
  }
  Qwen2ForCausalLM model_on(const torch::Device& device) {
    auto model = load_qwen2_dir(fixture_dir() / "model");
    EXPECT_TRUE(model.is_ok()) << model.status().to_string();
    (*model)->to(device);
    return *model;
  }
};

TEST_F(Parity, LogitsMatchTransformers) {
  auto expected = load_safetensors_dir(fixture_dir());
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  const torch::Tensor ids = expected->at("input_ids"), mask = expected->at("attention_mask");
  const torch::Tensor want = expected->at("logits");
  for (const torch::Device& device : devices()) {
    Qwen2ForCausalLM model = model_on(device);
    torch::NoGradGuard no_grad;
    const torch::Tensor got = model->forward(ids.to(device), mask.to(device)).cpu();
    ASSERT_EQ(got.sizes(), want.sizes());
    // Padded positions are garbage in both; compare the real tokens.
    const torch::Tensor real = mask.to(torch::kBool).unsqueeze(-1).expand_as(want);
    const double diff = (got - want).abs().masked_select(real).max().item<double>();
    EXPECT_LE(diff, 1e-4) << device;
    std::printf("parity %s: max |logit diff| = %.3g over %lld logits\n", device.str().c_str(), diff,
                static_cast<long long>(real.sum().item<int64_t>()));
  }
}

TEST_F(Parity, GrpoStepMatchesTheReferenceLoss) {
  auto text = read_file(fixture_dir() / "grpo_step.json");
  ASSERT_TRUE(text.is_ok());
  auto step = parse_json(*text);
  ASSERT_TRUE(step.is_ok());
  std::vector<Sample> samples;
  for (const Json& s : (*step)["samples"]) {
    samples.push_back({s["prompt"].get<std::vector<int32_t>>(),
                       s["completion"].get<std::vector<int32_t>>(),
                       s["old_logprobs"].get<std::vector<float>>(), s["advantage"].get<double>()});
  }
  UpdateConfig config;
  config.optimizer_steps = 1;
  config.micro_batch = 3;  // uneven micro-batches: accumulation must still be exact
  config.grad_clip = 1e9;  // report the raw norm, change nothing
  config.max_tokens = (*step)["max_tokens"].get<int64_t>();
  config.grpo.clip_low = (*step)["clip_low"].get<double>();
  config.grpo.clip_high = (*step)["clip_high"].get<double>();
  const double want_loss = (*step)["loss"].get<double>(),
               want_norm = (*step)["grad_norm"].get<double>();
  for (const torch::Device& device : devices()) {
    Qwen2ForCausalLM model = model_on(device);
    torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.0));
    auto stats = grpo_update(model, sgd, samples, config);
    ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
    EXPECT_NEAR((*stats)[0].loss, want_loss, 1e-4 * std::abs(want_loss)) << device;
    EXPECT_NEAR((*stats)[0].grad_norm, want_norm, 1e-4 * want_norm) << device;
    for (const auto& [name, param] : model->named_weights()) {
      const double want = (*step)["param_grad_norms"].at(name).get<double>();
      EXPECT_NEAR(param.grad().norm().item<double>(), want, 1e-4 * want + 1e-9)
          << name << " on " << device;
    }
    std::printf("parity %s: loss %.8g (reference %.8g), grad norm %.8g (reference %.8g)\n",
                device.str().c_str(), (*stats)[0].loss, want_loss, (*stats)[0].grad_norm,
                want_norm);
  }
}

}  // namespace
}  // namespace kevin::train
