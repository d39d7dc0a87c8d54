// roofline_test.cpp — the roofline bound and achieved rates against hand arithmetic, the
// dtype fallback, and the JSON forms (round trip, refusals naming the field).
#include "engine/run/roofline.h"

#include <gtest/gtest.h>

namespace kevin::engine {
namespace {

DevicePeaks h_class_peaks() {
  DevicePeaks p;
  p.device_name = "test GPU";
  p.bandwidth_gbps = 4000;  // 4 TB/s
  p.tflops = {{"float32", 50}, {"bfloat16", 800}};
  return p;
}

TEST(Roofline, AnElementwiseTaskIsBoundByMemory) {
  TaskWork w;
  w.min_bytes = 2e9;  // 2 GB at 4 TB/s: 0.5 ms
  w.flops = 1e9;      // 1 GFLOP at 50 TFLOP/s: 0.02 ms
  const auto s = speed_of_light(w, h_class_peaks(), 1.0, 2.0);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->memory_ms, 0.5);
  EXPECT_DOUBLE_EQ(s->compute_ms, 0.02);
  EXPECT_DOUBLE_EQ(s->bound_ms, 0.5);
  EXPECT_EQ(s->limit, "memory");
  ASSERT_TRUE(s->candidate && s->baseline);
  EXPECT_DOUBLE_EQ(s->candidate->gbps, 2000);
  EXPECT_DOUBLE_EQ(s->candidate->tflops, 1);
  EXPECT_DOUBLE_EQ(s->candidate->fraction, 0.5);
  EXPECT_DOUBLE_EQ(s->baseline->fraction, 0.25);
}

TEST(Roofline, ABfloat16ProductIsBoundByItsOwnRate) {
  const double n = 8192;
  TaskWork w;
  w.flops = 2 * n * n * n + n * n;  // the product and an elementwise epilogue
  w.matmul_flops = {{"bfloat16", 2 * n * n * n}};
  w.min_bytes = 3 * n * n * 2;
  const auto s = speed_of_light(w, h_class_peaks(), std::nullopt, std::nullopt);
  ASSERT_TRUE(s.has_value());
  const double expected = 2 * n * n * n / 800e9 + n * n / 50e9;
  EXPECT_NEAR(s->compute_ms, expected, 1e-12);
  EXPECT_EQ(s->limit, "compute");
  EXPECT_FALSE(s->candidate.has_value());
}

TEST(Roofline, ADtypeWithoutItsOwnRateUsesFloat32s) {
  TaskWork w;
  w.flops = 1e12;
  w.matmul_flops = {{"float64", 1e12}};
  const auto s = speed_of_light(w, h_class_peaks(), std::nullopt, std::nullopt);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->compute_ms, 1e12 / 50e9);
}

TEST(Roofline, NothingToBoundGivesNone) {
  EXPECT_FALSE(speed_of_light(TaskWork{}, h_class_peaks(), 1.0, 1.0).has_value());
  TaskWork w;
  w.min_bytes = 1;
  DevicePeaks none;
  EXPECT_FALSE(speed_of_light(w, none, 1.0, 1.0).has_value());
}

TEST(Roofline, JsonRoundTrip) {
  TaskWork w{3e9, {{"float32", 2e9}}, 1e8, 4e8, 5};
  const auto s = speed_of_light(w, h_class_peaks(), 0.2, 0.8);
  ASSERT_TRUE(s.has_value());
  const auto back = speed_of_light_from_json(to_json(*s));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(to_json(*back), to_json(*s));
  const auto peaks = device_peaks_from_json(to_json(h_class_peaks()));
  ASSERT_TRUE(peaks.is_ok()) << peaks.status().to_string();
  EXPECT_EQ(peaks->tflops, h_class_peaks().tflops);
}

TEST(Roofline, MalformedJsonNamesTheField) {
  const auto negative = task_work_from_json(Json{{"flops", -1}});
  ASSERT_FALSE(negative.is_ok());
  EXPECT_NE(negative.status().message().find("\"flops\""), std::string::npos);
  const auto bad_rate = task_work_from_json(Json{{"matmul_flops", {{"float32", "many"}}}});
  ASSERT_FALSE(bad_rate.is_ok());
  EXPECT_NE(bad_rate.status().message().find("float32"), std::string::npos);
  Json peaks = to_json(h_class_peaks());
  peaks["bandwidth_gbps"] = 0;
  EXPECT_FALSE(device_peaks_from_json(peaks).is_ok());
  Json s = to_json(*speed_of_light(TaskWork{1, {}, 1, 1, 1}, h_class_peaks(), 1.0, 1.0));
  s["limit"] = "latency";
  const auto bad_limit = speed_of_light_from_json(s);
  ASSERT_FALSE(bad_limit.is_ok());
  EXPECT_NE(bad_limit.status().message().find("\"limit\""), std::string::npos);
}

}  // namespace
}  // namespace kevin::engine
