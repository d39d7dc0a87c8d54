// tu_gate_test.cpp — the translation-unit gate on hand-written preprocessor output: regions,
// linemarkers and forged ones, included files with and without roots, attributes, pragmas,
// assembly, and bounded work on hostile input. Real g++/nvcc output is in
// toolchain_gate_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "engine/gates/gate.h"
#include "engine/gates/tu_gate.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace {

// What g++ -E prints before the candidate's first line.
constexpr const char* kPrologue =
    "# 0 \"candidate.cpp\"\n# 0 \"<built-in>\"\n# 0 \"<command-line>\"\n"
    "# 1 \"/usr/include/stdc-predef.h\" 1 3 4\n# 0 \"<command-line>\" 2\n# 1 \"candidate.cpp\"\n";

std::string tu(std::string_view body) { return kPrologue + std::string(body); }

std::string rule_of(std::string_view text, Backend backend = Backend::kCpu) {
  const auto r = check_translation_unit(text, backend);
  return r ? r->rule : "";
}

std::string rule_with_roots(std::string_view text, const std::vector<std::string>& roots) {
  const auto r = check_translation_unit(text, Backend::kCpu, roots);
  return r ? r->rule : "";
}

// A header region entered from the main file and left again.
std::string header(std::string_view path, std::string_view content, int back_at = 2) {
  return "# 1 \"" + std::string(path) + "\" 1 3\n" + std::string(content) + "\n# " +
         std::to_string(back_at) + " \"candidate.cpp\" 2\n";
}

TEST(TuGate, CleanUnitPasses) {
  EXPECT_EQ(
      rule_of(tu(header("/usr/include/c++/12/cmath", "namespace std { double exp(double); }") +
                 "extern \"C\" int kevin_forward(const void*) { return 0; }\n")),
      "");
  EXPECT_EQ(rule_of(""), "");
  EXPECT_EQ(rule_of("int kevin_forward;"), "") << "no linemarkers: everything is the candidate's";
}

TEST(TuGate, AttributesInEverySpelling) {
  for (const char* attr : {"__attribute__((constructor))",
                           "__attribute__ ((constructor(101)))",
                           "__attribute((constructor))",
                           "__attribute__((__constructor__))",
                           "__attribute__((used, constructor))",
                           "__attribute__((noinline,destructor))",
                           "__attribute__((section(\".text\")))",
                           "__attribute__((alias(\"g\")))",
                           "__attribute__((weakref(\"g\")))",
                           "__attribute__((ifunc(\"r\")))",
                           "__attribute__((symver(\"g@V1\")))",
                           "__attribute__((naked))",
                           "__attribute__((init_priority(101)))",
                           "__attribute__((copy(g)))",
                           "[[gnu::constructor]]",
                           "[[gnu::used, gnu::constructor]]",
                           "[[using gnu: constructor]]",
                           "[[using gnu: used, section(\".x\")]]",
                           "[[gnu::__constructor__]]",
                           "[[__gnu__::constructor]]",
                           "[ [ gnu :: constructor ] ]",
                           "<:<:gnu::constructor:>:>",
                           "[[gnu::aligned(16), gnu::constructor]]",
                           "__declspec(allocate(\"x\"))",
                           "__attribute__((aligned(sizeof(int)), section(\".x\")))"}) {
    EXPECT_EQ(rule_of(tu(std::string(attr) + " static void f() {}\n")), "banned_construct") << attr;
  }
  for (const char* attr :
       {"__attribute__((optimize(\"O0\")))", "__attribute__((target(\"avx2\")))",
        "__attribute__((target_clones(\"avx2\",\"default\")))", "[[gnu::optimize(\"O0\")]]",
        "__attribute__((__optimize__(\"fast-math\")))", "[[using gnu: hot, target(\"avx2\")]]"}) {
    EXPECT_EQ(rule_of(tu(std::string(attr) + " static void f() {}\n")), "compiler_flag_override")
        << attr;
  }
  for (const char* attr :
       {"__attribute__((aligned(16), noinline))", "[[nodiscard]]", "[[gnu::always_inline]] inline",
        "__attribute__((global))", "__attribute__((launch_bounds(256)))", "[[maybe_unused]]",
        "__attribute__((device)) __attribute__((shared))"}) {
    EXPECT_EQ(rule_of(tu(std::string(attr) + " static void f() {}\n")), "") << attr;
  }
  EXPECT_EQ(
      rule_of(tu(
          "int section = 3; int constructor(int); int x[2]; int y = x[constructor(section)];\n")),
      "")
      << "plain identifiers with those names are not attributes";
}

