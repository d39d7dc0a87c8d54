// reference_test.cpp — set layout, timing statistics and reference metadata (protocol 3)
// round trip and checks.
#include "engine/run/reference.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {

TEST(Layout, AlignsEveryTensorTo256Bytes) {
  std::vector<TensorSpec> t = {
      {"a", DType::kF32, {3}}, {"b", DType::kF16, {300}}, {"c", DType::kI64, {}}};
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

// A protocol-3 set of two correctness and three timing sets of x[4] f32, w[2] f32 -> out[4].
ReferenceSet small_set(const std::filesystem::path& dir) {
  ReferenceSet ref;
  ref.task_name = "t";
  ref.backend = "cpu";
  ref.device_name = "cpu";
  ref.torch_version = "1.13";
  ref.inputs = {{{"x", DType::kF32, {4}}, ArgRole::kInput},
                {{"w", DType::kF32, {2}}, ArgRole::kParameter}};
  ref.outputs = {{"out", DType::kF32, {4}}};
  ref.num_sets = 2;
  ref.scalars = {{}, {}};
  ref.num_timing_sets = 3;
  ref.timing_scalars = {{}, {}, {}};
  ref.dir = dir;
  return ref;
}

void write_files(const ReferenceSet& ref) {
  ASSERT_TRUE(
      write_file_atomic(ref.dir / "meta.json", dump_json(reference_meta_json(ref))).is_ok());
  ASSERT_TRUE(write_file_atomic(ref.inputs_file(), std::string(ref.num_sets * 512, '\0')).is_ok());
  ASSERT_TRUE(
      write_file_atomic(ref.expected_file(), std::string(ref.num_sets * 256, '\0')).is_ok());
  ASSERT_TRUE(
      write_file_atomic(ref.timing_inputs_file(), std::string(ref.num_timing_sets * 512, '\0'))
          .is_ok());
  ASSERT_TRUE(
      write_file_atomic(ref.timing_expected_file(), std::string(ref.num_timing_sets * 256, '\0'))
          .is_ok());
}

TEST(Reference, MetaRoundTripAndSizeCheck) {
  auto dir = sys::TempDir::create("kevin-ref-test-");
  ASSERT_TRUE(dir.is_ok());
  ReferenceSet ref = small_set(dir->path());
  ref.baseline = timing_stats({1.0, 2.0, 3.0});
  ref.baseline->measured_at = 1700000000;
  ref.init_inputs = Json::array({16, 2.5});
  ref.work = TaskWork{64, {{"float32", 48}}, 48, 96, 2};
  ref.has_cpu_sizes = true;
  write_files(ref);
  auto back = load_reference(dir->path());
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->has_cpu_sizes, std::optional<bool>(true));
  EXPECT_EQ(back->inputs[1].role, ArgRole::kParameter);
  EXPECT_EQ(back->num_timing_sets, 3u);
  EXPECT_EQ(back->timing_scalars.size(), 3u);
  EXPECT_EQ(back->timing_inputs_file(), dir->path() / "timing_inputs.bin");
  EXPECT_DOUBLE_EQ(back->baseline->median_ms, 2.0);
  EXPECT_EQ(back->baseline->measured_at, 1700000000);
  EXPECT_EQ(back->lease, nullptr);
  EXPECT_EQ(back->scalar_kinds, ref.scalar_kinds);
  EXPECT_EQ(back->init_inputs, Json::array({16, 2.5}));
  ASSERT_TRUE(back->work.has_value());
  EXPECT_EQ(back->work->matmul_flops.at("float32"), 48);
  EXPECT_EQ(back->work->eager_ops, 2);
  ref.has_cpu_sizes.reset();  // data made before the field: unknown, not false
  write_files(ref);
  auto older = load_reference(dir->path());
  ASSERT_TRUE(older.is_ok()) << older.status().to_string();
  EXPECT_FALSE(older->has_cpu_sizes.has_value());
  ASSERT_TRUE(write_file_atomic(dir->path() / "expected.bin", std::string(10, '\0')).is_ok());
  const Status short_file = load_reference(dir->path()).status();
  EXPECT_EQ(short_file.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(short_file.message().find((dir->path() / "expected.bin").string() + " has 10 bytes"),
            std::string::npos)
      << short_file.to_string();
}

TEST(Reference, TimingFilesAreSizeChecked) {
  auto dir = sys::TempDir::create("kevin-ref-test-");
  ASSERT_TRUE(dir.is_ok());
  ReferenceSet ref = small_set(dir->path());
  write_files(ref);
  ASSERT_TRUE(load_reference(dir->path()).is_ok());
  ASSERT_TRUE(write_file_atomic(ref.timing_expected_file(), std::string(2 * 256, '\0')).is_ok());
  const Status wrong_size = load_reference(dir->path()).status();
  EXPECT_EQ(wrong_size.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_size.message().find(ref.timing_expected_file().string() + " has 512 bytes"),
            std::string::npos)
      << wrong_size.to_string();
  std::filesystem::remove(ref.timing_inputs_file());
  const Status missing = load_reference(dir->path()).status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("missing reference data " + ref.timing_inputs_file().string()),
            std::string::npos)
      << missing.to_string();
}

