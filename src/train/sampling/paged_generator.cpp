// paged_generator.cpp — admission, prefill, chunked decode, preemption and the prefix cache.
#include "train/sampling/paged_generator.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "train/model/paged_attention.h"

#if KEVIN_TRAIN_CUDA_KERNELS
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace kevin::train {

struct PagedGenerator::Sequence {
  std::vector<int32_t> tokens;  // the prompt, then every sampled token
  size_t prompt_size = 0;
  PagedSequence kv;  // keys and values of tokens[0, kv.length)
  Sampled* out = nullptr;
  bool sampled() const { return tokens.size() > prompt_size; }
};

#if KEVIN_TRAIN_CUDA_KERNELS
// A captured decode step over `rows` sequences (padded rows read and write the scratch page)
// and the static tensors it reads and writes: copied into before each replay, read after.
struct PagedGenerator::DecodeGraph {
  int64_t rows = 0, width = 0;  // sequences, and block-table pages per sequence
  double temperature = 0, top_p = 1;
  torch::Tensor tokens, positions, slots, table, lengths;  // inputs
  torch::Tensor next, logprobs;                            // outputs
  at::cuda::CUDAGraph graph;
};
#else
struct PagedGenerator::DecodeGraph {};
#endif

namespace {

constexpr int64_t kCpuPoolTokens = 65536;
constexpr int64_t kCpuPoolBytes = int64_t{1} << 30;

// Prefill of `count` tokens of one sequence after the `start` it already stores: their keys and
// values go to their slots, then they attend causally to everything stored. The first chunk of
// a prompt takes the mask-free causal kernels; a later one, one [T, start + T] mask per call.
// With start 0 the batch may hold several right-padded prompts (their pads' slots: scratch).
class PrefillAttention final : public LayerAttention {
 public:
  PrefillAttention(KVPool& pool, torch::Tensor new_slots, torch::Tensor all_slots, int64_t start)
      : pool_(pool),
        new_slots_(std::move(new_slots)),
        all_slots_(std::move(all_slots)),
        start_(start) {}

  torch::Tensor attend(size_t layer, const torch::Tensor& q, const torch::Tensor& k,
                       const torch::Tensor& v) override {
    const auto& k_pool = pool_.keys(layer);
    const auto& v_pool = pool_.values(layer);
    // [B, KV, T, D] → [B·T, KV, D], the pool's layout.
    const auto rows = [](const torch::Tensor& x) {
      return x.transpose(1, 2).reshape({-1, x.size(1), x.size(3)});
    };
    k_pool.index_copy_(0, new_slots_, rows(k).to(k_pool.scalar_type()));
    v_pool.index_copy_(0, new_slots_, rows(v).to(v_pool.scalar_type()));
    if (start_ == 0) return grouped_attention(q, k, v, {});
    const auto stored = [&](const torch::Tensor& pool) {
      return pool.index_select(0, all_slots_).transpose(0, 1).unsqueeze(0).to(q.scalar_type());
    };
    if (!mask_.defined()) mask_ = lower_right_causal(q);
    return grouped_attention(q, stored(k_pool), stored(v_pool), mask_);
  }

 private:
  // Additive [1, 1, T, S] mask: query i (position start + i) sees keys 0 .. start + i.
  torch::Tensor lower_right_causal(const torch::Tensor& q) const {
    const int64_t t = q.size(2), s = start_ + t;
    const auto longs = torch::TensorOptions(q.device()).dtype(torch::kLong);
    const auto future =
        torch::arange(s, longs).view({1, s}) > (torch::arange(t, longs) + start_).view({t, 1});
    return torch::zeros({1, 1, t, s}, q.options())
        .masked_fill(future.view({1, 1, t, s}), -INFINITY);
  }

  KVPool& pool_;
  torch::Tensor new_slots_, all_slots_;
  int64_t start_;
  torch::Tensor mask_;
};

// Bytes of free memory on `device` (CUDA only).
Result<int64_t> free_device_bytes(const torch::Device& device) {
#if KEVIN_TRAIN_CUDA_KERNELS
  const c10::cuda::CUDAGuard guard(device);
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    return unavailable("cannot read the GPU's free memory");
  }
  return static_cast<int64_t>(free_bytes);
#else
  (void)device;
  return invalid_argument("this build cannot read the GPU's free memory");
#endif
}

// Pool pages for `options` on `device`: pool_tokens, or a share of the free memory.
Result<int64_t> pool_pages(const PagedGeneratorOptions& options, const KVPoolShape& shape,
                           int64_t element_size, const torch::Device& device) {
  const int64_t per_token = KVPool::bytes_per_token(shape, element_size);
  int64_t tokens = options.pool_tokens;
  if (tokens == 0 && device.is_cuda()) {
    const auto free_bytes = free_device_bytes(device);
    if (!free_bytes.is_ok()) {
      return Status(free_bytes.status().code(),
                    free_bytes.status().message() + " to size the KV cache: set pool_tokens");
    }
    tokens = static_cast<int64_t>(options.memory_fraction * static_cast<double>(*free_bytes)) /
             per_token;
  } else if (tokens == 0) {
    tokens = std::min(kCpuPoolTokens, kCpuPoolBytes / per_token);
  }
  const int64_t pages = tokens / shape.page_size;
  if (pages < 1) {
    return unavailable("the KV cache would hold no page: " + std::to_string(tokens) +
                       " tokens of " + std::to_string(per_token) + " bytes each");
  }
  return pages;
}

// Whether the decode step takes fused copies of the weights (options.fuse_weights).
Result<bool> fuse_weights(const PagedGeneratorOptions& options, const Qwen2ForCausalLM& model,
                          torch::ScalarType dtype, const torch::Device& device) {
  if (options.fuse_weights.has_value()) return *options.fuse_weights;
  if (!device.is_cuda()) return true;
  KEVIN_ASSIGN_OR_RETURN(const int64_t free_bytes, free_device_bytes(device));
  return DecodeModel::copy_bytes(model, dtype) <= free_bytes / 10;
}

// How many tokens `a` and `b` share from their start.
int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin();
}

}  // namespace

