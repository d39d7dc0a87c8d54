// gate.cpp — the text gate (check_source): a cheap first line over the candidate's source,
// lexed by the lexer it shares with the translation-unit gate (tu_gate.cpp).
#include "engine/gates/gate.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include "engine/gates/hack_rules.h"
#include "engine/gates/tu_gate.h"

namespace kevin::engine {

const char* backend_name(Backend backend) { return backend == Backend::kCuda ? "cuda" : "cpu"; }

std::optional<Backend> backend_from_name(std::string_view name) {
  if (name == "cuda") return Backend::kCuda;
  if (name == "cpu") return Backend::kCpu;
  return std::nullopt;
}

namespace {

const std::vector<std::string> kCommonIncludes = {
    "kevin_abi.h", "stdint.h",  "cstdint",     "math.h",  "cmath",    "float.h", "cfloat",
    "stddef.h",    "cstddef",   "limits.h",    "climits", "string.h", "cstring", "assert.h",
    "cassert",     "algorithm", "type_traits", "limits",  "utility",  "array",   "stdbool.h",
    "numeric",     "bit",       "cstdlib",     "stdlib.h"};

const std::vector<std::string> kCudaOnlyIncludes = {"cuda_runtime.h",
                                                    "cuda_runtime_api.h",
                                                    "cuda_fp16.h",
                                                    "cuda_bf16.h",
                                                    "cuda_fp8.h",
                                                    "mma.h",
                                                    "cooperative_groups.h",
                                                    "cooperative_groups/reduce.h",
                                                    "cooperative_groups/memcpy_async.h",
                                                    "cuda/pipeline",
                                                    "cuda/barrier",
                                                    "cuda_pipeline.h",
                                                    "cuda_awbarrier.h",
                                                    "device_launch_parameters.h",
                                                    "vector_types.h",
                                                    "math_constants.h",
                                                    "crt/math_functions.h"};

const std::vector<std::string> kCpuOnlyIncludes = {
    "immintrin.h", "x86intrin.h", "emmintrin.h", "xmmintrin.h",  "pmmintrin.h", "tmmintrin.h",
    "smmintrin.h", "nmmintrin.h", "avxintrin.h", "avx2intrin.h", "fmaintrin.h"};

// PyTorch's extension headers (torch profile only). What they declare is judged after the
// build, by the object gate's list of PyTorch entry points.
const std::vector<std::string> kTorchIncludes = {"torch/extension.h",
                                                 "torch/types.h",
                                                 "ATen/ATen.h",
                                                 "ATen/Dispatch.h",
                                                 "ATen/cuda/CUDAContext.h",
                                                 "c10/cuda/CUDAGuard.h",
                                                 "c10/cuda/CUDAStream.h",
                                                 "c10/cuda/CUDAException.h",
                                                 "c10/util/Half.h",
                                                 "c10/util/BFloat16.h",
                                                 "pybind11/pybind11.h",
                                                 "torch/csrc/utils/pybind.h",
                                                 "vector",
                                                 "tuple",
                                                 "string",
                                                 "iostream",
                                                 "cstdio",
                                                 "stdio.h",
                                                 "optional",
                                                 "functional",
                                                 "memory"};

}  // namespace

const std::vector<std::string>& allowed_includes(Backend backend, Profile profile) {
  static const auto join = [](std::initializer_list<const std::vector<std::string>*> lists) {
    std::vector<std::string> v;
    for (const auto* l : lists) v.insert(v.end(), l->begin(), l->end());
    return v;
  };
  static const std::vector<std::string> cuda = join({&kCommonIncludes, &kCudaOnlyIncludes});
  static const std::vector<std::string> cpu = join({&kCommonIncludes, &kCpuOnlyIncludes});
  static const std::vector<std::string> torch_cuda =
      join({&kCommonIncludes, &kCudaOnlyIncludes, &kTorchIncludes});
  static const std::vector<std::string> torch_cpu =
      join({&kCommonIncludes, &kCpuOnlyIncludes, &kTorchIncludes});
  if (profile == Profile::kTorchExtension)
    return backend == Backend::kCuda ? torch_cuda : torch_cpu;
  return backend == Backend::kCuda ? cuda : cpu;
}

std::string allowed_includes_text(Backend backend, Profile profile) {
  std::string text;
  for (const auto& header : allowed_includes(backend, profile))
    text += (text.empty() ? "<" : ", <") + header + ">";
  return text;
}

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    const uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

std::string strip_comments_and_strings(std::string_view src) {
  using gate_detail::TokenKind;
  std::string out(src);
  const auto blank = [&out](size_t from, size_t to) {
    for (size_t k = from; k < to && k < out.size(); ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  };
  gate_detail::Lexer lexer(src, gate_detail::DirectiveStyle::kNone);
  size_t covered = 0;  // everything before this offset is a token or already blanked
  for (auto token = lexer.next(); token.kind != TokenKind::kEnd; token = lexer.next()) {
    blank(covered, token.offset);  // what the lexer skipped between tokens: blanks and comments
    covered = token.offset + token.length;
    if (token.kind == TokenKind::kString || token.kind == TokenKind::kCharacter) {
      const std::string_view text = token.text;
      const size_t open = text.find_first_of("\"'");
      const size_t close =
          text.size() > open + 1 && text.back() == text[open] ? text.size() - 1 : text.size();
      blank(token.offset + open + 1, token.offset + close);
    }
  }
  blank(covered, out.size());
  return out;
}

namespace {

// Undoes the two translation phases that could hide a directive from a line-based scan:
// backslash-newline splices, and the %: / %:%: digraphs for # and ##.
std::string normalise_directives(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\\' && i + 1 < src.size() &&
        (src[i + 1] == '\n' || (src[i + 1] == '\r' && i + 2 < src.size() && src[i + 2] == '\n'))) {
      i += src[i + 1] == '\r' ? 2u : 1u;
      continue;
    }
    if (src[i] == '%' && i + 1 < src.size() && src[i + 1] == ':') {
      out += '#';
      ++i;
      continue;
    }
    out += src[i];
  }
  return out;
}

using gate_detail::Token;
using gate_detail::TokenKind;

// A directive is judged on its first words; the rest is only scanned.
constexpr size_t kMaxDirectiveTokens = 8;

std::string at_line(size_t line) { return " (line " + std::to_string(line) + ")"; }

// One pass over the normalised source: directives by their tokens, code tokens through the
// construct scanner shared with the translation-unit gate.
class SourceGate {
 public:
  SourceGate(std::string_view code, Backend backend, Profile profile)
      : lexer_(code, gate_detail::DirectiveStyle::kSource),
        scanner_(backend, true),
        backend_(backend),
        profile_(profile) {}

