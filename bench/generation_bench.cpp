// generation_bench.cpp — the generation engine (train/sampling/paged_generator.h) on the GPU,
// random weights, one JSON line per run (docs/benchmarks.md, "Generation"):
// Every mode takes --graphs 1: decode steps replayed as CUDA graphs.
//   generation_bench small   [--batch 32] [--prompt 128] [--new 256] [TRACE_DIR]
//       Qwen2.5-0.5B's shape: today's sampler (generate.h) and the engine on the same prompts,
//       median of 3 runs each after a warm-up; with TRACE_DIR, a profile of one engine run.
//   generation_bench decode  [--layers 64] [--batch 16] [--context 4096] [--new 128]
//                            [--memory-percent 80]
//       QwQ-32B's shape: decode time per step at a context, against the memory-bandwidth bound
//       (weights + KV bytes per step ÷ the HBM bandwidth a device copy reaches in the same run);
//       the KV pool takes that percentage of the GPU memory left free by the weights.
//   generation_bench rollout [--trajectories 16] [--turns 4] [--prompt 2048] [--new 512]
//                            [--feedback 256] [--layers 24]
//       A GRPO rollout's shape at Qwen2.5-0.5B's: every trajectory of a task starts from one
//       prompt; turn t's prompt is turn t−1's plus its answer and feedback.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_shapes.h"
#include "gpu_bench.h"
#include "profile.h"
#include "core/json.h"
#include "train/sampling/generate.h"
#include "train/sampling/paged_generator.h"