Result<std::unique_ptr<PagedGenerator>> PagedGenerator::create(
    Qwen2ForCausalLM model, const PagedGeneratorOptions& options) {
  if (options.page_size < 1 || options.max_batch < 1 || options.sync_every < 1 ||
      options.prefill_chunk < 1 || options.pool_tokens < 0 || options.memory_fraction <= 0 ||
      options.memory_fraction > 1) {
    return invalid_argument(
        "generator options out of range: page_size, max_batch, sync_every and prefill_chunk "
        "must be positive, memory_fraction in (0, 1]");
  }
  const Qwen2Config& c = model->config();
  const auto weight = model->parameters().front();
  const auto dtype = options.kv_dtype.value_or(weight.scalar_type());
  KVPoolShape shape{c.num_hidden_layers, c.num_key_value_heads, c.head_dim(), options.page_size, 0};
  KEVIN_ASSIGN_OR_RETURN(
      shape.pages,
      pool_pages(options, shape, static_cast<int64_t>(c10::elementSize(dtype)), weight.device()));
  KEVIN_ASSIGN_OR_RETURN(const bool fuse, fuse_weights(options, model, dtype, weight.device()));
  try {
    DecodeModel decoder(model, dtype, fuse);
    KVPool pool(shape, weight.options().dtype(dtype).requires_grad(false));
    return std::make_unique<PagedGenerator>(std::move(model), options, std::move(pool),
                                            std::move(decoder));
  } catch (const std::exception& e) {
    return unavailable("cannot allocate the KV cache of " + std::to_string(shape.pages) +
                       " pages and the decode step's weights: " + e.what());
  }
}

PagedGenerator::PagedGenerator(Qwen2ForCausalLM model, const PagedGeneratorOptions& options,
                               KVPool pool, DecodeModel decoder)
    : model_(std::move(model)),
      options_(options),
      pool_(std::move(pool)),
      decoder_(std::move(decoder)),
      device_(model_->parameters().front().device()) {}

