// paged_generator.h — the generation engine: a paged KV cache in one pool allocated up front
// (kv_pool.h), continuous batching (a finished sequence frees its pages and a waiting one
// starts; when the pool runs short the newest sequence is preempted and later recomputed),
// prefill without padding or dense batch masks, decode through the paged attention kernel
// with the host reading sampled tokens once every few steps, and a prefix cache: requests
// whose prompts start alike (the trajectories of one task; turn t's prompt after turn t−1's)
// share the stored pages and prefill only what differs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/device_gate.h"
#include "core/status.h"
#include "train/model/qwen2_model.h"
#include "train/sampling/decode_model.h"
#include "train/sampling/generate.h"
#include "train/sampling/kv_pool.h"

namespace kevin::train {

// Counters over the generator's life.
struct GeneratorStats {
  int64_t prompt_tokens = 0;   // prompt tokens of every request
  int64_t prefill_tokens = 0;  // tokens run through prefill forwards (recomputation included)
  int64_t reused_tokens = 0;   // prompt tokens whose keys and values came from the prefix cache
  int64_t generated_tokens = 0;
  int64_t decode_steps = 0;
  int64_t preemptions = 0;  // sequences whose pages were taken back to let others go on
  int64_t peak_used_pages = 0;
};

struct PagedGeneratorOptions {
  int64_t page_size = 16;  // tokens per page
  // Token slots in the pool. 0: memory_fraction of the device's free memory on CUDA; on the
  // CPU, 65,536 tokens or 1 GiB, whichever is smaller.
  int64_t pool_tokens = 0;
  double memory_fraction = 0.5;
  // The cache's element type; unset: the model's parameter dtype.
  std::optional<torch::ScalarType> kv_dtype;
  int64_t max_batch = 64;            // sequences decoded together
  int64_t sync_every = 8;            // decode steps between reads of the sampled tokens
  int64_t prefill_chunk = 4096;      // prompt tokens per prefill forward
  size_t max_cached_prefixes = 256;  // 0: no prefix cache
  // Decode steps replayed as CUDA graphs, one per batch-size bucket (powers of two up to
  // max_batch), context bucket (powers of two from 256 tokens) and sampling setting, all in
  // one memory pool, for sequences of up to graph_context tokens (longer ones decode without a
  // graph). Only on CUDA; ignored elsewhere. The step runs with autocast off in the cache's
  // dtype, so a caller's autocast scope does not stop the capture.
  bool cuda_graphs = true;
  int64_t graph_context = 32768;
  // The decode step's weights (decode_model.h): true, fused copies in the cache's dtype; false,
  // the model's own modules. Unset: fused on the CPU, and on CUDA when the copies take at most
  // a tenth of the free memory (a 0.5B model, not a 32B one).
  std::optional<bool> fuse_weights;
  // Borrowed, optional: held shared around each prefill and each decode chunk (the GPU idle
  // when it is let go), so the judge's exclusive timing on the same GPU waits for one chunk,
  // not for a whole generate() call, and decoding pauses while it times.
  DeviceGate* gate = nullptr;
  // Optional: called as each prefill or decode chunk starts (true; the gate just taken) and
  // ends (false; its GPU work done, the gate still held), with the counters so far: progress
  // output and clocks of the time spent sampling. Keep it short.
  std::function<void(bool starting, const GeneratorStats&)> on_turn;
};

class PagedGenerator {
 public:
  // A generator for `model` (a handle: the generator shares the model, which must not change
  // its weights while cached prefixes are kept: clear_prefix_cache after an update) with its
  // pool allocated now. kInvalidArgument for options out of range; kUnavailable when the pool
  // cannot be allocated.
  static Result<std::unique_ptr<PagedGenerator>> create(Qwen2ForCausalLM model,
                                                        const PagedGeneratorOptions& options);

  // One continuation per prompt, as train::generate (same SamplingParams and Sampled; pad_id is
  // not used). kInvalidArgument for an empty prompt or one that cannot fit in the pool with
  // its answer's first page. Device failures inside libtorch throw c10::Error, as generate's
  // do. Runs without gradients; uses torch's global RNG on the model's device.
  Result<std::vector<Sampled>> generate(const std::vector<std::vector<int32_t>>& prompts,
                                        const SamplingParams& params);

  const GeneratorStats& stats() const { return stats_; }
  int64_t pool_tokens() const { return pool_.shape().pages * pool_.shape().page_size; }
  // Drops every cached prefix (their pages go back to the pool).
  void clear_prefix_cache();

  PagedGenerator(Qwen2ForCausalLM model, const PagedGeneratorOptions& options, KVPool pool,
                 DecodeModel decoder);
  ~PagedGenerator();

