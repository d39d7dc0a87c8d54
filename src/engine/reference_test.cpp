// reference_test.cpp — set layout, timing statistics and reference metadata round trip.
#include <cstdint>
#include "engine/reference.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {

TEST(Layout, AlignsEveryTensorTo256Bytes) {
  std::vector<TensorSpec> t = {{"a", DType::kF32, {3}}, {"b", DType::kF16, {300}}, {"c", DType::kI64, {}}};
  SetLayout l = layout_of(t);
  EXPECT_EQ(l.offsets, (std::vector<uint64_t>{0, 256, 1024}));
  EXPECT_EQ(l.set_bytes, 1280u);
}

TEST(TimingStats, MedianMinP90) {
  TimingStats s = timing_stats({5, 1, 3, 2, 4, 6, 7, 8, 9, 10});
  EXPECT_DOUBLE_EQ(s.median_ms, 5.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.p90_ms, 9);
  EXPECT_EQ(s.calls, 10);
  EXPECT_EQ(timing_stats({}).calls, 0);
}

TEST(Reference, MetaRoundTripAndSizeCheck) {
  auto dir = sys::TempDir::create("kevin-ref-test-");
  ASSERT_TRUE(dir.is_ok());
  ReferenceSet ref;
  ref.task_name = "t";
  ref.backend = "cpu";
  ref.device_name = "cpu";
  ref.torch_version = "1.13";
  ref.inputs = {{{"x", DType::kF32, {4}}, ArgRole::kInput}, {{"w", DType::kF32, {2}}, ArgRole::kParameter}};
  ref.outputs = {{"out", DType::kF32, {4}}};
  ref.num_sets = 2;
  ref.scalars = {{}, {}};
  ref.baseline = timing_stats({1.0, 2.0, 3.0});
  ref.dir = dir->path();
  ASSERT_TRUE(write_file_atomic(dir->path() / "meta.json", dump_json(reference_meta_json(ref))).is_ok());
  ASSERT_TRUE(write_file_atomic(dir->path() / "inputs.bin", std::string(2 * 512, '\0')).is_ok());
  ASSERT_TRUE(write_file_atomic(dir->path() / "expected.bin", std::string(2 * 256, '\0')).is_ok());
  auto back = load_reference(dir->path());
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->inputs[1].role, ArgRole::kParameter);
  EXPECT_DOUBLE_EQ(back->baseline->median_ms, 2.0);
  ASSERT_TRUE(write_file_atomic(dir->path() / "expected.bin", std::string(10, '\0')).is_ok());
  EXPECT_EQ(load_reference(dir->path()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kevin::engine
