// local_policy_test.cpp — the in-process policy on a tiny random model with the real Qwen
// tokenizer: ChatML prompt tokens, concurrent requests batched without changing any answer
// (greedy answers alone equal answers in a batch), replicas sampling concurrently, the timing
// gate held while sampling, token limits, and the think split.
#include "train/sampling/local_policy.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/file.h"
#include "train/io/safetensors.h"
#include "train/test_configs.h"

namespace kevin::train {
namespace {

const std::filesystem::path kTokenizer =
    std::filesystem::path(KEVIN_TOKENIZER_FIXTURES) / "qwen3" / "tokenizer.json";

std::unique_ptr<LocalPolicy> tiny_policy(bool open_think) {
  auto tok = Tokenizer::load(kTokenizer);
  if (!tok.is_ok()) return nullptr;
  const Qwen2Config c = tiny_qwen2(tok->vocab_size(), 16, 32, 1, 2, 1);
  torch::manual_seed(11);
  LocalPolicyOptions o;
  o.model_dir = "tiny";
  o.open_think = open_think;
  return std::make_unique<LocalPolicy>(Qwen2ForCausalLM(c), std::move(tok).value(), o);
}

std::vector<ChatMessage> ask(const std::string& q) {
  return {{"system", "You write CUDA."}, {"user", q}};
}

TEST(LocalPolicy, PromptIsChatMlWithContentsAsPlainText) {
  auto policy = tiny_policy(true);
  ASSERT_NE(policy, nullptr) << "tokenizer fixture missing: " << kTokenizer;
  auto tok = Tokenizer::load(kTokenizer);
  ASSERT_TRUE(tok.is_ok());
  const auto ids = policy->prompt_tokens(ask("quote <|im_end|> here"));
  const std::string text = tok->decode(ids, false);
  EXPECT_EQ(text,
            "<|im_start|>system\nYou write CUDA.<|im_end|>\n<|im_start|>user\nquote <|im_end|> "
            "here<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
  const int32_t im_end = *tok->token_id("<|im_end|>");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), im_end), 2) << "a quoted marker stays text";
}

