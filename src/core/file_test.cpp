// file_test.cpp — read_file limits and atomic writes.
#include "core/file.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace kevin {
namespace {
namespace fs = std::filesystem;

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kevin_file_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FileTest, RoundTripCreatesParents) {
  const fs::path p = dir_ / "a" / "b" / "x.txt";
  ASSERT_TRUE(write_file_atomic(p, "hello").is_ok());
  EXPECT_EQ(read_file(p).value(), "hello");
  ASSERT_TRUE(write_file_atomic(p, "again").is_ok());
  EXPECT_EQ(read_file(p).value(), "again");
}

TEST_F(FileTest, ErrorsAreValues) {
  EXPECT_EQ(read_file(dir_ / "missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(read_file(dir_).status().code(), StatusCode::kIoError);
  ASSERT_TRUE(write_file_atomic(dir_ / "big", std::string(100, 'x')).is_ok());
  EXPECT_EQ(read_file(dir_ / "big", 10).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(FileTest, ConcurrentWritersLeaveOneCompleteFile) {
  const fs::path p = dir_ / "shared";
  std::vector<std::thread> writers;
  for (int i = 0; i < 8; ++i) {
    writers.emplace_back([&p, i] {
      const std::string body(4096, static_cast<char>('a' + i));
      for (int k = 0; k < 20; ++k) ASSERT_TRUE(write_file_atomic(p, body).is_ok());
    });
  }
  for (auto& t : writers) t.join();
  const std::string final_body = read_file(p).value();
  ASSERT_EQ(final_body.size(), 4096u);
  EXPECT_EQ(final_body.find_first_not_of(final_body[0]), std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename(), "shared") << "temporary file left behind";
  }
}

}  // namespace
}  // namespace kevin
