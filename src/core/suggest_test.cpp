// suggest_test.cpp — edit distances and which names are suggested.
#include "core/suggest.h"

#include <gtest/gtest.h>

namespace kevin {
namespace {

TEST(Suggest, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("optimiser", "optimizer"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Suggest, NamesOnlyPlausibleTypos) {
  const std::vector<std::string> keys = {"optimizer", "rollout", "steps", "tasks_per_step"};
  EXPECT_EQ(did_you_mean("optimiser", keys), " (did you mean 'optimizer'?)");
  EXPECT_EQ(nearest_name("tasks_per", keys), "tasks_per_step") << "a prefix counts as one edit";
  EXPECT_EQ(nearest_name("temperature", keys), "") << "nothing near enough";
  EXPECT_EQ(did_you_mean("zzz", keys), "");
}

}  // namespace
}  // namespace kevin