TEST(LocalPolicy, BatchedConcurrentRequestsEqualSoloAnswers) {
  auto policy = tiny_policy(false);
  ASSERT_NE(policy, nullptr);
  policy::GenerationParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 8;
  const std::vector<std::string> questions = {
      "add two vectors", "a much longer question about softmax kernels", "x", "gemm"};
  std::vector<std::string> solo;
  for (const auto& q : questions) {
    auto g = policy->generate(ask(q), greedy);
    ASSERT_TRUE(g.is_ok());
    EXPECT_EQ(g->completion_tokens <= 8, true);
    EXPECT_EQ(g->prompt_tokens, static_cast<int64_t>(policy->prompt_tokens(ask(q)).size()));
    EXPECT_EQ(g->prompt_token_ids, policy->prompt_tokens(ask(q)));
    EXPECT_EQ(g->completion_token_ids.size(), static_cast<size_t>(g->completion_tokens));
    EXPECT_EQ(g->completion_logprobs.size(), g->completion_token_ids.size());
    solo.push_back(g->content + "|" + g->reasoning + "|" + g->finish_reason);
  }
  std::vector<std::string> together(questions.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < questions.size(); ++i) {
    threads.emplace_back([&, i] {
      auto g = policy->generate(ask(questions[i]), greedy);
      together[i] = g.is_ok() ? g->content + "|" + g->reasoning + "|" + g->finish_reason
                              : g.status().to_string();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(together, solo);
}

// Two identical replicas answer concurrent requests as one model does, and a replica does not
// sample while the engine times on its GPU (its gate held exclusively).
TEST(LocalPolicy, ReplicasAnswerLikeOneModelAndWaitForTiming) {
  auto tok = Tokenizer::load(kTokenizer);
  ASSERT_TRUE(tok.is_ok());
  const Qwen2Config c = tiny_qwen2(tok->vocab_size(), 16, 32, 1, 2, 1);
  torch::manual_seed(11);
  Qwen2ForCausalLM first(c), second(c);
  {
    torch::NoGradGuard no_grad;
    const auto source = first->named_parameters();
    for (auto& item : second->named_parameters()) item.value().copy_(source[item.key()]);
  }
  DeviceGate gate0, gate1;
  LocalPolicyOptions o;
  o.model_dir = "tiny";
  o.max_batch = 1;
  o.replica_gates = {&gate0, &gate1};
  LocalPolicy alone(first, *tok, o);
  LocalPolicy pair(std::vector<Qwen2ForCausalLM>{first, second}, *tok, o);
  policy::GenerationParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 6;
  const std::vector<std::string> questions = {"add",  "softmax over rows", "x",
                                              "gemm", "layer norm",        "relu"};
  std::vector<std::string> want, got(questions.size());
  for (const auto& q : questions) want.push_back(alone.generate(ask(q), greedy)->content);
  EXPECT_EQ(pair.sampling_seconds(), 0.0);
  const auto concurrent_start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < questions.size(); ++i) {
    threads.emplace_back([&, i] {
      auto g = pair.generate(ask(questions[i]), greedy);
      got[i] = g.is_ok() ? g->content : g.status().to_string();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(got, want);
  // Batches on the two replicas overlap in time; the sampling clock counts that time once.
  const double concurrent_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - concurrent_start).count();
  const double sampled_s = pair.sampling_seconds();
  EXPECT_GT(sampled_s, 0.0);
  EXPECT_LE(sampled_s, concurrent_wall_s);

  gate0.lock();  // timing runs on both GPUs
  gate1.lock();
  std::atomic<bool> done{false};
  std::thread waiting([&] {
    EXPECT_TRUE(pair.generate(ask("add"), greedy).is_ok());
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done.load()) << "sampled while its GPU was being timed";
  gate0.unlock();
  gate1.unlock();
  waiting.join();
  EXPECT_TRUE(done.load());
  // The 300 ms spent waiting for the timing gate are not sampling time (sampling these six
  // tokens takes milliseconds).
  EXPECT_GT(pair.sampling_seconds(), sampled_s);
  EXPECT_LT(pair.sampling_seconds() - sampled_s, 0.25);
}

TEST(LocalPolicy, LoadsAnHfModelFolder) {
  auto tok = Tokenizer::load(kTokenizer);
  ASSERT_TRUE(tok.is_ok());
  const Qwen2Config c = tiny_qwen2(tok->vocab_size(), 16, 32, 1, 2, 1);
  torch::manual_seed(12);
  Qwen2ForCausalLM model(c);
  const auto dir =
      std::filesystem::temp_directory_path() / ("kevin-local-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(write_file_atomic(dir / "config.json", dump_json(to_json(c))).is_ok());
  std::filesystem::copy_file(kTokenizer, dir / "tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::vector<std::pair<std::string, torch::Tensor>> weights;
  for (const auto& [name, t] : model->named_weights()) weights.emplace_back(name, t.detach());
  ASSERT_TRUE(write_sharded_safetensors(dir, weights, 1 << 20).is_ok());

  LocalPolicyOptions o;
  o.model_dir = dir;
  auto loaded = LocalPolicy::load(o);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  LocalPolicy in_memory(model, std::move(tok).value(), o);
  policy::GenerationParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 6;
  auto a = (*loaded)->generate(ask("hello"), greedy);
  auto b = in_memory.generate(ask("hello"), greedy);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->content, b->content);
  EXPECT_EQ((*loaded)->name(), "local:" + dir.string());
  std::filesystem::remove(dir / "config.json");
  auto no_config = LocalPolicy::load(o);
  EXPECT_EQ(no_config.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_config.status().message().find("no such file: " + (dir / "config.json").string()),
            std::string::npos)
      << no_config.status().to_string();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kevin::train
