// train_32b.cpp — the trainer at QwQ-32B's shape on one GPU (random weights): writing and
// streaming a sharded bf16 checkpoint, one LoRA GRPO update over long samples (peak GPU
// memory against estimate_memory, tokens/s, MFU), today's sampler; and full fine-tuning at
// Qwen2.5-7B's shape with AdamW's moments in host memory (--model 7 --rank 0 --host-state 1).
// One JSON object per run on stdout; bench/train_32b.sh runs the set and docs/trainer.md
// ("Train Kevin-32B") the figures. Usage: train_32b write DIR [--layers N]
//        train_32b load DIR
//        train_32b update [--from DIR | --layers N] [--model 32|7] [--samples S] [--tokens T]
//                         [--completion C] [--rank R (0: full)] [--host-state 0|1] [--chunk ROWS]
//                         [--warmup 0|1]
//        train_32b generate [--layers N] [--batch B] [--prompt P] [--new T]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "bench_shapes.h"
#include "gpu_bench.h"
#include "core/json.h"
#include "train/grpo/fused_adamw.h"
#include "train/grpo/grpo_update.h"
#include "train/io/model_io.h"
#include "train/model/precision.h"
#include "train/sampling/generate.h"
#include "train/trainer/memory_estimate.h"

namespace {

using kevin::Json;
using namespace kevin::train;
using kevin::bench::Args;
using kevin::bench::kGiB;
using kevin::bench::now_s;
using kevin::bench::peak_gpu_gib;
using kevin::bench::reset_gpu_peak;
constexpr double kPeakBf16Flops = 989.4e12;  // dense bf16 tensor-core peak, H100 SXM and H200

// /proc/self/status's VmHWM (peak resident set) in GiB.
double peak_host_gib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024 / kGiB;
  }
  return -1;
}

Qwen2ForCausalLM random_model(int64_t layers, const Qwen2Config& shape = kevin::bench::qwq_32b(),
                              torch::Dtype dtype = torch::kBFloat16) {
  torch::manual_seed(0);
  Qwen2Config c = shape;
  c.num_hidden_layers = layers;
  return Qwen2ForCausalLM(c, ModelInit{torch::kCUDA, dtype, /*random=*/true});
}

int write(const Args& a) {
  torch::NoGradGuard no_grad;
  const double start = now_s();
  auto model = random_model(a.get("layers", 64));
  const auto status =
      save_qwen2_dir(model->config(), model->named_weights(), a.dir, torch::kBFloat16);
  if (!status.is_ok()) {
    std::fprintf(stderr, "%s\n", status.to_string().c_str());
    return 1;
  }
  std::printf("%s\n", Json{{"mode", "write"},
                           {"parameters", model->config().parameter_count()},
                           {"seconds", now_s() - start}}
                          .dump()
                          .c_str());
  return 0;
}

int load(const Args& a) {
  torch::NoGradGuard no_grad;
  const double start = now_s();
  auto model = load_qwen2_dir(a.dir, torch::kCUDA, torch::kBFloat16);
  if (!model.is_ok()) {
    std::fprintf(stderr, "%s\n", model.status().to_string().c_str());
    return 1;
  }
  torch::cuda::synchronize();
  const double seconds = now_s() - start;
  std::printf("%s\n", Json{{"mode", "load"},
                           {"parameters", (*model)->config().parameter_count()},
                           {"seconds", seconds},
                           {"peak_host_gib", peak_host_gib()},
                           {"gpu_gib", peak_gpu_gib()}}
                          .dump()
                          .c_str());
  return 0;
}

// Model FLOPs of the update (docs/trainer.md, "Train Kevin-32B"): a frozen base costs its
// forward and the input gradients (4 per weight and token), a trained one 6, adapters 6,
// attention PaLM's 12·L·d·T, the LM head only at scored tokens; checkpoint recomputation is
// not counted.
double update_flops(const Qwen2Config& c, bool full, int64_t lora_parameters, int64_t samples,
                    int64_t tokens, int64_t completion) {
  const double head = static_cast<double>(c.vocab_size * c.hidden_size);
  const double body = static_cast<double>(c.parameter_count()) - 2 * head;  // less embeddings
  const double per_token = (full ? 6 : 4) * body + 6 * static_cast<double>(lora_parameters) +
                           12.0 * static_cast<double>(c.num_hidden_layers * c.hidden_size * tokens);
  return static_cast<double>(samples) *
         (per_token * static_cast<double>(tokens) + 4 * head * static_cast<double>(completion));
}

