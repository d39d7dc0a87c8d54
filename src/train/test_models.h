// test_models.h — a tiny model folder for tests of the training loop: its vocabulary holds a
// code fence and a FakeEvaluator directive as single tokens, and its weights make sampling
// favour them, so random sampling writes kernels that a FakeEvaluator scores (varied rewards,
// non-zero advantages) without any learning first. Its BPE merges, learned on the prompts' own
// text, keep prompts short (about a third of their bytes), which is most of what the training
// loop's tests spend: attention costs the square of the sequence length.
#pragma once

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "core/file.h"
#include "env/prompt.h"
#include "train/io/model_io.h"
#include "train/test_configs.h"
#include "train/tokenizer/tokenizer.h"

namespace kevin::train {

inline constexpr int32_t kFenceToken = 259, kDirectiveToken = 260, kFirstMergedToken = 261;

// Text the tests' prompts are made of: the fixed parts of build_prompt's prompts (both
// backends, first and later turns) and the usual shape of a task's module.
inline std::string scorable_corpus() {
  std::string text =
      "Problem tasks/vector_add:\n# Fixture task: out = a + b\nimport torch\nimport torch.nn as "
      "nn\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n    "
      "def forward(self, a, b):\n        return a + b\n\n\ndef get_inputs():\n    return "
      "[torch.randn(R, C), torch.randn(R, C)]\n\n\ndef get_init_inputs():\n    return []\n";
  const std::vector<env::TurnRecord> history = {{"int x;", "A summary.", "Feedback text."}};
  for (const char* backend : {"cpu", "cuda"}) {
    env::PromptConfig config;
    config.backend = backend;
    for (const auto& earlier : {std::vector<env::TurnRecord>{}, history}) {
      for (const auto& m : env::build_prompt("", earlier, config).messages) text += m.content;
    }
  }
  return text;
}

// Byte-level BPE merges learned on scorable_corpus() until each of its pre-tokens (the
// tokenizer's Split pattern below, on ASCII) is one token: the most frequent adjacent pair
// first, ties to the smaller pair, so the merges are the same on every run.
inline std::vector<std::pair<std::string, std::string>> scorable_merges() {
  const std::string corpus = scorable_corpus();
  const std::regex pre(" ?[A-Za-z]+|[0-9]|\\s+|[^\\sA-Za-z0-9]+");
  std::map<std::vector<std::string>, int> words;  // pre-token, as symbols → occurrences
  for (auto it = std::sregex_iterator(corpus.begin(), corpus.end(), pre);
       it != std::sregex_iterator(); ++it) {
    std::vector<std::string> symbols;
    for (const char c : it->str()) symbols.push_back(to_byte_level(std::string(1, c)));
    ++words[symbols];
  }
  std::vector<std::pair<std::vector<std::string>, int>> segmented(words.begin(), words.end());
  std::vector<std::pair<std::string, std::string>> merges;
  while (true) {
    std::map<std::pair<std::string, std::string>, int> pairs;
    for (const auto& [symbols, count] : segmented) {
      for (size_t i = 0; i + 1 < symbols.size(); ++i) pairs[{symbols[i], symbols[i + 1]}] += count;
    }
    if (pairs.empty()) return merges;
    const auto best =
        std::max_element(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
          return a.second < b.second;  // the first of the most frequent: the smallest pair
        });
    const auto [left, right] = best->first;
    merges.emplace_back(left, right);
    for (auto& [symbols, count] : segmented) {
      std::vector<std::string> joined;
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
          joined.push_back(left + right);
          ++i;
        } else {
          joined.push_back(symbols[i]);
        }
      }
      symbols = std::move(joined);
    }
  }
}

// Bytes 0-255, the ChatML markers (special), two non-special tokens: "```\n" and a
// FakeEvaluator directive, so "```\n" directive "```\n" is a correct kernel of speedup 2; then
// from kFirstMergedToken the tokens of scorable_merges().
inline Json scorable_tokenizer() {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  int32_t next = kFirstMergedToken;
  Json merges = Json::array();
  for (const auto& [left, right] : scorable_merges()) {
    if (!vocab.contains(left + right)) vocab[left + right] = next++;
    merges.push_back({left, right});
  }
  const Json split = {{"type", "Split"},
                      {"pattern", {{"Regex", " ?\\p{L}+|\\p{N}|\\s+|[^\\s\\p{L}\\p{N}]+"}}},
                      {"behavior", "Isolated"},
                      {"invert", false}};
  const Json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  const Json added = {
      {{"id", 256}, {"content", "<|im_start|>"}, {"special", true}},
      {{"id", 257}, {"content", "<|im_end|>"}, {"special", true}},
      {{"id", 258}, {"content", "<|endoftext|>"}, {"special", true}},
      {{"id", kFenceToken}, {"content", "```\n"}, {"special", false}},
      {{"id", kDirectiveToken}, {"content", "// fake: correct speedup=2\n"}, {"special", false}}};
  return {{"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
          {"added_tokens", added},
          {"decoder", {{"type", "ByteLevel"}}}};
}

// Writes the model folder (config.json, model.safetensors, tokenizer.json) to `dir`. A
// 1-layer model whose final hidden state is about (4, 0, ..., 0) for every input (a large first
// embedding coordinate, a final norm that keeps only it), so the LM head's first column sets
// the sampling distribution: mostly fences and directives, sometimes <|im_end|>, rarely bytes
// or merged tokens.
inline Status write_scorable_model(const std::filesystem::path& dir) {
  const Json tokenizer = scorable_tokenizer();
  const int64_t vocab_size =
      kFirstMergedToken + static_cast<int64_t>(tokenizer["model"]["vocab"].size()) - 256;
  torch::manual_seed(21);
  Qwen2ForCausalLM model(tiny_qwen2(vocab_size, 16, 32, 1, 2, 1));
  {
    torch::NoGradGuard no_grad;
    model->model->embed_tokens->weight.select(1, 0).fill_(10.0);
    model->model->norm->weight.zero_();
    model->model->norm->weight[0] = 1.0;
    auto head = model->lm_head->weight.select(1, 0);
    head.fill_(-2.0);
    head[kFenceToken] = 0.6;
    head[kDirectiveToken] = 0.45;
    head[257] = 0.2;
  }
  KEVIN_RETURN_IF_ERROR(
      save_qwen2_dir(model->config(), model->named_weights(), dir, torch::kFloat32));
  return write_file_atomic(dir / "tokenizer.json", dump_json(tokenizer));
}

}  // namespace kevin::train