TEST(Reference, RefusesProtocol1AndDataWithoutTimingSets) {
  auto dir = sys::TempDir::create("kevin-ref-test-");
  ASSERT_TRUE(dir.is_ok());
  ReferenceSet ref = small_set(dir->path());
  write_files(ref);
  Json meta = reference_meta_json(ref);
  meta["protocol"] = 1;
  ASSERT_TRUE(write_file_atomic(dir->path() / "meta.json", dump_json(meta)).is_ok());
  const Status old = load_reference(dir->path()).status();
  EXPECT_EQ(old.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(old.message().find("protocol 1 (this build reads 3)"), std::string::npos)
      << old.message();
  ref.num_timing_sets = 0;
  ref.timing_scalars.clear();
  ASSERT_TRUE(
      write_file_atomic(dir->path() / "meta.json", dump_json(reference_meta_json(ref))).is_ok());
  const Status untimed = load_reference(dir->path()).status();
  EXPECT_EQ(untimed.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(untimed.message().find("num_timing_sets and timing_scalars disagree"),
            std::string::npos)
      << untimed.to_string();
}

TEST(Reference, ADamagedMetaJsonIsNamedInTheError) {
  auto dir = sys::TempDir::create("kevin-ref-test-");
  ASSERT_TRUE(dir.is_ok());
  write_files(small_set(dir->path()));
  ASSERT_TRUE(write_file_atomic(dir->path() / "meta.json", "{\"protocol\": 3, \"task\"").is_ok());
  const Status damaged = load_reference(dir->path()).status();
  EXPECT_EQ(damaged.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(damaged.message().rfind((dir->path() / "meta.json").string() + ": ", 0), 0u)
      << damaged.to_string();
}

TEST(TimingStats, TheMediansIntervalIsAtTheBinomialRanks) {
  // The usual table's ranks for a 95 % interval of the median (n = 100: the 40th and 61st).
  EXPECT_EQ(median_ci_ranks(100), (std::pair<size_t, size_t>{40, 61}));
  EXPECT_EQ(median_ci_ranks(40), (std::pair<size_t, size_t>{13, 28}));
  EXPECT_EQ(median_ci_ranks(10), (std::pair<size_t, size_t>{1, 10}));
  EXPECT_EQ(median_ci_ranks(1), (std::pair<size_t, size_t>{1, 1}));
  std::vector<double> ms;
  for (int i = 1; i <= 100; ++i) ms.push_back(i);
  const TimingStats s = timing_stats(ms);
  EXPECT_DOUBLE_EQ(s.median_lo_ms, 40);
  EXPECT_DOUBLE_EQ(s.median_hi_ms, 61);
  EXPECT_NEAR(s.relative_half_width(), 10.5 / 50.5, 1e-12);
  EXPECT_EQ(TimingStats{}.relative_half_width(), 0) << "nothing timed: nothing to tighten";
}

TEST(TimingStats, TheIntervalTravelsInJsonAndAnOldBaselineHasNone) {
  const TimingStats t = timing_stats({1.0, 2.0, 3.0, 4.0});
  const auto back = timing_stats_from_json(to_json(t));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_DOUBLE_EQ(back->median_lo_ms, t.median_lo_ms);
  EXPECT_DOUBLE_EQ(back->median_hi_ms, t.median_hi_ms);
  Json old = to_json(t);
  old.erase("median_lo_ms");
  old.erase("median_hi_ms");
  const auto cached = timing_stats_from_json(old);
  ASSERT_TRUE(cached.is_ok());
  EXPECT_FALSE(cached->has_interval());
  Json inverted = to_json(t);
  inverted["median_lo_ms"] = 9.0;
  EXPECT_FALSE(timing_stats_from_json(inverted).is_ok());
}

TEST(TimingStats, MeasuredAtOnlyInBaselineJson) {
  TimingStats t = timing_stats({1.0});
  EXPECT_FALSE(to_json(t).contains("measured_at")) << "candidate timings carry no time stamp";
  t.measured_at = 42;
  auto back = timing_stats_from_json(to_json(t));
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back->measured_at, 42);
}

}  // namespace
}  // namespace kevin::engine
