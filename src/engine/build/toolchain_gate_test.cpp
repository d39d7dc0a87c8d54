// toolchain_gate_test.cpp — the translation-unit and object gates on what the real toolchain
// makes: `g++ -E` / `nvcc -E` output of sample sources, tiny shared objects built here with
// honest and hostile contents, and every good fixture, example and gate-rejected hostile
// fixture of the corpus through all three gates. CUDA cases skip when nvcc is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <set>

#include "core/file.h"
#include "core/json.h"
#include "engine/gates/gate.h"
#include "engine/gates/symbol_gate.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path source_dir() { return fs::path(KEVIN_SOURCE_DIR); }
fs::path abi_dir() { return source_dir() / "src/engine/abi"; }

// One compiler with the build's flags (kept equal to CompileDriver::flags()).
struct Toolchain {
  Backend backend;
  fs::path compiler;

  static std::optional<Toolchain> find(Backend backend) {
    if (backend == Backend::kCpu) return Toolchain{backend, "/usr/bin/g++"};
    if (auto nvcc = sys::find_program("nvcc")) return Toolchain{backend, *nvcc};
    if (fs::exists("/usr/local/cuda/bin/nvcc"))
      return Toolchain{backend, "/usr/local/cuda/bin/nvcc"};
    return std::nullopt;
  }

  std::vector<std::string> flags() const {
    if (backend == Backend::kCuda) {
      return {"-O3",      "-std=c++17",     "-arch=sm_90a",
              "-shared",  "-Xcompiler",     "-fPIC",
              "-cudart",  "shared",         "--expt-relaxed-constexpr",
              "-Xlinker", "-z,relro,-z,now"};
    }
    return {"-O3",   "-std=c++17",     "-march=x86-64-v2",   "-shared",
            "-fPIC", "-fno-fast-math", "-Wl,-z,relro,-z,now"};
  }

  const char* file_name() const {
    return backend == Backend::kCuda ? "candidate.cu" : "candidate.cpp";
  }

