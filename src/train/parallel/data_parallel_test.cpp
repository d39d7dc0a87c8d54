// data_parallel_test.cpp — data-parallel grpo_update: replicas that each run their shard and
// sum gradients over a group make the single-replica update on the whole batch (within
// floating-point tolerance), stay bit-identical to each other, and report the whole batch's
// statistics. On the CPU through the host collective; on GPUs through NCCL when built.
#include <gtest/gtest.h>

#include "train/grpo/grpo_update.h"
#include "train/parallel/collective.h"
#include "train/sampling/generate.h"
#include "train/test_configs.h"

namespace kevin::train {
namespace {

Qwen2ForCausalLM seeded_model(torch::Device device) {
  torch::manual_seed(21);
  Qwen2ForCausalLM model(tiny_qwen2(16, 16, 32));
  model->to(device);
  return model;
}

// Eight samples of unequal lengths from the seeded model.
std::vector<Sample> sampled_batch() {
  auto model = seeded_model(torch::kCPU);
  torch::manual_seed(5);
  SamplingParams p;
  p.temperature = 1.0;
  p.max_new_tokens = 6;
  p.stop_ids = {3};
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 2}, {4, 5, 6, 7}, {8}, {9, 10, 11}, {12, 13}, {14}, {2, 4, 6, 8, 10}, {7, 7}};
  const auto out = generate(model, prompts, p);
  std::vector<Sample> batch;
  for (size_t i = 0; i < prompts.size(); ++i) {
    batch.push_back({prompts[i], out[i].tokens, out[i].logprobs, static_cast<double>(i % 4) - 1.5});
  }
  return batch;
}

UpdateConfig update_config() {
  UpdateConfig c;
  c.micro_batch = 2;
  c.optimizer_steps = 2;  // the second step starts from the first's weights: replicas must agree
  c.grad_clip = 0.05;     // clipping by the whole batch's norm, the paper's setting
  return c;
}

struct Trained {
  std::vector<std::vector<torch::Tensor>> params;  // per replica, on the CPU
  std::vector<std::vector<UpdateStats>> stats;     // per replica
};

// Trains one model per device on `batch`: alone when `group` is null, else as ranks of `group`.
Trained train(const std::vector<Sample>& batch, const std::vector<torch::Device>& devices,
              Collective* group) {
  std::vector<Qwen2ForCausalLM> models;
  std::vector<std::unique_ptr<torch::optim::SGD>> optimizers;
  for (const auto& device : devices) {
    models.push_back(seeded_model(device));
    optimizers.push_back(std::make_unique<torch::optim::SGD>(models.back()->parameters(),
                                                             torch::optim::SGDOptions(0.5)));
  }
  Trained out;
  out.params.resize(devices.size());
  out.stats.resize(devices.size());
  const Status done = run_ranks(static_cast<int>(devices.size()), group, [&](int rank) {
    const auto r = static_cast<size_t>(rank);
    auto stats =
        grpo_update(models[r], *optimizers[r], batch, update_config(), ReplicaRank{group, rank});
    if (!stats.is_ok()) return stats.status();
    out.stats[r] = *stats;
    for (const auto& p : models[r]->parameters()) out.params[r].push_back(p.detach().cpu().clone());
    return Status::ok();
  });
  EXPECT_TRUE(done.is_ok()) << done.message();
  return out;
}

void expect_same_update(const Trained& single, const Trained& parallel, const char* what) {
  for (size_t r = 0; r < parallel.params.size(); ++r) {
    ASSERT_EQ(parallel.params[r].size(), single.params[0].size());
    for (size_t i = 0; i < single.params[0].size(); ++i) {
      EXPECT_TRUE(torch::allclose(parallel.params[r][i], single.params[0][i], 1e-4, 1e-6))
          << what << ": replica " << r << ", parameter " << i << ", max diff "
          << (parallel.params[r][i] - single.params[0][i]).abs().max().item<double>();
      // Every replica made the same step from the same sums: no drift between them.
      EXPECT_TRUE(torch::equal(parallel.params[r][i], parallel.params[0][i]))
          << what << ": replica " << r << " drifted";
    }
    for (size_t k = 0; k < single.stats[0].size(); ++k) {
      const UpdateStats &a = single.stats[0][k], &b = parallel.stats[r][k];
      EXPECT_NEAR(b.loss, a.loss, 1e-5 * std::abs(a.loss) + 1e-7) << what;
      EXPECT_NEAR(b.grad_norm, a.grad_norm, 1e-4 * a.grad_norm) << what;
      EXPECT_NEAR(b.entropy, a.entropy, 1e-5 * a.entropy) << what;
      EXPECT_NEAR(b.clipped_fraction, a.clipped_fraction, 1e-9) << what;
      EXPECT_EQ(b.tokens, a.tokens) << what;
    }
  }
}

TEST(DataParallelTest, ShardsCoverTheBatchOnceWithBalancedTokens) {
  const auto batch = sampled_batch();
  EXPECT_EQ(shard_of(batch, 0, 1).size(), batch.size());
  for (int world : {2, 3, 8, 11}) {
    std::vector<int> seen(batch.size(), 0);
    size_t heaviest = 0, lightest = SIZE_MAX, longest = 0;
    for (const auto& s : batch) longest = std::max(longest, s.prompt.size() + s.completion.size());
    for (int rank = 0; rank < world; ++rank) {
      size_t tokens = 0;
      for (size_t i : shard_of(batch, rank, world)) {
        ++seen[i];
        tokens += batch[i].prompt.size() + batch[i].completion.size();
      }
      heaviest = std::max(heaviest, tokens);
      lightest = std::min(lightest, tokens);
    }
    for (int n : seen) EXPECT_EQ(n, 1) << "world " << world;
    EXPECT_LE(heaviest - lightest, longest) << "world " << world;  // greedy balance bound
  }
}

TEST(DataParallelTest, ReplicasOnTheCpuMakeTheSingleReplicaUpdate) {
  const auto batch = sampled_batch();
  const Trained single = train(batch, {torch::kCPU}, nullptr);
  for (int world : {2, 3, 8, 11}) {  // 11 > 8 samples: some replicas have nothing to run
    auto group = make_host_collective(world);
    const Trained parallel = train(
        batch, std::vector<torch::Device>(static_cast<size_t>(world), torch::kCPU), group.get());
    expect_same_update(single, parallel, ("world " + std::to_string(world)).c_str());
  }
}

TEST(DataParallelTest, GpuReplicasMakeTheSingleGpuUpdate) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto batch = sampled_batch();
  const torch::Device gpu0(torch::kCUDA, 0);
  const Trained single = train(batch, {gpu0}, nullptr);
  auto host = make_host_collective(2);  // two replicas sharing GPU 0 through host memory
  expect_same_update(single, train(batch, {gpu0, gpu0}, host.get()),
                     "host collective, GPU 0 twice");
  if (!nccl_available()) GTEST_SKIP() << "built without NCCL";
  const int gpus = static_cast<int>(torch::cuda::device_count());
  std::vector<int> ordinals;
  std::vector<torch::Device> devices;
  for (int d = 0; d < std::min(gpus, 4); ++d) {
    ordinals.push_back(d);
    devices.emplace_back(torch::kCUDA, static_cast<c10::DeviceIndex>(d));
  }
  auto nccl = make_nccl_collective(ordinals);
  ASSERT_TRUE(nccl.is_ok()) << nccl.status().message();
  expect_same_update(single, train(batch, devices, nccl->get()),
                     ("NCCL over " + std::to_string(devices.size()) + " GPUs").c_str());
}

}  // namespace
}  // namespace kevin::train
