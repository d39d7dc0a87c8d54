// candidate_template_test.cpp — the skeleton names and types every argument as kevin passes
// it, makes names C identifiers, launches on the harness stream on CUDA, and passes the gates
// and the real compilers of both backends. (The e2e test TasksCli.TemplateCompilesAndIsJudged
// also judges one on the CPU.)
#include "tasks/candidate_template.h"

#include <gtest/gtest.h>

#include "core/file.h"
#include "engine/build/compiler.h"
#include "engine/gates/elf.h"
#include "engine/gates/gate.h"
#include "engine/gates/symbol_gate.h"
#include "sys/tempdir.h"

namespace kevin::tasks {
namespace {

ArgumentList conv_like() {
  ArgumentList a;
  a.inputs.push_back({TensorSpec{"x", DType::kF32, {2, 3}}, engine::ArgRole::kInput});
  a.inputs.push_back({TensorSpec{"conv.weight", DType::kF16, {3, 3}}, engine::ArgRole::kParameter});
  a.inputs.push_back({TensorSpec{"2bias", DType::kI64, {3}}, engine::ArgRole::kBuffer});
  a.scalar_names = {"scale", "x"};
  a.scalars = {0.5, 1.0};
  a.outputs.push_back(TensorSpec{"output", DType::kF32, {2, 3}});
  return a;
}

const TaskInfo kTask{"level2/007_example", "level2", "conv", "/tmp/example.py"};

TEST(CandidateTemplate, CpuSkeletonBindsEveryArgumentInOrder) {
  const std::string src = candidate_template(kTask, conv_like(), "cpu");
  EXPECT_NE(src.find("const float* x = static_cast<const float*>(args->inputs[0].data);"),
            std::string::npos)
      << src;
  EXPECT_NE(
      src.find("const uint16_t* conv_weight = static_cast<const uint16_t*>(args->inputs[1].data);"),
      std::string::npos)
      << "a half parameter is raw 16-bit on the CPU; dots become underscores\n"
      << src;
  EXPECT_NE(src.find("const int64_t* t_2bias ="), std::string::npos)
      << "an identifier never starts with a digit";
  EXPECT_NE(src.find("const double scale = args->scalars[0];"), std::string::npos);
  EXPECT_NE(src.find("const double x_2 = args->scalars[1];"), std::string::npos)
      << "a repeated name is made unique";
  EXPECT_NE(src.find("float* output = static_cast<float*>(args->outputs[0].data);"),
            std::string::npos);
  EXPECT_NE(src.find("n *= args->outputs[0].shape[d];"), std::string::npos)
      << "the element count is read from the output's shape\n"
      << src;
  EXPECT_EQ(src.find("n = 6;"), std::string::npos) << "no size is hard-coded";
  EXPECT_NE(src.find("extern \"C\" int kevin_forward(const kevin_args* args)"), std::string::npos);
  EXPECT_NE(src.find("kevin eval --task /tmp/example.py --backend cpu"), std::string::npos)
      << "--task takes the file";
  EXPECT_EQ(src.find("__global__"), std::string::npos);
}

TEST(CandidateTemplate, SkeletonNamesTheModelsConstructorConstants) {
  ArgumentList args = conv_like();
  EXPECT_EQ(candidate_template(kTask, args, "cpu").find("get_init_inputs()"), std::string::npos)
      << "nothing to say when the worker gave none";
  args.init_inputs = Json::array({16, 3, 0.25});
  const std::string src = candidate_template(kTask, args, "cpu");
  EXPECT_NE(src.find("// The task's model is built with get_init_inputs() = [16,3,0.25]"),
            std::string::npos)
      << src;
  EXPECT_EQ(to_json(args)["init_inputs"], args.init_inputs) << "the describe reply round-trips";
  EXPECT_EQ(argument_list_from_json(to_json(args))->init_inputs, args.init_inputs);
}

TEST(CandidateTemplate, CudaSkeletonLaunchesOnTheHarnessStream) {
  const std::string src = candidate_template(kTask, conv_like(), "cuda");
  EXPECT_NE(src.find("const __half* conv_weight"), std::string::npos) << src;
  EXPECT_NE(src.find("static_cast<cudaStream_t>(args->stream)"), std::string::npos);
  EXPECT_NE(src.find("forward_kernel<<<blocks, threads, 0, stream>>>(x, conv_weight, t_2bias, "
                     "scale, x_2, output, n);"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("#include <cuda_fp16.h>"), std::string::npos);
}

// Builds `source` with the real compiler of `backend` and its gates: "" when it builds and
// passes them, else the rule or the compiler log. "skip: ..." when the compiler is missing.
std::string build_and_gate(const std::string& source, engine::Backend backend) {
  if (auto r = engine::check_source(source, backend)) return r->rule;
  auto cache = sys::TempDir::create("kevin-template-build-");
  if (!cache.is_ok()) return cache.status().to_string();
  engine::CompilerConfig c;
  c.backend = backend;
  c.cache_dir = cache->path();
  c.abi_include_dir = std::filesystem::path(KEVIN_SOURCE_DIR) / "src/engine/abi";
  c.sandbox_path = std::filesystem::path(KEVIN_BUILD_DIR) / "bin/kevin-sandbox";
  auto driver = engine::CompileDriver::create(c);
  if (!driver.is_ok()) return "skip: " + driver.status().message();
  auto built = driver->build(source);
  if (!built.is_ok()) return built.status().to_string();
  if (built->rejection) return built->rejection->rule;
  if (!built->ok) return built->log;
  auto symbols = engine::read_elf_symbols(read_file(built->object).value());
  if (!symbols.is_ok()) return symbols.status().to_string();
  if (auto r = engine::check_symbols(*symbols, backend, built->device_global_bytes)) return r->rule;
  return "";
}

TEST(CandidateTemplate, BothSkeletonsBuildAndPassTheGates) {
  for (const auto backend : {engine::Backend::kCpu, engine::Backend::kCuda}) {
    const std::string name = backend == engine::Backend::kCuda ? "cuda" : "cpu";
    const std::string outcome =
        build_and_gate(candidate_template(kTask, conv_like(), name), backend);
    if (outcome.rfind("skip: ", 0) == 0 && backend == engine::Backend::kCuda)
      GTEST_SKIP() << outcome;
    EXPECT_EQ(outcome, "") << name;
  }
}

}  // namespace
}  // namespace kevin::tasks
