// first_hour_test.cpp — the README's first hour as a newcomer types it: the commands of its
// "Your first hour" table, read from README.md itself and run verbatim (kevin's path for
// `kevin`, a fake model server's port for 8000, the printed run folder for runs/<date-time>)
// from a folder outside the clone, each exit code and key line checked; and `make demo`'s plan.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/file.h"
#include "fake_http_server.h"
#include "kevin_cli.h"
#include "sys/cuda_probe.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::e2e {
namespace {
namespace fs = std::filesystem;

// The command column of README's "Your first hour" table, by step number.
std::map<int, std::string> first_hour_commands() {
  auto readme = read_file(source_dir() / "README.md");
  if (!readme.is_ok()) return {};
  const size_t from = readme->find("### Your first hour");
  if (from == std::string::npos) return {};
  const size_t to = readme->find("\n## ", from);
  const std::string table = readme->substr(from, to - from);
  std::map<int, std::string> out;
  static const std::regex row(R"(\n\| (\d+)\. [^|]* \| `([^`]+)`)");
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it)
    out[std::stoi((*it)[1])] = (*it)[2];
  return out;
}

// `text` split at spaces (the table's commands quote nothing).
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A README command as run here: `kevin` is the built binary (run_kevin adds it), the model
// server's port is the fake's, and the run folder is the one kevin run printed.
std::vector<std::string> as_run(const std::string& command, int port, const std::string& run_dir) {
  std::vector<std::string> args = words(command);
  EXPECT_FALSE(args.empty()) << command;
  if (args.empty()) return args;
  EXPECT_EQ(args.front(), "kevin") << command;
  args.erase(args.begin());
  for (std::string& a : args) {
    a = std::regex_replace(a, std::regex(R"(127\.0\.0\.1:8000)"),
                           "127.0.0.1:" + std::to_string(port));
    if (a == "runs/<date-time>") a = run_dir;
  }
  return args;
}

// A model server that knows one model and answers every request with the shipped example
// kernel for the GELU task (C++ on a machine without a GPU, CUDA where one is present).
testing::FakeHttpServer gelu_model(const std::string& kernel) {
  const Json models = {{"object", "list"}, {"data", Json::array({{{"id", "newcomer-model"}}})}};
  const Json reply = {
      {"choices", Json::array({{{"index", 0},
                                {"finish_reason", "stop"},
                                {"message",
                                 {{"role", "assistant"},
                                  {"content", "Here it is.\n```cpp\n" + kernel + "\n```\n"}}}}})}};
  return testing::FakeHttpServer([models, reply](const testing::RecordedRequest& r) {
    return testing::FakeReply{200, r.path.ends_with("/models") ? models.dump() : reply.dump()};
  });
}

