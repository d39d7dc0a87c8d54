// gate_test.cpp — text gate (check_source) rules, each shown firing and not firing, and the
// bypasses of the earlier line-based scan, each closed.
#include "engine/gates/gate.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

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

TEST(Gate, ARefusedIncludeListsWhatIsAllowed) {
  const auto r = check_source("#include <vector>\nint kevin_forward;", Backend::kCpu);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rule, "include_not_allowed");
  EXPECT_NE(r->detail.find(allowed_includes_text(Backend::kCpu)), std::string::npos) << r->detail;
  EXPECT_NE(r->detail.find("<cstdlib>, <stdlib.h>"), std::string::npos)
      << "the C and C++ spellings of a header go together\n"
      << r->detail;
}

TEST(Gate, DocsListEveryAllowedInclude) {
  // docs/eval.md's list is what users and models read; it may not drift from the gate's.
  std::ifstream file(std::string(KEVIN_SOURCE_DIR) + "/docs/eval.md");
  const std::string docs((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(docs.empty());
  for (Backend b : {Backend::kCuda, Backend::kCpu}) {
    for (Profile p : {Profile::kKevinAbi, Profile::kTorchExtension}) {
      for (const auto& header : allowed_includes(b, p))
        EXPECT_NE(docs.find("`<" + header + ">`"), std::string::npos) << header;
    }
  }
}

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
  EXPECT_EQ(rule_of("#include <immintrin.h>\nint kevin_forward;", Backend::kCuda),
            "include_not_allowed");
  EXPECT_EQ(rule_of("#include <cuda_runtime.h>\nint kevin_forward;", Backend::kCpu),
            "include_not_allowed");
}

TEST(Gate, FlagOverridesAndLoadTimeCode) {
  EXPECT_EQ(rule_of("#pragma GCC optimize(\"fast-math\")\nint kevin_forward;"),
            "compiler_flag_override");
  EXPECT_EQ(rule_of("__attribute__((optimize(\"Ofast\"))) int kevin_forward;"),
            "compiler_flag_override");
  EXPECT_EQ(rule_of("__attribute__ (( constructor )) static void f(){}\nint kevin_forward;"),
            "banned_construct");
  EXPECT_EQ(rule_of("#pragma unroll\nint kevin_forward;"), "");
}

TEST(Gate, HiddenDirectivesAndPragmaForms) {
  EXPECT_EQ(rule_of("%:include \"/proc/self/environ\"\nint kevin_forward;"), "include_not_allowed")
      << "digraph";
  EXPECT_EQ(rule_of("#inc\\\nlude <cublas_v2.h>\nint kevin_forward;"), "include_not_allowed")
      << "line splice";
  EXPECT_EQ(rule_of("_Pragma(\"GCC optimize(\\\"fast-math\\\")\")\nint kevin_forward;"),
            "compiler_flag_override");
  EXPECT_EQ(rule_of("[[gnu::optimize(\"Ofast\")]] int kevin_forward;"), "compiler_flag_override");
  EXPECT_EQ(rule_of("[[gnu::constructor]] static void f() {}\nint kevin_forward;"),
            "banned_construct");
  EXPECT_EQ(rule_of("int x = 7 % 3;\nint kevin_forward;"), "") << "a modulo is not a digraph";
}

TEST(Gate, HostAssemblyBannedOnCpuOnly) {
  const char* src = "int kevin_forward(){ asm volatile(\"syscall\"); return 0; }";
  EXPECT_EQ(rule_of(src, Backend::kCpu), "banned_construct");
  EXPECT_EQ(rule_of(src, Backend::kCuda), "") << "device inline PTX is legitimate in CUDA";
  EXPECT_EQ(rule_of("asm(\".pushsection .rodata\\n.incbin "
                    "\\\"/etc/shadow\\\"\\n.popsection\");\nint kevin_forward;",
                    Backend::kCuda),
            "banned_construct")
      << "but not assembler directives that read files or switch sections";
}

TEST(Gate, CommentsInsideIncludeLines) {
  EXPECT_EQ(rule_of("#include /* <cmath> */ \"/etc/passwd\"\nint kevin_forward;"),
            "include_not_allowed");
  EXPECT_EQ(rule_of("#include /*\n*/ \"/etc/passwd\"\nint kevin_forward;"), "include_not_allowed")
      << "a block comment carries the directive over the newline";
  EXPECT_EQ(rule_of("#include <cmath> /* \"/etc/passwd\" */\nint kevin_forward;"), "");
  EXPECT_EQ(rule_of("#include <cmath> // <cublas_v2.h>\nint kevin_forward;"), "");
  EXPECT_EQ(rule_of("#  /**/ include <cmath>\nint kevin_forward;"), "");
  EXPECT_EQ(rule_of("#include L\"cmath\"\nint kevin_forward;"), "include_not_allowed");
  EXPECT_EQ(rule_of("#import <cmath>\nint kevin_forward;"), "include_not_allowed");
  EXPECT_EQ(rule_of("#if __has_include(\"/root/.ssh/id_rsa\")\n#endif\nint kevin_forward;"),
            "include_not_allowed");
}

TEST(Gate, EveryAttributeEntryChecked) {
  for (const char* attr : {"__attribute__((used, constructor))",
                           "__attribute__((noinline,__constructor__))",
                           "__attribute__ ((constructor(101)))",
                           "__attribute((constructor))",
                           "__attribute__((__section__(\".text\")))",
                           "__attribute__((init_priority(101)))",
                           "__attribute__((alias(\"g\")))",
                           "__attribute__((weakref(\"g\")))",
                           "__attribute__((ifunc(\"r\")))",
                           "__attribute__((symver(\"g@V1\")))",
                           "__attribute__((naked))",
                           "__attribute__((destructor))",
                           "[[gnu::used, gnu::constructor]]",
                           "[[using gnu: constructor]]",
                           "[[using gnu: used, section(\".x\")]]",
                           "[[gnu::__constructor__]]",
                           "[[__gnu__::section(\".x\")]]",
                           "[[ gnu :: constructor ]]",
                           "<:<:gnu::constructor:>:>",
                           "%:define X\n[[gnu::constructor]]",
                           "__declspec(allocate(\"x\"))"}) {
    EXPECT_EQ(rule_of(std::string(attr) + " static void f() {}\nint kevin_forward;"),
              "banned_construct")
        << attr;
  }
  for (const char* attr :
       {"__attribute__((noinline, optimize(\"O0\")))", "__attribute__((target(\"avx2\")))",
        "__attribute__((target_clones(\"avx2\",\"default\")))",
        "[[gnu::hot, gnu::target(\"avx2\")]]", "[[using gnu: optimize(\"Ofast\")]]"}) {
    EXPECT_EQ(rule_of(std::string(attr) + " static void f() {}\nint kevin_forward;"),
              "compiler_flag_override")
        << attr;
  }
  for (const char* attr : {"__attribute__((aligned(16), noinline))", "[[nodiscard]]",
                           "[[gnu::always_inline]] inline", "__attribute__((unused))"}) {
    EXPECT_EQ(rule_of(std::string(attr) + " static int f() { return 0; }\nint kevin_forward;"), "")
        << attr;
  }
}

TEST(Gate, PragmaSpellings) {
  for (const char* p : {"#pragma   GCC   optimize(\"O0\")", "#pragma GCC\toptimize(\"O0\")",
                        "# pragma GCC optimize(\"O0\")", "#pragma /* c */ GCC /* c */ optimize",
                        "#pragma /*\n*/ GCC optimize(\"O0\")", "#pragma GCC target(\"avx512f\")",
                        "#pragma STDC FP_CONTRACT ON", "#pragma STDC CX_LIMITED_RANGE ON",
                        "#pragma clang fp contract(fast)", "#pragma float_control(precise, off)",
                        "#pragma fp_contract(fast)", "%:pragma GCC optimize(\"O0\")"}) {
    EXPECT_EQ(rule_of(std::string(p) + "\nint kevin_forward;"), "compiler_flag_override") << p;
  }
  for (const char* p : {"#pragma weak kevin_forward", "#pragma redefine_extname foo bar",
                        "#pragma GCC system_header"}) {
    EXPECT_EQ(rule_of(std::string(p) + "\nint kevin_forward;"), "banned_construct") << p;
  }
  for (const char* p :
       {"#pragma GCC diagnostic push", "#pragma unroll 4", "#pragma GCC unroll 8",
        "#pragma GCC ivdep", "#pragma once", "#pragma pack(push, 1)", "#pragma message(\"x\")"}) {
    EXPECT_EQ(rule_of(std::string(p) + "\nint kevin_forward;"), "") << p;
  }
}

TEST(Gate, LineDirectivesRefused) {
  EXPECT_EQ(rule_of("#line 1 \"/usr/include/c++/12/cmath\"\nint kevin_forward;"),
            "banned_construct");
  EXPECT_EQ(rule_of("# 1 \"/usr/include/c++/12/cmath\" 1 3\nint kevin_forward;"),
            "banned_construct");
  EXPECT_EQ(rule_of("#line 7\nint kevin_forward;"), "banned_construct");
}

TEST(Gate, LiteralsCannotHideCode) {
  EXPECT_EQ(rule_of("int x = 1'0 /'/*';\n#include \"/etc/passwd\"\n// */\nint kevin_forward;"),
            "include_not_allowed")
      << "a digit separator is not a character literal";
  EXPECT_EQ(
      rule_of("auto s = u8R\"( \" /* )\";\n#include <cublas_v2.h>\n// */\nint kevin_forward;"),
      "include_not_allowed")
      << "a prefixed raw string is one literal";
  EXPECT_EQ(rule_of("auto s = LR\"x( )\" __attribute__((constructor)) )x\";\nint kevin_forward;"),
            "")
      << "and what is inside it is not code";
  EXPECT_EQ(rule_of("const char* s = \"#include <cublas_v2.h>\";\nint kevin_forward;"), "");
}

TEST(Gate, StripKeepsLinesAndBlanksLiterals) {
  const std::string s =
      strip_comments_and_strings("a // x\nb /* y\n z */ c \"str\" 'q' R\"(raw)\"");
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 2);
  EXPECT_EQ(s.find('x'), std::string::npos);
  EXPECT_EQ(s.find("str"), std::string::npos);
  EXPECT_EQ(s.find("raw"), std::string::npos);
  EXPECT_NE(s.find('c'), std::string::npos);
}

TEST(Gate, Utf8Validation) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));      // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));  // surrogate
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));      // truncated
}

}  // namespace
}  // namespace kevin::engine
