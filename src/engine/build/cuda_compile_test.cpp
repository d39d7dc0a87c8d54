// cuda_compile_test.cpp — the CUDA side of the compile driver and both gates, which need
// nvcc but no GPU (so they run in CI): good CUDA fixtures build and pass the symbol gate,
// and candidates importing forbidden runtime calls are rejected by the rule the manifest names.
#include <gtest/gtest.h>

#include "core/file.h"
#include "engine/build/compiler.h"
#include "engine/gates/elf.h"
#include "engine/gates/gate.h"
#include "engine/gates/symbol_gate.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {
namespace fs = std::filesystem;

fs::path fixture(const std::string& name) {
  return fs::path(KEVIN_SOURCE_DIR) / "tests/fixtures/kernels/cuda" / name;
}

// The rule that fires for `file`, or "" when it passes both gates.
std::string gate_rule(const CompileDriver& driver, const std::string& file) {
  const std::string source = read_file(fixture(file)).value();
  if (auto r = check_source(source, Backend::kCuda)) return r->rule;
  auto built = driver.build(source);
  if (built.is_ok() && built->rejection)
    return built->rejection->rule;  // the build runs the gates itself
  EXPECT_TRUE(built.is_ok() && built->ok)
      << file << ": " << (built.is_ok() ? built->log : built.status().to_string());
  if (!built.is_ok() || !built->ok) return "compile_error";
  auto symbols = read_elf_symbols(read_file(built->object).value());
  EXPECT_TRUE(symbols.is_ok());
  if (auto r = check_symbols(*symbols, Backend::kCuda, built->device_global_bytes)) return r->rule;
  return "";
}

TEST(CudaCompile, GatesOnRealNvccOutput) {
  auto cache = sys::TempDir::create("kevin-cuda-compile-");
  ASSERT_TRUE(cache.is_ok());
  CompilerConfig c;
  c.backend = Backend::kCuda;
  c.cache_dir = cache->path();
  c.abi_include_dir = fs::path(KEVIN_SOURCE_DIR) / "src/engine/abi";
  c.sandbox_path = fs::path(KEVIN_BUILD_DIR) / "bin/kevin-sandbox";
  auto driver = CompileDriver::create(c);
  if (!driver.is_ok()) GTEST_SKIP() << "no nvcc: " << driver.status().message();
  for (const char* good : {"good_vector_add.cu", "good_small_matmul.cu", "good_linear_relu.cu"}) {
    EXPECT_EQ(gate_rule(*driver, good), "") << good;
  }
  EXPECT_EQ(gate_rule(*driver, "hostile_cuda_malloc.cu"), "import_not_allowed");
  EXPECT_EQ(gate_rule(*driver, "hostile_private_stream.cu"), "import_not_allowed");
  EXPECT_EQ(gate_rule(*driver, "hostile_timer_import.cu"), "import_not_allowed");
  EXPECT_EQ(gate_rule(*driver, "hostile_device_cache_512mib.cu"), "static_storage_too_large");
  auto bad = driver->build(
      "#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const kevin_args* a) { return "
      "nope; }\n");
  ASSERT_TRUE(bad.is_ok());
  EXPECT_FALSE(bad->ok);
  EXPECT_NE(bad->log.find("candidate.cu"), std::string::npos) << bad->log;
}

}  // namespace
}  // namespace kevin::engine
