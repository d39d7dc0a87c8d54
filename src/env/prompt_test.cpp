// prompt_test.cpp — prompt contents per turn, history order, no carried reasoning, and the
// context budget (oldest turns dropped first, long feedback truncated).
#include "env/prompt.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "engine/build/compiler.h"
#include "engine/gates/elf.h"
#include "engine/gates/gate.h"
#include "engine/gates/symbol_gate.h"
#include "env/reply.h"
#include "sys/tempdir.h"

namespace kevin::env {
namespace {

const std::string kProblem =
    "Task level1/028_gelu\n```python\nclass Model: ...\n```\ninputs[0] x float32[8, 8]\n";

TEST(Prompt, FirstTurnHasProblemRulesExampleAndSummaryRequest) {
  const Prompt p = build_prompt(kProblem, {}, {});
  ASSERT_EQ(p.messages.size(), 2u);
  const std::string& user = p.messages[1].content;
  EXPECT_NE(user.find(kProblem), std::string::npos);
  EXPECT_NE(user.find("kevin_forward"), std::string::npos);
  EXPECT_NE(user.find("no host or device memory allocation"), std::string::npos);
  EXPECT_NE(user.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(user.find("Example of the expected form"), std::string::npos);
  EXPECT_NE(user.find("summarising"), std::string::npos);
  EXPECT_EQ(p.turns_included, 0u);
}

TEST(Prompt, LaterTurnsCarryKernelSummaryFeedbackButNoExampleOrReasoning) {
  const std::vector<TurnRecord> history = {
      {"int first_kernel;", "naive version", "compile error: x"},
      {"int second_kernel;", "tiled", "correct, speedup 1.20x"}};
  const Prompt p = build_prompt(kProblem, history, {});
  const std::string& user = p.messages[1].content;
  EXPECT_EQ(user.find("Example of the expected form"), std::string::npos)
      << "one-shot example on turn 1 only";
  const size_t a = user.find("int first_kernel;"), b = user.find("int second_kernel;");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_LT(a, b) << "chronological order";
  EXPECT_NE(user.find("Your summary: tiled"), std::string::npos);
  EXPECT_NE(user.find("Feedback: correct, speedup 1.20x"), std::string::npos);
  EXPECT_NE(user.find("Think again from the start"), std::string::npos);
  EXPECT_EQ(p.turns_included, 2u);
  EXPECT_EQ(p.turns_dropped, 0u);
}

TEST(Prompt, BudgetDropsOldestTurnsFirst) {
  std::vector<TurnRecord> history;
  for (int i = 0; i < 6; ++i) {
    history.push_back({"// kernel " + std::to_string(i) + "\n" + std::string(3000, 'k'),
                       "s" + std::to_string(i), "ok"});
  }
  PromptConfig c;
  c.context_tokens = 4000;
  const Prompt p = build_prompt(kProblem, history, c);
  EXPECT_GT(p.turns_dropped, 0u);
  EXPECT_EQ(p.turns_dropped + p.turns_included, 6u);
  EXPECT_LE(p.estimated_tokens, c.context_tokens);
  const std::string& user = p.messages[1].content;
  EXPECT_NE(user.find("// kernel 5"), std::string::npos) << "the newest turn is kept";
  EXPECT_EQ(user.find("// kernel 0"), std::string::npos) << "the oldest turn is dropped";
  EXPECT_NE(user.find("oldest are left out"), std::string::npos);
}

TEST(Prompt, LongFeedbackIsTruncatedInTheMiddle) {
  const std::string log = "first line\n" + std::string(20000, 'x') + "\nlast line";
  const std::string t = truncate_middle(log, 300);
  EXPECT_LT(t.size(), 400u);
  EXPECT_EQ(t.rfind("first line", 0), 0u);
  EXPECT_NE(t.find("last line"), std::string::npos);
  EXPECT_NE(t.find("characters omitted"), std::string::npos);
  EXPECT_EQ(truncate_middle("short", 300), "short");
  const Prompt p = build_prompt(kProblem, {{"int k;", "", log}}, {});
  EXPECT_NE(p.messages[1].content.find("characters omitted"), std::string::npos);
}

TEST(Prompt, KernelBenchFormatAsksForModelNewInPython) {
  PromptConfig c;
  c.format = engine::CandidateFormat::kKernelBench;
  const Prompt first = build_prompt(kProblem, {}, c);
  const std::string& user = first.messages[1].content;
  EXPECT_NE(user.find("class ModelNew(nn.Module)"), std::string::npos);
  EXPECT_NE(user.find("load_inline"), std::string::npos);
  EXPECT_NE(user.find("cuda_sources"), std::string::npos);
  EXPECT_EQ(user.find("kevin_forward"), std::string::npos);
  const Prompt later = build_prompt(kProblem, {{"class ModelNew: ...", "s", "Feedback text"}}, c);
  EXPECT_NE(later.messages[1].content.find("```python\nclass ModelNew: ..."), std::string::npos);
  c.backend = "cpu";
  EXPECT_EQ(build_prompt(kProblem, {}, c).messages[1].content.find("cuda_sources"),
            std::string::npos);
}

TEST(Prompt, RulesListTheGatesOwnAllowedHeaders) {
  for (const char* backend : {"cuda", "cpu"}) {
    PromptConfig c;
    c.backend = backend;
    const Prompt p = build_prompt(kProblem, {}, c);
    const auto b = std::string(backend) == "cuda" ? engine::Backend::kCuda : engine::Backend::kCpu;
    EXPECT_NE(p.messages[1].content.find("Allowed headers: \"kevin_abi.h\" and " +
                                         engine::allowed_includes_text(b)),
              std::string::npos)
        << backend << "\n"
        << p.messages[1].content;
  }
}

TEST(Prompt, CpuBackendSpeaksOfCpp) {
  PromptConfig c;
  c.backend = "cpu";
  const Prompt p = build_prompt(kProblem, {}, c);
  EXPECT_NE(p.messages[1].content.find("```cpp"), std::string::npos);
  EXPECT_EQ(p.messages[1].content.find("cudaStream_t"), std::string::npos);
  EXPECT_EQ(estimate_tokens("abcdef"), 2u);
  EXPECT_EQ(estimate_tokens("abcdefg"), 3u);
}

}  // namespace
}  // namespace kevin::env

namespace kevin::env {
namespace {

// The one-shot examples must themselves be acceptable candidates: past both gates and,
// for the CPU one, through the compiler.
TEST(Prompt, ExamplesPassTheGates) {
  for (const char* backend : {"cuda", "cpu"}) {
    PromptConfig c;
    c.backend = backend;
    const ParsedResponse example =
        parse_response(build_prompt(kProblem, {}, c).messages[1].content);
    ASSERT_TRUE(example.ok) << backend;
    const auto b = *engine::backend_from_name(backend);
    EXPECT_FALSE(engine::check_source(example.code, b).has_value())
        << backend << ": " << engine::check_source(example.code, b)->detail;
  }
  auto cache = sys::TempDir::create("kevin-prompt-test-");
  ASSERT_TRUE(cache.is_ok());
  engine::CompilerConfig cc;
  cc.backend = engine::Backend::kCpu;
  cc.cache_dir = cache->path();
  cc.abi_include_dir = std::filesystem::path(KEVIN_SOURCE_DIR) / "src/engine/abi";
  cc.sandbox_path = std::filesystem::path(KEVIN_BUILD_DIR) / "bin/kevin-sandbox";
  auto driver = engine::CompileDriver::create(cc);
  ASSERT_TRUE(driver.is_ok());
  PromptConfig cpu;
  cpu.backend = "cpu";
  auto built =
      driver->build(parse_response(build_prompt(kProblem, {}, cpu).messages[1].content).code);
  ASSERT_TRUE(built.is_ok());
  EXPECT_TRUE(built->ok) << built->log;
  auto image = read_file(built->object);
  ASSERT_TRUE(image.is_ok());
  auto symbols = engine::read_elf_symbols(*image);
  ASSERT_TRUE(symbols.is_ok());
  EXPECT_FALSE(engine::check_symbols(*symbols, engine::Backend::kCpu, 0).has_value());
}

}  // namespace
}  // namespace kevin::env
