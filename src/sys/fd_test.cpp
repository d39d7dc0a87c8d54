// fd_test.cpp — frames, deadlines on reads, shared memory visibility.
#include <cstdint>
#include "sys/fd.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

namespace kevin::sys {
namespace {
using namespace std::chrono_literals;

TEST(Frames, RoundTripAndEndOfStream) {
  auto p = make_pipe();
  ASSERT_TRUE(p.is_ok());
  ASSERT_TRUE(write_frame(p->write.get(), "hello", Deadline::after(1s)).is_ok());
  ASSERT_TRUE(write_frame(p->write.get(), "", Deadline::after(1s)).is_ok());
  EXPECT_EQ(read_frame(p->read.get(), Deadline::after(1s)).value(), "hello");
  EXPECT_EQ(read_frame(p->read.get(), Deadline::after(1s)).value(), "");
  p->write.reset();
  EXPECT_EQ(read_frame(p->read.get(), Deadline::after(1s)).status().code(),
            StatusCode::kUnavailable);
}

TEST(Frames, ReadTimesOut) {
  auto p = make_pipe();
  ASSERT_TRUE(p.is_ok());
  auto r = read_frame(p->read.get(), Deadline::after(50ms));
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("timed out waiting for peer"), std::string::npos)
      << r.status().to_string();
}

TEST(Frames, OversizedLengthRefused) {
  auto p = make_pipe();
  ASSERT_TRUE(p.is_ok());
  const uint8_t header[4] = {0xff, 0xff, 0xff, 0xff};
  ASSERT_TRUE(write_all(p->write.get(), header, 4, Deadline::after(1s)).is_ok());
  EXPECT_EQ(read_frame(p->read.get(), Deadline::after(1s)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(SharedMemory, TwoMappingsSeeSameBytes) {
  auto a = SharedMemory::create("kevin-test", 10000);
  ASSERT_TRUE(a.is_ok());
  std::memcpy(a->data(), "kevin", 5);
  auto b = SharedMemory::map_fd(::dup(a->fd()), a->size(), false);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(std::memcmp(b->data(), "kevin", 5), 0);
  a->data()[9999] = 7;
  EXPECT_EQ(b->data()[9999], 7);
}

}  // namespace
}  // namespace kevin::sys
