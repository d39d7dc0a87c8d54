// compiler_budget_test.cpp — one build's limits, with the real g++ behind a stand-in that lives
// as long as each compile: an answer of eight extensions never has more compiler processes at
// once than allowed nor more memory caps than the build's budget, and compiles that each stay
// far under the old per-process CPU limit together run out of the build's CPU time budget.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "core/file.h"
#include "core/mutex.h"
#include "engine/build/compiler.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// The stand-in "g++": spins SPIN_MS of CPU time before a compile (-c), sleeps SLEEP_MS, then
// runs the real g++ as its child and ends as it ended, so that it is alive, under its job's
// limits, for the whole of each compiler run.
constexpr const char* kStandIn = R"(
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cstring>
static double cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-c") != 0) continue;
    volatile unsigned long x = 0;
    while (cpu_ms() < SPIN_MS) x = x + 1;
  }
  usleep(SLEEP_MS * 1000);
  const pid_t child = fork();
  if (child == 0) {
    argv[0] = const_cast<char*>(REAL_GXX);
    execv(REAL_GXX, argv);
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
  }
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
)";

// What a watcher of /proc saw of the stand-in's processes during a build.
struct Seen {
  size_t most_at_once = 0;
  uint64_t most_memory_caps = 0;  // the largest sum of their RLIMIT_AS at one moment
};

class CompilerBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-compiler-budget-");
    ASSERT_TRUE(dir.is_ok());
    dir_ = std::move(dir).value();
    ::chmod(dir_.path().c_str(), 0755);  // the sandboxed compiler runs as nobody
    real_gxx_ = sys::find_program("g++").value_or("/usr/bin/g++");
  }

  // Builds the stand-in as <dir>/<name>/bin/g++ (its toolchain folder is <dir>/<name>).
  fs::path stand_in(const std::string& name, int spin_ms, int sleep_ms) {
    const fs::path bin = dir_.path() / name / "bin";
    fs::create_directories(bin);
    EXPECT_TRUE(write_file_atomic(bin / "stand_in.cpp", kStandIn).is_ok());
    auto built = sys::run_command(
        {real_gxx_.string(), "-O1", "-DSPIN_MS=" + std::to_string(spin_ms),
         "-DSLEEP_MS=" + std::to_string(sleep_ms), "-DREAL_GXX=\"" + real_gxx_.string() + "\"",
         (bin / "stand_in.cpp").string(), "-o", (bin / "g++").string()},
        sys::Deadline::after(120s));
    EXPECT_TRUE(built.is_ok() && built->exit.exited && built->exit.code == 0)
        << (built.is_ok() ? built->output : built.status().to_string());
    for (const auto& p : {dir_.path() / name, bin}) ::chmod(p.c_str(), 0755);
    return bin / "g++";
  }

  // A torch driver on the CPU backend with `gxx` for g++ and no PyTorch: its units include
  // nothing of PyTorch's (the precompiled header cannot be made and is done without; the link
  // finds no libtorch, which these tests do not reach or do not need).
  CompilerConfig config(const fs::path& gxx) const {
    CompilerConfig c;
    c.backend = Backend::kCpu;
    c.cache_dir = dir_.path() / "cache";
    c.abi_include_dir = fs::path(KEVIN_SOURCE_DIR) / "src/engine/abi";
    c.sandbox_path = fs::path(KEVIN_BUILD_DIR) / "bin/kevin-sandbox";
    c.gxx = gxx;
    c.torch = TorchToolchain{"none", {}, {}, {}, false};
    return c;
  }

  // Eight extensions, each a small host unit of its own.
  static std::vector<ExtensionUnits> eight_extensions(const std::string& tag) {
    std::vector<ExtensionUnits> extensions;
    for (int i = 0; i < 8; ++i) {
      const std::string n = std::to_string(i);
      extensions.push_back(
          {"ext" + n, "int value_" + n + "() { return " + n + "; }  // " + tag, ""});
    }
    return extensions;
  }

  sys::TempDir dir_;
  fs::path real_gxx_;
};

