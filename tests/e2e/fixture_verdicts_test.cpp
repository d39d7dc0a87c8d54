// fixture_verdicts_test.cpp — every good, wrong and hostile candidate in
// tests/fixtures/kernels gets a verdict from its manifest entry's `expect` list (and the
// named rule when rejected), evaluated end to end through `kevin eval --batch`. The CPU
// corpus runs everywhere; the CUDA corpus needs a GPU.
#include <gtest/gtest.h>

#include <map>

#include "core/file.h"
#include "gpu.h"
#include "kevin_cli.h"

namespace kevin::e2e {
namespace {
namespace fs = std::filesystem;

void check_corpus(const std::string& backend) {
  auto manifest = parse_json(read_file(source_dir() / "tests/fixtures/kernels/manifest.json").value());
  ASSERT_TRUE(manifest.is_ok());
  const fs::path batch = fs::path(KEVIN_BUILD_DIR) / ("fixtures-" + backend + ".jsonl");
  std::string lines;
  std::map<std::string, Json> by_file;
  for (const auto& entry : *manifest) {
    if (entry["backend"] != backend) continue;
    const std::string file = entry["file"];
    by_file[(source_dir() / "tests/fixtures/kernels" / file).string()] = entry;
    lines += dump_json(Json{{"task", (source_dir() / "tests/fixtures/tasks" / (entry["task"].get<std::string>() + ".py")).string()},
                            {"candidate", (source_dir() / "tests/fixtures/kernels" / file).string()}}) + "\n";
  }
  ASSERT_GE(by_file.size(), 25u) << "the corpus must hold at least 25 candidates per backend";
  ASSERT_TRUE(write_file_atomic(batch, lines).is_ok());
  const KevinRun run = run_kevin({"eval", "--batch", batch.string(), "--backend", backend, "--timeout", "5",
                             "--cache-dir", (fs::path(KEVIN_BUILD_DIR) / "test-cache").string()});
  const auto results = json_lines(run.output);
  ASSERT_EQ(results.size(), by_file.size()) << run.output.substr(0, 4000);
  std::map<std::string, int> verdict_counts;
  for (const auto& r : results) {
    const std::string cand = r.value("candidate", "");
    ASSERT_TRUE(by_file.count(cand)) << cand;
    const Json& entry = by_file[cand];
    ASSERT_FALSE(r.contains("error")) << cand << ": " << r["error"];
    const std::string verdict = r["verdict"];
    ++verdict_counts[verdict];
    const auto expect = entry["expect"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(expect.begin(), expect.end(), verdict), expect.end())
        << entry["file"] << " (" << entry["why"] << "): got " << verdict << " (" << r["reason"] << "): " << r["feedback"];
    if (verdict == "rejected" && entry.contains("rule")) {
      EXPECT_EQ(r["reason"], entry["rule"]) << entry["file"] << ": " << r["feedback"];
    }
  }
  for (const auto& [v, n] : verdict_counts) std::cout << "  " << backend << " " << v << ": " << n << "\n";
}

TEST(FixtureVerdicts, CpuCorpus) { check_corpus("cpu"); }

TEST(FixtureVerdicts, CudaCorpus) {
  KEVIN_REQUIRE_GPU();
  check_corpus("cuda");
}

}  // namespace
}  // namespace kevin::e2e
