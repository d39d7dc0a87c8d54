// compiler_test.cpp — the CPU compile driver: builds, diagnostics, cache hits, gate refusals
// and timeouts cached as results, concurrent builders, the cache's leases and size cap, the
// unsandboxed path, a failing sandbox, and log shaping.
#include "engine/build/compiler.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "core/file.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path abi_dir() { return fs::path(KEVIN_SOURCE_DIR) / "src/engine/abi"; }

class CompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-cache-test-");
    ASSERT_TRUE(dir.is_ok());
    cache_ = std::move(dir).value();
    auto d = CompileDriver::create(config());
    ASSERT_TRUE(d.is_ok()) << d.status().to_string();
    driver_.emplace(std::move(d).value());
  }
  CompilerConfig config() const {
    CompilerConfig c;
    c.backend = Backend::kCpu;
    c.cache_dir = cache_.path();
    c.abi_include_dir = abi_dir();
    c.sandbox_path = fs::path(KEVIN_BUILD_DIR) / "bin/kevin-sandbox";
    return c;
  }
  CompileDriver make_driver(const CompilerConfig& c) const {
    auto d = CompileDriver::create(c);
    EXPECT_TRUE(d.is_ok()) << d.status().to_string();
    return std::move(d).value();
  }
  fs::path entry_of(const BuildResult& r) const {
    return cache_.path() / "builds" / r.key.substr(0, 2) / r.key;
  }

  sys::TempDir cache_;
  std::optional<CompileDriver> driver_;
};

constexpr const char* kGood =
    "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* a) { return "
    "a->num_inputs; }\n";
std::string variant(int i) { return std::string(kGood) + "// variant " + std::to_string(i) + "\n"; }

TEST_F(CompilerTest, BuildsThenHitsCache) {
  auto first = driver_->build(kGood);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_TRUE(first->ok) << first->log;
  EXPECT_FALSE(first->rejection.has_value());
  EXPECT_FALSE(first->cache_hit);
  EXPECT_TRUE(fs::exists(first->object));
  EXPECT_TRUE(first->lease.held());
  auto second = driver_->build(kGood);
  ASSERT_TRUE(second.is_ok());
  EXPECT_TRUE(second->cache_hit);
  EXPECT_TRUE(second->lease.held());
  EXPECT_EQ(second->key, first->key);
  EXPECT_NE(driver_->build(std::string(kGood) + "\n// changed\n")->key, first->key);
  // Only the object and the record are cached: no source, no preprocessed unit.
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(entry_of(*first)))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"build.json", "candidate.so", "lock"}));
}

TEST_F(CompilerTest, GoodFixturesBuildAndPassTheGates) {
  const fs::path dir = fs::path(KEVIN_SOURCE_DIR) / "tests/fixtures/kernels/cpu";
  int seen = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("good_", 0) != 0) continue;
    ++seen;
    auto r = driver_->build(read_file(e.path()).value());
    ASSERT_TRUE(r.is_ok()) << e.path() << ": " << r.status().to_string();
    EXPECT_TRUE(r->ok) << e.path() << ": " << r->log << (r->rejection ? r->rejection->detail : "");
  }
  EXPECT_GE(seen, 5);
}

TEST_F(CompilerTest, CompileErrorsAreResultsWithScrubbedLog) {
  auto r = driver_->build(
      "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* a) { return "
      "undefined_name; }\n");
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r->ok);
  EXPECT_FALSE(r->rejection.has_value());
  EXPECT_FALSE(r->lease.held());
  EXPECT_NE(r->log.find("candidate.cpp:2"), std::string::npos) << r->log;
  EXPECT_EQ(r->log.find(cache_.path().string()), std::string::npos) << "paths must be scrubbed";
  auto again = driver_->build(
      "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* a) { return "
      "undefined_name; }\n");
  EXPECT_TRUE(again->cache_hit) << "failed builds are cached too";
}

