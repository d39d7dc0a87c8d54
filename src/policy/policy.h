// policy.h — the interface every policy (model) implements: messages in, one generated
// response out. Implementations: ScriptedPolicy (responses from a file, for tests and demos),
// OpenAIClient (any OpenAI-compatible chat server); the trainer's in-process model later.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/chat.h"

namespace kevin::policy {

struct GenerationParams {
  double temperature = 0.9;  // the paper's sampling temperature
  double top_p = 1.0;
  int max_tokens = 16384;
  std::vector<std::string> stop;
  // Borrowed, optional: once it reads true, a generation in progress is abandoned and
  // generate() returns kCancelled (policies that answer at once may ignore it).
  const std::atomic<bool>* cancel = nullptr;
};

struct Generation {
  std::string content;         // the answer after any reasoning
  std::string reasoning;       // reasoning_content, or an inline <think> block
  std::string finish_reason;   // "stop", "length", ...
  int64_t prompt_tokens = -1;  // from the server's usage report; -1 if unknown
  int64_t completion_tokens = -1;
  double latency_ms = 0;
  // Exact tokens and the sampler's log-probabilities, when the policy knows them (the
  // in-process model does; HTTP servers do not): what a trainer needs from a rollout.
  std::vector<int32_t> prompt_token_ids, completion_token_ids;
  std::vector<float> completion_logprobs;
  bool truncated() const { return finish_reason == "length"; }
};

class Policy {
 public:
  virtual ~Policy() = default;
  // One response to `messages`. Thread-safe. Errors are values: kUnavailable (server
  // unreachable after retries), kDeadlineExceeded, kInvalidArgument (request refused or reply
  // malformed), kFailedPrecondition (a script ran out), kCancelled (params.cancel was set).
  virtual Result<Generation> generate(const std::vector<ChatMessage>& messages,
                                      const GenerationParams& params) = 0;
  // e.g. "scripted:file.jsonl" or "openai:model@url".
  virtual std::string name() const = 0;
};

// Moves an inline "<think>…</think>" prefix of `content` into `reasoning` (kept when the
// server already returned reasoning separately).
void split_inline_reasoning(Generation* g);

}  // namespace kevin::policy
