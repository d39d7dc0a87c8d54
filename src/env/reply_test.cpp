// reply_test.cpp — which block is the candidate, what the summary is, the parse errors a
// model gets for missing or truncated code, and the rules each driver reads replies by.
#include "env/reply.h"

#include <gtest/gtest.h>

namespace kevin::env {
namespace {

TEST(ResponseParser, LastCodeBlockAndSummary) {
  const auto r = parse_response(
      "<think>try tiling\nmore</think>\nFirst idea:\n```cuda\nint "
      "old;\n```\nBetter:\n```python\nprint(1)\n```\n"
      "```cpp\nint kevin_forward;\n```\nI fused the loops and vectorised loads.\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.code, "int kevin_forward;\n");
  EXPECT_EQ(r.summary, "I fused the loops and vectorised loads.");
  EXPECT_EQ(r.reasoning, "try tiling\nmore");
}

TEST(ResponseParser, UntaggedFencesCrlfAndLongerFences) {
  const auto r = parse_response("````\r\ncode with ``` inside\r\n````\r\nsummary\r\n");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.code, "code with ``` inside\r\n");
  EXPECT_EQ(r.summary, "summary");
}

TEST(ResponseParser, ReasoningWithoutOpeningTag) {
  // Servers that strip <think> from the content leave only the closing tag.
  const auto r = parse_response("thinking...</think>```c++\nx\n```");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.reasoning, "thinking...");
  EXPECT_EQ(r.code, "x\n");
  EXPECT_EQ(r.summary, "");
}

TEST(ResponseParser, Errors) {
  EXPECT_NE(parse_response("just words").error.find("no fenced code block"), std::string::npos);
  EXPECT_NE(parse_response("```cuda\nint x;\n").error.find("never closed"), std::string::npos);
  EXPECT_NE(parse_response("<think>long reasoning cut off").error.find("inside its reasoning"),
            std::string::npos);
  EXPECT_NE(parse_response("```cuda\n   \n```").error.find("empty"), std::string::npos);
  EXPECT_NE(parse_response("```python\nx=1\n```").error.find("no fenced code block"),
            std::string::npos);
  EXPECT_FALSE(parse_response("").ok);
}

TEST(ResponseParser, KernelBenchAnswersAreTheLastPythonBlock) {
  constexpr auto kKb = engine::CandidateFormat::kKernelBench;
  const auto r = parse_response(
      "```cuda\nint x;\n```\n```python\nfirst\n```\n```py\nclass ModelNew: pass\n```\nsaid", 100,
      kKb);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.code, "class ModelNew: pass\n");
  EXPECT_EQ(r.summary, "said");
  const auto none = parse_response("```cuda\nint x;\n```", 100, kKb);
  EXPECT_FALSE(none.ok);
  EXPECT_NE(none.error.find("```python"), std::string::npos) << none.error;
  EXPECT_NE(parse_response("```python\nclass ModelNew:\n", 100, kKb).error.find("never closed"),
            std::string::npos);
}

TEST(ResponseParser, SummaryIsCapped) {
  const auto r = parse_response("```cuda\nx\n```\n" + std::string(5000, 's'), 100);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.summary.size(), 100u);
}

const std::string kBareKernel = "extern \"C\" int kevin_forward(const kevin_args*) { return 0; }\n";

TEST(ReadReply, AModelsOwnReplyMustFenceItsCode) {
  const Action bare = read_reply(kBareKernel, ReplyRules{});
  EXPECT_FALSE(bare.parsed);
  EXPECT_NE(bare.parse_error.find("no fenced code block"), std::string::npos) << bare.parse_error;
  const Action fenced =
      read_reply("<think>plan</think>\n```cuda\n" + kBareKernel + "```\nDone.\n", ReplyRules{});
  ASSERT_TRUE(fenced.parsed) << fenced.parse_error;
  EXPECT_EQ(fenced.code, kBareKernel);
  EXPECT_EQ(fenced.summary, "Done.");
  EXPECT_EQ(fenced.reasoning, "plan");
}

TEST(ReadReply, AnUnfencedReplyDefiningTheEntryPointIsTheSourceWhereClientsStripFences) {
  ReplyRules rules;
  rules.unfenced = Unfenced::kEntryDefined;
  const Action bare = read_reply(kBareKernel, rules);
  ASSERT_TRUE(bare.parsed);
  EXPECT_EQ(bare.code, kBareKernel);
  EXPECT_FALSE(read_reply("I could not write it.", rules).parsed) << "no entry point: prose";
  EXPECT_FALSE(
      read_reply("I would call kevin_forward, but I have no code.\n```\nunfinished", rules).parsed)
      << "a reply with a fence is read for its fenced block";
  rules.either_format = true;
  const Action model_new =
      read_reply("import torch\nclass ModelNew(torch.nn.Module):\n  pass\n", rules);
  EXPECT_TRUE(model_new.parsed) << "a bare KernelBench answer defines class ModelNew";
}

TEST(ReadReply, ARequestFieldThatHoldsCodeIsTheSourceUnlessFenced) {
  ReplyRules rules;
  rules.unfenced = Unfenced::kAlwaysSource;
  const Action text = read_reply("int x;", rules);
  ASSERT_TRUE(text.parsed);
  EXPECT_EQ(text.code, "int x;");
  const Action fenced = read_reply("Here:\n```cpp\nint y;\n```\n", rules);
  ASSERT_TRUE(fenced.parsed);
  EXPECT_EQ(fenced.code, "int y;\n");
}

TEST(ReadReply, EitherFormatReadsAPythonBlockAsAKernelBenchAnswer) {
  ReplyRules rules;
  rules.either_format = true;
  const Action python = read_reply("```python\nclass ModelNew: pass\n```\n", rules);
  ASSERT_TRUE(python.parsed) << python.parse_error;
  EXPECT_EQ(python.code, "class ModelNew: pass\n");
  const Action cuda = read_reply("```cuda\n" + kBareKernel + "```\n", rules);
  ASSERT_TRUE(cuda.parsed) << cuda.parse_error;
  EXPECT_EQ(cuda.code, kBareKernel);
  rules.either_format = false;
  EXPECT_FALSE(read_reply("```python\nclass ModelNew: pass\n```\n", rules).parsed)
      << "kevin's format alone: a python block is not the answer";
}

TEST(ReadReply, AReplyCutOffAtTheTokenLimitSaysSo) {
  ReplyRules rules;
  rules.cut_off_at_tokens = 512;
  const Action cut = read_reply("```cuda\nint kevin_forw", rules);
  EXPECT_FALSE(cut.parsed);
  EXPECT_EQ(cut.parse_error.rfind("the response was cut off at the token limit (512 tokens)", 0),
            0u)
      << cut.parse_error;
  EXPECT_TRUE(read_reply("```cuda\nint x;\n```\n", rules).parsed)
      << "a reply with its block whole is used however it ended";
}

}  // namespace
}  // namespace kevin::env