  std::optional<Rejection> run() {
    for (Token token = lexer_.next(); token.kind != TokenKind::kEnd; token = lexer_.next()) {
      saw_token_ = true;
      std::optional<Rejection> r;
      if (token.kind == TokenKind::kDirectiveStart) {
        r = directive(token.line);
      } else if (token.kind != TokenKind::kDirectiveEnd) {
        r = word(token);
        if (!r) r = scanner_.feed(token, true, token.line);
      }
      if (r) return r;
    }
    return std::nullopt;
  }

  bool saw_token() const { return saw_token_; }
  bool saw_entry_point() const { return saw_entry_point_; }

 private:
  // Rules on single identifiers, in directives and code alike.
  std::optional<Rejection> word(const Token& token) {
    if (token.kind != TokenKind::kIdentifier) return std::nullopt;
    if (token.text == "kevin_forward") saw_entry_point_ = true;
    if (token.text == "__has_include" || token.text == "__has_include_next" ||
        token.text == "__has_embed") {
      return Rejection{rules::kIncludeNotAllowed,
                       std::string(token.text) + at_line(token.line) +
                           " probes the file system; include allowed headers only"};
    }
    return std::nullopt;
  }

  std::optional<Rejection> directive(size_t line) {
    std::array<Token, kMaxDirectiveTokens> tokens;
    size_t kept = 0;
    for (Token t = lexer_.next(); t.kind != TokenKind::kDirectiveEnd && t.kind != TokenKind::kEnd;
         t = lexer_.next()) {
      if (auto r = word(t)) return r;
      if (kept < tokens.size()) tokens[kept++] = t;
    }
    if (kept == 0) return std::nullopt;
    const std::span<const Token> words(tokens.data(), kept);
    const std::string_view name = tokens[0].text;
    if (name == "include" || name == "include_next" || name == "import" || name == "embed")
      return include(words, line);
    if (name == "pragma") return gate_detail::judge_pragma(words.subspan(1), line);
    if (name == "line" || tokens[0].kind == TokenKind::kNumber) {
      return Rejection{rules::kBannedConstruct,
                       "#line directive" + at_line(line) + ": line directives are not allowed"};
    }
    return std::nullopt;
  }