int update(const Args& a) {
  const int64_t samples = a.get("samples", 16), tokens = a.get("tokens", 24576),
                completion = a.get("completion", 16384), chunk = a.get("chunk", 2048);
  LoraConfig lora;
  lora.rank = a.get("rank", 32);
  lora.alpha = 2.0 * static_cast<double>(lora.rank);
  const bool full = lora.rank == 0;  // fp32 masters under bf16 autocast, as the trainer keeps
  const Qwen2Config shape =
      a.get("model", 32) == 7 ? kevin::bench::qwen25_7b() : kevin::bench::qwq_32b();
  Qwen2ForCausalLM model(nullptr);
  if (!a.dir.empty()) {
    auto loaded = load_qwen2_dir(a.dir, torch::kCUDA, torch::kBFloat16);
    if (!loaded.is_ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().to_string().c_str());
      return 1;
    }
    model = *loaded;
  } else {
    model = random_model(a.get("layers", shape.num_hidden_layers), shape,
                         full ? torch::kFloat32 : torch::kBFloat16);
  }
  if (!full && !model->add_lora(lora).is_ok()) return 1;
  model->set_activation_checkpointing(true);
  const auto trainable = model->trainable_parameters();
  int64_t lora_parameters = 0;
  for (const auto& p : trainable) lora_parameters += p.numel();
  if (full) lora_parameters = 0;
  FusedAdamW adam(trainable, torch::optim::AdamWOptions(2e-6).weight_decay(0.0));
  const bool host_state = a.get("host-state", 0) != 0;
  adam.set_state_on_host(host_state);
  const Qwen2Config& c = model->config();
  std::vector<Sample> batch;
  for (int64_t s = 0; s < samples; ++s) {
    const auto ids = torch::randint(0, c.vocab_size, {tokens}, torch::kInt);
    const auto* p = ids.data_ptr<int32_t>();
    Sample sample;
    sample.prompt.assign(p, p + (tokens - completion));
    sample.completion.assign(p + (tokens - completion), p + tokens);
    sample.old_logprobs.assign(static_cast<size_t>(completion), -11.9f);  // about uniform
    sample.advantage = s % 2 == 0 ? 1.0 : -1.0;
    batch.push_back(std::move(sample));
  }
  UpdateConfig config;
  config.optimizer_steps = 1;
  config.micro_batch_tokens = tokens;
  config.logit_chunk_rows = chunk;
  config.temperature = 0.9;
  config.max_tokens = completion;
  Workload work;
  work.base_bytes = full ? 4 : 2;
  work.optimizer_on_host = host_state;
  work.checkpointing = true;
  work.micro_batch_tokens = tokens;
  work.scored_tokens = completion;
  work.logit_chunk_rows = chunk;
  const MemoryEstimate estimate = estimate_memory(c, lora, work);
  torch::cuda::synchronize();
  const double state_gib =
      static_cast<double>(
          c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].current) /
      kGiB;
  const auto run_update = [&] {
    Bf16Autocast autocast(true);
    return grpo_update(model, adam, batch, config);
  };
  // --warmup 1: one update first, so the measured one excludes one-off costs (the optimizer's
  // state allocation: registering 57 GiB of host memory for a 7B model's moments).
  double warmup_seconds = 0;
  if (a.get("warmup", 0) != 0) {
    const double warmup_start = now_s();
    if (!run_update().is_ok()) return 1;
    torch::cuda::synchronize();
    warmup_seconds = now_s() - warmup_start;
  }
  reset_gpu_peak();
  const double start = now_s();
  kevin::Result<std::vector<UpdateStats>> stats = run_update();
  torch::cuda::synchronize();
  const double seconds = now_s() - start;
  if (!stats.is_ok()) {
    std::fprintf(stderr, "%s\n", stats.status().to_string().c_str());
    return 1;
  }
  const double flops = update_flops(c, full, lora_parameters, samples, tokens, completion);
  const double peak = peak_gpu_gib();
  // The optimizer step alone (the moments' round trip to host memory when they live there).
  const double step_start = now_s();
  adam.step();
  torch::cuda::synchronize();
  const double step_seconds = now_s() - step_start;
  std::printf("%s\n", Json{{"mode", "update"},
                           {"layers", c.num_hidden_layers},
                           {"samples", samples},
                           {"tokens_per_sample", tokens},
                           {"warmup_update_seconds", warmup_seconds},
                           {"completion_tokens", completion},
                           {"model_parameters", c.parameter_count()},
                           {"lora_rank", lora.rank},
                           {"optimizer_state_on_host", host_state},
                           {"optimizer_step_seconds", step_seconds},
                           {"peak_host_gib", peak_host_gib()},
                           {"logit_chunk_rows", chunk},
                           {"seconds", seconds},
                           {"tokens_per_s", static_cast<double>(samples * tokens) / seconds},
                           {"mfu", flops / seconds / kPeakBf16Flops},
                           {"peak_gpu_gib", peak},
                           {"state_gib_measured", state_gib},
                           {"estimate_gib",
                            {{"weights", estimate.weights_gib},
                             {"gradients", estimate.gradients_gib},
                             {"optimizer", estimate.optimizer_gib},
                             {"host_optimizer", estimate.host_optimizer_gib},
                             {"activations", estimate.activations_gib},
                             {"logits", estimate.logits_gib},
                             {"update_total", estimate.update_gib()}}},
                           {"peak_over_estimate", peak / estimate.update_gib()},
                           {"loss", stats->front().loss},
                           {"grad_norm", stats->front().grad_norm}}
                          .dump()
                          .c_str());
  return 0;
}

