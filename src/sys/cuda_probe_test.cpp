// cuda_probe_test.cpp — the child's CUDA_VISIBLE_DEVICES names the parent's device, whatever
// list the parent itself was given.
#include "sys/cuda_probe.h"

#include <gtest/gtest.h>

namespace kevin::sys {
namespace {

TEST(ChildVisibleDeviceTest, WithoutAListTheOrdinalIsTheDevice) {
  EXPECT_EQ(child_visible_device(0, nullptr), "0");
  EXPECT_EQ(child_visible_device(3, ""), "3");
}

TEST(ChildVisibleDeviceTest, MapsThroughTheParentsList) {
  EXPECT_EQ(child_visible_device(0, "4,5,6"), "4");
  EXPECT_EQ(child_visible_device(2, "4,5,6"), "6");
  EXPECT_EQ(child_visible_device(1, "GPU-aaaa, GPU-bbbb"), "GPU-bbbb");
}

TEST(ChildVisibleDeviceTest, OutOfRangeOrEmptyEntriesFallBackToTheOrdinal) {
  EXPECT_EQ(child_visible_device(5, "4,5"), "5");
  EXPECT_EQ(child_visible_device(1, "4,,6"), "1");
}

}  // namespace
}  // namespace kevin::sys
