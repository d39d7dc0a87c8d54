// cleanup_cli_test.cpp — nothing of kevin's outlives it: a runner stuck in a candidate's
// endless loop dies when kevin is killed outright (SIGKILL), on the CPU and on a GPU, and a
// later kevin removes what a killed one left in the temporary directory.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <thread>

#include "core/file.h"
#include "kevin_cli.h"
#include "sys/cuda_probe.h"
#include "sys/tempdir.h"

namespace kevin::e2e {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// Runner processes that name `judge` as theirs.
std::vector<pid_t> runners_of(pid_t judge) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream comm(entry.path() / "comm");
    std::string exe;
    if (!std::getline(comm, exe) || exe != "kevin-runner") continue;
    std::ifstream environ(entry.path() / "environ");
    std::string var;
    while (std::getline(environ, var, '\0')) {
      if (var == "KEVIN_PARENT_PID=" + std::to_string(judge))
        found.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return found;
}

// `kevin eval` of a fixture candidate against vector_add on `backend` (cpu or cuda).
std::vector<std::string> eval_args(const std::string& candidate,
                                   const std::string& backend = "cpu") {
  return {kevin_binary().string(),
          "eval",
          "--task",
          (source_dir() / "tests/fixtures/tasks/vector_add.py").string(),
          "--candidate",
          (source_dir() / "tests/fixtures/kernels" / backend / candidate).string(),
          "--backend",
          backend,
          "--timeout",
          "60",
          "--cache-dir",
          (fs::path(KEVIN_BUILD_DIR) / "test-cache").string()};
}

// Starts `kevin eval` of an endless candidate, waits until its runner has dropped to nobody
// and entered the candidate's loop, kills kevin outright and expects the runner gone.
void expect_runner_dies_with_killed_kevin(const std::vector<std::string>& args) {
  sys::SpawnOptions o;
  o.argv = args;
  o.env = sys::current_environment();
  auto kevin = sys::spawn(o);
  ASSERT_TRUE(kevin.is_ok()) << kevin.status().to_string();
  const pid_t judge = kevin->pid();
  std::vector<pid_t> runners;
  for (int i = 0; i < 600 && runners.empty(); ++i) {
    std::this_thread::sleep_for(100ms);
    runners = runners_of(judge);
  }
  ASSERT_FALSE(runners.empty()) << "no runner appeared within a minute";
  // The uid change is what once made the kernel forget the parent-death signal.
  std::this_thread::sleep_for(2s);
  ::kill(judge, SIGKILL);
  kevin->kill_and_reap();
  for (int i = 0; i < 50 && !runners_of(judge).empty(); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(runners_of(judge).empty()) << "a runner outlived its kevin by more than 5 s";
}

TEST(Cleanup, RunnersDieWithAKilledKevin) {
  expect_runner_dies_with_killed_kevin(eval_args("hostile_infinite_loop.cpp"));
}

// CUDA runners share the host's PID namespace, so only their own parent-death signal stops them.
TEST(CleanupGpu, CudaRunnersDieWithAKilledKevin) {
  if (sys::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  expect_runner_dies_with_killed_kevin(eval_args("hostile_infinite_loop.cu", "cuda"));
}

TEST(Cleanup, AKevinRemovesWhatAKilledOneLeftBehind) {
  auto tmp = sys::TempDir::create("kevin-cleanup-").value();
  // A scratch folder of a judge that no longer exists (pid 2^22 + 1 is above any pid_max).
  const fs::path stale = tmp.path() / "kevin-run-4194305-abcdef";
  const fs::path live = tmp.path() / ("kevin-run-" + std::to_string(::getpid()) + "-abcdef");
  fs::create_directories(stale);
  fs::create_directories(live);
  ASSERT_TRUE(write_file_atomic(stale / "candidate.so", "x").is_ok());
  sys::CommandOptions options;
  options.env = sys::current_environment();
  options.env->push_back("TMPDIR=" + tmp.path().string());
  auto r = sys::run_command(eval_args("good_vector_add.cpp"), sys::Deadline::after(600s), options);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FALSE(fs::exists(stale)) << r->output;
  EXPECT_TRUE(fs::exists(live)) << "the folder of a living judge stays";
  EXPECT_NE(r->output.find("cleaned up after an earlier kevin"), std::string::npos) << r->output;
}

}  // namespace
}  // namespace kevin::e2e