PagedGenerator::~PagedGenerator() = default;

// Holds the device gate shared for one prefill or decode chunk; on leaving, waits for the
// GPU's queued work, which the gate is meant to cover, and reports progress, gate still held.
class PagedGenerator::DeviceTurn {
 public:
  explicit DeviceTurn(const PagedGenerator& generator)
      : generator_(generator), lock_(generator.options_.gate) {
    if (generator_.options_.on_turn) generator_.options_.on_turn(true, generator_.stats_);
  }
  ~DeviceTurn() {
    if (generator_.options_.gate != nullptr && generator_.device_.is_cuda()) {
      torch::cuda::synchronize(generator_.device_.index());
    }
    if (generator_.options_.on_turn) generator_.options_.on_turn(false, generator_.stats_);
  }
  DeviceTurn(const DeviceTurn&) = delete;
  DeviceTurn& operator=(const DeviceTurn&) = delete;

 private:
  const PagedGenerator& generator_;
  SharedDeviceLock lock_;
};

torch::Tensor PagedGenerator::to_device(const std::vector<int64_t>& values,
                                        torch::ScalarType type) const {
  const auto host = torch::tensor(values, torch::kLong).to(type);
  if (!device_.is_cuda()) return host;
  // From pinned memory the copy is queued behind the GPU's work instead of waiting for it.
  return host.pin_memory().to(device_, /*non_blocking=*/true);
}

Result<std::vector<Sampled>> PagedGenerator::generate(
    const std::vector<std::vector<int32_t>>& prompts, const SamplingParams& params) {
  std::vector<Sampled> out(prompts.size());
  for (const auto& prompt : prompts) {
    if (prompt.empty()) return invalid_argument("cannot generate from an empty prompt");
    const int64_t needed = static_cast<int64_t>(prompt.size()) + params.max_new_tokens;
    if (needed > pool_tokens()) {
      return invalid_argument("a prompt of " + std::to_string(prompt.size()) + " tokens and " +
                              std::to_string(params.max_new_tokens) + " new ones need " +
                              std::to_string(needed) + " cache slots; the KV cache holds " +
                              std::to_string(pool_tokens()) +
                              " (raise the generator's pool size or lower max_new_tokens)");
    }
  }
  if (params.max_new_tokens <= 0) {
    for (auto& s : out) s.finish_reason = "length";
    return out;
  }
  torch::NoGradGuard no_grad;
  decoder_.refresh();  // after an update in place, the fused copies follow the weights
  std::vector<Sequence> sequences(prompts.size());
  std::vector<Sequence*> waiting, running;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sequences[i].tokens = prompts[i];
    sequences[i].prompt_size = prompts[i].size();
    sequences[i].out = &out[i];
    stats_.prompt_tokens += static_cast<int64_t>(prompts[i].size());
  }
  for (auto it = sequences.rbegin(); it != sequences.rend(); ++it) waiting.push_back(&*it);
  // `waiting` is a stack: its back is the next to start (preempted sequences return there).
  while (!waiting.empty() || !running.empty()) {
    while (static_cast<int64_t>(running.size()) < options_.max_batch && !waiting.empty()) {
      const auto room = static_cast<size_t>(options_.max_batch) - running.size();
      const auto group = batchable(waiting, room);
      size_t started = 0;
      {
        const DeviceTurn turn(*this);
        if (group.size() > 1 && start_together(group, params)) {
          started = group.size();
        } else if (start(*waiting.back(), params)) {
          started = 1;
        }
      }
      if (started == 0) break;
      for (size_t i = 0; i < started; ++i) {
        Sequence* next = waiting.back();
        waiting.pop_back();
        if (next->out->finish_reason.empty()) running.push_back(next);
      }
    }
    if (running.empty() && waiting.empty()) break;  // the last ones ended at their first token
    if (running.empty()) {
      return internal_error("the KV cache could not start a sequence of " +
                            std::to_string(waiting.back()->tokens.size()) +
                            " tokens: " + std::to_string(pool_.free_pages()) + " of " +
                            std::to_string(pool_.shape().pages) + " pages free, " +
                            std::to_string(prefixes_.size()) + " prefixes cached");
    }
    // No sequence decodes past its token limit, so none needs slots beyond what it was checked
    // to fit.
    int64_t steps = options_.sync_every;
    for (const Sequence* s : running) {
      steps = std::min(steps, params.max_new_tokens - static_cast<int64_t>(s->out->tokens.size()));
    }
    {
      const DeviceTurn turn(*this);
      reserve(running, waiting, steps);
      decode(running, steps, params);
    }
    std::erase_if(running, [](const Sequence* s) { return !s->out->finish_reason.empty(); });
  }
  return out;
}