TEST(TuGate, RegionsDecideWhatIsJudged) {
  const std::string ctor = "__attribute__((constructor)) static void f() {}";
  EXPECT_EQ(rule_of(tu(header("/usr/include/c++/12/cmath", ctor))), "")
      << "headers are the toolchain's";
  EXPECT_EQ(rule_of(tu(header("/usr/include/c++/12/cmath", "int x;") + ctor)), "banned_construct");
  EXPECT_EQ(rule_of(tu(header("/usr/include/c++/12/cmath",
                              "#pragma GCC optimize(\"O2\")\nasm(\"nop\");"))),
            "");
  EXPECT_EQ(rule_of(tu(ctor)), "banned_construct");
}

TEST(TuGate, ForgedLinemarkers) {
  const std::string ctor = "\n__attribute__((constructor)) static void f() {}\n";
  EXPECT_EQ(rule_of(tu("int a;\n# 1 \"/usr/include/c++/12/cmath\"" + ctor)), "banned_construct")
      << "#line rename";
  EXPECT_EQ(rule_of(tu("int a;\n# 1 \"<built-in>\"" + ctor)), "banned_construct")
      << "rename to a pseudo-file";
  EXPECT_EQ(rule_of(tu(" # 1 \"/usr/include/c++/12/cmath\" 1 3" + ctor)), "banned_construct")
      << "a '#' that is not in column 0 is a macro's, not a directive";
  EXPECT_EQ(rule_of(tu("const char* s = R\"(\n# 1 \"/usr/include/c++/12/cmath\" 1 3\n)\";" + ctor)),
            "banned_construct")
      << "a linemarker inside a raw string is text";
  EXPECT_EQ(
      rule_of(tu("const char* s = u8R\"x(\n# 1 \"/usr/include/c++/12/cmath\" 1 3\n)x\";" + ctor)),
      "banned_construct");
  EXPECT_EQ(rule_of(tu("# 3 \"/usr/include/c++/12/cmath\" 2" + ctor)), "banned_construct")
      << "return that does not nest";
  EXPECT_EQ(rule_of(tu("# 1 \"/usr/include/c++/12/cmath\" 1 2" + ctor)), "banned_construct")
      << "malformed flags";
  EXPECT_EQ(rule_of(tu("# 1 \"candidate.cpp\" 1" + ctor)), "include_not_allowed") << "self include";
  EXPECT_EQ(rule_of("# 0 \"candidate.cpp\"\n# 0 \"/usr/include/c++/12/cmath\"" + ctor),
            "banned_construct")
      << "the prologue renames only to pseudo-files";
  EXPECT_EQ(rule_of(tu("# 40 \"candidate.cpp\"\nint a;\n")), "")
      << "line resyncs of the same file are fine";
}

TEST(TuGate, IncludedFilesWithoutRoots) {
  EXPECT_EQ(rule_of(tu(header("/usr/include/c++/12/cmath", ""))), "");
  EXPECT_EQ(rule_of(tu(header("/work/main/src/engine/abi/kevin_abi.h", ""))), "");
  EXPECT_EQ(rule_of(tu(header("/home/u/kevin/build/share/kevin/kevin_abi.h", ""))), "")
      << "a build tree under /home";
  for (const char* path :
       {"/etc/passwd", "/dev/zero", "/proc/self/environ", "/root/.cache/kevin/x/cmath",
        "/home/u/cmath", "/tmp/cmath", "/usr/include/../../etc/passwd", "cmath",
        "/usr/share/dict/words", "/usr/include/c++/12/cmath.bak", "/usr/include/c++/12/xcmath",
        "<built-in>"}) {
    EXPECT_EQ(rule_of(tu(header(path, ""))), "include_not_allowed") << path;
  }
  const std::string nested =
      header("/usr/include/c++/12/cmath",
             "# 1 \"/usr/include/x86_64-linux-gnu/bits/mathcalls.h\" 1 3 4\n\n"
             "# 40 \"/usr/include/c++/12/cmath\" 2 3");
  EXPECT_EQ(rule_of(tu(nested)), "") << "headers a header includes need not be on the list";
  EXPECT_EQ(
      rule_of(tu(header("/usr/include/c++/12/cmath",
                        "# 1 \"/var/lib/x.h\" 1 3\n\n# 2 \"/usr/include/c++/12/cmath\" 2 3"))),
      "include_not_allowed");
  EXPECT_EQ(
      rule_of(tu(header("/usr/local/cuda/bin/../targets/x86_64-linux/include/cuda_runtime.h", "")),
              Backend::kCuda),
      "")
      << "nvcc's own '..' resolves lexically";
  EXPECT_EQ(rule_of(tu(header("/usr/local/cuda/targets/x86_64-linux/include/cuda_runtime.h", "")),
                    Backend::kCpu),
            "include_not_allowed")
      << "cuda_runtime.h is not a CPU header";
  EXPECT_EQ(rule_of(tu(header("/usr/include/c++/12/cuda\\057pipeline", "")), Backend::kCuda), "")
      << "octal escapes in names are undone";
}

