// reference_store_test.cpp — seed-set directories without Python: publishing, leases that
// keep a replaced set alive until released, the size cap's LRU eviction that skips sets in
// use, and the sweep of abandoned and protocol-1 leftovers.
#include "tasks/reference_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <regex>
#include <thread>

#include "core/file.h"
#include "sys/tempdir.h"

namespace kevin::tasks {
namespace {
namespace fs = std::filesystem;

// Writes a minimal valid protocol-2 set (one correctness and one timing set of x[4] -> out[4])
// into `dir`.
void write_fake_set(const fs::path& dir) {
  engine::ReferenceSet ref;
  ref.task_name = "t";
  ref.backend = "cpu";
  ref.device_name = "cpu";
  ref.torch_version = "1.13";
  ref.inputs = {{{"x", DType::kF32, {4}}, engine::ArgRole::kInput}};
  ref.outputs = {{"out", DType::kF32, {4}}};
  ref.num_sets = 1;
  ref.scalars = {{}};
  ref.num_timing_sets = 1;
  ref.timing_scalars = {{}};
  ref.dir = dir;
  for (const fs::path& f : {ref.inputs_file(), ref.expected_file(), ref.timing_inputs_file(),
                            ref.timing_expected_file()}) {
    ASSERT_TRUE(write_file_atomic(f, std::string(engine::kTensorAlignment, '\0')).is_ok());
  }
  ASSERT_TRUE(
      write_file_atomic(dir / "meta.json", dump_json(engine::reference_meta_json(ref))).is_ok());
}

class Store : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-store-test-");
    ASSERT_TRUE(dir.is_ok());
    tmp_ = std::move(dir).value();
  }

  ReferenceStore store(uint64_t max_bytes = uint64_t{1} << 40) const {
    return ReferenceStore(tmp_.path() / "ref", max_bytes);
  }

  static engine::ReferenceSet publish(const ReferenceStore& s, const std::string& key) {
    auto staging = s.stage(key);
    EXPECT_TRUE(staging.is_ok());
    write_fake_set(staging->dir());
    auto ref = s.publish(key, std::move(staging).value());
    EXPECT_TRUE(ref.is_ok()) << ref.status().to_string();
    return ref.is_ok() ? std::move(ref).value() : engine::ReferenceSet{};
  }

  sys::TempDir tmp_;
};

TEST_F(Store, PublishedSetHasAnUnguessableNameAndIsCurrent) {
  const ReferenceStore s = store();
  engine::ReferenceSet ref = publish(s, "k");
  EXPECT_NE(ref.lease, nullptr);
  EXPECT_TRUE(std::regex_match(ref.dir.filename().string(), std::regex("set-[0-9a-f]{32}")))
      << ref.dir;
  EXPECT_EQ(ref.num_timing_sets, 1u);
  auto again = s.current("k", std::chrono::seconds(3600));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->dir, ref.dir);
  EXPECT_NE(again->lease, nullptr);
  EXPECT_FALSE(s.current("k", std::chrono::seconds(0)).has_value()) << "ttl 0: never fresh";
  EXPECT_FALSE(s.current("other", std::chrono::seconds(3600)).has_value());
}

TEST_F(Store, ReplacedSetLivesWhileAnyCopyIsLeasedAndGoesOnRelease) {
  const ReferenceStore s = store();
  engine::ReferenceSet old_set = publish(s, "k");
  const fs::path old_dir = old_set.dir;
  engine::ReferenceSet copy = old_set;
  engine::ReferenceSet fresh = publish(s, "k");
  EXPECT_NE(fresh.dir, old_dir);
  EXPECT_EQ(s.current("k", std::chrono::seconds(3600))->dir, fresh.dir);
  EXPECT_TRUE(fs::exists(old_dir / "expected.bin")) << "an evaluation still reads the old set";
  s.sweep();
  EXPECT_TRUE(fs::exists(old_dir / "expected.bin")) << "a sweep skips leased sets";
  old_set = {};
  EXPECT_TRUE(fs::exists(old_dir)) << "a copy still holds it";
  copy = {};
  EXPECT_FALSE(fs::exists(old_dir)) << "the last release of a retired set removes it";
  const fs::path fresh_dir = fresh.dir;
  fresh = {};
  EXPECT_TRUE(fs::exists(fresh_dir)) << "the current set stays when released";
}

TEST_F(Store, ReadersNeverSeeASetChangeOrVanishUnderThemWhileRefreshing) {
  const ReferenceStore s = store();
  publish(s, "k");
  std::atomic<bool> stop{false};
  std::thread refresher([&] {
    while (!stop) publish(s, "k");
  });
  int leased = 0;
  for (int i = 0; i < 300; ++i) {
    auto ref = s.current("k", std::chrono::seconds(3600));
    ASSERT_TRUE(ref.has_value()) << "a replaced set's successor is found";
    ++leased;
    const auto reread = engine::load_reference(ref->dir);
    EXPECT_TRUE(reread.is_ok()) << "a leased set stays complete: " << reread.status().to_string();
  }
  stop = true;
  refresher.join();
  EXPECT_GT(leased, 0);
}

