// response_parser_test.cpp — which block is the candidate, what the summary is, and the
// parse errors a model gets for missing or truncated code.
#include "policy/response_parser.h"

#include <gtest/gtest.h>

namespace kevin::policy {
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

}  // namespace
}  // namespace kevin::policy