  // Runs the compiler on `source` (written as candidate.cu/.cpp in a fresh folder) with the
  // build's flags, `-I <abi>` and `extra`; returns the file it wrote to `output`. With
  // `kept_units`, nvcc also runs with --keep and every preprocessed unit it kept is returned.
  Result<std::string> run(std::string_view source, std::vector<std::string> extra,
                          const std::string& output, std::string* log = nullptr,
                          std::vector<std::string>* kept_units = nullptr) const {
    KEVIN_ASSIGN_OR_RETURN(auto dir, sys::TempDir::create("kevin-gate-tool-"));
    KEVIN_RETURN_IF_ERROR(write_file_atomic(dir.path() / file_name(), source));
    if (kept_units != nullptr) {
      fs::create_directories(dir.path() / "kept");
      extra.insert(extra.end(), {"--keep", "--keep-dir", "kept"});
    }
    std::vector<std::string> argv = {compiler.string()};
    for (const auto& f : flags()) argv.push_back(f);
    argv.insert(argv.end(), {"-I", abi_dir().string()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {file_name(), "-o", output});
    KEVIN_ASSIGN_OR_RETURN(auto run,
                           sys::run_command(argv, sys::Deadline::after(300s), 1 << 20, dir.path()));
    if (log != nullptr) *log = run.output;
    if (!run.exit.exited || run.exit.code != 0)
      return internal_error(compiler.string() + " failed: " + run.output);
    if (kept_units != nullptr) {
      for (const auto& e : fs::directory_iterator(dir.path() / "kept")) {
        if (e.path().extension() != ".ii") continue;
        KEVIN_ASSIGN_OR_RETURN(std::string unit, read_file(e.path(), kMaxPreprocessedBytes));
        kept_units->push_back(std::move(unit));
      }
    }
    return read_file(dir.path() / output, size_t{256} << 20);
  }

  // The preprocessor's output; for CUDA the device pass, or the host pass with `host`.
  Result<std::string> preprocess(std::string_view source, bool host = false) const {
    std::vector<std::string> extra = {"-E"};
    if (host) extra.insert(extra.end(), {"-Xcompiler", "-U__CUDA_ARCH__"});
    return run(source, extra, "candidate.ii");
  }

  // The include search directories the compiler reports, plus the ABI folder.
  std::vector<std::string> roots() const {
    std::string log;
    const std::vector<std::string> verbose =
        backend == Backend::kCuda ? std::vector<std::string>{"-E", "-Xcompiler", "-v"}
                                  : std::vector<std::string>{"-E", "-v"};
    (void)run("int x;\n", verbose, "candidate.ii", &log);
    auto dirs = include_search_dirs(log);
    dirs.push_back(abi_dir().string());
    return dirs;
  }

  Result<std::string> build(std::string_view source, const std::vector<std::string>& extra = {},
                            std::vector<std::string>* kept_units = nullptr) const {
    return run(source, extra, "candidate.so", nullptr, kept_units);
  }
};

Toolchain cpu() { return *Toolchain::find(Backend::kCpu); }

#define KEVIN_NVCC_OR_SKIP(var)                             \
  const auto var##_found = Toolchain::find(Backend::kCuda); \
  if (!var##_found) GTEST_SKIP() << "nvcc not found";       \
  const Toolchain& var = *var##_found

// The rule check_translation_unit gives the preprocessed `source`, or "" when it passes.
std::string tu_rule(const Toolchain& tc, std::string_view source, bool host = false) {
  auto text = tc.preprocess(source, host);
  EXPECT_TRUE(text.is_ok()) << text.status().to_string();
  if (!text.is_ok()) return "preprocess_failed";
  const auto r = check_translation_unit(*text, tc.backend);
  return r ? r->rule : "";
}

// The rule check_object gives the built `source`, or "" when it passes.
std::string object_rule(const Toolchain& tc, std::string_view source,
                        const std::vector<std::string>& extra = {}, std::string* detail = nullptr) {
  auto image = tc.build(source, extra);
  EXPECT_TRUE(image.is_ok()) << image.status().to_string();
  if (!image.is_ok()) return "build_failed";
  const auto r = check_object(*image, tc.backend, 0);
  if (r && detail != nullptr) *detail = r->detail;
  return r ? r->rule : "";
}

constexpr const char* kHonestCpu = R"(#include "kevin_abi.h"
#include <cmath>
#include <algorithm>
static float scratch[64];
extern "C" int kevin_forward(const kevin_args* a) {
  scratch[1] = std::exp(scratch[0]) + std::max(1.0f, scratch[2]);
  return a->num_inputs + static_cast<int>(scratch[1]);
}
)";

constexpr const char* kHonestCuda = R"(#include "kevin_abi.h"
#include <cuda_runtime.h>
#include <cooperative_groups.h>
__global__ void twice(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.f;
}
extern "C" int kevin_forward(const kevin_args* a) {
  twice<<<1, 32, 0, static_cast<cudaStream_t>(a->stream)>>>(static_cast<float*>(a->outputs[0].data), 32);
  return cudaGetLastError() != cudaSuccess;
}
)";

// --- the translation-unit gate on real preprocessor output ------------------------------

TEST(ToolchainTuGate, HonestSourcesPass) {
  const Toolchain tc = cpu();
  EXPECT_EQ(tu_rule(tc, kHonestCpu), "");
  auto text = tc.preprocess(kHonestCpu);
  ASSERT_TRUE(text.is_ok());
  const auto roots = tc.roots();
  ASSERT_GT(roots.size(), 2u);
  EXPECT_FALSE(check_translation_unit(*text, Backend::kCpu, roots).has_value());
  EXPECT_EQ(
      check_translation_unit(*text, Backend::kCpu, std::vector<std::string>{abi_dir().string()})
          ->rule,
      "include_not_allowed")
      << "with roots given, a header outside them is refused";
}