TEST_F(CompilerTest, GateRefusalsAreCachedWithoutTheObject) {
  // The object gate: an import that is not on the list.
  const std::string imports_malloc =
      read_file(fs::path(KEVIN_SOURCE_DIR) / "tests/fixtures/kernels/cpu/hostile_malloc_huge.cpp")
          .value();
  // The translation-unit gate: a constructor that only macro expansion reveals.
  const std::string hidden_constructor =
      std::string(kGood) +
      "#define ATTR(x) __attribute__((x))\nATTR(constructor) static void at_load() {}\n";
  for (const std::string& source : {imports_malloc, hidden_constructor}) {
    auto r = driver_->build(source);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_FALSE(r->ok);
    ASSERT_TRUE(r->rejection.has_value()) << r->log;
    EXPECT_TRUE(r->object.empty());
    EXPECT_FALSE(fs::exists(entry_of(*r) / "candidate.so")) << "a refused object is not kept";
    auto again = driver_->build(source);
    ASSERT_TRUE(again.is_ok());
    EXPECT_TRUE(again->cache_hit);
    ASSERT_TRUE(again->rejection.has_value());
    EXPECT_EQ(again->rejection->rule, r->rejection->rule);
    EXPECT_EQ(again->rejection->detail, r->rejection->detail);
  }
  EXPECT_EQ(driver_->build(imports_malloc)->rejection->rule, "import_not_allowed");
  EXPECT_EQ(driver_->build(hidden_constructor)->rejection->rule, "banned_construct");
}

TEST_F(CompilerTest, TimeoutsAreCachedAsResults) {
  CompilerConfig c = config();
  c.timeout = 2s;
  const CompileDriver quick = make_driver(c);
  const std::string slow = std::string(kGood) +
                           "constexpr long spin() { long x = 0; for (long i = 0; i < 100000; ++i)\n"
                           "  for (long j = 0; j < 100000; ++j) x += (i ^ j) & 7; return x; }\n"
                           "static_assert(spin() != 1);\n";
  const auto start = std::chrono::steady_clock::now();
  auto r = quick.build(slow);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
  EXPECT_FALSE(r->ok);
  EXPECT_TRUE(r->timed_out);
  EXPECT_NE(r->log.find("compilation timed out after 2 s"), std::string::npos) << r->log;
  auto again = quick.build(slow);
  ASSERT_TRUE(again.is_ok());
  EXPECT_TRUE(again->cache_hit);
  EXPECT_TRUE(again->timed_out);
}

TEST_F(CompilerTest, ConcurrentBuildersOfSameSourceAgree) {
  std::vector<std::thread> threads;
  std::vector<BuildResult> results(4);
  const CompileDriver other = make_driver(config());  // a second driver on the same cache
  const std::string src = std::string(kGood) + "// concurrent\n";
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      results[static_cast<size_t>(i)] = (i % 2 ? other : *driver_).build(src).value();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.object, results[0].object);
    EXPECT_TRUE(fs::exists(r.object));
    EXPECT_TRUE(r.lease.held());
  }
  // Every builder holds the entry, so not even a cap of zero removes it.
  ASSERT_TRUE(driver_->enforce_cache_cap(0).is_ok());
  EXPECT_TRUE(fs::exists(results[0].object));
}

TEST_F(CompilerTest, EntryInUseSurvivesEviction) {
  auto held = driver_->build(variant(1));
  ASSERT_TRUE(held.is_ok() && held->ok);
  auto dropped = driver_->build(variant(2));
  ASSERT_TRUE(dropped.is_ok() && dropped->ok);
  const fs::path dropped_entry = entry_of(*dropped);
  dropped = internal_error("dropped");  // the only holder lets go
  ASSERT_TRUE(driver_->enforce_cache_cap(0).is_ok());
  EXPECT_TRUE(fs::exists(held->object)) << "in use: kept";
  EXPECT_FALSE(fs::exists(dropped_entry)) << "unused: evicted";
  // A hit after eviction is a fresh build, not a dangling entry.
  auto rebuilt = driver_->build(variant(2));
  ASSERT_TRUE(rebuilt.is_ok());
  EXPECT_FALSE(rebuilt->cache_hit);
  EXPECT_TRUE(fs::exists(rebuilt->object));
}

TEST_F(CompilerTest, EvictsLeastRecentlyUsedFirst) {
  std::vector<fs::path> entries;
  uint64_t one_entry = 0;
  for (int i = 0; i < 3; ++i) {
    auto r = driver_->build(variant(10 + i));
    ASSERT_TRUE(r.is_ok() && r->ok);
    entries.push_back(entry_of(*r));
    one_entry = std::max<uint64_t>(
        one_entry, fs::file_size(r->object) + fs::file_size(entries.back() / "build.json"));
    std::this_thread::sleep_for(20ms);  // distinct last-use times
  }
  ASSERT_TRUE(driver_->build(variant(10))->cache_hit);  // the oldest is used again
  ASSERT_TRUE(driver_->enforce_cache_cap(2 * one_entry + one_entry / 2).is_ok());
  EXPECT_TRUE(fs::exists(entries[0])) << "used most recently";
  EXPECT_FALSE(fs::exists(entries[1])) << "least recently used";
  EXPECT_TRUE(fs::exists(entries[2]));
}

