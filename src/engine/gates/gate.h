// gate.h — the source gates, each naming the rule that refused a candidate: check_source, a
// cheap first line over the candidate's text, and check_translation_unit over what the
// compiler sees (its preprocessor's output). Rules (the `rule` field): hack_rules.h's source
// stage (source_too_large: > 1 MiB of text, > 128 MiB preprocessed).
// Both gates lex the text (comments, strings, raw strings, digit separators), so nothing in
// a comment or literal counts and nothing in code hides inside one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gates/backend.h"

namespace kevin::engine {

inline constexpr size_t kMaxSourceBytes = size_t{1} << 20;
// Preprocessed output beyond this is refused (source_too_large) rather than scanned.
inline constexpr size_t kMaxPreprocessedBytes = size_t{128} << 20;

// Why a gate refused a candidate.
struct Rejection {
  std::string rule;    // stable identifier, e.g. "include_not_allowed"
  std::string detail;  // human explanation, e.g. "<cublas_v2.h> (line 3) is not on the list"
};

// The headers a candidate may include on `backend`; a torch extension may also include
// PyTorch's extension headers (torch/extension.h, ATen, c10's CUDA stream and guard headers).
const std::vector<std::string>& allowed_includes(Backend backend,
                                                 Profile profile = Profile::kKevinAbi);
// The same list as text ("<cstdint>, <stdint.h>, ..."), for refusals and prompts.
std::string allowed_includes_text(Backend backend, Profile profile = Profile::kKevinAbi);

// The text gate: nullopt when the source may be compiled; otherwise the first rule that fired
// (in text order). Undoes line splices and %: digraphs, then lexes the text and checks: every
// #include names an allowed header (read after comments are dropped; no #include_next,
// #import, macro includes, __has_include); no #line or `# N "file"` directives (they would
// forge the linemarkers check_translation_unit follows); pragmas by their tokens (GCC
// optimize/target, clang, STDC, float_control, fp_contract, fenv_access -> compiler_flag_
// override; weak, redefine_extname, GCC system_header/dependency -> banned_construct); no
// _Pragma or __pragma at all; every entry of every attribute list and the assembly rules (see
// check_translation_unit); kevin_forward present (kevin's ABI only).
// Macro expansion (token pasting, attributes or pragmas behind macros) is invisible here:
// that is check_translation_unit's job.
std::optional<Rejection> check_source(std::string_view source, Backend backend,
                                      Profile profile = Profile::kKevinAbi);

// The gate over what the compiler sees. `preprocessed` is the compiler's preprocessor output
// for the candidate file, with GNU linemarkers (`# 12 "candidate.cu" 2`): `g++ -E` / `nvcc -E`
// with the build's own flags and `-I <folder of kevin_abi.h>`. For CUDA, `nvcc -E` shows one
// device pass only; every pass must be checked, each output by its own call (the .ii files
// `nvcc --keep` leaves: host *.cpp4.ii and each device *.cpp1.ii), or code under
// `#ifndef __CUDA_ARCH__` is never seen. nullopt when it passes; otherwise the first rule that
// fired. Never fails otherwise; linear time and memory in the input's size.
//
// Regions: the first linemarker names the main file; lines are the main file's while it is
// the innermost file (linemarker flags 1 enter, 2 return). In those lines, after macro
// expansion: pragmas (the preprocessor turns _Pragma into #pragma lines) as in check_source;
// every entry of every __attribute__((...)) / __attribute, [[...]] (any namespace, `using
// NS:`) and __declspec(...) list, names compared with leading/trailing "__" removed —
// optimize, target, target_clones, target_version -> compiler_flag_override; constructor,
// destructor, init_priority, section, alias, weakref, ifunc, symver, naked, copy,
// fentry_section, allocate, code_seg -> banned_construct; asm, __asm__, __asm on the CPU
// backend -> banned_construct; on CUDA the joined, decoded strings of an asm statement may not
// hold assembler directives that read files, define macros or switch sections (.incbin,
// .include, .macro, .irp(c), .rept, .altmacro, .purgem, .section, .pushsection, .popsection,
// .previous, .subsection, .text, .data, .bss) -> banned_construct. A flagless linemarker that
// renames the main file (what a #line directive leaves) -> banned_construct; so do markers that
// do not nest. Only '#' in column 0 begins a directive (GCC prints a macro-made '#' after a
// space), and raw strings are lexed whole, so neither can forge a linemarker. A linemarker
// directive written in the source that *enters* a plausible header (`# 1 ".../cmath" 1 3`)
// looks exactly like a real #include here: check_source refuses all #line and linemarker
// directives, so it must run first (Judge::evaluate runs it before building).
//
// Files (include_not_allowed): every file a linemarker names must be the main file, a
// pseudo-file ("<built-in>", "<command-line>"), or an absolute path that, after "." and ".."
// are resolved lexically, lies outside /proc /dev /sys /etc /root /home /tmp /var /run /boot
// (a file named kevin_abi.h excepted: build trees live under /home or /tmp too);
// a file the main file includes directly must end in "/<header>" for a header of
// allowed_includes(backend). This overload cannot know where the toolchain's headers are;
// the compile driver, which does, should call the one below.
std::optional<Rejection> check_translation_unit(std::string_view preprocessed, Backend backend);

// Same, but every included file must lie under one of `allowed_roots` (absolute folders,
// resolved lexically; an empty list admits no included file at all) instead of the fixed
// deny-list: pass the compiler's include search directories (include_search_dirs of its `-v`
// output) plus the folder holding kevin_abi.h. The direct-include rule still applies.
std::optional<Rejection> check_translation_unit(std::string_view preprocessed, Backend backend,
                                                const std::vector<std::string>& allowed_roots,
                                                Profile profile = Profile::kKevinAbi);

// The include search directories a compiler lists under `-v` (`g++ -E -v ...`, or
// `nvcc -E -Xcompiler -v ...`): the lines between "#include ... search starts here:" and
// "End of search list.", trimmed, each followed by its real path when that differs (GCC
// names headers of system directories by their canonical paths, e.g. nvcc's cccl folder
// through the /usr/local/cuda symlink). Empty when there are none.
std::vector<std::string> include_search_dirs(std::string_view verbose_output);

// Source with comments and string/char literals blanked out (newlines kept, so line numbers
// stay valid). Exposed for tests and the fuzz target.
std::string strip_comments_and_strings(std::string_view source);

// True when `text` is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view text);

}  // namespace kevin::engine
