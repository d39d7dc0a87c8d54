// run_store_test.cpp — the SQLite run store: meta values, turn records, ordering, reopening.
#include "rollout/run_store.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "sys/tempdir.h"

namespace kevin::rollout {
namespace {

TEST(RunStore, KeepsMetaAndTurnsAcrossReopening) {
  auto dir = sys::TempDir::create("store-");
  ASSERT_TRUE(dir.is_ok());
  const auto file = dir->path() / "run.db";
  {
    auto store = RunStore::open(file);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    ASSERT_TRUE(store->put_meta("config", Json{{"m", 3}}).is_ok());
    ASSERT_TRUE(store->put_turn({"3x3", "b", 0, 1}, Json{{"score", 2}}).is_ok());
    ASSERT_TRUE(store->put_turn({"3x3", "a", 1, 0}, Json{{"score", 1}}).is_ok());
    ASSERT_TRUE(store->put_turn({"3x3", "a", 0, 2}, Json{{"score", 0}}).is_ok());
    ASSERT_TRUE(store->put_turn({"3x3", "a", 0, 2}, Json{{"score", 5}}).is_ok());  // replaces
  }
  auto store = RunStore::open(file);
  ASSERT_TRUE(store.is_ok());
  auto config = store->meta("config");
  ASSERT_TRUE(config.is_ok());
  ASSERT_TRUE(config->has_value());
  EXPECT_EQ((**config)["m"], 3);
  auto missing = store->meta("nothing");
  ASSERT_TRUE(missing.is_ok());
  EXPECT_FALSE(missing->has_value());
  auto turns = store->turns();
  ASSERT_TRUE(turns.is_ok());
  ASSERT_EQ(turns->size(), 3u);
  EXPECT_EQ((*turns)[0].first.task, "a");
  EXPECT_EQ((*turns)[0].first.trajectory, 0);
  EXPECT_EQ((*turns)[0].second["score"], 5);
  EXPECT_EQ((*turns)[1].first.trajectory, 1);
  EXPECT_EQ((*turns)[2].first.task, "b");
  EXPECT_EQ(*store->turn_count(), 3u);
}

TEST(RunStore, NotADatabaseIsAnError) {
  auto dir = sys::TempDir::create("store-");
  ASSERT_TRUE(dir.is_ok());
  const auto file = dir->path() / "run.db";
  ASSERT_TRUE(write_file_atomic(file, std::string(4096, 'x')).is_ok());
  auto store = RunStore::open(file);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store.status().message(), file.string() + ": run store: file is not a database")
      << "names the file";
}

}  // namespace
}  // namespace kevin::rollout
