// compiler_test.cpp — the CPU compile driver: builds, diagnostics, cache hits, concurrent
// builders, and log shaping.
#include "engine/compiler.h"

#include <gtest/gtest.h>

#include <thread>

#include "sys/tempdir.h"

namespace kevin::engine {
namespace {
namespace fs = std::filesystem;

fs::path abi_dir() { return fs::path(KEVIN_SOURCE_DIR) / "src/engine/abi"; }

class CompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::create("kevin-cache-test-");
    ASSERT_TRUE(dir.is_ok());
    cache_ = std::move(dir).value();
    CompilerConfig c;
    c.backend = Backend::kCpu;
    c.cache_dir = cache_.path();
    c.abi_include_dir = abi_dir();
    auto d = CompileDriver::create(c);
    ASSERT_TRUE(d.is_ok()) << d.status().to_string();
    driver_.emplace(std::move(d).value());
  }
  sys::TempDir cache_;
  std::optional<CompileDriver> driver_;
};

constexpr const char* kGood =
    "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* a) { return a->num_inputs; }\n";

TEST_F(CompilerTest, BuildsThenHitsCache) {
  auto first = driver_->build(kGood);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_TRUE(first->ok) << first->log;
  EXPECT_FALSE(first->cache_hit);
  EXPECT_TRUE(fs::exists(first->object));
  auto second = driver_->build(kGood);
  ASSERT_TRUE(second.is_ok());
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->key, first->key);
  EXPECT_NE(driver_->build(std::string(kGood) + "\n// changed\n")->key, first->key);
}

TEST_F(CompilerTest, CompileErrorsAreResultsWithScrubbedLog) {
  auto r = driver_->build("#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* a) { return undefined_name; }\n");
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->log.find("candidate.cpp:2"), std::string::npos) << r->log;
  EXPECT_EQ(r->log.find(cache_.path().string()), std::string::npos) << "paths must be scrubbed";
  auto again = driver_->build("#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* a) { return undefined_name; }\n");
  EXPECT_TRUE(again->cache_hit) << "failed builds are cached too";
}

TEST_F(CompilerTest, ConcurrentBuildersOfSameSourceAgree) {
  std::vector<std::thread> threads;
  std::vector<BuildResult> results(4);
  const std::string src = std::string(kGood) + "// concurrent\n";
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { results[static_cast<size_t>(i)] = driver_->build(src).value(); });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.object, results[0].object);
    EXPECT_TRUE(fs::exists(r.object));
  }
}

TEST(CompilerLog, TruncatesAtLineBoundaryAndDropsPtxasNoise) {
  std::string log = "/tmp/b/candidate.cu(3): error: bad\nptxas info    : Used 12 registers\n";
  for (int i = 0; i < 500; ++i) log += "note: line " + std::to_string(i) + "\n";
  const std::string t = truncate_compiler_log(log, "/tmp/b", 200);
  EXPECT_EQ(t.rfind("candidate.cu(3): error: bad", 0), 0u);
  EXPECT_EQ(t.find("ptxas info"), std::string::npos);
  EXPECT_NE(t.find("more bytes of compiler output omitted"), std::string::npos);
  EXPECT_LT(t.size(), 300u);
  EXPECT_EQ(parse_ptxas_gmem("ptxas info    : 4 bytes gmem\nptxas info : 1024 bytes gmem\n"), 1028u);
}

}  // namespace
}  // namespace kevin::engine
