// log_test.cpp — level parsing and filtering.
#include "core/log.h"

#include <gtest/gtest.h>

namespace kevin::log {
namespace {

TEST(Log, ParsesLevels) {
  EXPECT_EQ(parse_level("debug"), Level::debug);
  EXPECT_EQ(parse_level("warning"), Level::warn);
  EXPECT_EQ(parse_level("off"), Level::off);
  EXPECT_FALSE(parse_level("loud").has_value());
}

TEST(Log, FiltersBelowLevel) {
  const Level saved = level();
  set_level(Level::warn);
  EXPECT_FALSE(enabled(Level::info));
  EXPECT_TRUE(enabled(Level::error));
  int evaluated = 0;
  KEVIN_LOG(info) << (++evaluated);
  EXPECT_EQ(evaluated, 0) << "disabled messages must not evaluate their arguments";
  testing::internal::CaptureStderr();
  KEVIN_LOG(error) << "boom " << 42;
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("boom 42"), std::string::npos);
  EXPECT_NE(err.find("[kevin E "), std::string::npos);
  set_level(saved);
}

}  // namespace
}  // namespace kevin::log
