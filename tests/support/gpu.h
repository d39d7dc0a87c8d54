// gpu.h — test helpers for GPU tests: detect a usable CUDA device without linking the CUDA
// runtime, and skip (reported as skipped by CTest, with the reason) when there is none.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sys/cuda_probe.h"

namespace kevin::testing {
using sys::cuda_device_count;
}  // namespace kevin::testing

// Skips the current test unless a CUDA device is present; prints the reason.
#define KEVIN_REQUIRE_GPU()                                      \
  do {                                                           \
    std::string kevin_why_;                                      \
    if (::kevin::testing::cuda_device_count(&kevin_why_) == 0) { \
      GTEST_SKIP() << "no CUDA device: " << kevin_why_;          \
    }                                                            \
  } while (0)