int generate_run(const Args& a) {
  const int64_t batch = a.get("batch", 16), prompt = a.get("prompt", 1024),
                fresh = a.get("new", 512);
  torch::NoGradGuard no_grad;
  auto model = random_model(a.get("layers", 64));
  model->eval();
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t b = 0; b < batch; ++b) {
    const auto ids = torch::randint(0, model->config().vocab_size, {prompt}, torch::kInt);
    prompts.emplace_back(ids.data_ptr<int32_t>(), ids.data_ptr<int32_t>() + prompt);
  }
  SamplingParams params;
  params.temperature = 0.9;
  params.max_new_tokens = fresh;
  params.stop_ids = {};  // every row runs to the limit
  torch::cuda::synchronize();
  reset_gpu_peak();
  const double start = now_s();
  const auto out = generate(model, prompts, params);
  torch::cuda::synchronize();
  const double seconds = now_s() - start;
  int64_t produced = 0;
  for (const auto& o : out) produced += static_cast<int64_t>(o.tokens.size());
  Workload work;
  work.base_bytes = 2;
  work.generation_sequences = batch;
  work.generation_tokens = prompt + fresh;
  const MemoryEstimate estimate = estimate_memory(model->config(), LoraConfig{}, work);
  const double frozen_weights_and_cache = estimate.weights_gib + estimate.kv_cache_gib;
  std::printf("%s\n", Json{{"mode", "generate"},
                           {"layers", model->config().num_hidden_layers},
                           {"batch", batch},
                           {"prompt_tokens", prompt},
                           {"new_tokens", fresh},
                           {"seconds", seconds},
                           {"tokens_per_s", static_cast<double>(produced) / seconds},
                           {"peak_gpu_gib", peak_gpu_gib()},
                           {"estimate_gib", frozen_weights_and_cache}}
                          .dump()
                          .c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "train_32b: needs a CUDA device\n");
    return 2;
  }
  const Args a = kevin::bench::parse_args(argc, argv);
  if (a.mode == "write" && !a.dir.empty()) return write(a);
  if (a.mode == "load" && !a.dir.empty()) return load(a);
  if (a.mode == "update") return update(a);
  if (a.mode == "generate") return generate_run(a);
  std::fprintf(stderr,
               "usage: train_32b write DIR [--layers N] | load DIR | update [--from DIR | --layers "
               "N] [--model 32|7] [--samples S] [--tokens T] [--completion C] [--rank R] "
               "[--host-state 0|1] [--chunk ROWS] [--warmup 0|1] | "
               "generate [--layers N] [--batch B] [--prompt P] [--new T]\n");
  return 2;
}
