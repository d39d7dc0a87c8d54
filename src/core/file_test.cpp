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
  auto missing = read_file(dir_ / "missing");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no such file: " + (dir_ / "missing").string()),
            std::string::npos)
      << missing.status().to_string();
  auto folder = read_file(dir_);
  EXPECT_EQ(folder.status().code(), StatusCode::kIoError);
  EXPECT_NE(folder.status().message().find("is a directory: " + dir_.string()), std::string::npos)
      << folder.status().to_string();
  ASSERT_TRUE(write_file_atomic(dir_ / "big", std::string(100, 'x')).is_ok());
  auto big = read_file(dir_ / "big", 10);
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("big is 100 bytes (limit 10)"), std::string::npos)
      << big.status().to_string();
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