TEST(ToolchainTuGate, MacroMadeConstructsAreSeen) {
  const Toolchain tc = cpu();
  const std::string tail = "\nextern \"C\" int kevin_forward(const kevin_args*) { return 0; }\n";
  const std::string head = "#include \"kevin_abi.h\"\n";
  struct Case {
    const char* source;
    const char* rule;
  };
  const Case cases[] = {
      {"#define CAT(a,b) a##b\nCAT(__attri,bute__)((constructor)) static void f() {}",
       "banned_construct"},
      {"#define CTOR __attribute__((used, constructor))\nCTOR static void f() {}",
       "banned_construct"},
      {"#define P(x) _Pragma(#x)\nP(GCC optimize(\"O0\"))", "compiler_flag_override"},
      {"#define Q _Pragma(\"GCC optimize(\\\"O0\\\")\")\nQ", "compiler_flag_override"},
      {"#pragma   GCC   optimize (\"O0\")", "compiler_flag_override"},
      {"#pragma GCC\toptimize(\"O0\")", "compiler_flag_override"},
      {"#pragma GCC target(\"avx512f\")", "compiler_flag_override"},
      {"#pragma STDC FENV_ACCESS ON", "compiler_flag_override"},
      {"#pragma weak kevin_forward", "banned_construct"},
      {"#pragma redefine_extname foo bar", "banned_construct"},
      {"#define N(x) x\n[[N(gnu)::N(constructor)]] static void f() {}", "banned_construct"},
      {"[[using gnu: used, constructor]] static void f() {}", "banned_construct"},
      {"[[gnu::used, gnu::constructor]] static void f() {}", "banned_construct"},
      {"#define S section\n__attribute__((S(\".text\"))) static const char code[] = \"\\xc3\";",
       "banned_construct"},
      {"#define A __asm__\nstatic void f() { A(\"nop\"); }", "banned_construct"},
      {"#line 1 \"/usr/include/c++/12/cmath\"\n__attribute__((constructor)) static void f() {}",
       "banned_construct"},
      {"#include \"/etc/hostname\"", "include_not_allowed"},
      {"#define H \"/dev/null\"\n#include H", "include_not_allowed"},
      {"#pragma GCC diagnostic push\n#pragma GCC unroll 4\n#pragma once\n__attribute__((noinline, "
       "aligned(16))) static int g() { return 1; }",
       ""},
  };
  for (const auto& c : cases) EXPECT_EQ(tu_rule(tc, head + c.source + tail), c.rule) << c.source;
  EXPECT_FALSE(check_source(head + cases[0].source + tail, Backend::kCpu).has_value())
      << "token pasting is invisible to the text gate: that is why the translation-unit gate "
         "exists";
}

TEST(ToolchainTuGate, CudaBothPassesAreNeeded) {
  KEVIN_NVCC_OR_SKIP(tc);
  EXPECT_EQ(tu_rule(tc, kHonestCuda), "");
  EXPECT_EQ(tu_rule(tc, kHonestCuda, true), "");
  const std::string host_only =
      std::string(kHonestCuda) +
      "#ifndef __CUDA_ARCH__\n__attribute__((constructor)) static void f() {}\n#endif\n";
  EXPECT_EQ(tu_rule(tc, host_only), "") << "nvcc -E shows the device pass only";
  EXPECT_EQ(tu_rule(tc, host_only, true), "banned_construct") << "the host pass sees it";
  std::vector<std::string> units;
  ASSERT_TRUE(tc.build(host_only, {}, &units).is_ok());
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(std::count_if(units.begin(), units.end(),
                          [](const std::string& u) {
                            return check_translation_unit(u, Backend::kCuda).has_value();
                          }),
            1)
      << "of the units nvcc --keep leaves, the host pass refuses it";
  const std::string pasted =
      std::string(kHonestCuda) +
      "#define CAT(a,b) a##b\nCAT(__attri,bute__)((section(\".x\"))) int y;\n";
  EXPECT_EQ(tu_rule(tc, pasted), "banned_construct");
  auto text = tc.preprocess(kHonestCuda);
  ASSERT_TRUE(text.is_ok());
  const auto with_roots = check_translation_unit(*text, Backend::kCuda, tc.roots());
  EXPECT_FALSE(with_roots.has_value()) << with_roots->detail;
}

// --- the object gate on objects built here ----------------------------------------------

TEST(ToolchainObjectGate, HonestCpuObjectPasses) { EXPECT_EQ(object_rule(cpu(), kHonestCpu), ""); }

TEST(ToolchainObjectGate, CpuLoadTimeCode) {
  const Toolchain tc = cpu();
  const std::string abi = "#include \"kevin_abi.h\"\n#include <cmath>\n";
  const std::string entry =
      "extern \"C\" int kevin_forward(const kevin_args* a) { return a->num_inputs; }\n";
  std::string detail;
  EXPECT_EQ(object_rule(
                tc,
                abi + "struct S { S() : v(std::exp(float(__LINE__))) {} float v; };\nstatic S s;\n"
                      "extern \"C\" int kevin_forward(const kevin_args* a) { return a->num_inputs "
                      "+ int(s.v); }\n",
                {}, &detail),
            "load_time_code");
  EXPECT_NE(detail.find("constructor"), std::string::npos) << detail;
  EXPECT_EQ(object_rule(tc, abi +
                                "static volatile int hits;\n__attribute__((constructor)) static "
                                "void f() { hits = 1; }\n" +
                                entry),
            "load_time_code");
  EXPECT_EQ(object_rule(tc, abi +
                                "static void f() {}\n__attribute__((section(\".init_array\"), "
                                "used)) static void (*p)() = f;\n" +
                                entry),
            "load_time_code");
  EXPECT_EQ(object_rule(tc, abi +
                                "extern \"C\" { static void frame_dummy() {} }\n"
                                "__attribute__((section(\".init_array\"), used)) static void "
                                "(*p)() = frame_dummy;\n" +
                                entry),
            "load_time_code")
      << "a candidate's own frame_dummy must not pass for crtstuff's";
  EXPECT_EQ(object_rule(
                tc, abi + "asm(\".section .init\\n nop\\n nop\\n nop\\n nop\\n nop\\n .text\");\n" +
                        entry),
            "load_time_code")
      << "code added to .init";
  EXPECT_EQ(object_rule(tc, kHonestCpu, {"-s"}), "load_time_code") << "stripped: no .symtab";
}