bool PagedGenerator::start(Sequence& s, const SamplingParams& params) {
  // A request that has not sampled feeds its whole prompt (and keeps at least its last token
  // to feed, for the logits); a preempted one feeds all but its last sampled token.
  const auto size = static_cast<int64_t>(s.tokens.size());
  const int64_t feed_to = s.sampled() ? size - 1 : size;
  const int64_t reused = reuse_prefix(s.tokens, s.sampled() ? feed_to : feed_to - 1, s.kv);
  if (!grow_evicting(s.kv, feed_to)) {
    pool_.release(s.kv);
    return false;
  }
  stats_.reused_tokens += s.sampled() ? 0 : reused;
  stats_.peak_used_pages = std::max(stats_.peak_used_pages, pool_.used_pages());
  if (reused == feed_to) return true;
  const torch::Tensor last = prefill(s, reused, feed_to);
  if (s.sampled()) return true;
  remember_prefix(s.tokens, feed_to, s.kv);
  const auto [token, logprob] = sample_tokens(model_->lm_logits(last.unsqueeze(0)), params);
  if (accept(s, static_cast<int32_t>(token.item<int64_t>()), logprob.item<float>(), params)) {
    finish(s);
  }
  return true;
}

std::vector<PagedGenerator::Sequence*> PagedGenerator::batchable(
    const std::vector<Sequence*>& waiting, size_t room) const {
  std::vector<Sequence*> group;
  int64_t longest = 0, real = 0;
  for (auto it = waiting.rbegin(); it != waiting.rend() && group.size() < room; ++it) {
    const Sequence& s = **it;
    const auto size = static_cast<int64_t>(s.tokens.size());
    if (s.sampled() || size > options_.prefill_chunk) break;
    // Sharing this much is worth starting alone: kTokensWorthReusing, or all it could reuse.
    const int64_t worth = std::min(kTokensWorthReusing, size - 1);
    const auto shares = [&](int64_t common) { return worth > 0 && common >= worth; };
    if (shares(longest_cached_prefix(s.tokens, size).second)) break;
    if (std::any_of(group.begin(), group.end(), [&](const Sequence* member) {
          return shares(common_prefix(member->tokens, s.tokens));
        })) {
      break;
    }
    const int64_t padded = std::max(longest, size) * static_cast<int64_t>(group.size() + 1);
    // At most a quarter of the batch padding, and one prefill chunk of tokens in all.
    if (padded * 4 > (real + size) * 5 || padded > options_.prefill_chunk) break;
    group.push_back(*it);
    longest = std::max(longest, size);
    real += size;
  }
  return group;
}

bool PagedGenerator::start_together(const std::vector<Sequence*>& group,
                                    const SamplingParams& params) {
  const auto release_all = [&] {
    for (Sequence* s : group) pool_.release(s->kv);
  };
  for (Sequence* s : group) {
    if (!grow_evicting(s->kv, static_cast<int64_t>(s->tokens.size()))) {
      release_all();
      return false;
    }
  }
  if (!ensure_scratch()) {
    release_all();
    return false;
  }
  stats_.peak_used_pages = std::max(stats_.peak_used_pages, pool_.used_pages());
  const auto last = prefill_together(group);
  for (Sequence* s : group) {
    remember_prefix(s->tokens, static_cast<int64_t>(s->tokens.size()), s->kv);
  }
  const auto [tokens, logprobs] = sample_tokens(model_->lm_logits(last), params);
  // One read for the whole group.
  const auto host_tokens = tokens.to(torch::kCPU).contiguous();
  const auto host_logprobs = logprobs.to(torch::kCPU, torch::kFloat32).contiguous();
  for (size_t i = 0; i < group.size(); ++i) {
    if (accept(*group[i], static_cast<int32_t>(host_tokens.data_ptr<int64_t>()[i]),
               host_logprobs.data_ptr<float>()[i], params)) {
      finish(*group[i]);
    }
  }
  return true;
}

