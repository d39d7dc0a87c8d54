// tokenizer_test.cpp — the BPE tokenizer against the real Qwen3 tokenizer (ids from the npm
// port and, when generated on a machine with HF `tokenizers`, from HF itself), round trips of
// any bytes, thread safety, loader errors on small hand-made tokenizers, and ChatML/<think>.
#include "train/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <thread>

#include "core/file.h"

namespace kevin::train {
namespace {

const std::filesystem::path kFixtures = KEVIN_TOKENIZER_FIXTURES;

Json read_json(const std::filesystem::path& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.is_ok()) << text.status().to_string();
  auto j = parse_json(text.value_or("null"));
  EXPECT_TRUE(j.is_ok()) << j.status().to_string();
  return j.value_or(Json());
}

// The real Qwen3 tokenizer, loaded once per process; null when the fixture is absent.
const Tokenizer* qwen() {
  static const std::optional<Tokenizer> tokenizer = []() -> std::optional<Tokenizer> {
    const auto path = kFixtures / "qwen3" / "tokenizer.json";
    if (!std::filesystem::exists(path)) return std::nullopt;
    auto t = Tokenizer::load(path);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    if (!t.is_ok()) return std::nullopt;
    return std::move(t).value();
  }();
  return tokenizer ? &*tokenizer : nullptr;
}

#define REQUIRE_QWEN()                                                \
  if (qwen() == nullptr)                                              \
  GTEST_SKIP() << "no tests/fixtures/tokenizer/qwen3/tokenizer.json " \
                  "(node tests/fixtures/tokenizer/make_fixture.mjs)"

std::vector<std::string> corpus_strings() {
  return read_json(kFixtures / "corpus.json")["strings"].get<std::vector<std::string>>();
}

std::string printable(std::string_view s) {
  constexpr size_t kMax = 80;
  return dump_json(Json(std::string(s.substr(0, kMax)))) + (s.size() > kMax ? "..." : "");
}

// Compares encode() with one reference's ids string by string; returns how many matched.
size_t expect_ids_match(const std::vector<std::string>& strings, const Json& expected,
                        bool allow_special, const std::string& reference) {
  EXPECT_EQ(expected.size(), strings.size()) << reference << " was generated from another corpus";
  size_t matched = 0;
  for (size_t i = 0; i < strings.size() && i < expected.size(); ++i) {
    const auto want = expected[i].get<std::vector<int32_t>>();
    const auto got = qwen()->encode(strings[i], allow_special);
    EXPECT_EQ(got, want) << reference << ", string " << i << ": " << printable(strings[i]);
    matched += got == want ? 1u : 0u;
  }
  return matched;
}

TEST(QwenTokenizer, MatchesTheNpmTokenizerOnTheCorpus) {
  REQUIRE_QWEN();
  const auto strings = corpus_strings();
  ASSERT_GE(strings.size(), 200u);
  const Json expected = read_json(kFixtures / "expected_npm.json");
  const size_t matched = expect_ids_match(strings, expected["ids"], true, "expected_npm.json");
  std::printf("[ tokenizer ] %zu/%zu corpus strings match %s\n", matched, strings.size(),
              expected["generator"].get<std::string>().c_str());
}

// expected_hf.json comes from dev/tokenizer/make_hf_fixture.py on a machine with HF tokenizers.
TEST(QwenTokenizer, MatchesHuggingFaceWhenItsFixtureExists) {
  const auto path = kFixtures / "expected_hf.json";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "no expected_hf.json (dev/tokenizer/make_hf_fixture.py)";
  REQUIRE_QWEN();
  const auto strings = corpus_strings();
  const Json expected = read_json(path);
  const size_t matched = expect_ids_match(strings, expected["ids"], true, "expected_hf.json");
  std::printf("[ tokenizer ] %zu/%zu corpus strings match %s\n", matched, strings.size(),
              expected["generator"].get<std::string>().c_str());
  if (expected.contains("ids_special_as_text")) {
    expect_ids_match(strings, expected["ids_special_as_text"], false,
                     "expected_hf.json (special as text)");
  }
  const Json decoded = expected.value("decoded_skip_special", Json::array());
  for (size_t i = 0; i < strings.size() && i < decoded.size(); ++i) {
    EXPECT_EQ(qwen()->decode(expected["ids"][i].get<std::vector<int32_t>>(), true),
              decoded[i].get<std::string>())
        << "decode(skip_special), string " << i;
  }
  if (!expected.contains("chats")) return;  // written without transformers
  const Json chats = read_json(kFixtures / "corpus.json")["chats"];
  const Json& rendered = expected["chats"];
  ASSERT_EQ(rendered.size(), chats.size());
  for (size_t i = 0; i < chats.size(); ++i) {
    std::vector<ChatTurn> turns;
    for (const Json& m : chats[i]["messages"])
      turns.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    const std::string text =
        render_chatml(turns, chats[i]["add_generation_prompt"].get<bool>(), false);
    EXPECT_EQ(text, rendered[i]["text"].get<std::string>()) << "chat " << i;
    EXPECT_EQ(qwen()->encode(text), rendered[i]["ids"].get<std::vector<int32_t>>()) << "chat " << i;
  }
}

TEST(QwenTokenizer, DecodeInvertsEncodeOnTheCorpus) {
  REQUIRE_QWEN();
  for (const std::string& s : corpus_strings()) {
    EXPECT_EQ(qwen()->decode(qwen()->encode(s)), s) << printable(s);
    EXPECT_EQ(qwen()->decode(qwen()->encode(s, false)), s) << printable(s);
  }
}

TEST(QwenTokenizer, SpecialAndAddedTokens) {
  REQUIRE_QWEN();
  const Tokenizer& t = *qwen();
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.token_id(kEndOfText), 151643);
  EXPECT_EQ(t.token_id(kImStart), 151644);
  EXPECT_EQ(t.token_id(kImEnd), 151645);
  EXPECT_EQ(t.token_id(kThinkOpen), 151667);
  EXPECT_EQ(t.token_id(kThinkClose), 151668);
  EXPECT_EQ(t.token_id("\n"), 198);  // vocabulary entries by their bytes ("Ċ" in the file)
  EXPECT_EQ(t.token_id(" the"), 279);
  EXPECT_FALSE(t.token_id("<|no such token|>").has_value());
  EXPECT_TRUE(t.is_special(151645));
  EXPECT_FALSE(t.is_special(151667));  // <think> is added but not special
  EXPECT_FALSE(t.is_special(198));