namespace {

using kevin::Json;
using kevin::train::PagedGenerator;
using kevin::train::PagedGeneratorOptions;
using kevin::train::Qwen2Config;
using kevin::train::Qwen2ForCausalLM;
using kevin::train::Sampled;
using kevin::train::SamplingParams;
using Prompts = std::vector<std::vector<int32_t>>;
using kevin::bench::Args;
using kevin::bench::now_s;
using kevin::bench::peak_gpu_gib;

// Seconds `fn` takes, the GPU's work included.
template <typename Fn>
double timed(Fn&& fn) {
  torch::cuda::synchronize();
  const double start = now_s();
  fn();
  torch::cuda::synchronize();
  return now_s() - start;
}

Qwen2ForCausalLM random_model(const Qwen2Config& config) {
  torch::manual_seed(0);
  kevin::train::ModelInit init;
  init.device = torch::kCUDA;
  init.dtype = torch::kBFloat16;
  Qwen2ForCausalLM model(config, init);
  model->eval();
  return model;
}

Prompts random_prompts(int64_t count, int64_t length, int64_t vocab) {
  Prompts prompts;
  for (int64_t i = 0; i < count; ++i) {
    const auto ids = torch::randint(0, vocab, {length}, torch::kInt);
    prompts.emplace_back(ids.data_ptr<int32_t>(), ids.data_ptr<int32_t>() + length);
  }
  return prompts;
}

int64_t produced(const std::vector<Sampled>& out) {
  int64_t n = 0;
  for (const auto& s : out) n += static_cast<int64_t>(s.tokens.size());
  return n;
}

std::unique_ptr<PagedGenerator> make_engine(const Qwen2ForCausalLM& model, int64_t max_batch,
                                            double memory_fraction, bool graphs) {
  PagedGeneratorOptions o;
  o.max_batch = max_batch;
  o.memory_fraction = memory_fraction;
  o.cuda_graphs = graphs;
  auto made = PagedGenerator::create(model, o);
  if (!made.is_ok()) {
    std::fprintf(stderr, "%s\n", made.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(made).value();
}

std::vector<Sampled> run_engine(PagedGenerator& engine, const Prompts& prompts,
                                const SamplingParams& params) {
  auto out = engine.generate(prompts, params);
  if (!out.is_ok()) {
    std::fprintf(stderr, "%s\n", out.status().to_string().c_str());
    std::exit(1);
  }
  return std::move(out).value();
}

Json engine_stats(const PagedGenerator& engine) {
  const auto& s = engine.stats();
  return {{"prompt_tokens", s.prompt_tokens},     {"prefill_tokens", s.prefill_tokens},
          {"reused_tokens", s.reused_tokens},     {"generated_tokens", s.generated_tokens},
          {"decode_steps", s.decode_steps},       {"preemptions", s.preemptions},
          {"peak_used_pages", s.peak_used_pages}, {"pool_tokens", engine.pool_tokens()}};
}

// Median tokens/s of three runs of `generate_once` (after one warm-up run).
template <typename Fn>
std::pair<double, Json> median_rate(Fn&& generate_once) {
  generate_once();
  std::vector<double> rates;
  for (int run = 0; run < 3; ++run) {
    int64_t tokens = 0;
    const double seconds = timed([&] { tokens = generate_once(); });
    rates.push_back(static_cast<double>(tokens) / seconds);
  }
  Json runs = rates;
  std::sort(rates.begin(), rates.end());
  return {rates[1], runs};
}

int small_run(const Args& a) {
  const int64_t batch = a.get("batch", 32), prompt = a.get("prompt", 128),
                fresh = a.get("new", 256);
  const auto model = random_model(kevin::bench::qwen25_half_b());
  const Prompts prompts = random_prompts(batch, prompt, model->config().vocab_size);
  SamplingParams params;
  params.temperature = 1.0;
  params.max_new_tokens = fresh;  // no stop ids: every row runs to the limit
  auto model_handle = model;
  const auto [today, today_runs] =
      median_rate([&] { return produced(kevin::train::generate(model_handle, prompts, params)); });
  auto engine = make_engine(model, batch, 0.5, a.get("graphs", 0) != 0);
  const auto [paged, paged_runs] = median_rate([&] {
    engine->clear_prefix_cache();  // every run prefills, as today's sampler does
    return produced(run_engine(*engine, prompts, params));
  });
  if (!a.dir.empty()) {  // a trace of one engine run, for where the step's time goes
    params.max_new_tokens = 32;
    engine->clear_prefix_cache();
    kevin::bench::profile([&] { run_engine(*engine, prompts, params); },
                          a.dir + "/engine_small.json");
  }
  std::printf("%s\n", Json{{"mode", "small"},
                           {"cuda_graphs", a.get("graphs", 0) != 0},
                           {"batch", batch},
                           {"prompt_tokens", prompt},
                           {"new_tokens", fresh},
                           {"today_tokens_per_s", today},
                           {"today_runs", today_runs},
                           {"engine_tokens_per_s", paged},
                           {"engine_runs", paged_runs},
                           {"speedup", paged / today},
                           {"engine", engine_stats(*engine)}}
                          .dump()
                          .c_str());
  return 0;
}

// Bytes per second of a device-to-device copy of 2 GiB (read + write counted).
double copy_bandwidth() {
  auto from =
      torch::empty({int64_t{1} << 30}, torch::TensorOptions(torch::kCUDA).dtype(torch::kBFloat16));
  auto to = torch::empty_like(from);
  to.copy_(from);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) best = std::min(best, timed([&] { to.copy_(from); }));
  return 2.0 * static_cast<double>(from.nbytes()) / best;
}

int decode_run(const Args& a) {
  const int64_t batch = a.get("batch", 16), context = a.get("context", 4096),
                fresh = a.get("new", 128);
  const double bandwidth = copy_bandwidth();
  const auto model = random_model(kevin::bench::qwq_32b(a.get("layers", 64)));
  const Prompts prompts = random_prompts(batch, context, model->config().vocab_size);
  const double memory_fraction = static_cast<double>(a.get("memory-percent", 80)) / 100.0;
  auto engine = make_engine(model, batch, memory_fraction, a.get("graphs", 0) != 0);
  SamplingParams params;
  params.temperature = 0.9;
  // The decode time is the difference of two runs that prefill alike: one new token, and
  // 1 + fresh.
  params.max_new_tokens = 1;
  run_engine(*engine, {prompts.front()}, params);  // warm-up
  engine->clear_prefix_cache();
  const double prefill_s = timed([&] { run_engine(*engine, prompts, params); });
  engine->clear_prefix_cache();
  params.max_new_tokens = 1 + fresh;
  const double both_s = timed([&] { run_engine(*engine, prompts, params); });
  const double step_s = (both_s - prefill_s) / static_cast<double>(fresh);
  const Qwen2Config& c = model->config();
  double weight_bytes = 0;
  for (const auto& p : model->parameters()) weight_bytes += static_cast<double>(p.nbytes());
  // The embedding table is read a row per token, not whole.
  weight_bytes -= static_cast<double>(model->model->embed_tokens->weight.nbytes());
  const double kv_token_bytes =
      2.0 * static_cast<double>(c.num_hidden_layers * c.num_key_value_heads * c.head_dim() * 2);
  const double mean_context = static_cast<double>(context) + static_cast<double>(fresh) / 2;
  const double step_bytes =
      weight_bytes + static_cast<double>(batch) * mean_context * kv_token_bytes;
  const double bound_s = step_bytes / bandwidth;
  std::printf("%s\n", Json{{"mode", "decode"},
                           {"cuda_graphs", a.get("graphs", 0) != 0},
                           {"layers", c.num_hidden_layers},
                           {"batch", batch},
                           {"context", context},
                           {"new_tokens", fresh},
                           {"prefill_seconds", prefill_s},
                           {"step_ms", step_s * 1e3},
                           {"decode_tokens_per_s", static_cast<double>(batch) / step_s},
                           {"copy_bandwidth_gb_s", bandwidth / 1e9},
                           {"bytes_per_step_gb", step_bytes / 1e9},
                           {"bound_step_ms", bound_s * 1e3},
                           {"fraction_of_bound", bound_s / step_s},
                           {"peak_gpu_gib", peak_gpu_gib()},
                           {"engine", engine_stats(*engine)}}
                          .dump()
                          .c_str());
  return 0;
}

int rollout_run(const Args& a) {
  const int64_t trajectories = a.get("trajectories", 16), turns = a.get("turns", 4),
                prompt = a.get("prompt", 2048), fresh = a.get("new", 512),
                feedback = a.get("feedback", 256);
  Qwen2Config shape = kevin::bench::qwen25_half_b();
  shape.num_hidden_layers = a.get("layers", shape.num_hidden_layers);
  const auto model = random_model(shape);
  auto engine = make_engine(model, trajectories, 0.5, a.get("graphs", 0) != 0);
  SamplingParams params;
  params.temperature = 0.9;
  params.max_new_tokens = fresh;
  Prompts prompts(static_cast<size_t>(trajectories),
                  random_prompts(1, prompt, shape.vocab_size).front());
  run_engine(*engine, {random_prompts(1, 64, shape.vocab_size).front()}, params);  // warm-up
  const auto before = engine->stats();
  int64_t tokens = 0;
  const double seconds = timed([&] {
    for (int64_t turn = 0; turn < turns; ++turn) {
      const auto out = run_engine(*engine, prompts, params);
      tokens += produced(out);
      const Prompts feedback_tokens = random_prompts(trajectories, feedback, shape.vocab_size);
      for (size_t i = 0; i < prompts.size(); ++i) {
        prompts[i].insert(prompts[i].end(), out[i].tokens.begin(), out[i].tokens.end());
        prompts[i].insert(prompts[i].end(), feedback_tokens[i].begin(), feedback_tokens[i].end());
      }
    }
  });
  const auto& after = engine->stats();
  const int64_t prompt_tokens = after.prompt_tokens - before.prompt_tokens;
  const int64_t prefilled = after.prefill_tokens - before.prefill_tokens;
  std::printf("%s\n", Json{{"mode", "rollout"},
                           {"cuda_graphs", a.get("graphs", 0) != 0},
                           {"layers", shape.num_hidden_layers},
                           {"trajectories", trajectories},
                           {"turns", turns},
                           {"seconds", seconds},
                           {"generated_tokens", tokens},
                           {"tokens_per_s", static_cast<double>(tokens) / seconds},
                           {"prompt_tokens", prompt_tokens},
                           {"prefilled_tokens", prefilled},
                           {"prefill_saved", 1.0 - static_cast<double>(prefilled) /
                                                       static_cast<double>(prompt_tokens)},
                           {"peak_gpu_gib", peak_gpu_gib()},
                           {"engine", engine_stats(*engine)}}
                          .dump()
                          .c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::fprintf(stderr, "generation_bench: needs a CUDA device\n");
    return 2;
  }
  const Args a = kevin::bench::parse_args(argc, argv);
  torch::NoGradGuard no_grad;
  if (a.mode == "small") return small_run(a);
  if (a.mode == "decode") return decode_run(a);
  if (a.mode == "rollout") return rollout_run(a);
  std::fprintf(stderr,
               "usage: generation_bench small|decode|rollout [--batch N] [--prompt N] [--new N] "
               "[--layers N] [--context N] [--trajectories N] [--turns N] [--feedback N] "
               "[--graphs 0|1]\n");
  return 2;
}