TEST_F(CompilerTest, CapOfZeroKeepsOnlyEntriesInUse) {
  CompilerConfig c = config();
  c.max_cache_bytes = 0;
  const CompileDriver tiny = make_driver(c);
  auto a = tiny.build(variant(20));
  auto b = tiny.build(variant(21));
  ASSERT_TRUE(a.is_ok() && a->ok && b.is_ok() && b->ok);
  EXPECT_TRUE(fs::exists(a->object));
  EXPECT_TRUE(fs::exists(b->object));
  const fs::path b_entry = entry_of(*b);
  b = internal_error("dropped");
  auto failed = tiny.build("int broken(");  // results without objects are not in use
  ASSERT_TRUE(failed.is_ok() && !failed->ok);
  const fs::path failed_entry = entry_of(*failed);
  auto c_build = tiny.build(variant(22));  // this store goes over the cap: eviction runs
  ASSERT_TRUE(c_build.is_ok() && c_build->ok);
  EXPECT_TRUE(fs::exists(a->object));
  EXPECT_TRUE(fs::exists(c_build->object));
  EXPECT_FALSE(fs::exists(b_entry));
  EXPECT_FALSE(fs::exists(failed_entry));
}

TEST_F(CompilerTest, WithoutTheSandboxTheCompilerStillRuns) {
  CompilerConfig c = config();
  c.sandbox = false;
  c.sandbox_path = "/nonexistent/kevin-sandbox";
  const CompileDriver bare = make_driver(c);
  auto r = bare.build(variant(30));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->ok) << r->log;
}

TEST_F(CompilerTest, AMissingOrFailingSandboxIsAnErrorAndNothingIsCached) {
  CompilerConfig c = config();
  c.sandbox_path = cache_.path() / "no-such-sandbox";
  auto no_sandbox = CompileDriver::create(c);
  EXPECT_EQ(no_sandbox.status().code(), StatusCode::kNotFound);
  EXPECT_NE(
      no_sandbox.status().message().find("kevin-sandbox not found at " + c.sandbox_path.string()),
      std::string::npos)
      << no_sandbox.status().to_string();
  // A sandbox that cannot set itself up on this machine: one line, its own exit code.
  const fs::path fake = cache_.path() / "fake-sandbox";
  std::ofstream(fake) << "#!/bin/sh\necho 'kevin-sandbox: cannot create namespaces (unshare): "
                         "Operation not permitted' >&2\nexit 111\n";
  ::chmod(fake.c_str(), 0755);
  c.sandbox_path = fake;
  auto d = CompileDriver::create(c);
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("cannot create namespaces"), std::string::npos)
      << d.status().to_string();
  // One that works for the version query, then fails: build() errs and caches nothing.
  std::ofstream(fake)
      << "#!/bin/sh\ncase \"$*\" in *--version*|*' -v '*) pass=1;; esac\n"
      << "if [ -n \"$pass\" ]; then while [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"; "
         "fi\n"
      << "echo 'kevin-sandbox: mount tmpfs on /tmp: Permission denied' >&2\nexit 111\n";
  auto flaky = CompileDriver::create(c);
  ASSERT_TRUE(flaky.is_ok()) << flaky.status().to_string();
  auto r = flaky->build(variant(40));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("mount tmpfs on /tmp"), std::string::npos)
      << r.status().to_string();
  std::error_code ec;
  size_t entries = 0;
  for (auto it = fs::recursive_directory_iterator(cache_.path() / "builds", ec);
       !ec && it != fs::recursive_directory_iterator(); ++it) {
    if (it->path().filename() == "build.json") ++entries;
  }
  EXPECT_EQ(entries, 0u) << "an internal failure is not a verdict";
}

