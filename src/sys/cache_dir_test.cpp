// cache_dir_test.cpp — publishing entries, leases (in this process and in another one),
// LRU eviction under a cap, and that eviction leaves leased and staged folders alone.
#include "sys/cache_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::sys {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

class CacheDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("kevin-cache-dir-test-");
    ASSERT_TRUE(dir.is_ok());
    dir_ = std::move(dir).value();
    root_ = dir_.path() / "builds";
    fs::create_directories(root_);
  }

  // A staged entry folder holding `bytes` bytes of data.
  fs::path stage(const std::string& name, size_t bytes) {
    const fs::path staged = dir_.path() / ("staged-" + name + "-" + std::to_string(counter_++));
    fs::create_directories(staged);
    std::ofstream(staged / "data") << std::string(bytes, 'x');
    return staged;
  }
  fs::path entry(const std::string& name) { return root_ / name.substr(0, 2) / name; }

  // Publishes `name` and lets go of it (its lease is dropped), touched at a distinct time.
  void publish_unheld(const std::string& name, size_t bytes) {
    ASSERT_TRUE(publish_entry(stage(name, bytes), entry(name)).is_ok());
    std::this_thread::sleep_for(20ms);  // distinct modification times for the LRU order
  }

  TempDir dir_;
  fs::path root_;
  int counter_ = 0;
};

TEST_F(CacheDirTest, PublishedEntryIsLeasedAndASecondPublisherGetsTheFirst) {
  auto first = publish_entry(stage("aa01", 10), entry("aa01"));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_TRUE(fs::exists(entry("aa01") / "data"));
  EXPECT_TRUE(first->still_at(entry("aa01") / kEntryLockFile));
  const fs::path second_staged = stage("aa01", 10);
  auto second = publish_entry(second_staged, entry("aa01"));
  ASSERT_TRUE(second.is_ok());
  EXPECT_FALSE(fs::exists(second_staged)) << "the loser's folder is deleted";
  EXPECT_TRUE(second->still_at(entry("aa01") / kEntryLockFile));
}

TEST_F(CacheDirTest, EvictsLeastRecentlyUsedFirst) {
  publish_unheld("aa01", 1000);
  publish_unheld("bb02", 1000);
  publish_unheld("cc03", 1000);
  touch_entry(entry("aa01"));  // used again: now the most recent
  auto stats = evict_to_cap(root_, 2500);
  ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
  EXPECT_EQ(stats->entries, 3u);
  EXPECT_EQ(stats->evicted, 1u);
  EXPECT_FALSE(fs::exists(entry("bb02"))) << "the least recently used goes first";
  EXPECT_TRUE(fs::exists(entry("aa01")));
  EXPECT_TRUE(fs::exists(entry("cc03")));
  EXPECT_LE(stats->bytes_after, 2500u);
}

TEST_F(CacheDirTest, LeasedEntriesSurviveACapOfZero) {
  publish_unheld("aa01", 1000);
  auto held = publish_entry(stage("bb02", 1000), entry("bb02"));
  ASSERT_TRUE(held.is_ok());
  publish_unheld("cc03", 1000);
  auto leased = lease_entry(entry("aa01"));  // another user of an older entry
  ASSERT_TRUE(leased.is_ok());
  auto stats = evict_to_cap(root_, 0);
  ASSERT_TRUE(stats.is_ok());
  EXPECT_EQ(stats->evicted, 1u);
  EXPECT_EQ(stats->in_use, 2u);
  EXPECT_TRUE(fs::exists(entry("aa01") / "data"));
  EXPECT_TRUE(fs::exists(entry("bb02") / "data"));
  EXPECT_FALSE(fs::exists(entry("cc03")));
  leased->reset();
  held->reset();
  ASSERT_TRUE(evict_to_cap(root_, 0).is_ok());
  EXPECT_FALSE(fs::exists(entry("aa01")));
  EXPECT_FALSE(fs::exists(entry("bb02")));
}

