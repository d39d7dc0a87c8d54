// local_policy.h — the in-process model behind the policy interface (`kevin run --policy
// local:MODEL_DIR`): a Qwen2-family HF folder (config.json, *.safetensors, tokenizer.json)
// loaded into libtorch; each request is rendered as ChatML, sampled with the KV-cache
// generator and decoded, with the leading <think> block returned as reasoning. Requests that
// arrive together from several trajectories are sampled as one batch.
#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "policy/policy.h"
#include "train/generate.h"
#include "train/qwen2_model.h"
#include "train/tokenizer.h"

namespace kevin::train {

struct LocalPolicyOptions {
  std::filesystem::path model_dir;
  bool cuda = false;         // on CUDA device 0 in bf16; else the CPU in fp32
  bool open_think = false;   // start the answer inside "<think>\n" (QwQ-32B's chat template)
  size_t max_batch = 16;     // requests sampled together
  bool autocast_bf16 = false;  // sample under bf16 autocast (an fp32 model on CUDA: the trainer's)
};

class LocalPolicy final : public policy::Policy {
 public:
  // Errors: kNotFound (files missing), kInvalidArgument (a config, tokenizer or checkpoint
  // that does not fit the model).
  static Result<std::unique_ptr<LocalPolicy>> load(const LocalPolicyOptions& options);
  // Builds the policy around a model and tokenizer already in memory (tests, the trainer).
  LocalPolicy(Qwen2ForCausalLM model, Tokenizer tokenizer, LocalPolicyOptions options);

  Result<policy::Generation> generate(const std::vector<policy::ChatMessage>& messages,
                                      const policy::GenerationParams& params) override;
  std::string name() const override { return "local:" + options_.model_dir.string(); }

  // The prompt tokens a request renders to (exposed for tests and the trainer).
  std::vector<int32_t> prompt_tokens(const std::vector<policy::ChatMessage>& messages) const;

 private:
  struct Request;
  void run_batch(std::vector<std::shared_ptr<Request>> batch);

  Qwen2ForCausalLM model_;
  Tokenizer tokenizer_;
  LocalPolicyOptions options_;
  std::vector<int32_t> stop_ids_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Request>> queue_;
  bool busy_ = false;
};

}  // namespace kevin::train
