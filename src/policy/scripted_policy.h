// scripted_policy.h — a policy that replays responses from a JSON-lines script: each line
// {"response": "...", "reasoning"?: "...", "finish_reason"?: "stop", "match"?: "text"}. A
// request takes the first unused line whose `match` (if any) occurs in the last message, so
// one script can drive several tasks and turns deterministically even when trajectories run
// concurrently.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/mutex.h"
#include "policy/policy.h"

namespace kevin::policy {

class ScriptedPolicy final : public Policy {
 public:
  struct Entry {
    std::string match, response, reasoning, finish_reason = "stop";
  };
  explicit ScriptedPolicy(std::vector<Entry> entries, std::string source = "inline");
  // kNotFound / kInvalidArgument (naming the line) for a bad file.
  static Result<std::unique_ptr<ScriptedPolicy>> load(const std::filesystem::path& file);

  Result<Generation> generate(const std::vector<ChatMessage>& messages,
                              const GenerationParams& params) override;
  std::string name() const override { return "scripted:" + source_; }
  size_t remaining() const;

 private:
  const std::vector<Entry> entries_;
  const std::string source_;
  mutable Mutex mu_;
  std::vector<bool> used_ GUARDED_BY(mu_);
};

}  // namespace kevin::policy
