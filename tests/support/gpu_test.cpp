// gpu_test.cpp — the GPU probe answers consistently, and KEVIN_REQUIRE_GPU skips without one.
#include "gpu.h"

#include <gtest/gtest.h>

namespace kevin::testing {
namespace {

TEST(GpuProbe, ReasonGivenWhenNoDevice) {
  std::string why;
  const int n = cuda_device_count(&why);
  EXPECT_GE(n, 0);
  if (n == 0) {
    EXPECT_FALSE(why.empty());
  }
  EXPECT_EQ(cuda_device_count(nullptr), n) << "probe result must be stable";
}

TEST(GpuProbe, RequireGpuSkipsOrRuns) {
  KEVIN_REQUIRE_GPU();
  EXPECT_GT(cuda_device_count(nullptr), 0);
}

}  // namespace
}  // namespace kevin::testing
