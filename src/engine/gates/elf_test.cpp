// elf_test.cpp — the ELF reader on real objects built here and on malformed input, and the
// symbol gate's decisions.
#include "engine/gates/elf.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/file.h"
#include "engine/gates/symbol_gate.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {
using namespace std::chrono_literals;

// `source` built by g++ with `mode` ("-shared" or "-c"): the output file's bytes.
Result<std::string> build(const std::string& source, const char* mode) {
  KEVIN_ASSIGN_OR_RETURN(auto dir, sys::TempDir::create("kevin-elf-test-"));
  KEVIN_RETURN_IF_ERROR(write_file_atomic(dir.path() / "x.cpp", source));
  KEVIN_ASSIGN_OR_RETURN(
      auto run, sys::run_command({"/usr/bin/g++", "-O2", mode, "-fPIC", "x.cpp", "-o", "x.out"},
                                 sys::Deadline::after(60s), 1 << 16, dir.path()));
  if (!run.exit.exited || run.exit.code != 0) return internal_error("g++ failed: " + run.output);
  return read_file(dir.path() / "x.out");
}

Result<ElfSymbols> build_and_read(const std::string& source) {
  KEVIN_ASSIGN_OR_RETURN(std::string image, build(source, "-shared"));
  return read_elf_symbols(image);
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(Elf, ReadsImportsExportsAndStorage) {
  auto syms = build_and_read(
      "#include <cmath>\n#include <cstdlib>\nstatic float big[1 << 20];\n"
      "extern \"C\" int kevin_forward(const void*) { big[3] = std::exp(big[2]); return (int)big[3] "
      "+ (std::getenv(\"X\") != nullptr); }\n");
  ASSERT_TRUE(syms.is_ok()) << syms.status().to_string();
  EXPECT_TRUE(contains(syms->imports, "expf"));
  EXPECT_TRUE(contains(syms->imports, "getenv"));
  EXPECT_TRUE(contains(syms->exports, "kevin_forward"));
  EXPECT_GE(syms->writable_bytes, 4u << 20);

  auto rej = check_symbols(*syms, Backend::kCpu, 0);
  ASSERT_TRUE(rej.has_value());
  EXPECT_EQ(rej->rule, "import_not_allowed");
  EXPECT_NE(rej->detail.find("getenv"), std::string::npos);
}

TEST(Elf, ListsWhatARelocatableObjectDefinesGlobally) {
  auto image = build(
      "int strong_data = 1;\n"
      "int strong_function(int x) { return x + strong_data; }\n"
      "template <typename T> T weak_template(T x) { return x * 2; }\n"
      "inline int& unique_counter() { static int c = 0; return ++c, c; }\n"
      "static int local_function(int x) { return weak_template(x) + unique_counter(); }\n"
      "extern int undefined_data;\n"
      "int use(int x) { return local_function(x) + undefined_data; }\n"
      "int (*keep_template)(int) = &weak_template<int>;\n"  // emitted, not only inlined
      "int& (*keep_counter)() = &unique_counter;\n",
      "-c");
  ASSERT_TRUE(image.is_ok()) << image.status().to_string();
  auto syms = read_elf_relocatable_symbols(*image);
  ASSERT_TRUE(syms.is_ok()) << syms.status().to_string();
  // Strong, weak (a template's instance) and STB_GNU_UNIQUE (an inline function's static).
  for (const char* name : {"strong_data", "_Z15strong_functioni", "_Z13weak_templateIiET_S0_",
                           "_Z14unique_counterv", "_ZZ14unique_countervE1c", "_Z3usei"}) {
    EXPECT_TRUE(contains(syms->globals, name)) << name;
  }
  EXPECT_FALSE(contains(syms->globals, "undefined_data")) << "undefined, not defined";
  EXPECT_TRUE(contains(syms->functions, "_Z3usei"));
  EXPECT_FALSE(contains(syms->functions, "strong_data"));
  // A shared object is not a relocatable object.
  auto shared = build("int f() { return 1; }\n", "-shared");
  ASSERT_TRUE(shared.is_ok()) << shared.status().to_string();
  const Status refused = read_elf_relocatable_symbols(*shared).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("not an x86-64 relocatable object"), std::string::npos);
}

TEST(Elf, MalformedInputIsAnErrorNotACrash) {
  const auto expect_refused = [](const std::string& image, const std::string& why) {
    auto syms = read_elf_symbols(image);
    ASSERT_FALSE(syms.is_ok()) << "accepted " << image.size() << " bytes";
    EXPECT_EQ(syms.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(syms.status().message().find(why), std::string::npos) << syms.status().to_string();
  };
  expect_refused("", "not an ELF file");
  expect_refused(
      "\x7f"
      "ELF garbage",
      "not an ELF file");  // shorter than an ELF header
  std::string big_endian =
      "\x7f"
      "ELF";
  big_endian += std::string(60, '\x02');  // ELFCLASS64, but ELFDATA2MSB
  expect_refused(big_endian, "not a 64-bit little-endian ELF file");
  // A whole header whose section table lies past the end of the file.
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 1;
  eh.e_shoff = sizeof(eh);
  const std::string truncated(reinterpret_cast<const char*>(&eh), sizeof(eh));
  expect_refused(truncated, "ELF section header out of bounds");
}

TEST(SymbolGate, Decisions) {
  ElfSymbols ok{
      {"expf", "memcpy", "__cxa_finalize", "sqrtf"}, {"kevin_forward", "_Z6helperv"}, 100};
  EXPECT_FALSE(check_symbols(ok, Backend::kCpu, 0).has_value());
  ElfSymbols cuda{
      {"__cudaRegisterFatBinary", "cudaLaunchKernel", "cudaGetLastError"}, {"kevin_forward"}, 0};
  EXPECT_FALSE(check_symbols(cuda, Backend::kCuda, 4).has_value());
  EXPECT_EQ(check_symbols(cuda, Backend::kCpu, 0)->rule, "import_not_allowed");
  for (const char* bad : {"cudaMalloc", "cudaStreamCreate", "cublasSgemm", "pthread_create", "fork",
                          "fopen", "socket", "dlopen", "malloc", "_Znwm", "printf", "clock_gettime",
                          "cudaEventRecord", "cudaDeviceSetLimit", "cudaStreamSetAttribute"}) {
    EXPECT_FALSE(import_allowed(bad, Backend::kCuda)) << bad;
  }
  EXPECT_FALSE(import_allowed("exit", Backend::kCpu));
  EXPECT_TRUE(import_allowed("exit", Backend::kCuda))
      << "nvcc host stubs of __device__ functions call exit";
  ElfSymbols shadow{{}, {"kevin_forward", "clock_gettime"}, 0};
  EXPECT_EQ(check_symbols(shadow, Backend::kCpu, 0)->rule, "export_not_allowed");
  ElfSymbols big{{}, {"kevin_forward"}, kMaxWritableStaticBytes + 1};
  EXPECT_EQ(check_symbols(big, Backend::kCpu, 0)->rule, "static_storage_too_large");
  ElfSymbols device_big{{}, {"kevin_forward"}, 0};
  EXPECT_EQ(check_symbols(device_big, Backend::kCuda, kMaxDeviceGlobalBytes + 1)->rule,
            "static_storage_too_large");
  EXPECT_FALSE(check_symbols(device_big, Backend::kCuda, 4096).has_value())
      << "small counters are fine";
}

}  // namespace
}  // namespace kevin::engine