// The RLIMIT_AS of each process whose command line starts with `program`, but for those whose
// parent's does too (the stand-in's child between fork and exec).
std::vector<uint64_t> memory_caps_of(const std::string& program) {
  std::map<std::string, std::pair<std::string, uint64_t>> found;  // pid → parent, cap
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = read_file(e.path() / "cmdline", 4096);
    auto stat = read_file(e.path() / "stat", 4096);
    if (!cmdline.is_ok() || !stat.is_ok() || cmdline->substr(0, cmdline->find('\0')) != program)
      continue;
    std::istringstream after_name(stat->substr(stat->rfind(')') + 2));
    std::string state, parent;
    after_name >> state >> parent;
    std::ifstream limits(e.path() / "limits");
    for (std::string line; std::getline(limits, line);) {
      if (line.rfind("Max address space", 0) != 0) continue;
      const std::string soft = line.substr(26, line.find(' ', 26) - 26);
      found[pid] = {parent, soft == "unlimited" ? UINT64_MAX : std::stoull(soft)};
    }
  }
  std::vector<uint64_t> caps;
  for (const auto& [pid, entry] : found) {
    if (!found.count(entry.first)) caps.push_back(entry.second);
  }
  return caps;
}

// Runs `build` while watching /proc for `program`'s processes.
template <typename Build>
Seen watching(const fs::path& program, Build build) {
  Mutex mu;
  bool done = false;
  Seen seen;
  std::thread watcher([&] {
    for (;;) {
      {
        MutexLock lock(mu);
        if (done) return;
      }
      const auto caps = memory_caps_of(program.string());
      uint64_t sum = 0;
      for (const uint64_t c : caps)
        sum = c == UINT64_MAX || sum > UINT64_MAX - c ? UINT64_MAX : sum + c;
      seen.most_at_once = std::max(seen.most_at_once, caps.size());
      seen.most_memory_caps = std::max(seen.most_memory_caps, sum);
      std::this_thread::sleep_for(1ms);
    }
  });
  build();
  {
    MutexLock lock(mu);
    done = true;
  }
  watcher.join();
  return seen;
}

TEST_F(CompilerBudget, ManyUnitsNeverRunMoreCompilersOrMemoryThanTheBuildsLimits) {
  const fs::path gxx = stand_in("plain", 0, 150);
  CompilerConfig c = config(gxx);
  c.max_processes = 3;
  c.memory_limit_bytes = uint64_t{6} << 30;
  auto driver = CompileDriver::create(c);
  ASSERT_TRUE(driver.is_ok()) << driver.status().to_string();
  Result<BuildResult> built = internal_error("not built");
  // Sixteen compiler runs (each unit's g++ -E and g++ -c), then eight partial links.
  const Seen seen = watching(gxx, [&] { built = driver->build_extensions(eight_extensions("a")); });
  ASSERT_TRUE(built.is_ok()) << built.status().to_string();
  EXPECT_EQ(built->log.find("limit"), std::string::npos) << built->log;
  EXPECT_LE(seen.most_at_once, 3u);
  EXPECT_GE(seen.most_at_once, 2u) << "units that fit the limits still build at the same time";
  EXPECT_GT(seen.most_memory_caps, 0u);
  EXPECT_LE(seen.most_memory_caps, uint64_t{6} << 30);
}

TEST_F(CompilerBudget, CompilesUnderTheOldPerProcessLimitStillSpendTheBuildsCpuBudget) {
  // Each compile spins 1.5 s of CPU time, far under the 60 s one process may use; eight of them
  // are 12 s, three times the build's budget.
  const fs::path gxx = stand_in("spin", 1500, 0);
  CompilerConfig c = config(gxx);
  c.max_processes = 2;
  c.timeout = 60s;
  c.cpu_budget = 4s;
  auto driver = CompileDriver::create(c);
  ASSERT_TRUE(driver.is_ok()) << driver.status().to_string();
  const auto start = std::chrono::steady_clock::now();
  auto r = driver->build_extensions(eight_extensions("b"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 40s);
  EXPECT_FALSE(r->ok);
  EXPECT_TRUE(r->timed_out);
  EXPECT_NE(r->log.find("CPU time budget"), std::string::npos) << r->log;
  EXPECT_NE(r->log.find("not started"), std::string::npos) << "the rest of the build: " << r->log;
  auto again = driver->build_extensions(eight_extensions("b"));
  ASSERT_TRUE(again.is_ok());
  EXPECT_TRUE(again->cache_hit) << "a build out of budget is cached like a timeout";
  EXPECT_EQ(again->log, r->log);
}

}  // namespace
}  // namespace kevin::engine