torch::Tensor PagedGenerator::prefill_together(const std::vector<Sequence*>& group) {
  const auto b = static_cast<int64_t>(group.size());
  int64_t t = 0;
  for (const Sequence* s : group) t = std::max(t, static_cast<int64_t>(s->tokens.size()));
  const int64_t scratch_slot = scratch_.pages[0] * pool_.shape().page_size;
  std::vector<int64_t> ids(static_cast<size_t>(b * t), 0), positions(ids.size()),
      slots(ids.size(), scratch_slot), last_rows;
  for (int64_t i = 0; i < b; ++i) {
    Sequence& s = *group[static_cast<size_t>(i)];
    const auto size = static_cast<int64_t>(s.tokens.size());
    for (int64_t j = 0; j < t; ++j) {
      const auto at = static_cast<size_t>(i * t + j);
      positions[at] = j;
      if (j >= size) continue;
      ids[at] = s.tokens[static_cast<size_t>(j)];
      slots[at] = pool_.slot(s.kv, j);
    }
    last_rows.push_back(i * t + size - 1);
    s.kv.length = size;
    stats_.prefill_tokens += size;
  }
  PrefillAttention attention(pool_, to_device(slots, torch::kLong), torch::Tensor(), 0);
  const auto hidden =
      model_->hidden_states_with(to_device(ids, torch::kLong).view({b, t}),
                                 to_device(positions, torch::kLong).view({b, t}), attention);
  return hidden.view({b * t, -1}).index_select(0, to_device(last_rows, torch::kLong));
}

bool PagedGenerator::ensure_scratch() {
  if (!scratch_.pages.empty()) return true;
  if (!grow_evicting(scratch_, 1)) return false;
  scratch_.length = 1;
  return true;
}

torch::Tensor PagedGenerator::prefill(Sequence& s, int64_t from, int64_t to) {
  torch::Tensor hidden;
  for (int64_t begin = from; begin < to; begin += options_.prefill_chunk) {
    const int64_t end = std::min(to, begin + options_.prefill_chunk), count = end - begin;
    std::vector<int64_t> ids(s.tokens.begin() + begin, s.tokens.begin() + end),
        positions(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) positions[static_cast<size_t>(i)] = begin + i;
    PrefillAttention attention(
        pool_, to_device(pool_.slots(s.kv, begin, end), torch::kLong),
        begin > 0 ? to_device(pool_.slots(s.kv, 0, end), torch::kLong) : torch::Tensor(), begin);
    hidden =
        model_->hidden_states_with(to_device(ids, torch::kLong).view({1, count}),
                                   to_device(positions, torch::kLong).view({1, count}), attention);
    s.kv.length = end;
    stats_.prefill_tokens += count;
  }
  return hidden[0][hidden.size(1) - 1];
}

void PagedGenerator::reserve(std::vector<Sequence*>& running, std::vector<Sequence*>& waiting,
                             int64_t steps) {
  for (size_t i = 0; i < running.size(); ++i) {
    Sequence* s = running[i];
    while (!grow_evicting(s->kv, s->kv.length + steps)) {
      // The newest gives its pages back and starts again later. The oldest always fits alone:
      // generate() checked that every request fits the pool.
      Sequence* newest = running.back();
      running.pop_back();
      pool_.release(newest->kv);
      waiting.push_back(newest);
      ++stats_.preemptions;
      if (newest == s) break;
    }
  }
  stats_.peak_used_pages = std::max(stats_.peak_used_pages, pool_.used_pages());
}