  const std::string text = "<|im_start|>user\nhi<|im_end|><think>x</think>";
  const std::vector<int32_t> ids = t.encode(text);
  EXPECT_EQ(ids, (std::vector<int32_t>{151644, 872, 198, 6023, 151645, 151667, 87, 151668}));
  EXPECT_EQ(t.decode(ids), text);
  EXPECT_EQ(t.decode(ids, true), "user\nhi<think>x</think>");

  // Special tokens as plain text: markers are spelled out, <think> (not special) stays one id.
  const std::vector<int32_t> plain = t.encode(text, false);
  for (const int32_t id : {151644, 151645})
    EXPECT_EQ(std::count(plain.begin(), plain.end(), id), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 151667), 1);
  EXPECT_EQ(t.decode(plain), text);

  EXPECT_EQ(t.decode(std::vector<int32_t>{-1, 9707, 151669, 1 << 30, 11}),
            "Hello,");  // unknown ids skipped
}

TEST(QwenTokenizer, ChatmlPromptTokens) {
  REQUIRE_QWEN();
  const std::string prompt = render_chatml({{"user", "hi"}}, true, true);
  EXPECT_EQ(qwen()->encode(prompt), (std::vector<int32_t>{151644, 872, 198, 6023, 151645, 198,
                                                          151644, 77091, 198, 151667, 198}));
}

std::string random_bytes(std::mt19937& rng, size_t max_len) {
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string s(len(rng), '\0');
  for (char& c : s) c = static_cast<char>(byte(rng));
  return s;
}