TEST(ToolchainObjectGate, CpuStructure) {
  const Toolchain tc = cpu();
  const std::string abi = "#include \"kevin_abi.h\"\n";
  const std::string entry =
      "extern \"C\" int kevin_forward(const kevin_args* a) { return a->num_inputs; }\n";
  EXPECT_EQ(
      object_rule(
          tc, abi + "__attribute__((section(\"kevin_evil\"), used)) static int x = 1;\n" + entry),
      "banned_construct");
  EXPECT_EQ(object_rule(tc, abi + "static int impl() { return 1; }\nextern \"C\" { static void* "
                                  "pick() { return (void*)impl; } }\n"
                                  "static int f() __attribute__((ifunc(\"pick\")));\n"
                                  "extern \"C\" int kevin_forward(const kevin_args* a) { return "
                                  "a->num_inputs + f(); }\n"),
            "indirect_function");
  EXPECT_EQ(object_rule(tc, kHonestCpu, {"-Wl,-z,execstack"}), "executable_stack");
  EXPECT_EQ(
      object_rule(
          tc, abi + "asm(\".section .rodata.k,\\\"ax\\\",@progbits\\n .byte 0xc3\\n .text\");\n" +
                  entry),
      "code_outside_text");
  EXPECT_EQ(
      object_rule(
          tc, abi + "asm(\".section .data.k,\\\"awx\\\",@progbits\\n .byte 0xc3\\n .text\");\n" +
                  entry),
      "writable_code");
  EXPECT_EQ(
      object_rule(tc, abi + "asm(\".text\\n .quad kevin_forward\");\n" + entry, {"-Wl,-z,notext"}),
      "writable_code")
      << "text relocations";
  EXPECT_EQ(object_rule(tc, kHonestCpu, {"-Wl,--no-as-needed", "/lib/x86_64-linux-gnu/libdl.so.2"}),
            "library_not_allowed");
  EXPECT_EQ(object_rule(tc, kHonestCpu, {"-Wl,-rpath,/opt/kevin"}), "library_not_allowed");
}

TEST(ToolchainObjectGate, Cuda) {
  KEVIN_NVCC_OR_SKIP(tc);
  EXPECT_EQ(object_rule(tc, kHonestCuda), "");
  EXPECT_EQ(object_rule(tc, std::string(kHonestCuda) +
                                "struct S { S() { v = 2; } volatile int v; };\nstatic S s;\n"),
            "load_time_code");
  EXPECT_EQ(object_rule(tc, std::string(kHonestCuda) +
                                "static volatile int hits;\n__attribute__((constructor)) static "
                                "void f() { hits = 1; }\n"),
            "load_time_code");
  EXPECT_EQ(
      object_rule(tc, std::string(kHonestCuda) +
                          "__attribute__((section(\"kevin_evil\"), used)) static int x = 1;\n"),
      "banned_construct");
}

// --- the corpus through all three gates ---------------------------------------------------

struct CorpusFile {
  fs::path path;
  std::string rule;  // the rule a gate must give; "" for a candidate that must pass
};

// How GoogleTest shows a parameter (test names and failures): its path.
void PrintTo(const CorpusFile& file, std::ostream* os) {
  *os << file.path.string() << " [" << file.rule << "]";
}

std::vector<CorpusFile> good_files() {
  std::vector<CorpusFile> files;
  for (const char* dir : {"tests/fixtures/kernels/cpu", "tests/fixtures/kernels/cuda",
                          "examples/level1", "examples/level2"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(source_dir() / dir, ec)) {
      const std::string name = e.path().filename().string();
      const bool candidate = e.path().extension() == ".cu" || e.path().extension() == ".cpp";
      const bool fixture = std::string(dir).find("fixtures") != std::string::npos;
      if (candidate && (!fixture || name.rfind("good_", 0) == 0)) files.push_back({e.path(), ""});
    }
  }
  std::sort(files.begin(), files.end(),
            [](const CorpusFile& a, const CorpusFile& b) { return a.path < b.path; });
  return files;
}