DecodeInputs PagedGenerator::step_inputs(const ChunkInputs& in, int64_t step,
                                         const torch::Tensor& tokens) {
  const auto positions = in.base + step;
  return {tokens,
          positions,
          in.slots[step],
          in.table,
          (positions + 1).to(torch::kInt32),
          in.longest + step + 1};
}

std::pair<torch::Tensor, torch::Tensor> PagedGenerator::eager_step(const ChunkInputs& in,
                                                                   int64_t step,
                                                                   const torch::Tensor& tokens,
                                                                   const SamplingParams& params) {
  const auto hidden = decoder_.hidden(step_inputs(in, step, tokens), pool_);
  return sample_tokens(decoder_.logits(hidden), params);
}

#if KEVIN_TRAIN_CUDA_KERNELS

PagedGenerator::DecodeGraph* PagedGenerator::graph_for(int64_t n, int64_t widest,
                                                       const SamplingParams& params) {
  const int64_t page = pool_.shape().page_size;
  const int64_t most = (options_.graph_context + page - 1) / page;
  if (!options_.cuda_graphs || !device_.is_cuda() || widest > most) return nullptr;
  // Buckets: rows in powers of two up to max_batch; pages in powers of two from 256 tokens' up
  // to graph_context's, so the attention launched sizes its split for the context at hand.
  int64_t rows = 1;
  while (rows < n) rows *= 2;
  rows = std::max(n, std::min(rows, options_.max_batch));
  // Short enough that a batch of short answers does not launch attention over many partitions
  // past every sequence's end.
  constexpr int64_t kSmallestContext = 256;  // tokens
  int64_t width = std::min(most, (kSmallestContext + page - 1) / page);
  while (width < widest) width = std::min(most, width * 2);
  for (const auto& g : graphs_) {
    if (g->rows == rows && g->width == width && g->temperature == params.temperature &&
        g->top_p == params.top_p) {
      return g.get();
    }
  }
  if (!ensure_scratch()) return nullptr;
  auto g = std::make_unique<DecodeGraph>();
  g->rows = rows;
  g->width = width;
  g->temperature = params.temperature;
  g->top_p = params.top_p;
  const auto longs = torch::TensorOptions(device_).dtype(torch::kLong);
  const auto ints = longs.dtype(torch::kInt32);
  g->tokens = torch::zeros({rows}, longs);
  g->positions = torch::zeros({rows}, longs);
  g->slots = torch::full({rows}, scratch_.pages[0] * page, longs);
  g->table = torch::full({rows, width}, scratch_.pages[0], ints);
  g->lengths = torch::ones({rows}, ints);
  const auto step = [&] {
    const DecodeInputs in{g->tokens, g->positions, g->slots, g->table, g->lengths, width * page};
    return sample_tokens(decoder_.logits(decoder_.hidden(in, pool_)), params);
  };
  // Captured on a side stream (the legacy default stream cannot be captured), in order with
  // the work queued before it.
  const auto current = c10::cuda::getCurrentCUDAStream(device_.index());
  const auto side = c10::cuda::getStreamFromPool(false, device_.index());
  at::cuda::CUDAEvent queued, captured;
  queued.record(current);
  queued.block(side);
  {
    const c10::cuda::CUDAStreamGuard on_side(side);
    step();  // lazy initialisation (cuBLAS handles, workspaces) stays out of the graph
    // One memory pool for every graph: they replay one at a time, and each one's outputs are
    // copied out before the next replays.
    if (graphs_.empty()) {
      g->graph.capture_begin();
    } else {
      g->graph.capture_begin(graphs_.front()->graph.pool());
    }
    std::tie(g->next, g->logprobs) = step();
    g->graph.capture_end();
  }
  captured.record(side);
  captured.block(current);
  graphs_.push_back(std::move(g));
  return graphs_.back().get();
}

