// test_models.h — a tiny model folder for tests of the training loop: its vocabulary holds a
// code fence and a FakeEvaluator directive as single tokens, and its weights make sampling
// favour them, so random sampling writes kernels that a FakeEvaluator scores (varied rewards,
// non-zero advantages) without any learning first.
#pragma once

#include <filesystem>

#include "core/file.h"
#include "train/io/model_io.h"
#include "train/test_configs.h"
#include "train/tokenizer/tokenizer.h"

namespace kevin::train {

inline constexpr int32_t kFenceToken = 259, kDirectiveToken = 260, kScorableVocab = 261;

// Bytes 0-255, the ChatML markers (special) and two non-special tokens: "```\n" and a
// FakeEvaluator directive, so "```\n" directive "```\n" is a correct kernel of speedup 2.
inline Json scorable_tokenizer() {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[to_byte_level(std::string(1, static_cast<char>(b)))] = b;
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
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}},
          {"added_tokens", added},
          {"decoder", {{"type", "ByteLevel"}}}};
}

// Writes the model folder (config.json, model.safetensors, tokenizer.json) to `dir`. A
// 1-layer model whose final hidden state is about (4, 0, ..., 0) for every input (a large first
// embedding coordinate, a final norm that keeps only it), so the LM head's first column sets
// the sampling distribution: mostly fences and directives, sometimes <|im_end|>, rarely bytes.
inline Status write_scorable_model(const std::filesystem::path& dir) {
  torch::manual_seed(21);
  Qwen2ForCausalLM model(tiny_qwen2(kScorableVocab, 16, 32, 1, 2, 1));
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
  return write_file_atomic(dir / "tokenizer.json", dump_json(scorable_tokenizer()));
}

}  // namespace kevin::train
