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

TEST(Log, MessagesAppearAboveTheStatusLine) {
  testing::internal::CaptureStderr();
  set_status_line("turns 1/4");
  KEVIN_LOG(warn) << "slow task";
  clear_status_line(/*keep=*/true);
  KEVIN_LOG(warn) << "after";
  const std::string err = testing::internal::GetCapturedStderr();
  // The message erases the line, prints itself with a newline, then redraws the line.
  const size_t message = err.find("slow task\n");
  ASSERT_NE(message, std::string::npos) << err;
  EXPECT_EQ(err.find("\r\033[K[kevin W"), err.find("\r\033[K", 1))
      << "the message must erase the status line first";
  EXPECT_EQ(err.find("turns 1/4", message), message + 10)
      << "the status line must be redrawn below the message";
  // Kept, it ends with a newline; later messages are plain lines.
  EXPECT_NE(err.find("turns 1/4\n[kevin W"), std::string::npos) << err;
  EXPECT_EQ(err.find("turns 1/4", err.find("after")), std::string::npos);
}

}  // namespace
}  // namespace kevin::log
