// kernelbench_build_test.cpp — the CUDA side of building a KernelBench answer's extension,
// which needs nvcc and PyTorch's headers but no GPU: Debian's CPU PyTorch stands in, with an
// empty CUDA build header and empty CUDA libraries, so every step up to loading runs here.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/file.h"
#include "engine/build/compiler.h"
#include "sys/process.h"
#include "sys/tempdir.h"
#include "tasks/kernelbench_tools.h"

namespace kevin::tasks {
namespace {
namespace fs = std::filesystem;

class KernelBenchCudaBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    auto torch = probe_torch(std::nullopt);
    if (!torch.is_ok()) GTEST_SKIP() << torch.status().message();
    dir_ = std::move(sys::TempDir::create("kevin-kb-cuda-build-").value());
    // What a CPU PyTorch lacks of a CUDA one: its CUDA build header and CUDA libraries.
    const fs::path stub = dir_.path() / "stub";
    fs::create_directories(stub / "include/c10/cuda/impl");
    fs::create_directories(stub / "lib");
    ASSERT_TRUE(
        write_file_atomic(stub / "include/c10/cuda/impl/cuda_cmake_macros.h", "#pragma once\n")
            .is_ok());
    ASSERT_TRUE(write_file_atomic(stub / "lib/empty.c", "").is_ok());
    for (const char* lib : {"libc10_cuda.so", "libtorch_cuda.so"}) {
      auto made =
          sys::run_command({sys::find_program("gcc").value_or("gcc"), "-shared",
                            (stub / "lib/empty.c").string(), "-o", (stub / "lib" / lib).string()},
                           sys::Deadline::after(std::chrono::seconds(60)));
      ASSERT_TRUE(made.is_ok() && made->exit.exited && made->exit.code == 0);
    }
    engine::CompilerConfig c;
    c.backend = engine::Backend::kCuda;
    c.cache_dir = dir_.path() / "cache";
    c.abi_include_dir = fs::path(KEVIN_SOURCE_DIR) / "src/engine/abi";
    c.sandbox_path = fs::path(KEVIN_BUILD_DIR) / "bin/kevin-sandbox";
    c.torch = torch->toolchain;
    c.torch->include_dirs.push_back((stub / "include").string());
    c.torch->library_dirs.push_back((stub / "lib").string());
    auto driver = engine::CompileDriver::create(c);
    if (!driver.is_ok()) GTEST_SKIP() << "no nvcc: " << driver.status().message();
    driver_.emplace(std::move(driver).value());
  }

  // Builds one extension whose CUDA sources are `cuda`: whether it built (its log otherwise)
  // and whether the object carries the lite header's bridge.
  std::pair<bool, bool> build(const std::string& cuda, std::string* log) {
    const engine::ExtensionSpec spec{
        "ext", "torch::Tensor scaled(torch::Tensor x);", cuda, {"scaled"}};
    auto built = driver_->build_extensions({engine::extension_units(spec)});
    if (!built.is_ok()) {
      *log = built.status().to_string();
      return {false, false};
    }
    *log = built->log + (built->rejection ? built->rejection->rule : "");
    // For docs/benchmarks.md: the driver's whole build, cold (the first also makes the extras).
    std::printf("[ built    ] in %.2f s, %s\n", built->compile_ms / 1000,
                built->ok ? "ok" : "not ok");
    if (!built->ok) return {false, false};
    const std::string image = read_file(built->object).value();
    return {true, image.find("kevin_lite") != std::string::npos};
  }

  sys::TempDir dir_;
  std::optional<engine::CompileDriver> driver_;
};

TEST_F(KernelBenchCudaBuild, ADeviceUnitBuildsLiteWhereItMayAndWithPyTorchsHeadersOtherwise) {
  // A launcher in the usual shape, within kevin_torch_lite.h's slice of PyTorch.
  const std::string launcher =
      read_file(fs::path(KEVIN_SOURCE_DIR) / "tests/fixtures/torch_lite/scaled_launcher.cu")
          .value();
  std::string log;
  // Lite: compiled against kevin_torch_lite.h, linked with its bridge, through both gates.
  EXPECT_EQ(build(launcher, &log), std::make_pair(true, true)) << log;
  EXPECT_EQ(build(launcher + "// another answer\n", &log), std::make_pair(true, true)) << log;
  // A conditional directive could see PyTorch's macros: not offered the lite form.
  EXPECT_EQ(build(launcher + "#if 1\n#endif\n", &log), std::make_pair(true, false)) << log;
  // A call the lite header lacks: its lite form fails, PyTorch's headers build it.
  std::string more = launcher;
  more.insert(more.find("  return y;"), "  TORCH_CHECK(x.element_size() == 4);\n");
  EXPECT_EQ(build(more, &log), std::make_pair(true, false)) << log;
  // A unit that fails in every form gets the diagnostics of its own text.
  EXPECT_EQ(build(launcher + "int broken = ;\n", &log), std::make_pair(false, false));
  EXPECT_NE(log.find("cuda.cu"), std::string::npos) << log;
  EXPECT_EQ(log.find("kevin_torch_lite"), std::string::npos) << log;
}

}  // namespace
}  // namespace kevin::tasks