TEST(QwenTokenizer, AnyBytesRoundTrip) {
  REQUIRE_QWEN();
  std::mt19937 rng(20250701);
  const auto strings = corpus_strings();
  std::uniform_int_distribution<size_t> pick(0, strings.size() - 1);
  for (int i = 0; i < 3000; ++i) {
    // Random bytes alone, and spliced into real text so invalid runs sit next to valid pieces.
    const std::string s = i % 2 == 0
                              ? random_bytes(rng, 64)
                              : strings[pick(rng)] + random_bytes(rng, 8) + strings[pick(rng)];
    EXPECT_EQ(qwen()->decode(qwen()->encode(s)), s) << printable(s);
  }
  // Invalid bytes form their own pieces; the valid text around them splits as usual.
  const Tokenizer& t = *qwen();
  for (const std::string& bad :
       {std::string("\xff"), std::string("\xe4\xb8"), std::string("\xc0\xaf"),
        std::string("\xed\xa0\x80"), std::string(1, '\0')}) {
    std::vector<int32_t> want = t.encode("hello");
    for (const int32_t id : t.encode(bad)) want.push_back(id);
    for (const int32_t id : t.encode(" world")) want.push_back(id);
    EXPECT_EQ(t.encode("hello" + bad + " world"), want) << printable(bad);
    EXPECT_EQ(t.decode(t.encode("hello" + bad + " world")), "hello" + bad + " world");
  }
}

TEST(QwenTokenizer, LongInputsAreLossless) {
  REQUIRE_QWEN();
  // One piece each (digits aside), so the merge loop sees 64k symbols at once.
  constexpr size_t kSize = size_t{1} << 16;
  for (const std::string& s :
       {std::string(kSize, ' '), std::string(kSize, 'a'), std::string(kSize, '!'),
        std::string(kSize, '7'), std::string(kSize, '\n') + "x"}) {
    const auto ids = qwen()->encode(s);
    EXPECT_LE(ids.size(), s.size());
    EXPECT_EQ(qwen()->decode(ids), s);
  }
}