TEST(CompilerLog, TruncatesAtLineBoundaryAndDropsPtxasNoise) {
  std::string log = "/tmp/b/candidate.cu(3): error: bad\nptxas info    : Used 12 registers\n";
  for (int i = 0; i < 500; ++i) log += "note: line " + std::to_string(i) + "\n";
  const std::string t = truncate_compiler_log(log, "/tmp/b", 200);
  EXPECT_EQ(t.rfind("candidate.cu(3): error: bad", 0), 0u);
  EXPECT_EQ(t.find("ptxas info"), std::string::npos);
  EXPECT_NE(t.find("more bytes of compiler output omitted"), std::string::npos);
  EXPECT_LT(t.size(), 300u);
  EXPECT_EQ(parse_ptxas_gmem("ptxas info    : 4 bytes gmem\nptxas info : 1024 bytes gmem\n"),
            1028u);
}

TEST(ToolkitIncludeDir, ParsesTheIncludesOfNvccsDryRun) {
  EXPECT_EQ(nvcc_include_dirs("#$ _TARGET_DIR_=targets/x86_64-linux\n"
                              "#$ INCLUDES=\"-I/cuda/bin/../targets/x86_64-linux/include\"  \n"
                              "#$ SYSTEM_INCLUDES=\"-isystem\" \"/cuda/include/cccl\"\n"),
            std::vector<std::string>{"/cuda/bin/../targets/x86_64-linux/include"});
  EXPECT_EQ(nvcc_include_dirs("#$ INCLUDES=\"-I/a\" \"-I/b c\" -I/d -isystem /e\r\n"),
            (std::vector<std::string>{"/a", "/b c", "/d"}));
  EXPECT_TRUE(nvcc_include_dirs("").empty());
  EXPECT_TRUE(nvcc_include_dirs("#$ INCLUDES=\"\nINCLUDES=\"-I/x\"\n#$ INCLUDES=-I").empty());
}

TEST(ToolkitIncludeDir, AsksNvccWhereverItWasReachedFrom) {
  auto dir = sys::TempDir::create("kevin-toolkit-test-");
  ASSERT_TRUE(dir.is_ok());
  const fs::path root = fs::canonical(dir->path());
  // A toolkit whose headers live under targets/, run through a wrapper script in a folder of
  // programs whose include/ holds none of them (as /usr/local/bin/nvcc on our machines).
  const fs::path toolkit = root / "cuda-13.0";
  const fs::path headers = toolkit / "targets/x86_64-linux/include";
  fs::create_directories(toolkit / "bin");
  fs::create_directories(headers);
  fs::create_directories(root / "local/bin");
  fs::create_directories(root / "local/include");
  const auto script = [](const fs::path& path, const std::string& body) {
    ASSERT_TRUE(write_file_atomic(path, "#!/bin/sh\n" + body + "\n").is_ok());
    fs::permissions(path, fs::perms::owner_all);
  };
  script(toolkit / "bin/nvcc",
         "echo '#$ INCLUDES=\"-I" + (toolkit / "bin/../include").string() + "\" \"-I" +
             (toolkit / "bin/../targets/x86_64-linux/include").string() + "\"' >&2");
  script(root / "local/bin/nvcc", "exec " + (toolkit / "bin/nvcc").string() + " \"$@\"");
  // Without the headers anywhere: no folder, rather than one without them.
  EXPECT_EQ(toolkit_include_dir(root / "local/bin/nvcc"), "");
  ASSERT_TRUE(write_file_atomic(headers / "cuda_runtime_api.h", "").is_ok());
  EXPECT_EQ(toolkit_include_dir(root / "local/bin/nvcc"), headers.string());
  EXPECT_EQ(toolkit_include_dir(toolkit / "bin/nvcc"), headers.string());
  // A failing nvcc, or none: no folder.
  script(root / "local/bin/nvcc", "exit 1");
  EXPECT_EQ(toolkit_include_dir(root / "local/bin/nvcc"), "");
  EXPECT_EQ(toolkit_include_dir(root / "local/bin/missing"), "");
}

TEST(ToolkitIncludeDir, FindsTheInstalledToolkitsHeaders) {
  // Guards the dry run's format across CUDA releases, on every machine with nvcc.
  int found = 0;
  for (const char* nvcc : {"/usr/local/bin/nvcc", "/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"}) {
    if (::access(nvcc, X_OK) != 0) continue;
    ++found;
    const std::string include = toolkit_include_dir(nvcc);
    EXPECT_TRUE(fs::exists(fs::path(include) / "cuda.h")) << nvcc << ": '" << include << "'";
  }
  if (found == 0) GTEST_SKIP() << "no nvcc";
}

}  // namespace
}  // namespace kevin::engine