TEST(FirstHour, TheReadmesCommandsWorkVerbatimFromOutsideTheClone) {
  const std::map<int, std::string> steps = first_hour_commands();
  ASSERT_TRUE(steps.contains(2) && steps.contains(3) && steps.contains(4) && steps.contains(5))
      << "README.md's \"Your first hour\" table lost its steps 2 to 5";
  EXPECT_EQ(steps.at(1), "make demo");
  const bool gpu = sys::cuda_device_count() > 0;
  auto kernel = read_file(source_dir() /
                          (gpu ? "examples/level1/028_gelu.cu" : "examples/level1/028_gelu.cpp"));
  ASSERT_TRUE(kernel.is_ok());
  auto home = sys::TempDir::create("kevin-first-hour-");
  ASSERT_TRUE(home.is_ok());
  const fs::path cwd = home->path();
  const std::string cache = (fs::path(KEVIN_BUILD_DIR) / "test-cache").string();
  auto model = gelu_model(*kernel);

  // 2. a kernel skeleton
  KevinRun skeleton = run_kevin(as_run(steps.at(2), model.port(), ""), 600, cwd);
  ASSERT_EQ(skeleton.code, 0) << steps.at(2) << "\n" << skeleton.output;
  EXPECT_NE(skeleton.output.find("wrote my_gelu.cu"), std::string::npos) << skeleton.output;
  ASSERT_TRUE(fs::exists(cwd / "my_gelu.cu"));
  // ... the newcomer writes the kernel: the shipped example stands in for it.
  ASSERT_TRUE(write_file_atomic(cwd / "my_gelu.cu", *kernel).is_ok());

  // 3. evaluate it
  std::vector<std::string> eval = as_run(steps.at(3), model.port(), "");
  eval.insert(eval.end(), {"--cache-dir", cache});
  const KevinRun judged = run_kevin(eval, 900, cwd);
  ASSERT_EQ(judged.code, 0) << steps.at(3) << "\n" << judged.output;
  EXPECT_NE(judged.output.find("correct"), std::string::npos) << judged.output;
  EXPECT_EQ(judged.output.find("wrong_answer"), std::string::npos) << judged.output;

  // 4. a model over several turns
  std::vector<std::string> run = as_run(steps.at(4), model.port(), "");
  run.insert(run.end(), {"--cache-dir", cache});
  const KevinRun ran = run_kevin(run, 900, cwd);
  ASSERT_EQ(ran.code, 0) << steps.at(4) << "\n" << ran.output;
  EXPECT_NE(ran.output.find("solved 1/1"), std::string::npos) << ran.output;
  std::smatch folder;
  ASSERT_TRUE(
      std::regex_search(ran.output, folder, std::regex(R"(run complete: \d+ turns in (\S+))")))
      << ran.output;
  const std::string run_dir = folder[1];
  EXPECT_TRUE(fs::exists(cwd / run_dir / "trajectories.jsonl") ||
              fs::exists(fs::path(run_dir) / "trajectories.jsonl"))
      << run_dir;

  // 5. the report
  const KevinRun report = run_kevin(as_run(steps.at(5), model.port(), run_dir), 120, cwd);
  ASSERT_EQ(report.code, 0) << steps.at(5) << "\n" << report.output;
  EXPECT_NE(report.output.find("report.html"), std::string::npos) << report.output;
  EXPECT_TRUE(fs::exists(cwd / run_dir / "report.html") ||
              fs::exists(fs::path(run_dir) / "report.html"));
}

TEST(FirstHour, MakeDemoBuildsOnlyWhatTheDemoRunsAndNamesEachStep) {
  // `make -n` prints the plan without running it; the recursive makes run (with packages
  // skipped) and print theirs.
  const auto make = sys::find_program("make");
  if (!make) GTEST_SKIP() << "make is not installed";
  auto build = sys::TempDir::create("kevin-demo-plan-");
  ASSERT_TRUE(build.is_ok());
  auto r =
      sys::run_command({make->string(), "-n", "--no-print-directory", "-C", source_dir().string(),
                        "demo", "BUILD=" + build->path().string(), "SKIP_DEPS=1"},
                       sys::Deadline::after(std::chrono::seconds(120)), 1 << 20);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_TRUE(r->exit.exited && r->exit.code == 0) << r->output;
  for (const char* step :
       {"kevin demo (1/3): installing packages", "kevin demo (2/3): building kevin",
        "kevin demo (3/3): judging the examples"})
    EXPECT_NE(r->output.find(step), std::string::npos) << step << "\n" << r->output;
  const std::string build_cmd = "cmake --build " + build->path().string();
  size_t builds = 0;
  for (size_t at = r->output.find(build_cmd); at != std::string::npos;
       at = r->output.find(build_cmd, at + 1)) {
    ++builds;
    const std::string line = r->output.substr(at, r->output.find('\n', at) - at);
    EXPECT_NE(line.find("--target kevin"), std::string::npos)
        << "the demo builds the kevin binary only (tests build under make test): " << line;
  }
  EXPECT_EQ(builds, 1u) << r->output;
}

}  // namespace
}  // namespace kevin::e2e