TEST(QwenTokenizer, ConcurrentEncodingMatchesSerial) {
  REQUIRE_QWEN();
  const auto strings = corpus_strings();
  std::vector<std::vector<int32_t>> serial;
  for (const auto& s : strings) serial.push_back(qwen()->encode(s));
  std::vector<std::thread> threads;
  std::vector<size_t> mismatches(8, 0);
  for (size_t k = 0; k < mismatches.size(); ++k) {
    threads.emplace_back([&, k] {
      for (int round = 0; round < 5; ++round) {
        for (size_t i = 0; i < strings.size(); ++i) {
          const size_t j = (i * 7 + k * 13 + static_cast<size_t>(round)) % strings.size();
          mismatches[k] += qwen()->encode(strings[j]) == serial[j] ? 0u : 1u;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const size_t m : mismatches) EXPECT_EQ(m, 0u);
}

// ---- small hand-made tokenizers -----------------------------------------------------------

// A byte-level vocabulary (ids 0-255 for the bytes, then `extra` in order), Qwen's pre-tokenizer
// shape with a simpler regex, and `merges` as given.
Json tiny(const Json& merges, const std::vector<std::string>& extra, Json added = Json::array()) {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[to_byte_level(std::string(1, static_cast<char>(b)))] = b;
  int next = 256;
  for (const auto& token : extra) vocab[to_byte_level(token)] = next++;
  const Json split = {{"type", "Split"},
                      {"pattern", {{"Regex", " ?\\p{L}+|\\p{N}|\\s+|[^\\s\\p{L}\\p{N}]+"}}},
                      {"behavior", "Isolated"},
                      {"invert", false}};
  const Json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  return {{"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
          {"added_tokens", std::move(added)},
          {"decoder", {{"type", "ByteLevel"}}}};
}

Tokenizer make(const Json& j) {
  auto t = Tokenizer::from_json(j);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return std::move(t).value();
}

TEST(TinyTokenizer, MergesApplyByRankLeftmostFirst) {
  const std::vector<std::string> extra = {"ab", "bc", "abc", "aa", "aaaa"};
  // (a,b) before (b,c): "abc" → "ab" "c"; the other order gives "a" "bc"; (ab,c) then joins.
  EXPECT_EQ(make(tiny({"a b", "b c"}, extra)).encode("abc"), (std::vector<int32_t>{256, 99}));
  EXPECT_EQ(make(tiny({"b c", "a b"}, extra)).encode("abc"), (std::vector<int32_t>{97, 257}));
  EXPECT_EQ(make(tiny({"a b", "b c", "ab c"}, extra)).encode("abc"), (std::vector<int32_t>{258}));
  // Ties go to the leftmost pair: "aaa" → "aa" "a"; "aaaa" → "aa" "aa" → "aaaa".
  const Tokenizer t = make(tiny({"a a", "aa aa"}, extra));
  EXPECT_EQ(t.encode("aaa"), (std::vector<int32_t>{259, 97}));
  EXPECT_EQ(t.encode("aaaa"), (std::vector<int32_t>{260}));
  EXPECT_EQ(t.encode("aaaaa"), (std::vector<int32_t>{260, 97}));
}

TEST(TinyTokenizer, MergesAsPairsEqualMergesAsStrings) {
  const std::vector<std::string> extra = {" a", " ab", "ab"};
  const Tokenizer strings = make(tiny({"Ġ a", "a b", "Ġa b"}, extra));
  const Tokenizer pairs = make(tiny(
      Json::array({Json::array({"Ġ", "a"}), Json::array({"a", "b"}), Json::array({"Ġa", "b"})}),
      extra));
  EXPECT_EQ(strings.encode("ab ab abc"), (std::vector<int32_t>{258, 257, 257, 99}));
  EXPECT_EQ(pairs.encode("ab ab abc"), strings.encode("ab ab abc"));
}

TEST(TinyTokenizer, IgnoreMergesTakesWholePiecesFromTheVocabulary) {
  Json j = tiny(Json::array(), {"hello"});
  EXPECT_EQ(make(j).encode("hello").size(), 5u);
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(make(j).encode("hello"), (std::vector<int32_t>{256}));
}

TEST(TinyTokenizer, AddedTokensLeftmostThenLongest) {
  const Json added = {{{"id", 300}, {"content", "<a>"}, {"special", true}},
                      {{"id", 301}, {"content", "<a>b"}, {"special", false}},
                      {{"id", 302}, {"content", "a>b"}, {"special", false}}};
  const Tokenizer t = make(tiny(Json::array(), {}, added));
  EXPECT_EQ(t.encode("<a>bc"), (std::vector<int32_t>{301, 99}));  // longest at the leftmost start
  EXPECT_EQ(t.encode("x<a>"), (std::vector<int32_t>{120, 300}));
  EXPECT_EQ(t.encode("<a>", false), (std::vector<int32_t>{60, 97, 62}));  // special off: plain text
  EXPECT_EQ(t.encode("<a>b", false), (std::vector<int32_t>{301}));  // non-special still matched
  EXPECT_EQ(t.decode(std::vector<int32_t>{300, 301, 302}, true), "<a>ba>b");
}

TEST(TinyTokenizer, WithoutSplitTheWholeTextIsOnePiece) {
  Json j = tiny({"a Ġ"}, {"a "});
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  EXPECT_EQ(make(j).encode("a a"), (std::vector<int32_t>{256, 97}));
}

void expect_rejected(const Json& j, StatusCode code, const std::string& mentions) {
  auto t = Tokenizer::from_json(j);
  ASSERT_FALSE(t.is_ok()) << "accepted: " << mentions;
  EXPECT_EQ(t.status().code(), code) << t.status().to_string();
  EXPECT_NE(t.status().message().find(mentions), std::string::npos) << t.status().to_string();
}

TEST(TinyTokenizer, RejectsWhatItCannotImplementOrMalformedFiles) {
  const Json base = tiny({"a b"}, {"ab"});
  Json j = base;
  j["normalizer"] = {{"type", "NFKC"}};
  expect_rejected(j, StatusCode::kUnimplemented, "normalizer");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = true;
  expect_rejected(j, StatusCode::kUnimplemented, "use_regex");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {{"Regex", "(unclosed"}};
  expect_rejected(j, StatusCode::kInvalidArgument, "regex");
  j = base;
  j["model"]["merges"] = {"a c"};
  expect_rejected(j, StatusCode::kInvalidArgument, "merges[0]");
  j = base;
  j["model"]["merges"] = {"a b c"};
  expect_rejected(j, StatusCode::kInvalidArgument, "merges[0]");
  j = base;
  j["model"]["vocab"].erase("Ġ");
  expect_rejected(j, StatusCode::kInvalidArgument, "byte 32");
  j = base;
  j["model"]["vocab"]["zz"] = 5;
  expect_rejected(j, StatusCode::kInvalidArgument, "used twice");
  j = base;
  j["model"]["vocab"]["\xe4\xb8\xad"] = 900;
  expect_rejected(j, StatusCode::kInvalidArgument, "not a byte-level token");
  j = base;
  j["model"]["dropout"] = 0.1;
  expect_rejected(j, StatusCode::kUnimplemented, "dropout");
  j = base;
  j["added_tokens"] = {{{"id", 400}, {"content", "<x>"}, {"lstrip", true}}};
  expect_rejected(j, StatusCode::kUnimplemented, "lstrip");
  j = base;
  j["model"]["type"] = "WordPiece";
  expect_rejected(j, StatusCode::kUnimplemented, "BPE");
  expect_rejected(Json::array(), StatusCode::kInvalidArgument, "object");

  EXPECT_EQ(Tokenizer::load(kFixtures / "no-such-tokenizer.json").status().code(),
            StatusCode::kNotFound);
}

TEST(ByteLevel, SpellsBytesLikeGpt2) {
  EXPECT_EQ(to_byte_level("a b\n"), "aĠbĊ");
  EXPECT_EQ(to_byte_level(std::string("\x00\x7f\xad\xff", 4)), "ĀġŃÿ");
}

// ---- ChatML and <think> --------------------------------------------------------------------

TEST(Chatml, RendersTurnsAndTheGenerationPrompt) {
  const std::vector<ChatTurn> turns = {{"system", "S"}, {"user", "U\nmore"}, {"assistant", "A"}};
  EXPECT_EQ(render_chatml(turns, false, false),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU\nmore<|im_end|>\n"
            "<|im_start|>assistant\nA<|im_end|>\n");
  EXPECT_EQ(render_chatml({{"user", "hi"}}, true, false),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chatml({{"user", "hi"}}, true, true),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(render_chatml({{"user", "hi"}}, false, true), "<|im_start|>user\nhi<|im_end|>\n");
  EXPECT_EQ(render_chatml({}, true, false), "<|im_start|>assistant\n");
}

TEST(Chatml, SplitThink) {
  // QwQ: the prompt opened the thought, so the text starts inside it.
  ThinkSplit s = split_think("Let me see.\n</think>\n\nThe answer.", true);
  EXPECT_TRUE(s.has_think);
  EXPECT_TRUE(s.think_closed);
  EXPECT_EQ(s.reasoning, "Let me see.");
  EXPECT_EQ(s.answer, "The answer.");
  // An explicit opening tag, after whitespace; only the first </think> closes.
  s = split_think("\n<think>\nhmm\n\n</think>\n\nA </think> B", false);
  EXPECT_EQ(s.reasoning, "hmm");
  EXPECT_EQ(s.answer, "A </think> B");
  // Cut off mid-thought: all reasoning, no answer.
  s = split_think("still thinking...", true);
  EXPECT_TRUE(s.has_think);
  EXPECT_FALSE(s.think_closed);
  EXPECT_EQ(s.reasoning, "still thinking...");
  EXPECT_EQ(s.answer, "");
  // No thought at all.
  s = split_think("just an answer </think>", false);
  EXPECT_FALSE(s.has_think);
  EXPECT_EQ(s.answer, "just an answer </think>");
  EXPECT_EQ(s.reasoning, "");
  s = split_think("", false);
  EXPECT_FALSE(s.has_think);
  EXPECT_EQ(s.answer, "");
}

}  // namespace
}  // namespace kevin::train
