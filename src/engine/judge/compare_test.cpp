// compare_test.cpp — tolerance semantics, NaN handling, profiles and index formatting.
#include <cstdint>
#include "engine/judge/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kevin::engine {
namespace {

TEST(Compare, ToleranceIsElementwiseAtolPlusRtol) {
  std::vector<float> ref = {1.0f, 100.0f, -2.0f};
  std::vector<float> out = {1.00015f, 100.009f, -2.0f};
  auto s = compare_buffers(out.data(), ref.data(), DType::kF32, 3, {1e-4, 1e-4});
  EXPECT_TRUE(s.ok()) << "100.009 vs 100 is within 1e-4 + 1e-4*100";
  out[0] = 1.0003f;
  s = compare_buffers(out.data(), ref.data(), DType::kF32, 3, {1e-4, 1e-4});
  EXPECT_EQ(s.mismatches, 1u);
  EXPECT_EQ(s.first_bad, 0);
  EXPECT_NEAR(s.first_got - s.first_expected, 3e-4, 1e-6);
  EXPECT_GT(s.max_abs_error, 8e-3);
}

TEST(Compare, NanNeverPassesUnlessExpected) {
  std::vector<float> ref = {1.0f, NAN};
  std::vector<float> out = {NAN, NAN};
  auto s = compare_buffers(out.data(), ref.data(), DType::kF32, 2, {1, 1});
  EXPECT_EQ(s.mismatches, 1u);
  EXPECT_EQ(s.nonfinite, 1u);
  std::vector<float> out2 = {1.0f, 0.0f};
  EXPECT_EQ(compare_buffers(out2.data(), ref.data(), DType::kF32, 2, {1, 1}).mismatches, 1u)
      << "a NaN in the reference is not a wildcard";
}

TEST(Compare, ErrorsCoverOnlyFiniteElements) {
  std::vector<float> ref = {1.0f, 2.0f};
  std::vector<float> all_nan = {NAN, NAN};
  const auto none = compare_buffers(all_nan.data(), ref.data(), DType::kF32, 2, {1e-4, 1e-4});
  EXPECT_EQ(none.finite, 0u) << "nothing finite to measure an error on";
  EXPECT_EQ(none.nonfinite, 2u);
  std::vector<float> half_nan = {1.5f, NAN};
  const auto some = compare_buffers(half_nan.data(), ref.data(), DType::kF32, 2, {1e-4, 1e-4});
  EXPECT_EQ(some.finite, 1u);
  EXPECT_NEAR(some.max_abs_error, 0.5, 1e-9);
}

TEST(Compare, RelativeErrorIgnoresElementsTheAbsoluteToleranceCovers) {
  // 2e-9 against 1e-9 is within atol, and a relative error of 0.5 there would say nothing.
  std::vector<float> ref = {1e-9f, 10.0f};
  std::vector<float> out = {2e-9f, 10.0005f};
  const auto s = compare_buffers(out.data(), ref.data(), DType::kF32, 2, {1e-4, 1e-4});
  EXPECT_TRUE(s.ok());
  EXPECT_NEAR(s.max_rel_error, 5e-5, 1e-6) << "only the element of 10 counts";
}

TEST(Compare, IntegersExact) {
  std::vector<int64_t> ref = {1, 2, 3}, out = {1, 2, 4};
  EXPECT_EQ(compare_buffers(out.data(), ref.data(), DType::kI64, 3, {0, 0}).mismatches, 1u);
}

TEST(Compare, ParallelPathMatchesSerial) {
  const uint64_t n = (uint64_t{1} << 22) + 7;
  std::vector<float> ref(n), out(n);
  for (uint64_t i = 0; i < n; ++i) ref[i] = out[i] = static_cast<float>(i % 1000) * 0.5f;
  out[n - 3] += 1.0f;
  out[12345] = NAN;
  auto s = compare_buffers(out.data(), ref.data(), DType::kF32, n, {1e-4, 1e-4});
  EXPECT_EQ(s.mismatches, 2u);
  EXPECT_EQ(s.nonfinite, 1u);
  EXPECT_EQ(s.first_bad, 12345);
}

TEST(Compare, HalfAndBf16Decode) {
  const uint16_t one_half = 0x3c00, one_bf16 = 0x3f80, two_half = 0x4000;
  auto s = compare_buffers(&one_half, &two_half, DType::kF16, 1, {0.5, 0});
  EXPECT_EQ(s.mismatches, 1u);
  EXPECT_DOUBLE_EQ(s.first_got, 1.0);
  EXPECT_DOUBLE_EQ(s.first_expected, 2.0);
  EXPECT_TRUE(compare_buffers(&one_bf16, &one_bf16, DType::kBF16, 1, {0, 0}).ok());
}

TEST(ToleranceProfile, Profiles) {
  auto d = ToleranceProfile::parse("default");
  ASSERT_TRUE(d.is_ok());
  EXPECT_DOUBLE_EQ(d->for_dtype(DType::kF32).atol, 1e-4);
  EXPECT_DOUBLE_EQ(d->for_dtype(DType::kBF16).rtol, 1e-2);
  EXPECT_DOUBLE_EQ(d->for_dtype(DType::kI32).atol, 0);
  EXPECT_DOUBLE_EQ(ToleranceProfile::parse("kevin")->for_dtype(DType::kF32).atol, 1e-2);
  auto custom = ToleranceProfile::parse("1e-3,2e-3");
  ASSERT_TRUE(custom.is_ok());
  EXPECT_DOUBLE_EQ(custom->for_dtype(DType::kF16).rtol, 2e-3);
  const auto expect_refused = [](const std::string& bad, const std::string& why) {
    auto p = ToleranceProfile::parse(bad);
    ASSERT_FALSE(p.is_ok()) << bad;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(p.status().message().find(why), std::string::npos) << p.status().to_string();
    EXPECT_NE(p.status().message().find("(got '" + bad + "')"), std::string::npos)
        << p.status().to_string();
  };
  for (const char* bad : {"loose", "1e-3"})
    expect_refused(bad, "tolerance must be default, kevin or ATOL,RTOL");
  for (const char* bad : {"a,b", "-1,0", "1e-3,", "nan,1"})
    expect_refused(bad, "tolerance ATOL,RTOL needs two non-negative numbers");
}

TEST(Compare, MultiIndex) {
  EXPECT_EQ(multi_index(7, {2, 3, 4}), "[0, 1, 3]");
  EXPECT_EQ(multi_index(0, {}), "[]");
}

}  // namespace
}  // namespace kevin::engine
