// tasks_cli_test.cpp — `kevin tasks` on the shipped suite and on a folder in KernelBench's
// own layout (tests/fixtures/kernelbench_suite: problems written here in that format, one
// with non-tensor constructor arguments, one returning a tuple), and a CPU end-to-end sample
// of the shipped suite (the bundled examples).
#include <gtest/gtest.h>

#include <cstdlib>

#include <map>

#include "core/file.h"
#include "kevin_cli.h"
#include "sys/tempdir.h"

namespace kevin::e2e {
namespace {
namespace fs = std::filesystem;

std::string cache_flag() { return (fs::path(KEVIN_BUILD_DIR) / "test-cache").string(); }
fs::path kb_suite() { return source_dir() / "tests/fixtures/kernelbench_suite"; }

TEST(TasksCli, ListShowsEveryShippedTaskWithItsSplit) {
  const KevinRun run = run_kevin({"tasks", "list", "--json"});
  ASSERT_EQ(run.code, 0) << run.output;
  auto rows = parse_json(run.output.substr(run.output.find('[')));
  ASSERT_TRUE(rows.is_ok()) << run.output;
  ASSERT_GE(rows->size(), 120u);
  std::map<std::string, int> splits;
  int level2_holdout = 0;
  for (const auto& r : *rows) {
    ++splits[r["split"].get<std::string>()];
    level2_holdout += r["split"] == "holdout" && r["suite"] == "level2";
  }
  EXPECT_EQ(splits[""], 0) << "every shipped task is in train or holdout";
  EXPECT_GT(splits["holdout"], 0);
  const KevinRun holdout = run_kevin({"tasks", "list", "--split", "holdout", "--suite", "level2"});
  EXPECT_EQ(holdout.code, 0);
  EXPECT_NE(holdout.output.find("level2/"), std::string::npos);
  EXPECT_EQ(holdout.output.find("level1/"), std::string::npos);
  EXPECT_EQ(holdout.output.rfind("id", 0), 0u) << "a header names the columns\n" << holdout.output;
  EXPECT_NE(holdout.output.find("\n" + std::to_string(level2_holdout) + " tasks in "),
            std::string::npos)
      << holdout.output;
  auto one_task = sys::TempDir::create("kevin-one-task-");
  ASSERT_TRUE(one_task.is_ok());
  ASSERT_TRUE(fs::create_directories(one_task->path() / "level1"));
  fs::copy_file(source_dir() / "tasks/level1/028_gelu.py", one_task->path() / "level1/028_gelu.py");
  ::setenv("KEVIN_TASKS_DIR", one_task->path().c_str(), 1);
  const KevinRun one = run_kevin({"tasks", "list"});
  ::unsetenv("KEVIN_TASKS_DIR");
  EXPECT_NE(one.output.find("\n1 task in "), std::string::npos) << "not \"1 tasks\"\n"
                                                                << one.output;
}

TEST(TasksCli, ShowPrintsSourceAndAbiArguments) {
  const KevinRun run = run_kevin(
      {"tasks", "show", "level2/013_conv2d_hardswish_groupnorm_scale", "--backend", "cpu"});
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("class Model"), std::string::npos);
  EXPECT_NE(run.output.find("inputs[0]   x"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("parameter (state_dict)"), std::string::npos);
  EXPECT_NE(run.output.find("scalars[0]"), std::string::npos);
  EXPECT_NE(run.output.find("outputs[0]"), std::string::npos);
  EXPECT_NE(run.output.find("float32[4, 6, 31, 31]"), std::string::npos) << "CPU sizes apply";
  const KevinRun missing = run_kevin({"tasks", "show", "no_such_task"});
  EXPECT_EQ(missing.code, 2);
}

TEST(TasksCli, ShowPromptPrintsTheFirstPromptOfARun) {
  const KevinRun run =
      run_kevin({"tasks", "show", "level1/026_relu", "--backend", "cpu", "--prompt"});
  ASSERT_EQ(run.code, 0) << run.output;
  const size_t system = run.output.find("=== system ===");
  const size_t user = run.output.find("=== user ===");
  ASSERT_NE(system, std::string::npos) << run.output;
  ASSERT_NE(user, std::string::npos);
  EXPECT_LT(system, user);
  EXPECT_NE(run.output.find("level1/026_relu", user), std::string::npos)
      << "the task statement is in the user message";
  EXPECT_NE(run.output.find("kevin_forward"), std::string::npos);
  EXPECT_NE(run.output.find("device CPU"), std::string::npos);
}

TEST(TasksCli, ShowPromptInKernelBenchFormatAsksForModelNew) {
  const KevinRun run = run_kevin({"tasks", "show", "level1/026_relu", "--backend", "cpu",
                                  "--prompt", "--format", "kernelbench"});
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("class ModelNew(nn.Module)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("load_inline"), std::string::npos);
  EXPECT_EQ(run.output.find("kevin_forward"), std::string::npos) << "no word of kevin's ABI";
  EXPECT_EQ(run_kevin({"tasks", "show", "level1/026_relu", "--prompt", "--format", "triton"}).code,
            2);
}

TEST(TasksCli, TemplateCompilesAndIsJudged) {
  auto dir = sys::TempDir::create("kevin-template-");
  ASSERT_TRUE(dir.is_ok());
  for (const char* task : {"level1/026_relu", "level2/013_conv2d_hardswish_groupnorm_scale"}) {
    const std::string path = (dir->path() / (fs::path(task).filename().string() + ".cpp")).string();
    const KevinRun written =
        run_kevin({"tasks", "show", task, "--backend", "cpu", "--template", path});
    ASSERT_EQ(written.code, 0) << written.output;
    const std::string task_file = (source_dir() / "tasks" / (std::string(task) + ".py")).string();
    EXPECT_NE(written.output.find("kevin eval --task " + std::string(task)), std::string::npos)
        << written.output;
    const KevinRun eval = run_kevin({"eval", "--task", task_file, "--candidate", path, "--backend",
                                     "cpu", "--json", "--cache-dir", cache_flag()});
    ASSERT_EQ(eval.code, 0) << eval.output;
    const auto docs = json_lines(eval.output);
    ASSERT_EQ(docs.size(), 1u) << eval.output;
    EXPECT_EQ(docs[0]["verdict"], "wrong_answer")
        << task << ": the skeleton builds, runs and computes nothing\n"
        << docs[0]["feedback"];
    const KevinRun again =
        run_kevin({"tasks", "show", task, "--backend", "cpu", "--template", path});
    EXPECT_EQ(again.code, 2) << "an existing file is not replaced";
  }
}

TEST(TasksCli, TheReadmesFirstStepsWorkVerbatimFromAnotherFolder) {
  // README's quick start, word for word but for the test's cache, run from a folder that is not
  // the repository's, on whatever backend this machine has (the CPU one in CI).
  auto dir = sys::TempDir::create("kevin-readme-");
  ASSERT_TRUE(dir.is_ok());
  const KevinRun written =
      run_kevin({"tasks", "show", "level1/028_gelu", "--template", "my_gelu.cu"}, 600, dir->path());
  ASSERT_EQ(written.code, 0) << written.output;
  EXPECT_NE(written.output.find("wrote my_gelu.cu"), std::string::npos) << written.output;
  EXPECT_NE(written.output.find("kevin eval --task level1/028_gelu --candidate my_gelu.cu"),
            std::string::npos)
      << "the printed command names the task by id, which works from any folder\n"
      << written.output;
  for (const char* task : {"tasks/level1/028_gelu.py", "level1/028_gelu"}) {
    const KevinRun eval = run_kevin(
        {"eval", "--task", task, "--candidate", "my_gelu.cu", "--cache-dir", cache_flag()}, 900,
        dir->path());
    ASSERT_EQ(eval.code, 0) << task << ": " << eval.output;
    EXPECT_NE(eval.output.find("wrong_answer"), std::string::npos)
        << task << ": the skeleton builds, runs and computes nothing\n"
        << eval.output;
  }
  const KevinRun swapped = run_kevin(
      {"eval", "--task", "my_gelu.cu", "--candidate", "tasks/level1/028_gelu.py"}, 60, dir->path());
  EXPECT_EQ(swapped.code, 2) << swapped.output;
  EXPECT_NE(swapped.output.find("--candidate takes the kernel"), std::string::npos)
      << swapped.output;
  const KevinRun typo = run_kevin(
      {"eval", "--task", "level1/028_gelo", "--candidate", "my_gelu.cu"}, 60, dir->path());
  EXPECT_EQ(typo.code, 2) << typo.output;
  EXPECT_NE(typo.output.find("did you mean 'level1/028_gelu'"), std::string::npos) << typo.output;
}

TEST(TasksCli, CheckPassesTheShippedSuiteOnCpu) {
  const KevinRun run = run_kevin({"tasks", "check"}, 1200);
  EXPECT_EQ(run.code, 0) << run.output.substr(0, 6000);
  EXPECT_NE(run.output.find(" 0 flagged, 0 broken"), std::string::npos)
      << run.output.substr(0, 6000);
}

TEST(TasksCli, CheckCountsEachTaskAsItIsChecked) {
  const KevinRun run = run_kevin({"tasks", "check", "level1/026_relu", "level1/028_gelu"}, 300);
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("[check 1/2] level1/026_relu ("), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("[check 2/2] level1/028_gelu ("), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("ok    level1/028_gelu"), std::string::npos) << run.output;
}

TEST(TasksCli, CheckFlagsDegenerateTasks) {
  auto dir = sys::TempDir::create("kevin-degenerate-");
  ASSERT_TRUE(dir.is_ok());
  ASSERT_TRUE(
      write_file_atomic(dir->path() / "suite/mean_softmax.py",
                        "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
                        "    def forward(self, x, y):\n        return torch.softmax(x, "
                        "dim=-1).mean(dim=-1) + 0 * y.sum()\n"
                        "def get_inputs():\n    return [torch.rand(64, 64), torch.randn(64, 64)]\n"
                        "def get_init_inputs():\n    return []\n")
          .is_ok());
  const KevinRun run = run_kevin({"tasks", "check", "--tasks", dir->path().string()});
  EXPECT_EQ(run.code, 1) << run.output;
  EXPECT_NE(run.output.find("constant:"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("ignores_input: replacing forward argument 1"), std::string::npos)
      << run.output;
}

TEST(TasksCli, CheckGoesOnAfterATaskEndsTheReferenceWorker) {
  auto dir = sys::TempDir::create("kevin-worker-death-");
  ASSERT_TRUE(dir.is_ok());
  const std::string model =
      "import os\nimport torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
      "    def forward(self, x, y):\n        return x * y + x\n"
      "def get_init_inputs():\n    return []\n";
  ASSERT_TRUE(write_file_atomic(dir->path() / "suite/a_exits.py",
                                model + "def get_inputs():\n    os._exit(3)\n")
                  .is_ok());
  ASSERT_TRUE(
      write_file_atomic(
          dir->path() / "suite/b_fine.py",
          model + "def get_inputs():\n    return [torch.randn(32, 32), torch.randn(32, 32)]\n")
          .is_ok());
  const KevinRun run = run_kevin({"tasks", "check", "--tasks", dir->path().string()});
  EXPECT_EQ(run.code, 1) << run.output;
  EXPECT_NE(run.output.find("ERROR suite/a_exits: "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("a fresh reference worker checks the next task"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("ok    suite/b_fine"), std::string::npos)
      << "the task after the crash was checked\n"
      << run.output;
  EXPECT_NE(run.output.find("1 broken"), std::string::npos) << run.output;
}

TEST(KernelBenchLayout, FolderWorksAsASuiteUnchanged) {
  const KevinRun list = run_kevin({"tasks", "list", "--tasks", kb_suite().string()});
  ASSERT_EQ(list.code, 0) << list.output;
  for (const char* id : {"level1/1_Scaled_Difference", "level1/2_Pointwise_Conv_With_Init_Args",
                         "level1/3_Row_Min_Max_Tuple"}) {
    EXPECT_NE(list.output.find(id), std::string::npos) << id;
  }
  const KevinRun check = run_kevin({"tasks", "check", "--tasks", kb_suite().string()});
  EXPECT_EQ(check.code, 0) << check.output;
  const KevinRun show =
      run_kevin({"tasks", "show", "3_Row_Min_Max_Tuple", "--tasks", kb_suite().string(), "--json"});
  ASSERT_EQ(show.code, 0) << show.output;
  auto j = parse_json(show.output.substr(show.output.find('{')));
  ASSERT_TRUE(j.is_ok());
  EXPECT_EQ((*j)["outputs"].size(), 2u) << "a tuple result gives two outputs";
  for (const char* stem : {"2_Pointwise_Conv_With_Init_Args", "3_Row_Min_Max_Tuple"}) {
    const KevinRun eval = run_kevin(
        {"eval", "--task", (kb_suite() / "level1" / (std::string(stem) + ".py")).string(),
         "--candidate", (kb_suite() / "solutions" / (std::string(stem) + ".cpp")).string(),
         "--backend", "cpu", "--json", "--cache-dir", cache_flag()});
    ASSERT_EQ(eval.code, 0) << eval.output;
    const auto docs = json_lines(eval.output);
    ASSERT_EQ(docs.size(), 1u);
    EXPECT_EQ(docs[0]["verdict"], "correct") << stem << ": " << docs[0]["feedback"];
  }
}

TEST(Examples, CpuSolutionsOfShippedTasksAreCorrect) {
  const KevinRun run =
      run_kevin({"eval", "--batch", (source_dir() / "examples/demo-cpu.jsonl").string(),
                 "--backend", "cpu", "--cache-dir", cache_flag()},
                1200);
  ASSERT_EQ(run.code, 0) << run.output.substr(0, 4000);
  const auto docs = json_lines(run.output);
  ASSERT_GE(docs.size(), 10u);
  for (const auto& d : docs)
    EXPECT_EQ(d["verdict"], "correct") << d["candidate"] << ": " << d["feedback"];
}

}  // namespace
}  // namespace kevin::e2e