std::pair<torch::Tensor, torch::Tensor> PagedGenerator::replay(DecodeGraph& g,
                                                               const ChunkInputs& in, int64_t step,
                                                               const torch::Tensor& tokens) {
  const int64_t n = tokens.size(0);
  if (step == 0) {
    g.table.narrow(0, 0, n).narrow(1, 0, in.table.size(1)).copy_(in.table);
    // Rows past n may hold slots of sequences gone since: they write the scratch page again.
    g.slots.narrow(0, n, g.rows - n).fill_(scratch_.pages[0] * pool_.shape().page_size);
    g.lengths.narrow(0, n, g.rows - n).fill_(1);
  }
  g.positions.narrow(0, 0, n).copy_(in.base + step);
  g.lengths.narrow(0, 0, n).copy_(in.base + (step + 1));
  g.slots.narrow(0, 0, n).copy_(in.slots[step]);
  g.tokens.narrow(0, 0, n).copy_(tokens);
  g.graph.replay();
  return {g.next.narrow(0, 0, n).clone(), g.logprobs.narrow(0, 0, n).clone()};
}

#else

PagedGenerator::DecodeGraph* PagedGenerator::graph_for(int64_t, int64_t, const SamplingParams&) {
  return nullptr;
}

std::pair<torch::Tensor, torch::Tensor> PagedGenerator::replay(DecodeGraph&, const ChunkInputs&,
                                                               int64_t, const torch::Tensor&) {
  TORCH_CHECK(false, "CUDA graphs need the CUDA build");
}

#endif

void PagedGenerator::decode(const std::vector<Sequence*>& running, int64_t steps,
                            const SamplingParams& params) {
  const auto n = static_cast<int64_t>(running.size());
  size_t widest = 0;
  int64_t longest = 0;
  std::vector<int64_t> base(running.size()), last_tokens(running.size());
  for (size_t i = 0; i < running.size(); ++i) {
    widest = std::max(widest, running[i]->kv.pages.size());
    base[i] = running[i]->kv.length;
    longest = std::max(longest, base[i]);
    last_tokens[i] = running[i]->tokens.back();
  }
  std::vector<int64_t> table(running.size() * widest, 0), slots;
  slots.reserve(static_cast<size_t>(steps * n));
  for (size_t i = 0; i < running.size(); ++i) {
    std::copy(running[i]->kv.pages.begin(), running[i]->kv.pages.end(),
              table.begin() + static_cast<std::ptrdiff_t>(i * widest));
  }
  for (int64_t step = 0; step < steps; ++step) {
    for (size_t i = 0; i < running.size(); ++i) {
      slots.push_back(pool_.slot(running[i]->kv, base[i] + step));
    }
  }
  const ChunkInputs in{to_device(table, torch::kInt32).view({n, static_cast<int64_t>(widest)}),
                       to_device(slots, torch::kLong).view({steps, n}),
                       to_device(base, torch::kLong), to_device(last_tokens, torch::kLong),
                       longest};
  DecodeGraph* graph = graph_for(n, static_cast<int64_t>(widest), params);
  auto tokens = in.tokens;
  std::vector<torch::Tensor> sampled, logprobs;
  for (int64_t step = 0; step < steps; ++step) {
    auto [next, logprob] =
        graph != nullptr ? replay(*graph, in, step, tokens) : eager_step(in, step, tokens, params);
    sampled.push_back(next);
    logprobs.push_back(logprob);
    tokens = next;
  }
  stats_.decode_steps += steps;
  // One read per chunk: the host learns of stop tokens `steps` tokens late at most.
  const auto host_tokens = torch::stack(sampled).to(torch::kCPU).contiguous();
  const auto host_logprobs = torch::stack(logprobs).to(torch::kCPU, torch::kFloat32).contiguous();
  const int64_t* token_at = host_tokens.data_ptr<int64_t>();
  const float* logprob_at = host_logprobs.data_ptr<float>();
  for (size_t i = 0; i < running.size(); ++i) {
    Sequence& s = *running[i];
    s.kv.length = base[i] + steps;
    for (int64_t step = 0; step < steps; ++step) {
      const auto at = static_cast<size_t>(step * n) + i;
      if (accept(s, static_cast<int32_t>(token_at[at]), logprob_at[at], params)) {
        finish(s);
        break;
      }
    }
  }
}

