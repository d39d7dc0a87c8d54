// local_policy.cpp — loading a model folder, leader/follower batching of concurrent
// requests, and turning sampled tokens into a policy::Generation.
#include "train/sampling/local_policy.h"

#include <algorithm>
#include <chrono>

#include "core/mutex.h"
#include "train/io/model_io.h"
#include "train/model/precision.h"

namespace kevin::train {

struct LocalPolicy::Request {
  std::vector<int32_t> prompt;
  policy::GenerationParams params;
  // Set and read with LocalPolicy::mu_ held (its waiter reads it while another thread leads).
  std::optional<Result<policy::Generation>> result;
};

Result<std::unique_ptr<LocalPolicy>> LocalPolicy::load(const LocalPolicyOptions& options) {
  KEVIN_ASSIGN_OR_RETURN(Tokenizer tokenizer,
                         Tokenizer::load(options.model_dir / "tokenizer.json"));
  const auto device = options.cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  KEVIN_ASSIGN_OR_RETURN(
      Qwen2ForCausalLM model,
      load_qwen2_dir(options.model_dir, device, options.cuda ? torch::kBFloat16 : torch::kFloat32));
  model->eval();
  return std::make_unique<LocalPolicy>(std::move(model), std::move(tokenizer), options);
}

LocalPolicy::LocalPolicy(Qwen2ForCausalLM model, Tokenizer tokenizer, LocalPolicyOptions options)
    : LocalPolicy(std::vector<Qwen2ForCausalLM>{std::move(model)}, std::move(tokenizer),
                  std::move(options)) {}

LocalPolicy::LocalPolicy(std::vector<Qwen2ForCausalLM> replicas, Tokenizer tokenizer,
                         LocalPolicyOptions options)
    : replicas_(std::move(replicas)),
      tokenizer_(std::move(tokenizer)),
      options_(std::move(options)),
      busy_(replicas_.size(), false) {
  generators_.resize(replicas_.size());
  for (const char* stop : {"<|im_end|>", "<|endoftext|>"}) {
    if (auto id = tokenizer_.token_id(stop)) stop_ids_.push_back(*id);
  }
}

std::vector<int32_t> LocalPolicy::prompt_tokens(const std::vector<ChatMessage>& messages) const {
  // Markers are encoded as special tokens, contents as plain text: a prompt that quotes
  // "<|im_end|>" must not end its own turn.
  std::vector<int32_t> ids;
  const auto append = [&](const std::string& text, bool special) {
    const auto part = tokenizer_.encode(text, special);
    ids.insert(ids.end(), part.begin(), part.end());
  };
  for (const auto& m : messages) {
    append("<|im_start|>" + m.role + "\n", true);
    append(m.content, false);
    append("<|im_end|>\n", true);
  }
  append("<|im_start|>assistant\n", true);
  if (options_.open_think) append("<think>\n", true);
  return ids;
}

Result<policy::Generation> LocalPolicy::generate(const std::vector<ChatMessage>& messages,
                                                 const policy::GenerationParams& params) {
  auto request = std::make_shared<Request>();
  request->prompt = prompt_tokens(messages);
  request->params = params;
  {
    MutexLock lock(mu_);
    queue_.push_back(request);
  }
  while (std::optional<Lead> lead = wait_to_lead(*request)) {
    finish_lead(*lead, run_batch(lead->replica, lead->batch));  // run_batch does not throw
  }
  MutexLock lock(mu_);
  return *request->result;
}

std::optional<LocalPolicy::Lead> LocalPolicy::wait_to_lead(const Request& request) {
  MutexLock lock(mu_);
  while (!request.result) {
    const auto free = std::find(busy_.begin(), busy_.end(), false);
    const bool waiting = std::find_if(queue_.begin(), queue_.end(), [&](const auto& queued) {
                           return queued.get() == &request;
                         }) != queue_.end();
    if (free != busy_.end() && waiting) {
      // Lead: run the waiting requests that sample alike on a free replica.
      const auto replica = static_cast<size_t>(free - busy_.begin());
      busy_[replica] = true;
      return Lead{replica, take_batch(request.params)};
    }
    cv_.wait(mu_);
  }
  return std::nullopt;
}

void LocalPolicy::finish_lead(const Lead& lead, std::vector<Result<policy::Generation>> results) {
  MutexLock lock(mu_);
  for (size_t i = 0; i < lead.batch.size(); ++i) lead.batch[i]->result = std::move(results[i]);
  busy_[lead.replica] = false;
  cv_.notify_all();
}

double LocalPolicy::sampling_seconds() const { return sampling_clock_.seconds(); }

void LocalPolicy::BusyClock::start() {
  MutexLock lock(mu_);
  if (running_++ == 0) since_ = std::chrono::steady_clock::now();
}

void LocalPolicy::BusyClock::stop() {
  MutexLock lock(mu_);
  if (--running_ == 0)
    closed_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
}

double LocalPolicy::BusyClock::seconds() const {
  MutexLock lock(mu_);
  const double open_s =
      running_ > 0
          ? std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count()
          : 0.0;
  return closed_s_ + open_s;
}

std::vector<std::shared_ptr<LocalPolicy::Request>> LocalPolicy::take_batch(
    const policy::GenerationParams& params) {
  std::vector<std::shared_ptr<Request>> batch;
  for (auto it = queue_.begin(); it != queue_.end() && batch.size() < options_.max_batch;) {
    const auto& p = (*it)->params;
    if (p.temperature == params.temperature && p.top_p == params.top_p &&
        p.max_tokens == params.max_tokens) {
      batch.push_back(*it);
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  return batch;
}

Result<PagedGenerator*> LocalPolicy::generator_of(size_t replica) {
  if (!generators_[replica]) {
    PagedGeneratorOptions o = options_.generator;
    o.max_batch = static_cast<int64_t>(std::max<size_t>(1, options_.max_batch));
    if (options_.autocast_bf16) o.kv_dtype = torch::kBFloat16;
    if (replica < options_.replica_gates.size()) o.gate = options_.replica_gates[replica];
    // Sampling time is the engine's chunks, not its waits for the judge's timing.
    o.on_turn = [this](bool starting, const GeneratorStats&) {
      starting ? sampling_clock_.start() : sampling_clock_.stop();
    };
    KEVIN_ASSIGN_OR_RETURN(generators_[replica], PagedGenerator::create(replicas_[replica], o));
  }
  return generators_[replica].get();
}

std::vector<Result<policy::Generation>> LocalPolicy::run_batch(
    size_t replica, const std::vector<std::shared_ptr<Request>>& batch) {
  Qwen2ForCausalLM& model = replicas_[replica];
  std::vector<Result<policy::Generation>> results;
  if (batch.empty()) return results;
  const auto start = std::chrono::steady_clock::now();
  const policy::GenerationParams& p = batch.front()->params;
  SamplingParams sampling;
  sampling.temperature = p.temperature;
  sampling.top_p = p.top_p;
  sampling.max_new_tokens = p.max_tokens;
  sampling.stop_ids = stop_ids_;
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& r : batch) prompts.push_back(r->prompt);
  Result<std::vector<Sampled>> sampled = unavailable("not sampled");
  try {
    const DeviceOfThread on_device(model->parameters().front().device());
    Bf16Autocast autocast(options_.autocast_bf16);
    Result<PagedGenerator*> generator = generator_of(replica);
    sampled = generator.is_ok() ? (*generator)->generate(prompts, sampling)
                                : Result<std::vector<Sampled>>(generator.status());
  } catch (const std::exception& e) {
    // libtorch reports device failures (out of memory) by exception; it must not cross.
    sampled = unavailable(std::string("local model: ") + e.what());
  }
  if (!sampled.is_ok()) {
    return std::vector<Result<policy::Generation>>(batch.size(), sampled.status());
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < batch.size(); ++i) {
    const Sampled& out = (*sampled)[i];
    std::vector<int32_t> tokens = out.tokens;
    if (!tokens.empty() && out.finish_reason == "stop") tokens.pop_back();  // the stop token itself
    std::string text = tokenizer_.decode(tokens, true);
    for (const auto& stop : p.stop) {
      if (const auto at = text.find(stop); at != std::string::npos) text.resize(at);
    }
    const ThinkSplit split = split_think(text, options_.open_think);
    policy::Generation g;
    g.content = split.has_think ? split.answer : text;
    g.reasoning = split.reasoning;
    g.finish_reason = out.finish_reason;
    g.prompt_tokens = static_cast<int64_t>(batch[i]->prompt.size());
    g.completion_tokens = static_cast<int64_t>(out.tokens.size());
    g.latency_ms = ms;
    g.prompt_token_ids = batch[i]->prompt;
    g.completion_token_ids = out.tokens;
    g.completion_logprobs = out.logprobs;
    results.emplace_back(std::move(g));
  }
  return results;
}

}  // namespace kevin::train