  std::optional<Rejection> include(std::span<const Token> words, size_t line) {
    const std::string_view name = words[0].text;
    if (name != "include") {
      return Rejection{rules::kIncludeNotAllowed,
                       "#" + std::string(name) + at_line(line) + " is not allowed"};
    }
    const std::optional<std::string> header =
        words.size() > 1 ? header_name(words[1]) : std::nullopt;
    if (!header) {
      return Rejection{rules::kIncludeNotAllowed,
                       "malformed or macro #include at line " + std::to_string(line)};
    }
    const auto& allowed = allowed_includes(backend_, profile_);
    if (std::find(allowed.begin(), allowed.end(), *header) == allowed.end()) {
      return Rejection{rules::kIncludeNotAllowed, "#include <" + *header + ">" + at_line(line) +
                                                      " is not on the list of allowed headers (" +
                                                      allowed_includes_text(backend_, profile_) +
                                                      ")"};
    }
    return std::nullopt;
  }

  // The name inside <...> or "...", as the preprocessor reads it (no escapes); nullopt for
  // anything else (a macro, a prefixed or unterminated literal).
  static std::optional<std::string> header_name(const Token& token) {
    const std::string_view t = token.text;
    const bool angled = token.kind == TokenKind::kHeaderName && t.size() >= 2 && t.back() == '>';
    const bool quoted =
        token.kind == TokenKind::kString && t.size() >= 2 && t.front() == '"' && t.back() == '"';
    if (!angled && !quoted) return std::nullopt;
    return std::string(t.substr(1, t.size() - 2));
  }

  gate_detail::Lexer lexer_;
  gate_detail::ConstructScanner scanner_;
  Backend backend_;
  Profile profile_;
  bool saw_token_ = false;
  bool saw_entry_point_ = false;
};

}  // namespace

std::optional<Rejection> check_source(std::string_view source, Backend backend, Profile profile) {
  if (source.size() > kMaxSourceBytes) {
    return Rejection{rules::kSourceTooLarge, "the source is " + std::to_string(source.size()) +
                                                 " bytes; the limit is 1 MiB"};
  }
  if (!is_valid_utf8(source)) {
    return Rejection{rules::kSourceNotUtf8, "the source is not valid UTF-8 text"};
  }
  if (source.find('\0') != std::string_view::npos) {
    return Rejection{rules::kSourceNotUtf8, "the source contains NUL bytes"};
  }
  const std::string normalised = normalise_directives(source);
  SourceGate gate(normalised, backend, profile);
  auto rejection = gate.run();
  if (!gate.saw_token()) return Rejection{rules::kSourceEmpty, "the source contains no code"};
  if (rejection) return rejection;
  if (profile == Profile::kKevinAbi && !gate.saw_entry_point()) {
    return Rejection{rules::kMissingEntryPoint,
                     "no definition of extern \"C\" int kevin_forward(const kevin_args*) found"};
  }
  return std::nullopt;
}

}  // namespace kevin::engine
