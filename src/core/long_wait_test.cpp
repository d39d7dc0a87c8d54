// long_wait_test.cpp — the duration file round trip and the list of waits in progress.
#include "core/long_wait.h"

#include <gtest/gtest.h>

#include "core/file.h"

namespace kevin {
namespace {
namespace fs = std::filesystem;

class LongWaitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kevin_long_wait_test_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(LongWaitTest, DurationsRoundTripAndAnythingElseIsUnknown) {
  const fs::path file = dir_ / "key" / "prepare_seconds";
  EXPECT_EQ(recorded_duration(file), std::nullopt) << "never measured";
  ASSERT_TRUE(record_duration(file, std::chrono::seconds(38)).is_ok());
  EXPECT_EQ(recorded_duration(file), std::chrono::seconds(38));
  for (const char* bad : {"", "abc", "-3\n", "12 s\n"}) {
    ASSERT_TRUE(write_file_atomic(file, bad).is_ok());
    EXPECT_EQ(recorded_duration(file), std::nullopt) << "'" << bad << "'";
  }
}

TEST_F(LongWaitTest, AWaitIsListedWhileItLastsAndRecordsOnlyWhenFinished) {
  const fs::path file = dir_ / "build_seconds";
  ASSERT_TRUE(record_duration(file, std::chrono::seconds(52)).is_ok());
  EXPECT_TRUE(current_waits().empty());
  {
    LongWait outer("building the header", file);
    EXPECT_EQ(outer.last_time(), std::chrono::seconds(52));
    {
      const LongWait inner("preparing reference data for level1/028_gelu", dir_ / "none");
      const auto waits = current_waits();
      ASSERT_EQ(waits.size(), 2u);
      EXPECT_EQ(waits[0].what, "building the header") << "oldest first";
      EXPECT_EQ(waits[0].last_time, std::chrono::seconds(52));
      EXPECT_EQ(waits[0].so_far, std::chrono::seconds(0));
      EXPECT_EQ(waits[1].what, "preparing reference data for level1/028_gelu");
      EXPECT_EQ(waits[1].last_time, std::nullopt);
    }
    EXPECT_FALSE(fs::exists(dir_ / "none")) << "a wait that did not finish records nothing";
    ASSERT_EQ(current_waits().size(), 1u);
    ASSERT_TRUE(outer.finish().is_ok());
  }
  EXPECT_TRUE(current_waits().empty());
  EXPECT_EQ(recorded_duration(file), std::chrono::seconds(0)) << "this wait's own duration";
}

}  // namespace
}  // namespace kevin
