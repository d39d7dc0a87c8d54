// train_scaling.cpp — data-parallel training throughput on 1, 2, 4, ... GPUs: a random Qwen2
// (Qwen2.5-0.5B's shape) replicated once per GPU, GRPO updates (grpo_update with the NCCL
// group) on synthetic samples, a fixed number of samples per GPU (weak scaling). Prints one
// JSON object: tokens/s over all GPUs, per GPU, and the efficiency against one GPU.
// Usage: train_scaling [--gpus "1 2 4"] [--quick]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "bench_shapes.h"
#include "core/json.h"
#include "train/grpo/fused_adamw.h"
#include "train/grpo/grpo_update.h"
#include "train/model/precision.h"
#include "train/parallel/collective.h"

namespace {

using kevin::train::Qwen2Config;
using kevin::train::Qwen2ForCausalLM;

// `count` samples of `prompt` + `completion` random tokens with made-up sampler log-probabilities.
std::vector<kevin::train::Sample> synthetic_samples(int64_t count, int64_t prompt,
                                                    int64_t completion, int64_t vocab) {
  torch::manual_seed(1);
  std::vector<kevin::train::Sample> out;
  for (int64_t i = 0; i < count; ++i) {
    kevin::train::Sample s;
    const auto ids = torch::randint(0, vocab, {prompt + completion}, torch::kInt32);
    const int32_t* p = ids.data_ptr<int32_t>();
    s.prompt.assign(p, p + prompt);
    s.completion.assign(p + prompt, p + prompt + completion);
    s.old_logprobs.assign(static_cast<size_t>(completion),
                          -11.9f);  // about log(1/vocab): ratios near 1
    s.advantage = (i % 2 == 0) ? 1.0 : -1.0;
    out.push_back(std::move(s));
  }
  return out;
}

struct Replica {
  torch::Device device;
  Qwen2ForCausalLM model{nullptr};
  std::unique_ptr<kevin::train::FusedAdamW> adam;
};

// Tokens/s of `steps` optimizer steps on `gpus` GPUs after two warm-up steps.
kevin::Json measure(const Qwen2Config& config, int gpus, int64_t per_gpu, int64_t prompt,
                    int64_t completion, int steps) {
  std::vector<Replica> replicas;
  std::vector<int> ordinals;
  for (int g = 0; g < gpus; ++g) {
    torch::manual_seed(0);
    Replica r{torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(g)),
              Qwen2ForCausalLM(nullptr), nullptr};
    r.model = Qwen2ForCausalLM(config);
    r.model->to(r.device);
    r.adam = std::make_unique<kevin::train::FusedAdamW>(r.model->parameters(),
                                                        torch::optim::AdamWOptions(1e-6));
    replicas.push_back(std::move(r));
    ordinals.push_back(g);
  }
  auto group = kevin::train::make_nccl_collective(ordinals);
  if (!group.is_ok()) return {{"gpus", gpus}, {"error", group.status().message()}};
  const auto samples = synthetic_samples(per_gpu * gpus, prompt, completion, config.vocab_size);
  kevin::train::UpdateConfig update;
  update.optimizer_steps = 1;
  update.micro_batch = 4;
  update.grad_clip = 1.0;
  const auto run_steps = [&](int count) {
    const kevin::Status done = kevin::train::run_ranks(gpus, group->get(), [&](int r) {
      auto& replica = replicas[static_cast<size_t>(r)];
      const kevin::train::DeviceOfThread on_device(replica.device);
      kevin::train::Bf16Autocast autocast(true);
      for (int i = 0; i < count; ++i) {
        auto stats = kevin::train::grpo_update(replica.model, *replica.adam, samples, update,
                                               kevin::train::ReplicaRank{group->get(), r});
        if (!stats.is_ok()) return stats.status();
      }
      torch::cuda::synchronize(replica.device.index());
      return kevin::Status::ok();
    });
    return done.is_ok() ? std::string() : done.message();
  };
  if (auto e = run_steps(2); !e.empty()) return {{"gpus", gpus}, {"error", e}};
  const auto start = std::chrono::steady_clock::now();
  if (auto e = run_steps(steps); !e.empty()) return {{"gpus", gpus}, {"error", e}};
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double tokens =
      static_cast<double>(samples.size()) * static_cast<double>(prompt + completion) * steps;
  return {{"gpus", gpus},
          {"samples_per_step", samples.size()},
          {"seconds", seconds},
          {"tokens_per_s", tokens / seconds},
          {"tokens_per_s_per_gpu", tokens / seconds / gpus}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string counts = "1 2 4";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--gpus") == 0 && i + 1 < argc) {
      counts = argv[++i];
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: train_scaling [--gpus \"1 2 4\"] [--quick]\n");
      return 2;
    }
  }
  const int visible =
      torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  if (visible == 0 || !kevin::train::nccl_available()) {
    std::fprintf(stderr, "train_scaling: needs CUDA devices and a build with NCCL\n");
    return 2;
  }
  const Qwen2Config config = kevin::bench::qwen25_half_b();
  const int64_t per_gpu = quick ? 4 : 8, prompt = quick ? 128 : 1024,
                completion = quick ? 128 : 1024;
  kevin::Json result = {
      {"model", "random Qwen2, Qwen2.5-0.5B shape"},
      {"per_gpu_samples", per_gpu},
      {"sample_tokens", prompt + completion},
      {"update", "grpo_update, bf16 autocast, fp32 FusedAdamW, NCCL gradient sum"},
      {"visible_gpus", visible}};
  kevin::Json runs = kevin::Json::array();
  double single = 0;
  std::istringstream in(counts);
  for (int gpus; in >> gpus;) {
    if (gpus < 1 || gpus > visible) {
      runs.push_back({{"gpus", gpus}, {"skipped", std::to_string(visible) + " GPUs visible"}});
      continue;
    }
    kevin::Json run = measure(config, gpus, per_gpu, prompt, completion, quick ? 2 : 5);
    if (run.contains("tokens_per_s")) {
      if (gpus == 1) single = run["tokens_per_s"].get<double>();
      if (single > 0) run["efficiency"] = run["tokens_per_s"].get<double>() / (single * gpus);
    }
    std::fprintf(stderr, "%s\n", kevin::dump_json(run).c_str());
    runs.push_back(run);
  }
  result["runs"] = runs;
  std::printf("%s\n", kevin::dump_json(result).c_str());
  return 0;
}
