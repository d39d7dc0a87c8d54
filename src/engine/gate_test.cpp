// gate_test.cpp — static gate rules, each shown firing and not firing.
#include "engine/gate.h"

#include <gtest/gtest.h>

namespace kevin::engine {
namespace {

constexpr const char* kGood = R"(
#include "kevin_abi.h"
#include <cuda_runtime.h>
// A comment mentioning #include <cublas_v2.h> and __attribute__((constructor)) is harmless.
static const char* note = "fork() in a string is harmless";
extern "C" int kevin_forward(const kevin_args* args) { (void)args; (void)note; return 0; }
)";

std::string rule_of(std::string_view src, Backend b = Backend::kCuda) {
  auto r = check_source(src, b);
  return r ? r->rule : "";
}

TEST(Gate, AcceptsGoodSource) { EXPECT_EQ(rule_of(kGood), ""); }

TEST(Gate, SizeEmptyAndEncoding) {
  EXPECT_EQ(rule_of(""), "source_empty");
  EXPECT_EQ(rule_of("  // only a comment\n/* and another */\n"), "source_empty");
  EXPECT_EQ(rule_of(std::string("int kevin_forward;\xff\xfe")), "source_not_utf8");
  EXPECT_EQ(rule_of(std::string(kMaxSourceBytes + 1, ' ')), "source_too_large");
}

TEST(Gate, EntryPointRequired) {
  EXPECT_EQ(rule_of("#include <cmath>\nint forward(){return 0;}\n"), "missing_entry_point");
  EXPECT_EQ(rule_of("int my_kevin_forward_x(){return 0;}\n"), "missing_entry_point");
}

TEST(Gate, IncludesChecked) {
  EXPECT_EQ(rule_of("#include <cublas_v2.h>\nint kevin_forward;"), "include_not_allowed");
  EXPECT_EQ(rule_of("#  include \"torch/extension.h\"\nint kevin_forward;"), "include_not_allowed");
  EXPECT_EQ(rule_of("#include_next <cmath>\nint kevin_forward;"), "include_not_allowed");
  EXPECT_EQ(rule_of("#define H <cstdio>\n#include H\nint kevin_forward;"), "include_not_allowed");
  EXPECT_EQ(rule_of("#include <immintrin.h>\nint kevin_forward;", Backend::kCpu), "");
  EXPECT_EQ(rule_of("#include <immintrin.h>\nint kevin_forward;", Backend::kCuda), "include_not_allowed");
  EXPECT_EQ(rule_of("#include <cuda_runtime.h>\nint kevin_forward;", Backend::kCpu), "include_not_allowed");
}

TEST(Gate, FlagOverridesAndLoadTimeCode) {
  EXPECT_EQ(rule_of("#pragma GCC optimize(\"fast-math\")\nint kevin_forward;"), "compiler_flag_override");
  EXPECT_EQ(rule_of("__attribute__((optimize(\"Ofast\"))) int kevin_forward;"), "compiler_flag_override");
  EXPECT_EQ(rule_of("__attribute__ (( constructor )) static void f(){}\nint kevin_forward;"), "banned_construct");
  EXPECT_EQ(rule_of("#pragma unroll\nint kevin_forward;"), "");
}

TEST(Gate, HiddenDirectivesAndPragmaForms) {
  EXPECT_EQ(rule_of("%:include \"/proc/self/environ\"\nint kevin_forward;"), "include_not_allowed") << "digraph";
  EXPECT_EQ(rule_of("#inc\\\nlude <cublas_v2.h>\nint kevin_forward;"), "include_not_allowed") << "line splice";
  EXPECT_EQ(rule_of("_Pragma(\"GCC optimize(\\\"fast-math\\\")\")\nint kevin_forward;"), "compiler_flag_override");
  EXPECT_EQ(rule_of("[[gnu::optimize(\"Ofast\")]] int kevin_forward;"), "compiler_flag_override");
  EXPECT_EQ(rule_of("[[gnu::constructor]] static void f() {}\nint kevin_forward;"), "banned_construct");
  EXPECT_EQ(rule_of("int x = 7 % 3;\nint kevin_forward;"), "") << "a modulo is not a digraph";
}

TEST(Gate, HostAssemblyBannedOnCpuOnly) {
  const char* src = "int kevin_forward(){ asm volatile(\"syscall\"); return 0; }";
  EXPECT_EQ(rule_of(src, Backend::kCpu), "banned_construct");
  EXPECT_EQ(rule_of(src, Backend::kCuda), "") << "device inline PTX is legitimate in CUDA";
}

TEST(Gate, StripKeepsLinesAndBlanksLiterals) {
  const std::string s = strip_comments_and_strings("a // x\nb /* y\n z */ c \"str\" 'q' R\"(raw)\"");
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 2);
  EXPECT_EQ(s.find('x'), std::string::npos);
  EXPECT_EQ(s.find("str"), std::string::npos);
  EXPECT_EQ(s.find("raw"), std::string::npos);
  EXPECT_NE(s.find('c'), std::string::npos);
}

TEST(Gate, Utf8Validation) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
}

}  // namespace
}  // namespace kevin::engine