 private:
  struct Sequence;
  class DeviceTurn;
  struct DecodeGraph;  // CUDA builds only (paged_generator.cpp)
  // Inputs of one decode chunk, on the device: per step the sequences' positions, slots and
  // key counts follow from `base` (stored tokens) and `slots` ([steps, n]).
  struct ChunkInputs {
    torch::Tensor table, slots, base, tokens;
    int64_t longest = 0;  // the longest sequence's stored tokens
  };
  // Step `step` of a chunk for the sequences whose newest tokens are `tokens`.
  static DecodeInputs step_inputs(const ChunkInputs& in, int64_t step, const torch::Tensor& tokens);
  // One decode step: (sampled tokens [n], their log-probabilities [n]).
  std::pair<torch::Tensor, torch::Tensor> eager_step(const ChunkInputs& in, int64_t step,
                                                     const torch::Tensor& tokens,
                                                     const SamplingParams& params);
  // The graph for `n` sequences under `params`, captured on first use; null when graphs are
  // off or cannot serve this chunk (a sequence longer than graph_context).
  DecodeGraph* graph_for(int64_t n, int64_t widest, const SamplingParams& params);
  // One decode step through `graph` (inputs copied into its tensors, outputs copied out).
  std::pair<torch::Tensor, torch::Tensor> replay(DecodeGraph& graph, const ChunkInputs& in,
                                                 int64_t step, const torch::Tensor& tokens);
  // A stored token sequence whose keys and values later prompts that start with it reuse.
  struct CachedPrefix {
    std::vector<int32_t> tokens;
    PagedSequence kv;  // holds keys and values of every token
    uint64_t used = 0;
  };

  // Fresh requests from the back of `waiting` (at most `room`, in order) that can prefill as
  // one padded batch: nothing sampled, a prompt within one prefill chunk, and sharing with no
  // cached prefix or other member kTokensWorthReusing tokens, or all but its last (those start
  // alone, after the one they share with, to reuse its pages). Padding stays under a quarter
  // of the batch.
  std::vector<Sequence*> batchable(const std::vector<Sequence*>& waiting, size_t room) const;
  // Admits `group` together: pages for each, one batched prefill, first tokens sampled with
  // one read. False, holding none of their pages, when the pool is short.
  bool start_together(const std::vector<Sequence*>& group, const SamplingParams& params);
  // The batched prefill of start_together: the last prompt token's hidden state per member,
  // [members, hidden].
  torch::Tensor prefill_together(const std::vector<Sequence*>& group);
  // Allocates the scratch page (graphs' padded rows, batched prefill's pads) on first use.
  bool ensure_scratch();
  // Stores tokens [from, to) of `s`'s own sequence (pages already there), chunk by chunk.
  // Returns the final-normed hidden state of the last token, [hidden].
  torch::Tensor prefill(Sequence& s, int64_t from, int64_t to);
  // Admits `s`: reuses a cached prefix, prefills the rest and, for a request that has not
  // sampled yet, samples its first token. False, holding no pages, when the pool is short.
  bool start(Sequence& s, const SamplingParams& params);
  // Pages for `steps` more tokens of each running sequence, preempting the newest (moved to
  // the front of `waiting`) while the pool is short.
  void reserve(std::vector<Sequence*>& running, std::vector<Sequence*>& waiting, int64_t steps);
  // `steps` decode steps of every running sequence, the sampled tokens read once at the end.
  void decode(const std::vector<Sequence*>& running, int64_t steps, const SamplingParams& params);
  // Appends a sampled token; true when `s` is finished (stop token or length).
  bool accept(Sequence& s, int32_t token, float logprob, const SamplingParams& params);
  // Keeps a finished sequence's stored tokens as a prefix and returns its pages.
  void finish(Sequence& s);

  // The index in prefixes_ of the cached prefix sharing the most of `tokens` (at most
  // `limit`), and that length; length 0 when none shares any.
  std::pair<size_t, int64_t> longest_cached_prefix(const std::vector<int32_t>& tokens,
                                                   int64_t limit) const;
  // Shares into `kv` the longest cached prefix of `tokens`, at most `limit` tokens; its length.
  int64_t reuse_prefix(const std::vector<int32_t>& tokens, int64_t limit, PagedSequence& kv);
  void remember_prefix(const std::vector<int32_t>& tokens, int64_t length, const PagedSequence& kv);
  bool evict_oldest_prefix();  // false when none is cached
  // pool_.grow, evicting cached prefixes (least recently used first) while the pool is short.
  bool grow_evicting(PagedSequence& kv, int64_t length);
  // Host integers as a tensor on the model's device (through pinned memory, without waiting).
  torch::Tensor to_device(const std::vector<int64_t>& values, torch::ScalarType type) const;

  // Prompts sharing fewer tokens than this (and not all but their last) with the cache or each
  // other prefill as a batch (recomputing the shared part) rather than one after another.
  static constexpr int64_t kTokensWorthReusing = 64;

  Qwen2ForCausalLM model_;
  PagedGeneratorOptions options_;
  KVPool pool_;
  DecodeModel decoder_;
  torch::Device device_;
  std::vector<CachedPrefix> prefixes_;
  uint64_t clock_ = 0;  // orders the prefixes' last use
  GeneratorStats stats_;
  std::vector<std::unique_ptr<DecodeGraph>> graphs_;
  PagedSequence scratch_;  // one page that padded graph rows read and write (with graphs)
};

}  // namespace kevin::train
