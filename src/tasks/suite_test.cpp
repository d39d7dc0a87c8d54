// suite_test.cpp — discovery, ids, families and the stratified split, on the shipped suite
// and on small trees made here.
#include "tasks/suite.h"

#include <gtest/gtest.h>

#include <set>

#include "core/file.h"
#include "sys/tempdir.h"

namespace kevin::tasks {
namespace {
namespace fs = std::filesystem;

TEST(Suite, FamilyParsing) {
  EXPECT_EQ(task_family("import torch\nKEVIN_FAMILY = \"matmul\"\n"), "matmul");
  EXPECT_EQ(task_family("KEVIN_FAMILY='conv'  # comment\n"), "conv");
  EXPECT_EQ(task_family("x = 1\n# KEVIN_FAMILY = \"no\"\n"), "unknown");
  EXPECT_EQ(task_family(""), "unknown");
}

TEST(Suite, FamilyParsingStaysOnEachLine) {
  EXPECT_EQ(task_family("KEVIN_FAMILY \"no equals\"\nKEVIN_FAMILY = 'second'\n"), "second");
  EXPECT_EQ(task_family("KEVIN_FAMILY = 'open\n'\n"), "unknown");
  // Each name once searched the rest of the text: this took 100 s.
  std::string one_line;
  for (int i = 0; i < 87381; ++i) one_line += "KEVIN_FAMILY";
  EXPECT_EQ(task_family(one_line), "unknown");
}

TEST(Suite, ShippedSuiteHasBothLevelsAndUniqueLevel2Sequences) {
  auto tasks = discover_tasks(KEVIN_TASKS_DIR);
  ASSERT_TRUE(tasks.is_ok()) << tasks.status().to_string();
  std::map<std::string, int> per_suite;
  std::set<std::string> level2_sequences;
  for (const auto& t : *tasks) {
    ++per_suite[t.suite];
    EXPECT_NE(t.family, "unknown") << t.id << " lacks KEVIN_FAMILY";
    if (t.suite == "level2") {
      const std::string stem = t.path.stem().string();
      EXPECT_TRUE(level2_sequences.insert(stem.substr(stem.find('_') + 1)).second)
          << "duplicate sequence " << stem;
    }
  }
  EXPECT_GE(per_suite["level1"], 60);
  EXPECT_GE(per_suite["level2"], 60);
  EXPECT_GE(tasks->size(), 120u);
}

TEST(Suite, ResolveByIdStemOrPath) {
  auto dir = sys::TempDir::create("kevin-suite-");
  ASSERT_TRUE(dir.is_ok());
  for (const char* f : {"a/001_x.py", "a/002_y.py", "b/001_x.py", "b/_helper.py", "b/notes.txt"}) {
    ASSERT_TRUE(write_file_atomic(dir->path() / f, "KEVIN_FAMILY = \"f\"\n").is_ok());
  }
  auto tasks = discover_tasks(dir->path());
  ASSERT_TRUE(tasks.is_ok());
  ASSERT_EQ(tasks->size(), 3u) << "_-prefixed and non-.py files are skipped";
  EXPECT_EQ(resolve_task(*tasks, "a/001_x")->path, dir->path() / "a/001_x.py");
  EXPECT_EQ(resolve_task(*tasks, "002_y")->id, "a/002_y");
  auto ambiguous = resolve_task(*tasks, "001_x");
  EXPECT_EQ(ambiguous.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ambiguous.status().message().find("task name '001_x' is ambiguous"), std::string::npos)
      << ambiguous.status().to_string();
  auto nope = resolve_task(*tasks, "nope");
  EXPECT_EQ(nope.status().code(), StatusCode::kNotFound);
  EXPECT_NE(nope.status().message().find("no task 'nope'"), std::string::npos)
      << nope.status().to_string();
  EXPECT_EQ(resolve_task(*tasks, (dir->path() / "b/001_x.py").string())->id, "b/001_x");
  // A path written from the repository's root, used from another folder: its ending names it.
  const std::string from_root = dir->path().filename().string() + "/b/001_x.py";
  EXPECT_EQ(resolve_task(*tasks, from_root)->id, "b/001_x") << from_root;
  EXPECT_EQ(resolve_task(*tasks, "a/002_y.py")->id, "a/002_y");
  EXPECT_EQ(resolve_task(*tasks, "001_x.py").status().code(), StatusCode::kInvalidArgument)
      << "an ending two tasks share is ambiguous";
  auto typo = resolve_task(*tasks, "a/002_z");
  EXPECT_NE(typo.status().message().find("did you mean 'a/002_y'"), std::string::npos)
      << typo.status().to_string();
  auto one_suite = discover_tasks(dir->path() / "a");
  ASSERT_TRUE(one_suite.is_ok());
  EXPECT_EQ(one_suite->size(), 2u);
  EXPECT_EQ((*one_suite)[0].id, "a/001_x");
  auto missing = discover_tasks(dir->path() / "missing");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no task folder " + (dir->path() / "missing").string()),
            std::string::npos)
      << missing.status().to_string();
}

TEST(Suite, AKernelBenchCheckoutRootStandsForItsLevels) {
  auto dir = sys::TempDir::create("kevin-kb-checkout-");
  ASSERT_TRUE(dir.is_ok());
  for (const char* f : {"KernelBench/level1/1_Square_matrix_multiplication_.py",
                        "KernelBench/level2/1_Conv2D_ReLU.py", "KernelBench/level4/1_deepseek.py",
                        "src/eval.py", "scripts/run.py"}) {
    ASSERT_TRUE(write_file_atomic(dir->path() / f, "import torch\n").is_ok());
  }
  auto tasks = discover_tasks(dir->path());
  ASSERT_TRUE(tasks.is_ok()) << tasks.status().to_string();
  std::vector<std::string> ids;
  for (const auto& t : *tasks) ids.push_back(t.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"level1/1_Square_matrix_multiplication_",
                                           "level2/1_Conv2D_ReLU", "level4/1_deepseek"}))
      << "levels are the suites; the checkout's own src/ and scripts/ are not tasks";
  auto inner = discover_tasks(dir->path() / "KernelBench");
  ASSERT_TRUE(inner.is_ok());
  EXPECT_EQ(inner->size(), 3u);
}