TEST(TuGate, IncludedFilesWithRoots) {
  const std::vector<std::string> roots = {
      "/usr/include", "/usr/lib/gcc/x86_64-linux-gnu/12/include", "/home/u/kevin/abi/"};
  EXPECT_EQ(rule_with_roots(tu(header("/usr/include/c++/12/cmath", "")), roots), "");
  EXPECT_EQ(rule_with_roots(tu(header("/home/u/kevin/abi/kevin_abi.h", "")), roots), "")
      << "a root lifts the fixed deny-list";
  EXPECT_EQ(rule_with_roots(tu(header("/opt/x/cmath", "")), roots), "include_not_allowed");
  EXPECT_EQ(rule_with_roots(tu(header("/usr/include/../etc/cmath", "")), roots),
            "include_not_allowed");
  EXPECT_EQ(rule_with_roots(tu(header("/usr/includes/cmath", "")), roots), "include_not_allowed")
      << "prefix of a name";
  EXPECT_EQ(rule_with_roots(tu(header("/usr/include/stdio.h", "")), roots), "include_not_allowed")
      << "direct rule stays";
  EXPECT_EQ(rule_with_roots(tu(header("/usr/include/c++/12/cmath", "")), {}), "include_not_allowed")
      << "no roots, no headers";
  EXPECT_EQ(rule_with_roots(tu("int x;\n"), {}), "include_not_allowed")
      << "not even the compiler's stdc-predef.h";
  EXPECT_EQ(rule_with_roots("# 0 \"candidate.cpp\"\nint x;\n", {}), "");
}

TEST(TuGate, Pragmas) {
  for (const char* p : {"#pragma GCC optimize (\"O0\")", "#pragma GCC target(\"avx2\")",
                        "#pragma clang loop unroll(full)", "#pragma STDC FENV_ACCESS ON",
                        "#pragma STDC FP_CONTRACT ON", "#pragma STDC CX_LIMITED_RANGE ON",
                        "#pragma float_control(precise, off)", "#pragma fp_contract(fast)",
                        "#pragma GCC\toptimize(\"O0\")"}) {
    EXPECT_EQ(rule_of(tu(std::string(p) + "\n")), "compiler_flag_override") << p;
  }
  EXPECT_EQ(rule_of(tu("#pragma weak foo\n")), "banned_construct");
  EXPECT_EQ(rule_of(tu("#pragma redefine_extname foo bar\n")), "banned_construct");
  for (const char* p : {"#pragma GCC diagnostic push", "#pragma unroll 4", "#pragma GCC unroll 8",
                        "#pragma GCC ivdep", "#pragma once", "#pragma pack(push, 1)",
                        "#pragma message(\"hi\")", "#pragma nv_diag_suppress 177"}) {
    EXPECT_EQ(rule_of(tu(std::string(p) + "\n")), "") << p;
  }
  EXPECT_EQ(rule_of(tu("_Pragma(\"GCC optimize(\\\"O0\\\")\") int x;\n")), "compiler_flag_override")
      << "an operator left in the output is judged by its string";
  EXPECT_EQ(rule_of(tu("_Pragma(\"unroll\") int x;\n")), "");
}

TEST(TuGate, Assembly) {
  const std::string body = tu("static void f() { __asm__ volatile(\"syscall\"); }\n");
  EXPECT_EQ(rule_of(body, Backend::kCpu), "banned_construct");
  EXPECT_EQ(rule_of(body, Backend::kCuda), "") << "device inline PTX is legitimate in CUDA";
  EXPECT_EQ(rule_of(tu("static void f() { asm(\"nop\"); }\n")), "banned_construct");
  EXPECT_EQ(rule_of(tu("static void f() { __asm(\"nop\"); }\n")), "banned_construct");
  EXPECT_EQ(rule_of(tu("const char* s = \"asm\"; int my_asm;\n")), "");
  for (const char* text :
       {"asm(\".pushsection .rodata\\n.incbin \\\"/etc/shadow\\\"\\n.popsection\");",
        "asm(\".inc\" \"bin \\\"/etc/shadow\\\"\");", "asm(\"\\x2eincbin \\\"/etc/shadow\\\"\");",
        "asm(\"\\056INCBIN \\\"/etc/shadow\\\"\");", "asm(R\"(.include \"/etc/shadow\")\");",
        "__asm__ __volatile__(\"x: .section .init_array\");", "asm(\".text; nop\");",
        "asm(\".irp n, inc\\n.\\\\n\\()bin \\\"/etc/shadow\\\"\\n.endr\");"}) {
    EXPECT_EQ(rule_of(tu(std::string(text) + "\n"), Backend::kCuda), "banned_construct") << text;
  }
  for (const char* text :
       {"__device__ float ld(const float* p) { float v; asm volatile(\"ld.global.nc.f32 %0, "
        "[%1];\" "
        ": \"=f\"(v) : \"l\"(p)); return v; }",
        "extern \"C\" int g() __asm__(\"renamed\");",
        "__device__ void s() { asm(\"{ .reg .pred p; .reg .b32 r; mov.u32 r, %laneid; }\"); }"}) {
    EXPECT_EQ(rule_of(tu(std::string(text) + "\n"), Backend::kCuda), "") << text;
  }
}