// Hostile fixtures whose manifest names a rule of the three gates (not the storage limits,
// which need ptxas's report, nor the judge's run-time rules): each gate must give that rule,
// and no earlier gate may pre-empt it.
std::vector<CorpusFile> gated_hostile_files() {
  static const std::set<std::string> kGateRules = {
      "source_empty",        "source_not_utf8",        "source_too_large",    "missing_entry_point",
      "include_not_allowed", "compiler_flag_override", "banned_construct",    "import_not_allowed",
      "export_not_allowed",  "thread_local_storage",   "code_outside_text",   "writable_code",
      "executable_stack",    "indirect_function",      "library_not_allowed", "load_time_code"};
  std::vector<CorpusFile> files;
  auto manifest = parse_json(
      read_file(source_dir() / "tests/fixtures/kernels/manifest.json").value_or(std::string("[]")));
  if (!manifest.is_ok()) return files;
  for (const auto& entry : *manifest) {
    if (!entry.contains("rule")) continue;
    const std::string rule = entry["rule"];
    if (kGateRules.count(rule) == 0) continue;
    files.push_back(
        {source_dir() / "tests/fixtures/kernels" / entry["file"].get<std::string>(), rule});
  }
  return files;
}

std::string test_name(const testing::TestParamInfo<CorpusFile>& info) {
  std::string name =
      info.param.path.parent_path().filename().string() + "_" + info.param.path.filename().string();
  for (auto& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class CorpusThroughGates : public testing::TestWithParam<CorpusFile> {};

// The first rule of check_translation_unit over `units`, with and without roots, or "".
std::string first_unit_rule(const std::vector<std::string>& units, Backend backend,
                            const std::vector<std::string>& roots) {
  for (const auto& unit : units) {
    if (auto r = check_translation_unit(unit, backend)) return r->rule + ": " + r->detail;
    if (auto r = check_translation_unit(unit, backend, roots))
      return r->rule + " (roots): " + r->detail;
  }
  return "";
}

// The first rule of check_source, check_translation_unit and check_object, as the compile
// driver applies them, or "" when all pass. g++ units come from `g++ -E` before the build;
// nvcc's from `nvcc --keep` (host and every device pass) with the build.
std::string first_rule(const Toolchain& tc, const std::string& source) {
  if (auto r = check_source(source, tc.backend)) return r->rule;
  const auto roots = tc.roots();
  std::vector<std::string> units;
  if (tc.backend == Backend::kCpu) {
    auto text = tc.preprocess(source);
    EXPECT_TRUE(text.is_ok()) << text.status().to_string();
    if (!text.is_ok()) return "preprocess_failed";
    units.push_back(std::move(*text));
    if (auto rule = first_unit_rule(units, tc.backend, roots); !rule.empty()) return rule;
  }
  auto image = tc.build(source, {}, tc.backend == Backend::kCuda ? &units : nullptr);
  EXPECT_TRUE(image.is_ok()) << image.status().to_string();
  if (!image.is_ok()) return "build_failed";
  if (tc.backend == Backend::kCuda) {
    EXPECT_EQ(units.size(), 3u) << "host, compute_90 and compute_90a passes";
    if (auto rule = first_unit_rule(units, tc.backend, roots); !rule.empty()) return rule;
  }
  if (auto r = check_object(*image, tc.backend, 0)) return r->rule + ": " + r->detail;
  return "";
}

TEST_P(CorpusThroughGates, GivesItsRule) {
  const CorpusFile& file = GetParam();
  const Backend backend = file.path.extension() == ".cu" ? Backend::kCuda : Backend::kCpu;
  const auto tc = Toolchain::find(backend);
  if (!tc) GTEST_SKIP() << "nvcc not found";
  auto source = read_file(file.path);
  ASSERT_TRUE(source.is_ok());
  const std::string rule = first_rule(*tc, *source);
  EXPECT_EQ(rule.substr(0, rule.find_first_of(" :")), file.rule) << file.path << ": " << rule;
}

INSTANTIATE_TEST_SUITE_P(Good, CorpusThroughGates, testing::ValuesIn(good_files()), test_name);
INSTANTIATE_TEST_SUITE_P(Hostile, CorpusThroughGates, testing::ValuesIn(gated_hostile_files()),
                         test_name);

}  // namespace
}  // namespace kevin::engine
