// gate.cpp — static gate rules over lightly lexed source text.
#include <cstdint>
#include "engine/gate.h"

#include <algorithm>
#include <cctype>

namespace kevin::engine {

const char* backend_name(Backend backend) { return backend == Backend::kCuda ? "cuda" : "cpu"; }

std::optional<Backend> backend_from_name(std::string_view name) {
  if (name == "cuda") return Backend::kCuda;
  if (name == "cpu") return Backend::kCpu;
  return std::nullopt;
}

namespace {

const std::vector<std::string> kCommonIncludes = {
    "kevin_abi.h", "stdint.h", "cstdint",  "math.h",     "cmath",       "float.h",
    "cfloat",      "stddef.h", "cstddef",  "limits.h",   "climits",     "string.h",
    "cstring",     "assert.h", "cassert",  "algorithm",  "type_traits", "limits",
    "utility",     "array",    "stdbool.h", "numeric",   "bit",         "cstdlib"};

const std::vector<std::string> kCudaOnlyIncludes = {
    "cuda_runtime.h",     "cuda_runtime_api.h",         "cuda_fp16.h",
    "cuda_bf16.h",        "cuda_fp8.h",                 "mma.h",
    "cooperative_groups.h", "cooperative_groups/reduce.h", "cooperative_groups/memcpy_async.h",
    "cuda/pipeline",      "cuda/barrier",               "cuda_pipeline.h",
    "cuda_awbarrier.h",   "device_launch_parameters.h", "vector_types.h",
    "math_constants.h",   "crt/math_functions.h"};

const std::vector<std::string> kCpuOnlyIncludes = {
    "immintrin.h", "x86intrin.h", "emmintrin.h", "xmmintrin.h", "pmmintrin.h",
    "tmmintrin.h", "smmintrin.h", "nmmintrin.h", "avxintrin.h", "avx2intrin.h", "fmaintrin.h"};

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// True if `word` occurs in `code` as a whole identifier.
bool has_identifier(std::string_view code, std::string_view word, size_t* at = nullptr) {
  size_t pos = 0;
  while ((pos = code.find(word, pos)) != std::string_view::npos) {
    const bool left_ok = pos == 0 || !is_ident_char(code[pos - 1]);
    const size_t end = pos + word.size();
    const bool right_ok = end >= code.size() || !is_ident_char(code[end]);
    if (left_ok && right_ok) {
      if (at != nullptr) *at = pos;
      return true;
    }
    pos = end;
  }
  return false;
}

size_t line_of(std::string_view text, size_t pos) {
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

std::optional<Rejection> check_includes(std::string_view code, std::string_view raw,
                                        Backend backend) {
  const auto& allowed = allowed_includes(backend);
  size_t line_start = 0;
  size_t line_no = 0;
  while (line_start < code.size()) {
    size_t line_end = code.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = code.size();
    ++line_no;
    std::string_view line = code.substr(line_start, line_end - line_start);
    const size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line[first] == '#') {
      std::string_view directive = line.substr(first + 1);
      directive.remove_prefix(std::min(directive.find_first_not_of(" \t"), directive.size()));
      if (directive.rfind("include", 0) == 0 || directive.rfind("import", 0) == 0) {
        if (directive.rfind("include_next", 0) == 0 || directive.rfind("import", 0) == 0) {
          return Rejection{"include_not_allowed",
                           "#" + std::string(directive.substr(0, directive.find_first_of(" \t<\""))) +
                               " (line " + std::to_string(line_no) + ") is not allowed"};
        }
        // The stripped code blanks string literals, so read the header name from the raw line.
        std::string_view raw_line = raw.substr(line_start, line_end - line_start);
        const size_t open = raw_line.find_first_of("<\"", raw_line.find("include") + 7);
        const size_t close = open == std::string_view::npos
                                 ? std::string_view::npos
                                 : raw_line.find_first_of(">\"", open + 1);
        if (open == std::string_view::npos || close == std::string_view::npos) {
          return Rejection{"include_not_allowed",
                           "malformed or macro #include at line " + std::to_string(line_no)};
        }
        const std::string header(raw_line.substr(open + 1, close - open - 1));
        if (std::find(allowed.begin(), allowed.end(), header) == allowed.end()) {
          return Rejection{"include_not_allowed",
                           "#include <" + header + "> (line " + std::to_string(line_no) +
                               ") is not on the list of allowed headers"};
        }
      }
      if (directive.rfind("pragma", 0) == 0) {
        std::string_view body = directive.substr(6);
        body.remove_prefix(std::min(body.find_first_not_of(" \t"), body.size()));
        for (std::string_view banned : {"GCC optimize", "GCC target", "clang", "STDC FENV_ACCESS",
                                        "float_control", "fp_contract", "STDC FP_CONTRACT"}) {
          if (body.rfind(banned, 0) == 0) {
            return Rejection{"compiler_flag_override",
                             "#pragma " + std::string(banned) + " (line " +
                                 std::to_string(line_no) + "): compiler flags are fixed by the harness"};
          }
        }
      }
    }
    line_start = line_end + 1;
  }
  return std::nullopt;
}

// The first identifier inside `__attribute__((`, or "" if the text there is not of that form.
std::string attribute_name(std::string_view code, size_t after_keyword) {
  size_t i = after_keyword;
  int parens = 0;
  while (i < code.size() && parens < 2) {
    const char c = code[i];
    if (c == '(') {
      ++parens;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      return "";
    }
    ++i;
  }
  while (i < code.size() && std::isspace(static_cast<unsigned char>(code[i]))) ++i;
  const size_t start = i;
  while (i < code.size() && is_ident_char(code[i])) ++i;
  return std::string(code.substr(start, i - start));
}

std::optional<Rejection> check_constructs(std::string_view code, Backend backend) {
  static constexpr std::string_view kKeyword = "__attribute__";
  for (size_t pos = code.find(kKeyword); pos != std::string_view::npos;
       pos = code.find(kKeyword, pos + 1)) {
    const std::string attr = attribute_name(code, pos + kKeyword.size());
    const std::string line = std::to_string(line_of(code, pos));
    if (attr == "optimize" || attr == "__optimize__") {
      return Rejection{"compiler_flag_override", "__attribute__((optimize)) at line " + line +
                                                     ": compiler flags are fixed by the harness"};
    }
    if (attr == "constructor" || attr == "destructor" || attr == "init_priority" ||
        attr == "__constructor__" || attr == "__destructor__" || attr == "ifunc" ||
        attr == "alias" || attr == "weakref" || attr == "section" || attr == "__section__") {
      return Rejection{"banned_construct", "__attribute__((" + attr + ")) at line " + line +
                                               ": no code may run outside kevin_forward"};
    }
  }
  if (backend == Backend::kCpu) {
    for (std::string_view word : {"asm", "__asm__", "__asm"}) {
      size_t at = 0;
      if (has_identifier(code, word, &at)) {
        return Rejection{"banned_construct", "inline assembly at line " +
                                                 std::to_string(line_of(code, at)) +
                                                 " is not allowed in CPU candidates"};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& allowed_includes(Backend backend) {
  static const std::vector<std::string> cuda = [] {
    auto v = kCommonIncludes;
    v.insert(v.end(), kCudaOnlyIncludes.begin(), kCudaOnlyIncludes.end());
    return v;
  }();
  static const std::vector<std::string> cpu = [] {
    auto v = kCommonIncludes;
    v.insert(v.end(), kCpuOnlyIncludes.begin(), kCpuOnlyIncludes.end());
    return v;
  }();
  return backend == Backend::kCuda ? cuda : cpu;
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
      len = 2; cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3; cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4; cp = c & 0x07;
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
  std::string out(src);
  size_t i = 0;
  const size_t n = src.size();
  auto blank = [&out](size_t from, size_t to) {
    for (size_t k = from; k < to && k < out.size(); ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  };
  while (i < n) {
    const char c = src[i];
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      size_t end = src.find('\n', i);
      if (end == std::string_view::npos) end = n;
      blank(i, end);
      i = end;
    } else if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      size_t end = src.find("*/", i + 2);
      end = end == std::string_view::npos ? n : end + 2;
      blank(i, end);
      i = end;
    } else if (c == 'R' && i + 1 < n && src[i + 1] == '"' && (i == 0 || !is_ident_char(src[i - 1]))) {
      const size_t paren = src.find('(', i + 2);
      if (paren == std::string_view::npos || paren - i > 20) {
        ++i;
        continue;
      }
      const std::string closing = ")" + std::string(src.substr(i + 2, paren - i - 2)) + "\"";
      size_t end = src.find(closing, paren);
      end = end == std::string_view::npos ? n : end + closing.size();
      blank(i + 1, end);
      i = end;
    } else if (c == '"' || c == '\'') {
      size_t k = i + 1;
      while (k < n && src[k] != c && src[k] != '\n') k += (src[k] == '\\') ? 2u : 1u;
      const size_t end = std::min(n, k + 1);
      blank(i + 1, end - 1);
      i = end;
    } else {
      ++i;
    }
  }
  return out;
}

namespace {

// Undoes the two translation phases that could hide a directive from a line-based scan:
// backslash-newline splices, and the %: / %:%: digraphs for # and ##.
std::string normalise_directives(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\\' && i + 1 < src.size() && (src[i + 1] == '\n' || (src[i + 1] == '\r' && i + 2 < src.size() && src[i + 2] == '\n'))) {
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

std::optional<Rejection> check_pragma_operators(std::string_view code) {
  size_t at = 0;
  if (has_identifier(code, "_Pragma", &at) || has_identifier(code, "__pragma", &at)) {
    return Rejection{"compiler_flag_override", "_Pragma at line " + std::to_string(line_of(code, at)) +
                                                   ": pragmas are not allowed through the operator form"};
  }
  for (std::string_view attr : {"gnu::optimize", "gnu::target", "gnu::constructor", "gnu::destructor",
                                "gnu::section", "gnu::alias", "gnu::ifunc", "gnu::init_priority",
                                "gnu::__optimize__", "gnu::__target__", "gnu::__section__", "gnu::__constructor__"}) {
    const size_t pos = code.find(attr);
    if (pos != std::string_view::npos) {
      const bool flags = attr.find("optimize") != std::string_view::npos || attr.find("target") != std::string_view::npos;
      return Rejection{flags ? "compiler_flag_override" : "banned_construct",
                       "[[" + std::string(attr) + "]] at line " + std::to_string(line_of(code, pos)) + " is not allowed"};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Rejection> check_source(std::string_view source, Backend backend) {
  if (source.size() > kMaxSourceBytes) {
    return Rejection{"source_too_large", "the source is " + std::to_string(source.size()) +
                                             " bytes; the limit is 1 MiB"};
  }
  if (!is_valid_utf8(source)) {
    return Rejection{"source_not_utf8", "the source is not valid UTF-8 text"};
  }
  const std::string normalised = normalise_directives(source);
  const std::string code = strip_comments_and_strings(normalised);
  if (code.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
    return Rejection{"source_empty", "the source contains no code"};
  }
  if (source.find('\0') != std::string_view::npos) {
    return Rejection{"source_not_utf8", "the source contains NUL bytes"};
  }
  if (auto r = check_includes(code, normalised, backend)) return r;
  if (auto r = check_constructs(code, backend)) return r;
  if (auto r = check_pragma_operators(code)) return r;
  if (!has_identifier(code, "kevin_forward")) {
    return Rejection{"missing_entry_point",
                     "no definition of extern \"C\" int kevin_forward(const kevin_args*) found"};
  }
  return std::nullopt;
}

}  // namespace kevin::engine
