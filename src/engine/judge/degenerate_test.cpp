// degenerate_test.cpp — which trivial outputs pass a task's reference data: an honest task
// has none; a tiny output passes as zeros (and as a constant); a copy of an input; an answer
// that is the same in every set.
#include "engine/judge/degenerate.h"

#include <gtest/gtest.h>

#include "engine/judge/judge_test_support.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {

class Degenerate : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = sys::TempDir::create("kevin-degenerate-").value(); }
  std::vector<std::string> reasons(const std::function<float(float, float)>& f) {
    auto ref = write_sum_reference(dir_.path(), 4096, 3, 2, std::nullopt, f);
    EXPECT_TRUE(ref.is_ok()) << ref.status().to_string();
    auto flags = degenerate_outputs(*ref, ToleranceProfile());
    EXPECT_TRUE(flags.is_ok()) << flags.status().to_string();
    return flags.is_ok() ? *flags : std::vector<std::string>{};
  }
  static bool mentions(const std::vector<std::string>& r, const std::string& what) {
    for (const auto& s : r) {
      if (s.find(what) != std::string::npos) return true;
    }
    return false;
  }
  sys::TempDir dir_;
};

TEST_F(Degenerate, AnHonestTaskHasNoTrivialAnswer) {
  EXPECT_TRUE(reasons([](float a, float b) { return a + b; }).empty());
}

TEST_F(Degenerate, ATinyOutputPassesAsZerosAndAsAConstant) {
  const auto r = reasons([](float a, float b) { return (a + b) * 1e-7f; });
  EXPECT_TRUE(mentions(r, "all-zero")) << ::testing::PrintToString(r);
  EXPECT_TRUE(mentions(r, "constant")) << ::testing::PrintToString(r);
}

TEST_F(Degenerate, ACopyOfAnInputPasses) {
  const auto r = reasons([](float a, float) { return a; });
  EXPECT_TRUE(mentions(r, "copy of input 0")) << ::testing::PrintToString(r);
  EXPECT_FALSE(mentions(r, "copy of input 1"));
}

TEST_F(Degenerate, TheSameAnswerInEverySetPasses) {
  const auto r = reasons([](float, float) { return 0.5f; });
  EXPECT_TRUE(mentions(r, "same in every set")) << ::testing::PrintToString(r);
  EXPECT_TRUE(mentions(r, "constant")) << ::testing::PrintToString(r);
}

TEST_F(Degenerate, AToleranceLooseEnoughMakesAnyTaskDegenerate) {
  auto ref = write_sum_reference(dir_.path(), 1024, 2, 2, std::nullopt);
  ASSERT_TRUE(ref.is_ok());
  auto loose = degenerate_outputs(*ref, ToleranceProfile::parse("100,0").value());
  ASSERT_TRUE(loose.is_ok());
  EXPECT_TRUE(mentions(*loose, "all-zero"));
}

}  // namespace
}  // namespace kevin::engine
