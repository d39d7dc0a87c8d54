// local_policy.h — the in-process model behind the policy interface (`kevin run --policy
// local:MODEL_DIR`): a Qwen2-family HF folder (config.json, *.safetensors, tokenizer.json)
// loaded into libtorch; each request is rendered as ChatML, sampled with the paged generation
// engine (paged_generator.h) and decoded, with the leading <think> block returned as reasoning.
// Requests that arrive together from several trajectories are sampled as one batch; with several
// replicas of the model (the trainer's, one per GPU) several batches run at once, one per replica.
#pragma once

#include <chrono>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "core/device_gate.h"
#include "core/mutex.h"
#include "policy/policy.h"
#include "train/sampling/paged_generator.h"
#include "train/model/qwen2_model.h"
#include "train/tokenizer/tokenizer.h"

namespace kevin::train {

struct LocalPolicyOptions {
  std::filesystem::path model_dir;
  bool cuda = false;           // load(): on CUDA device 0 in bf16; else the CPU in fp32
  bool open_think = false;     // start the answer inside "<think>\n" (QwQ-32B's chat template)
  size_t max_batch = 16;       // requests sampled together
  bool autocast_bf16 = false;  // sample under bf16 autocast (an fp32 model on CUDA: the trainer's)
  // Per replica (or empty): a gate that replica's generation engine holds shared around each
  // prefill and decode chunk, so that the judge's timing on the same GPU never overlaps
  // sampling and waits for one chunk at most (env::Evaluator::device_gate). Borrowed.
  std::vector<DeviceGate*> replica_gates;
  // Each replica's generation engine, made at its first batch (max_batch above sets its
  // max_batch; with autocast_bf16 its cache is bf16). Its prefix cache lives as long as this
  // policy: the replicas' weights must not change meanwhile (the trainer makes a policy per step).
  PagedGeneratorOptions generator;
};

class LocalPolicy final : public policy::Policy {
 public:
  // Errors: kNotFound (files missing), kInvalidArgument (a config, tokenizer or checkpoint
  // that does not fit the model).
  static Result<std::unique_ptr<LocalPolicy>> load(const LocalPolicyOptions& options);
  // Builds the policy around a model and tokenizer already in memory (tests, the trainer).
  LocalPolicy(Qwen2ForCausalLM model, Tokenizer tokenizer, LocalPolicyOptions options);
  // The same over identical replicas of one model, each on its own device (at least one).
  LocalPolicy(std::vector<Qwen2ForCausalLM> replicas, Tokenizer tokenizer,
              LocalPolicyOptions options);

  Result<policy::Generation> generate(const std::vector<ChatMessage>& messages,
                                      const policy::GenerationParams& params) override;
  std::string name() const override { return "local:" + options_.model_dir.string(); }

  // The prompt tokens a request renders to (exposed for tests and the trainer).
  std::vector<int32_t> prompt_tokens(const std::vector<ChatMessage>& messages) const;

  // Wall-clock seconds, since construction, during which at least one replica was sampling
  // (prefill and decode chunks running at once count once; waiting for a batch slot or for
  // the judge's timing does not count): the time generation throughput is measured against.
  // Thread-safe.
  double sampling_seconds() const;

 private:
  struct Request;
  // A batch one generate() call runs on a free replica for every request in it.
  struct Lead {
    size_t replica;
    std::vector<std::shared_ptr<Request>> batch;
  };
  // Blocks until `request` has its result (nullopt), or until a replica is free while it is
  // still queued: then that replica is marked busy and a batch with it is the caller's to run.
  std::optional<Lead> wait_to_lead(const Request& request);
  // Hands the batch's results to its requests and frees the replica.
  void finish_lead(const Lead& lead, std::vector<Result<policy::Generation>> results);
  // Takes the waiting requests that sample like `params` (up to max_batch).
  std::vector<std::shared_ptr<Request>> take_batch(const policy::GenerationParams& params)
      REQUIRES(mu_);
  // Samples the batch (no lock held): one result per request, in order. Does not throw.
  std::vector<Result<policy::Generation>> run_batch(
      size_t replica, const std::vector<std::shared_ptr<Request>>& batch);

  // The engine of `replica`, made on first use (only the thread leading a batch on that
  // replica calls it).
  Result<PagedGenerator*> generator_of(size_t replica);

  std::vector<Qwen2ForCausalLM> replicas_;
  std::vector<std::unique_ptr<PagedGenerator>> generators_;  // per replica; null until first use
  Tokenizer tokenizer_;
  LocalPolicyOptions options_;
  std::vector<int32_t> stop_ids_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::shared_ptr<Request>> queue_ GUARDED_BY(mu_);
  std::vector<bool> busy_ GUARDED_BY(mu_);  // per replica: a batch is running on it

  // The union of the intervals in which batches ran (sampling_seconds).
  class BusyClock {
   public:
    void start();
    void stop();
    double seconds() const;

   private:
    mutable Mutex mu_;
    int running_ GUARDED_BY(mu_) = 0;
    std::chrono::steady_clock::time_point since_ GUARDED_BY(mu_);
    double closed_s_ GUARDED_BY(mu_) = 0;  // intervals already ended
  };
  BusyClock sampling_clock_;
};

}  // namespace kevin::train