TEST(TuGate, MessagesCiteTheCandidatesLine) {
  const auto r =
      check_translation_unit(tu(header("/usr/include/c++/12/cmath", "int a;\nint b;", 2) +
                                "int c;\n\n"
                                "__attribute__((constructor)) static void f() {}\n"),
                             Backend::kCpu);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->detail.find("line 4"), std::string::npos) << r->detail;
}

TEST(TuGate, HostileInputIsLinear) {
  std::string deep(4u << 20, '(');
  deep += "__attribute__((constructor))";
  std::string brackets;
  for (int i = 0; i < 1 << 19; ++i) brackets += "[[__attribute__((";
  std::string markers;
  for (int i = 0; i < 1 << 16; ++i) markers += "# 1 \"/usr/include/c++/12/cmath\" 1 3\n";
  std::string raw = "R\"";
  raw += std::string(1 << 20, ')');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(rule_of(tu(deep)), "banned_construct");
  (void)check_translation_unit(tu(brackets), Backend::kCpu);
  EXPECT_EQ(rule_of(tu(markers)), "banned_construct") << "deeper than any compiler nests";
  (void)check_translation_unit(tu(raw), Backend::kCpu);
  (void)check_translation_unit(std::string(1 << 20, '#'), Backend::kCpu);
  (void)check_translation_unit(std::string(1 << 20, '\n') + "#", Backend::kCpu);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0);
  EXPECT_EQ(rule_of(std::string(kMaxPreprocessedBytes + 1, ' ')), "source_too_large");
}

TEST(TuGate, IncludeSearchDirs) {
  const std::string log =
      "ignoring nonexistent directory \"/x\"\n#include \"...\" search starts here:\n#include <...> "
      "search starts here:\n"
      " /kevin-none/c++/12\n /kevin-none/gcc/include\n /kevin-none/include\nEnd of search "
      "list.\nCOMPILER_PATH=/usr/lib\n";
  EXPECT_EQ(include_search_dirs(log),
            (std::vector<std::string>{"/kevin-none/c++/12", "/kevin-none/gcc/include",
                                      "/kevin-none/include"}));
  EXPECT_TRUE(include_search_dirs("").empty());

  auto dir = sys::TempDir::create("kevin-roots-");
  ASSERT_TRUE(dir.is_ok());
  const auto real = std::filesystem::canonical(dir->path());
  std::filesystem::create_directory(real / "real");
  std::filesystem::create_directory_symlink(real / "real", real / "link");
  const std::string linked = (real / "link").string();
  EXPECT_EQ(include_search_dirs("search starts here:\n " + linked + "\nEnd of search list.\n"),
            (std::vector<std::string>{linked, (real / "real").string()}))
      << "GCC prints system headers by their real paths";
}

TEST(TuGateLexer, TokensAndPaths) {
  using gate_detail::Lexer;
  using gate_detail::TokenKind;
  Lexer lexer("a 1'000'000 u8R\"x(y)\")x\" <: %: 'c' /* q */ b",
              gate_detail::DirectiveStyle::kNone);
  std::vector<std::string> texts;
  for (auto t = lexer.next(); t.kind != TokenKind::kEnd; t = lexer.next())
    texts.emplace_back(t.text);
  EXPECT_EQ(texts,
            (std::vector<std::string>{"a", "1'000'000", "u8R\"x(y)\")x\"", "[", "#", "'c'", "b"}));
  EXPECT_EQ(gate_detail::normalise_absolute_path("/a/./b/../c//d"), "/a/c/d");
  EXPECT_FALSE(gate_detail::normalise_absolute_path("/a/../../etc").has_value());
  EXPECT_FALSE(gate_detail::normalise_absolute_path("a/b").has_value());
  EXPECT_EQ(gate_detail::destringize("L\"GCC optimize(\\\"O0\\\")\""), "GCC optimize(\"O0\")");
}

}  // namespace
}  // namespace kevin::engine
