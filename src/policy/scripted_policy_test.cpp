// scripted_policy_test.cpp — script loading, matching and exhaustion.
#include "policy/scripted_policy.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "sys/tempdir.h"

namespace kevin::policy {
namespace {

TEST(ScriptedPolicy, MatchesFirstUnusedLineAndSplitsReasoning) {
  auto dir = sys::TempDir::create("kevin-script-");
  ASSERT_TRUE(dir.is_ok());
  const auto file = dir->path() / "script.jsonl";
  ASSERT_TRUE(write_file_atomic(
                  file,
                  "{\"match\": \"gelu\", \"response\": \"<think>g</think>gelu answer\"}\n"
                  "{\"response\": \"any answer\", \"finish_reason\": \"length\"}\n"
                  "{\"match\": \"gelu\", \"response\": \"second gelu\", \"reasoning\": \"r\"}\n")
                  .is_ok());
  auto p = ScriptedPolicy::load(file);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  auto a = (*p)->generate({{"user", "task gelu"}}, {});
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->content, "gelu answer");
  EXPECT_EQ(a->reasoning, "g");
  auto b = (*p)->generate({{"user", "task softmax"}}, {});
  EXPECT_EQ(b->content, "any answer");
  EXPECT_TRUE(b->truncated());
  auto c = (*p)->generate({{"user", "gelu again"}}, {});
  EXPECT_EQ(c->content, "second gelu");
  EXPECT_EQ(c->reasoning, "r");
  EXPECT_EQ((*p)->remaining(), 0u);
  EXPECT_EQ((*p)->generate({{"user", "more"}}, {}).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(ScriptedPolicy, BadFilesAreErrors) {
  auto dir = sys::TempDir::create("kevin-script-");
  ASSERT_TRUE(dir.is_ok());
  EXPECT_EQ(ScriptedPolicy::load(dir->path() / "missing.jsonl").status().code(),
            StatusCode::kNotFound);
  ASSERT_TRUE(write_file_atomic(dir->path() / "bad.jsonl", "{\"text\": 1}\n").is_ok());
  auto bad = ScriptedPolicy::load(dir->path() / "bad.jsonl");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("bad.jsonl line 1: missing field \"response\""),
            std::string::npos)
      << bad.status().to_string();
  ASSERT_TRUE(write_file_atomic(dir->path() / "empty.jsonl", "\n").is_ok());
  auto empty = ScriptedPolicy::load(dir->path() / "empty.jsonl");
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty.jsonl holds no responses"), std::string::npos)
      << empty.status().to_string();
}

}  // namespace
}  // namespace kevin::policy