bool PagedGenerator::accept(Sequence& s, int32_t token, float logprob,
                            const SamplingParams& params) {
  s.tokens.push_back(token);
  s.out->tokens.push_back(token);
  s.out->logprobs.push_back(logprob);
  ++stats_.generated_tokens;
  if (std::find(params.stop_ids.begin(), params.stop_ids.end(), token) != params.stop_ids.end()) {
    s.out->finish_reason = "stop";
  } else if (static_cast<int64_t>(s.out->tokens.size()) >= params.max_new_tokens) {
    s.out->finish_reason = "length";
  }
  return !s.out->finish_reason.empty();
}

void PagedGenerator::finish(Sequence& s) {
  // Every token but the last sampled one has its keys and values stored.
  const int64_t stored = std::min(s.kv.length, static_cast<int64_t>(s.tokens.size()) - 1);
  remember_prefix(s.tokens, stored, s.kv);
  pool_.release(s.kv);
}

std::pair<size_t, int64_t> PagedGenerator::longest_cached_prefix(const std::vector<int32_t>& tokens,
                                                                 int64_t limit) const {
  size_t best = 0;
  int64_t best_length = 0;
  for (size_t i = 0; i < prefixes_.size(); ++i) {
    const int64_t length = std::min(limit, common_prefix(prefixes_[i].tokens, tokens));
    if (length > best_length) {
      best = i;
      best_length = length;
    }
  }
  return {best, best_length};
}

int64_t PagedGenerator::reuse_prefix(const std::vector<int32_t>& tokens, int64_t limit,
                                     PagedSequence& kv) {
  const auto [best, length] = longest_cached_prefix(tokens, limit);
  if (length == 0) return 0;
  CachedPrefix& prefix = prefixes_[best];
  prefix.used = ++clock_;
  kv = pool_.share(prefix.kv, length);
  return length;
}

void PagedGenerator::remember_prefix(const std::vector<int32_t>& tokens, int64_t length,
                                     const PagedSequence& kv) {
  if (options_.max_cached_prefixes == 0 || length <= 0) return;
  const auto starts_with = [](const std::vector<int32_t>& longer, const int32_t* shorter,
                              size_t size) {
    return longer.size() >= size && std::equal(shorter, shorter + size, longer.begin());
  };
  for (auto& prefix : prefixes_) {
    if (starts_with(prefix.tokens, tokens.data(), static_cast<size_t>(length))) {
      prefix.used = ++clock_;  // already held by a longer (or equal) entry
      return;
    }
  }
  // Entries this one extends hold nothing it does not.
  std::erase_if(prefixes_, [&](CachedPrefix& prefix) {
    if (!starts_with(tokens, prefix.tokens.data(), prefix.tokens.size())) return false;
    pool_.release(prefix.kv);
    return true;
  });
  prefixes_.push_back({std::vector<int32_t>(tokens.begin(), tokens.begin() + length),
                       pool_.share(kv, length), ++clock_});
  while (prefixes_.size() > options_.max_cached_prefixes) evict_oldest_prefix();
}

bool PagedGenerator::evict_oldest_prefix() {
  if (prefixes_.empty()) return false;
  const auto oldest = std::min_element(
      prefixes_.begin(), prefixes_.end(),
      [](const CachedPrefix& a, const CachedPrefix& b) { return a.used < b.used; });
  pool_.release(oldest->kv);
  prefixes_.erase(oldest);
  return true;
}

void PagedGenerator::clear_prefix_cache() {
  while (evict_oldest_prefix()) {
  }
}

bool PagedGenerator::grow_evicting(PagedSequence& kv, int64_t length) {
  while (!pool_.grow(kv, length)) {
    if (!evict_oldest_prefix()) return false;
  }
  return true;
}

}  // namespace kevin::train