TEST(Splits, StratifiedDeterministicAndComplete) {
  std::vector<TaskInfo> tasks;
  for (int i = 0; i < 20; ++i) tasks.push_back({"l1/a" + std::to_string(i), "l1", "fa", {}});
  for (int i = 0; i < 10; ++i) tasks.push_back({"l1/b" + std::to_string(i), "l1", "fb", {}});
  for (int i = 0; i < 3; ++i) tasks.push_back({"l2/c" + std::to_string(i), "l2", "fc", {}});
  const Splits s = make_splits(tasks, 0.1);
  EXPECT_EQ(s.holdout.size(), 3u) << "2 of 20 in fa, 1 of 10 in fb, 0 of 3 in fc";
  EXPECT_EQ(s.train.size() + s.holdout.size(), tasks.size());
  for (const auto& t : tasks) EXPECT_NE(s.split_of(t.id), "");
  const Splits again = make_splits(tasks, 0.1);
  EXPECT_EQ(again.holdout, s.holdout);
  auto round_trip = splits_from_json(to_json(s));
  ASSERT_TRUE(round_trip.is_ok());
  EXPECT_EQ(round_trip->train, s.train);
}

TEST(Splits, ShippedFileMatchesTheRule) {
  auto tasks = discover_tasks(KEVIN_TASKS_DIR);
  ASSERT_TRUE(tasks.is_ok());
  auto shipped = load_splits(KEVIN_TASKS_DIR);
  ASSERT_TRUE(shipped.is_ok()) << shipped.status().to_string();
  const Splits expected = make_splits(*tasks, 0.1);
  EXPECT_EQ(shipped->train, expected.train) << "regenerate with: kevin tasks split --write";
  EXPECT_EQ(shipped->holdout, expected.holdout) << "regenerate with: kevin tasks split --write";
  const double fraction =
      static_cast<double>(expected.holdout.size()) / static_cast<double>(tasks->size());
  EXPECT_GT(fraction, 0.07);
  EXPECT_LT(fraction, 0.13);
}

}  // namespace
}  // namespace kevin::tasks
