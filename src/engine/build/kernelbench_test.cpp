// kernelbench_test.cpp — KernelBench answers as the engine sees them: format detection, the
// checker's JSON, the extension's translation unit, PyTorch's facts, and the gates' torch
// profile (which headers, imports and libraries an extension may have).
#include "engine/build/kernelbench.h"

#include <gtest/gtest.h>

#include "engine/gates/gate.h"
#include "engine/gates/symbol_gate.h"

namespace kevin::engine {
namespace {

TEST(KernelBenchFormat, AModelNewClassOrLeadingImportsArePythonAndCppIsKevin) {
  EXPECT_EQ(detect_format("import torch\nclass ModelNew(nn.Module):\n    pass\n"),
            CandidateFormat::kKernelBench);
  EXPECT_EQ(detect_format("# an answer\n#!x\nfrom torch import nn\nx = 1\n"),
            CandidateFormat::kKernelBench);
  EXPECT_EQ(detect_format("x = 1\nclass ModelNew :\n  pass"), CandidateFormat::kKernelBench);
  EXPECT_EQ(detect_format("#include \"kevin_abi.h\"\nextern \"C\" int kevin_forward(const "
                          "kevin_args* a) { return 0; }"),
            CandidateFormat::kKevin);
  // A C++ class of that name is not Python.
  EXPECT_EQ(detect_format("// import torch\nclass ModelNew {\n};\n"), CandidateFormat::kKevin);
  EXPECT_EQ(format_from_name("kernelbench"), CandidateFormat::kKernelBench);
  EXPECT_EQ(format_from_name("auto"), std::nullopt);
  EXPECT_STREQ(format_name(CandidateFormat::kKevin), "kevin");
}

TEST(KernelBenchFormat, TheCheckersJsonIsReadAndMalformedJsonNamesTheField) {
  const Json good = {
      {"findings", {{{"rule", "try_except_fallback"}, {"line", 7}, {"detail", "try"}}}},
      {"extensions",
       {{{"name", "ext"},
         {"cpp_sources", "a"},
         {"cuda_sources", ""},
         {"functions", {"f"}},
         {"line", 3}}}}};
  auto check = answer_check_from_json(good);
  ASSERT_TRUE(check.is_ok()) << check.status().to_string();
  EXPECT_EQ(check->findings.at(0).rule, "try_except_fallback");
  EXPECT_EQ(check->findings.at(0).line, 7);
  EXPECT_EQ(check->extensions.at(0).functions, std::vector<std::string>{"f"});
  Json bad = good;
  bad["extensions"][0].erase("cpp_sources");
  const Status status = answer_check_from_json(bad).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cpp_sources"), std::string::npos) << status.message();
  const Status not_object = answer_check_from_json(Json::array()).status();
  EXPECT_EQ(not_object.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(not_object.message().find("checker output lacks its findings"), std::string::npos)
      << not_object.to_string();
}

TEST(KernelBenchFormat, TheUnitsAreLaidOutAsLoadInlineLaysOutItsFiles) {
  const ExtensionUnits units = extension_units(
      {"my_ext", "int f(int);", "__global__ void k() {}\nint f(int x) { return x; }", {"f"}});
  EXPECT_EQ(units.name, "my_ext");
  // load_inline's -DTORCH_EXTENSION_NAME, for sources that name their own module with it.
  EXPECT_EQ(units.host.find("#define TORCH_EXTENSION_NAME my_ext\n#include <torch/extension.h>\n"),
            0u);
  EXPECT_NE(units.host.find("int f(int);"), std::string::npos);
  EXPECT_EQ(units.host.find("int f(int x)"), std::string::npos)
      << "the CUDA sources are their own unit";
  EXPECT_NE(units.host.find("PYBIND11_MODULE(my_ext, m)"), std::string::npos);
  EXPECT_NE(units.host.find("m.def(\"f\", &f, \"f\");"), std::string::npos);
  EXPECT_EQ(
      units.device.find("#define TORCH_EXTENSION_NAME my_ext\n#include <torch/types.h>\n#include "
                        "<cuda_runtime.h>\n"),
      0u);
  EXPECT_NE(units.device.find("__global__ void k() {}"), std::string::npos);
  // Without functions the sources bind themselves: no module block of ours; without CUDA
  // sources there is no device unit.
  const ExtensionUnits plain = extension_units({"e", "x", "", {}});
  EXPECT_EQ(plain.host.find("PYBIND11_MODULE"), std::string::npos);
  EXPECT_TRUE(plain.device.empty());
}

TEST(KernelBenchFormat, TheLightHeaderReplacesOnlyPlainExtensionIncludes) {
  const std::string unit =
      "#include <torch/extension.h>\n  # include \"torch/extension.h\"\r\n"
      "#include <torch/extension.h> // why\n// #include <torch/extension.h>\n#include "
      "<cuda_runtime.h>\nint x;";
  EXPECT_EQ(with_light_torch_header(unit, UnitKind::kDevice),
            "#include <torch/types.h>\n#include <torch/types.h>\n"
            "#include <torch/extension.h> // why\n// #include <torch/extension.h>\n#include "
            "<cuda_runtime.h>\nint x;");
  EXPECT_EQ(with_light_torch_header("#include <torch/extension.h>\nint y;", UnitKind::kHost),
            "#include <torch/types.h>\n#include <torch/csrc/utils/pybind.h>\nint y;");
  EXPECT_EQ(with_light_torch_header("", UnitKind::kDevice), "");
}

TEST(KernelBenchFormat, TheLiteFormIsOfferedOnlyWhereNothingCouldTellTheHeadersApart) {
  const std::string includes = "#include <torch/types.h>\n#include <cuda_runtime.h>\n";
  const std::string body = "__global__ void k(float* y) { y[0] = 1; }\n#pragma unroll\n";
  EXPECT_TRUE(lite_torch_header_applies(includes + body));
  EXPECT_TRUE(lite_torch_header_applies(includes + "#define CHECK(x) TORCH_CHECK(x)\n" + body));
  EXPECT_TRUE(lite_torch_header_applies(includes + "// #if TORCH_VERSION_MAJOR\n" + body));
  EXPECT_TRUE(lite_torch_header_applies(includes + "const char* s = \"#if\";\n" + body));
  // Each of these could see PyTorch's macros or reach into its headers, or names ours.
  for (const std::string hidden :
       {"#if TORCH_VERSION_MAJOR >= 2\n#endif\n", "#ifdef C10_CUDA\n#endif\n",
        "#ifndef AT_CUDA_ENABLED\n#endif\n", "  #  /* spaced */ if 1\n#endif\n",
        "#\\\nif 1\n#endif\n", "%:if 1\n%:endif\n", "#error no\n", "#line 3\n",
        "kevin_lite::Options o;\n"}) {
    EXPECT_FALSE(lite_torch_header_applies(includes + hidden + body)) << hidden;
  }
  EXPECT_FALSE(lite_torch_header_applies("#define private public\n" + includes + body));
  // The extension's own name, defined first in every unit as load_inline does, is no such macro.
  const ExtensionSpec spec{"ext", "", includes + body, {"f"}};
  EXPECT_TRUE(lite_torch_header_applies(extension_units(spec).device));
  EXPECT_FALSE(lite_torch_header_applies(includes + "#undef TORCH_CHECK\n#include <vector>\n"));
}

TEST(KernelBenchFormat, TheToolchainNeedsAbsoluteFolders) {
  Json j = {{"torch_version", "2.11"},
            {"include_dirs", {"/opt/torch/include"}},
            {"library_dirs", {"/opt/torch/lib"}},
            {"defines", {"_GLIBCXX_USE_CXX11_ABI=1"}},
            {"cuda", true}};
  auto t = torch_toolchain_from_json(j);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_TRUE(t->cuda);
  j["library_dirs"] = {"torch/lib"};
  const Status relative = torch_toolchain_from_json(j).status();
  EXPECT_EQ(relative.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(relative.message().find("torch folder is not absolute: torch/lib"), std::string::npos)
      << relative.to_string();
  j.erase("cuda");
  const Status no_cuda = torch_toolchain_from_json(j).status();
  EXPECT_EQ(no_cuda.code(), StatusCode::kInvalidArgument) << "a missing field is invalid output";
  EXPECT_NE(no_cuda.message().find("torch toolchain: missing field \"cuda\""), std::string::npos)
      << no_cuda.to_string();
}

TEST(TorchProfileGates, TorchHeadersAreAllowedOnlyInExtensionsAndNoEntryPointIsNeeded) {
  const std::string unit =
      "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x) { return x; }\n";
  EXPECT_EQ(check_source(unit, Backend::kCpu, Profile::kTorchExtension), std::nullopt);
  auto abi = check_source(unit, Backend::kCpu);
  ASSERT_TRUE(abi.has_value());
  EXPECT_EQ(abi->rule, "include_not_allowed");
  // The ABI's other rules still hold for extensions.
  auto pragma = check_source(unit + "#pragma GCC optimize(\"O0\")\n", Backend::kCpu,
                             Profile::kTorchExtension);
  ASSERT_TRUE(pragma.has_value());
  EXPECT_EQ(pragma->rule, "compiler_flag_override");
  auto fstream = check_source("#include <fstream>\n", Backend::kCpu, Profile::kTorchExtension);
  ASSERT_TRUE(fstream.has_value());
  EXPECT_EQ(fstream->rule, "include_not_allowed");
}

// The rule the torch profile gives an import (or "" when allowed).
std::string torch_rule(const std::string& symbol, Backend backend = Backend::kCpu) {
  ElfSymbols symbols;
  symbols.imports = {symbol};
  auto r = check_symbols(symbols, backend, 0, Profile::kTorchExtension);
  return r ? r->rule : "";
}

TEST(TorchProfileGates, ImportsOfAllocationAndViewsPassAndComputeThreadsClocksAndImportsDoNot) {
  // What an honest extension imports: allocation, metadata, errors, pybind11 and the C API.
  for (const char* ok :
       {"_ZN2at4_ops10empty_like4callERKNS_6TensorEN3c108optionalINS5_10ScalarTypeEEE",
        "_ZN3c106detail14torchCheckFailEPKcS2_jS2_", "PyTuple_New", "PyEval_GetBuiltins",
        "_ZNK2at10TensorBase8data_ptrIfEEPT_v", "__cxa_throw", "malloc"}) {
    EXPECT_EQ(torch_rule(ok), "") << ok;
  }
  EXPECT_EQ(torch_rule("_ZN2at4_ops2mm4callERKNS_6TensorES4_"), "pytorch_compute");
  EXPECT_EQ(torch_rule("_ZN2at4_ops4relu4callERKNS_6TensorE"), "pytorch_compute");
  EXPECT_EQ(torch_rule("_ZN2at6native3addERKNS_6TensorE"), "pytorch_compute");
  EXPECT_EQ(torch_rule("PyImport_ImportModule"), "dynamic_code");
  EXPECT_EQ(torch_rule("PyRun_SimpleString"), "dynamic_code");
  EXPECT_EQ(
      torch_rule(
          "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE"),
      "threads");
  EXPECT_EQ(torch_rule("_ZNSt6chrono3_V212steady_clock3nowEv"), "timing_patch");
  EXPECT_EQ(torch_rule("_ZN3c104cuda17getStreamFromPoolEba", Backend::kCuda), "stream_injection");
  EXPECT_EQ(torch_rule("_ZN2at4cuda25getCurrentCUDABlasHandleEv", Backend::kCuda),
            "library_not_allowed");
  EXPECT_EQ(torch_rule("_ZN2at13globalContextEv"), "global_state");
  EXPECT_EQ(torch_rule("fopen"), "import_not_allowed");
  EXPECT_EQ(torch_rule("pthread_create"), "import_not_allowed");
  EXPECT_EQ(torch_rule("cudaStreamCreate", Backend::kCuda), "import_not_allowed");
  // kevin's ABI admits none of PyTorch.
  EXPECT_FALSE(import_allowed("PyTuple_New", Backend::kCpu));
  EXPECT_TRUE(import_allowed("PyTuple_New", Backend::kCpu, Profile::kTorchExtension));
}

TEST(TorchProfileGates, ExtensionsMayExportTheirModuleAndKeepThreadLocals) {
  ElfSymbols symbols;
  symbols.exports = {"PyInit_my_ext"};
  symbols.tls_bytes = 8;
  EXPECT_EQ(check_symbols(symbols, Backend::kCpu, 0, Profile::kTorchExtension), std::nullopt);
  auto abi = check_symbols(symbols, Backend::kCpu, 0);
  ASSERT_TRUE(abi.has_value());
  EXPECT_EQ(abi->rule, "export_not_allowed");
  symbols.exports = {"system"};
  auto shadow = check_symbols(symbols, Backend::kCpu, 0, Profile::kTorchExtension);
  ASSERT_TRUE(shadow.has_value());
  EXPECT_EQ(shadow->rule, "export_not_allowed");
}

}  // namespace
}  // namespace kevin::engine