TEST_F(CacheDirTest, ALeaseHeldByAnotherProcessProtectsTheEntry) {
  const fs::path flock_tool = "/usr/bin/flock";
  if (!fs::exists(flock_tool)) GTEST_SKIP() << "no flock(1)";
  publish_unheld("aa01", 1000);
  // flock -o -s LOCK sh -c 'echo held; sleep 30': a shared lock in another process (flock
  // itself, which we reap, so the lock is gone when kill_and_reap returns).
  auto out = make_pipe();
  ASSERT_TRUE(out.is_ok());
  SpawnOptions s;
  s.argv = {
      flock_tool.string(),  "-o", "-s", (entry("aa01") / kEntryLockFile).string(), "/bin/sh", "-c",
      "echo held; sleep 30"};
  s.fds = {{1, out->write.get()}};
  auto child = spawn(s);
  ASSERT_TRUE(child.is_ok());
  out->write.reset();
  char buf[5] = {};
  ASSERT_TRUE(read_exact(out->read.get(), buf, 5, Deadline::after(10s)).is_ok());
  auto stats = evict_to_cap(root_, 0);
  ASSERT_TRUE(stats.is_ok());
  EXPECT_EQ(stats->in_use, 1u);
  EXPECT_TRUE(fs::exists(entry("aa01") / "data"));
  child->kill_and_reap();
  ASSERT_TRUE(evict_to_cap(root_, 0).is_ok());
  EXPECT_FALSE(fs::exists(entry("aa01")));
}

TEST_F(CacheDirTest, ALeaseTakenAfterEvictionFindsNothing) {
  publish_unheld("aa01", 10);
  ASSERT_TRUE(evict_to_cap(root_, 0).is_ok());
  EXPECT_EQ(lease_entry(entry("aa01")).status().code(), StatusCode::kNotFound);
  // An open lock on an entry that is then evicted no longer names the entry.
  publish_unheld("bb02", 10);
  auto early =
      FileLock::acquire(entry("bb02") / kEntryLockFile, FileLock::Mode::kShared, true, false);
  ASSERT_TRUE(early.is_ok());
  early->reset();
  ASSERT_TRUE(evict_to_cap(root_, 0).is_ok());
  EXPECT_FALSE(fs::exists(entry("bb02")));
}

TEST_F(CacheDirTest, StagingFoldersAndTrashAreNotEntries) {
  publish_unheld("aa01", 10);
  // Something being prepared elsewhere in the cache, and leftovers of a crashed eviction.
  const fs::path staging = dir_.path() / "staging" / "build-123";
  fs::create_directories(staging);
  fs::create_directories(root_ / ".evicted-0123" / "x");
  auto stats = evict_to_cap(root_, 0);
  ASSERT_TRUE(stats.is_ok());
  EXPECT_EQ(stats->entries, 1u);
  EXPECT_TRUE(fs::exists(staging));
  EXPECT_FALSE(fs::exists(root_ / ".evicted-0123"));
}

TEST_F(CacheDirTest, ConcurrentPublishersAndEvictorsNeverLoseALeasedEntry) {
  constexpr int kRounds = 40;
  std::atomic<int> failures{0};
  std::thread evictor([&] {
    for (int i = 0; i < kRounds * 2; ++i) {
      (void)evict_to_cap(root_, 0);
      std::this_thread::sleep_for(1ms);
    }
  });
  std::vector<std::thread> publishers;
  for (int t = 0; t < 3; ++t) {
    publishers.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const std::string name = "ab" + std::to_string(i % 4);
        const fs::path staged = dir_.path() / ("p" + std::to_string(t) + "-" + std::to_string(i));
        fs::create_directories(staged);
        std::ofstream(staged / "data") << "payload";
        auto lease = publish_entry(staged, entry(name));
        if (!lease.is_ok()) continue;  // the name kept changing: allowed, just not silently wrong
        std::ifstream in(entry(name) / "data");
        std::string text;
        in >> text;
        if (text != "payload" || !lease->still_at(entry(name) / kEntryLockFile)) ++failures;
      }
    });
  }
  for (auto& p : publishers) p.join();
  evictor.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace kevin::sys