TEST_F(Store, UnleasedOldSetIsRemovedWhenANewOneIsPublished) {
  const ReferenceStore s = store();
  const fs::path old_dir = publish(s, "k").dir;  // released at once, but current: kept
  EXPECT_TRUE(fs::exists(old_dir));
  const engine::ReferenceSet fresh = publish(s, "k");
  EXPECT_FALSE(fs::exists(old_dir));
  EXPECT_TRUE(fs::exists(fresh.dir));
}

TEST_F(Store, CapEvictsLeastRecentlyUsedSetsNotInUse) {
  const ReferenceStore probe = store();
  publish(probe, "probe");
  const uint64_t set_bytes = probe.total_bytes();
  ASSERT_GT(set_bytes, 0u);
  fs::remove_all(probe.key_dir("probe"));

  // Room for three and a half sets.
  const ReferenceStore s = store(set_bytes * 7 / 2);
  const auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  const engine::ReferenceSet held = publish(s, "k1");  // oldest, but in use
  pause();
  const fs::path k2 = publish(s, "k2").dir;
  pause();
  const fs::path k3 = publish(s, "k3").dir;
  pause();
  ASSERT_TRUE(s.current("k2", std::chrono::seconds(3600)).has_value());  // k2 used after k3
  pause();
  const engine::ReferenceSet k4 = publish(s, "k4");  // four sets: one must go
  EXPECT_TRUE(fs::exists(held.dir)) << "in use: never evicted";
  EXPECT_FALSE(fs::exists(k3)) << "the least recently used set not in use goes first";
  EXPECT_TRUE(fs::exists(k2));
  EXPECT_TRUE(fs::exists(k4.dir));
  EXPECT_FALSE(s.current("k3", std::chrono::seconds(3600)).has_value())
      << "its key falls back to preparing";
  EXPECT_LE(s.total_bytes(), set_bytes * 7 / 2);
}

TEST_F(Store, CapNeverEvictsSetsInUse) {
  const ReferenceStore s = store(1);  // smaller than any set
  const engine::ReferenceSet a = publish(s, "a");
  const engine::ReferenceSet b = publish(s, "b");
  EXPECT_TRUE(fs::exists(a.dir));
  EXPECT_TRUE(fs::exists(b.dir));
  const fs::path a_dir = a.dir;
  s.sweep();
  EXPECT_TRUE(fs::exists(a_dir));
}

TEST_F(Store, ActiveStagingSurvivesSweepsAndAbandonedStagingDoesNot) {
  const ReferenceStore s = store(1);
  fs::path dir;
  {
    auto staging = s.stage("k");
    ASSERT_TRUE(staging.is_ok());
    dir = staging->dir();
    s.sweep();
    EXPECT_TRUE(fs::exists(dir)) << "its preparer holds the lease";
  }
  EXPECT_FALSE(fs::exists(dir)) << "an unpublished staging directory is removed when dropped";
  // A preparer that crashed left its directory and lease file behind, unlocked.
  const fs::path crashed = s.key_dir("k") / "prep-abc123";
  ASSERT_TRUE(write_file_atomic(crashed / "lease", "").is_ok());
  ASSERT_TRUE(write_file_atomic(crashed / "inputs.bin", "x").is_ok());
  const fs::path dead = s.key_dir("k") / "dead-set-0";
  ASSERT_TRUE(write_file_atomic(dead / "inputs.bin", "x").is_ok());
  s.sweep();
  EXPECT_FALSE(fs::exists(crashed));
  EXPECT_FALSE(fs::exists(dead));
}

TEST_F(Store, Protocol1LeftoversAreSwept) {
  const ReferenceStore s = store();
  ASSERT_TRUE(write_file_atomic(s.root() / "0123abcd" / "meta.json", "{\"protocol\": 1}").is_ok());
  ASSERT_TRUE(write_file_atomic(s.root() / "0123abcd.lock", "").is_ok());
  const engine::ReferenceSet kept = publish(s, "k");  // publishing sweeps
  EXPECT_FALSE(fs::exists(s.root() / "0123abcd"));
  EXPECT_FALSE(fs::exists(s.root() / "0123abcd.lock"));
  EXPECT_TRUE(fs::exists(kept.dir));
}

TEST_F(Store, BrokenDataIsNotPublished) {
  const ReferenceStore s = store();
  auto staging = s.stage("k");
  ASSERT_TRUE(staging.is_ok());
  ASSERT_TRUE(write_file_atomic(staging->dir() / "meta.json", "{}").is_ok());
  auto published = s.publish("k", std::move(staging).value());
  ASSERT_FALSE(published.is_ok());
  EXPECT_EQ(published.status().code(), StatusCode::kNotFound);
  EXPECT_NE(published.status().message().find("missing field \"protocol\""), std::string::npos)
      << published.status().to_string();
  EXPECT_FALSE(s.current("k", std::chrono::seconds(3600)).has_value());
  size_t left = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(s.key_dir("k"))) ++left;
  EXPECT_EQ(left, 0u) << "the failed set's directory is removed";
}

}  // namespace
}  // namespace kevin::tasks
