// tu_gate.cpp — the gate over the preprocessor's output (check_translation_unit) and the
// lexer and construct rules it shares with the text gate. Input is untrusted and may be tens
// of MB: one pass, no recursion, no step that does not consume input.
#include "engine/gates/tu_gate.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <system_error>
#include <utility>

#include "engine/gates/hack_rules.h"

namespace kevin::engine {
namespace gate_detail {
namespace {

bool is_ident_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  // Bytes >= 0x80 are UTF-8 identifier characters to GCC; '$' is accepted in identifiers.
  return (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || c == '_' ||
         c == '$' || u >= 0x80;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_ident_start(char c) { return is_ident_char(c) && !is_digit(c); }

// A raw string delimiter character: printable, not a space, parenthesis or backslash.
bool is_raw_delimiter_char(char c) {
  return c > ' ' && c < 0x7f && c != '(' && c != ')' && c != '\\';
}

bool is_raw_prefix(std::string_view w) {
  return w == "R" || w == "LR" || w == "uR" || w == "UR" || w == "u8R";
}

bool is_literal_prefix(std::string_view w) { return w == "L" || w == "u" || w == "U" || w == "u8"; }

std::string line_note(size_t line) { return " (line " + std::to_string(line) + ")"; }

}  // namespace

Token Lexer::make(TokenKind kind, size_t start, size_t line) const {
  return Token{kind, text_.substr(start, pos_ - start), line, start, pos_ - start};
}

bool Lexer::skip_blanks() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == '\n') {
      if (in_directive_) return true;
      ++pos_;
      ++line_;
      line_start_ = true;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
      ++pos_;
    } else if (c == '/' && at(pos_ + 1) == '/') {
      pos_ = std::min(text_.find('\n', pos_), text_.size());
    } else if (c == '/' && at(pos_ + 1) == '*') {
      const size_t close = text_.find("*/", pos_ + 2);
      const size_t stop = close == std::string_view::npos ? text_.size() : close + 2;
      line_ +=
          static_cast<size_t>(std::count(text_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         text_.begin() + static_cast<std::ptrdiff_t>(stop), '\n'));
      pos_ = stop;
    } else {
      return false;
    }
  }
  return false;
}

bool Lexer::directive_here() const {
  const char c = at(pos_);
  switch (style_) {
    case DirectiveStyle::kNone:
      return false;
    case DirectiveStyle::kPreprocessed:
      return c == '#' && at(pos_ + 1) != '#' && (pos_ == 0 || text_[pos_ - 1] == '\n');
    case DirectiveStyle::kSource:
      if (!line_start_) return false;
      if (c == '#') return at(pos_ + 1) != '#';
      return c == '%' && at(pos_ + 1) == ':' && !(at(pos_ + 2) == '%' && at(pos_ + 3) == ':');
  }
  return false;
}

Token Lexer::next() {
  if (skip_blanks()) {
    const size_t start = pos_;
    const size_t line = line_;
    ++pos_;
    ++line_;
    line_start_ = true;
    in_directive_ = false;
    header_name_next_ = false;
    return make(TokenKind::kDirectiveEnd, start, line);
  }
  if (pos_ >= text_.size()) {
    const TokenKind kind = in_directive_ ? TokenKind::kDirectiveEnd : TokenKind::kEnd;
    in_directive_ = false;
    return Token{kind, {}, line_, pos_, 0};
  }
  const size_t start = pos_;
  const size_t line = line_;
  if (!in_directive_ && directive_here()) {
    pos_ += text_[pos_] == '#' ? size_t{1} : size_t{2};
    in_directive_ = true;
    directive_tokens_ = 0;
    line_start_ = false;
    return Token{TokenKind::kDirectiveStart, "#", line, start, pos_ - start};
  }
  line_start_ = false;
  if (std::exchange(header_name_next_, false) && text_[pos_] == '<')
    return lex_header_name(start, line);
  const char c = text_[pos_];
  Token token;
  if (is_ident_start(c) || (c == '\\' && (at(pos_ + 1) == 'u' || at(pos_ + 1) == 'U'))) {
    token = lex_identifier_or_literal(start, line);
  } else if (is_digit(c) || (c == '.' && is_digit(at(pos_ + 1)))) {
    token = lex_number(start, line);
  } else if (c == '"' || c == '\'') {
    token = lex_quoted(start, start, line);
  } else {
    token = lex_punctuator(start, line);
  }
  if (in_directive_ && ++directive_tokens_ == 1 && token.kind == TokenKind::kIdentifier) {
    header_name_next_ =
        token.text == "include" || token.text == "include_next" || token.text == "import";
  }
  return token;
}

Token Lexer::lex_identifier_or_literal(size_t start, size_t line) {
  while (pos_ < text_.size()) {
    if (is_ident_char(text_[pos_])) {
      ++pos_;
    } else if (text_[pos_] == '\\' && (at(pos_ + 1) == 'u' || at(pos_ + 1) == 'U')) {
      pos_ += 2;  // a universal character name; its hex digits follow as identifier characters
    } else {
      break;
    }
  }
  const std::string_view word = text_.substr(start, pos_ - start);
  const char quote = at(pos_);
  if (quote == '"' && is_raw_prefix(word)) return lex_raw_string(start, pos_, line);
  if ((quote == '"' || quote == '\'') && is_literal_prefix(word))
    return lex_quoted(start, pos_, line);
  return make(TokenKind::kIdentifier, start, line);
}

Token Lexer::lex_quoted(size_t start, size_t quote, size_t line) {
  const char q = text_[quote];
  pos_ = quote + 1;
  // An unterminated literal ends at the newline, as the compiler's lexer ends it.
  while (pos_ < text_.size() && text_[pos_] != q && text_[pos_] != '\n') {
    const bool escape = text_[pos_] == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] != '\n';
    pos_ += escape ? 2 : 1;
  }
  if (pos_ < text_.size() && text_[pos_] == q) ++pos_;
  return make(q == '"' ? TokenKind::kString : TokenKind::kCharacter, start, line);
}

Token Lexer::lex_raw_string(size_t start, size_t quote, size_t line) {
  size_t open = quote + 1;
  const size_t limit = std::min(text_.size(), quote + 1 + 16);
  while (open < limit && is_raw_delimiter_char(text_[open])) ++open;
  if (at(open) != '(')
    return lex_quoted(start, quote, line);  // not a raw string; the compiler errors
  const std::string_view delimiter = text_.substr(quote + 1, open - quote - 1);
  size_t end = text_.size();
  for (size_t close = text_.find(')', open + 1); close != std::string_view::npos;
       close = text_.find(')', close + 1)) {
    if (text_.substr(close + 1, delimiter.size()) == delimiter &&
        at(close + 1 + delimiter.size()) == '"') {
      end = close + delimiter.size() + 2;
      break;
    }
  }
  line_ += static_cast<size_t>(std::count(text_.begin() + static_cast<std::ptrdiff_t>(quote),
                                          text_.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
  pos_ = end;
  return make(TokenKind::kString, start, line);
}

Token Lexer::lex_number(size_t start, size_t line) {
  ++pos_;
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    const char n = at(pos_ + 1);
    if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (n == '+' || n == '-')) {
      pos_ += 2;
    } else if (is_ident_char(c) || c == '.') {
      ++pos_;
    } else if (c == '\'' && is_ident_char(n)) {
      pos_ += 2;  // a digit separator, not a character literal
    } else {
      break;
    }
  }
  return make(TokenKind::kNumber, start, line);
}

Token Lexer::lex_punctuator(size_t start, size_t line) {
  const char c = text_[pos_];
  const char n = at(pos_ + 1);
  const auto spelled = [&](size_t length, std::string_view spelling) {
    pos_ += length;
    return Token{TokenKind::kPunctuator, spelling, line, start, length};
  };
  if (c == ':' && n == ':') return spelled(2, "::");
  if (c == '#' && n == '#') return spelled(2, "##");
  if (c == ':' && n == '>') return spelled(2, "]");
  if (c == '<' && n == '%') return spelled(2, "{");
  if (c == '%' && n == '>') return spelled(2, "}");
  if (c == '%' && n == ':')
    return at(pos_ + 2) == '%' && at(pos_ + 3) == ':' ? spelled(4, "##") : spelled(2, "#");
  if (c == '<' && n == ':') {
    // [lex.pptoken]: "<::" not followed by ':' or '>' is "<" then "::" (as in a<::b>).
    const bool template_colons = at(pos_ + 2) == ':' && at(pos_ + 3) != ':' && at(pos_ + 3) != '>';
    if (!template_colons) return spelled(2, "[");
  }
  ++pos_;
  return make(TokenKind::kPunctuator, start, line);
}

Token Lexer::lex_header_name(size_t start, size_t line) {
  const size_t close = text_.find_first_of(">\n", pos_ + 1);
  if (close == std::string_view::npos) {
    pos_ = text_.size();
  } else {
    pos_ = text_[close] == '>' ? close + 1 : close;
  }
  return make(TokenKind::kHeaderName, start, line);
}

std::optional<Rejection> judge_pragma(std::span<const Token> body, size_t line) {
  if (body.empty()) return std::nullopt;
  const std::string_view first = body[0].text;
  const std::string_view second = body.size() > 1 ? body[1].text : std::string_view();
  const std::string spelled =
      "#pragma " + std::string(first) + (second.empty() ? "" : " " + std::string(second));
  if (first == "weak" || first == "redefine_extname") {
    return Rejection{
        rules::kBannedConstruct,
        spelled + line_note(line) + ": symbols may not be weakened or renamed by pragmas"};
  }
  if (first == "GCC" && (second == "system_header" || second == "dependency")) {
    return Rejection{rules::kBannedConstruct,
                     spelled + line_note(line) + " is not allowed in a candidate"};
  }
  const bool flags = first == "clang" || first == "STDC" || first == "float_control" ||
                     first == "fp_contract" || first == "fenv_access" || first == "optimize" ||
                     (first == "GCC" && (second == "optimize" || second == "target"));
  if (flags) {
    return Rejection{rules::kCompilerFlagOverride,
                     spelled + line_note(line) +
                         ": compiler flags and floating-point semantics are fixed by the harness"};
  }
  return std::nullopt;
}

std::string destringize(std::string_view literal) {
  const size_t open = literal.find('"');
  const size_t close = literal.rfind('"');
  if (open == std::string_view::npos || close <= open) return {};
  const std::string_view inner = literal.substr(open + 1, close - open - 1);
  std::string out;
  out.reserve(inner.size());
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == '\\' && i + 1 < inner.size() && (inner[i + 1] == '"' || inner[i + 1] == '\\'))
      ++i;
    out += inner[i];
  }
  return out;
}

namespace {

unsigned hex_value(char c) {
  if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<unsigned>(c - 'A' + 10);
  return 16;
}

char simple_escape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case 'r':
      return '\r';
    case 'a':
      return '\a';
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    default:
      return c;  // \\ \" \' \? and anything unknown stand for themselves
  }
}

// Decodes the escapes of a literal's body (between its quotes).
std::string decode_escapes(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    unsigned value = 0;
    if (c >= '0' && c <= '7') {
      size_t digits = 0;
      for (; digits < 3 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++digits, ++i)
        value = value * 8 + hex_value(body[i]);
      --i;
      out += static_cast<char>(value & 0xff);
    } else if (c == 'x') {
      while (i + 1 < body.size() && hex_value(body[i + 1]) < 16)
        value = (value * 16 + hex_value(body[++i])) & 0xff;
      out += static_cast<char>(value);
    } else {
      out += simple_escape(c);
    }
  }
  return out;
}

// Assembler directives that read files, build directives out of macros, or move code and
// data into sections of the author's choosing. PTX has none of them.
constexpr std::array<std::string_view, 16> kHostAsmDirectives = {
    ".incbin",     ".include", ".macro",   ".irp",         ".irpc",       ".rept",
    ".altmacro",   ".purgem",  ".section", ".pushsection", ".popsection", ".previous",
    ".subsection", ".text",    ".data",    ".bss"};

bool is_word_char(char c) { return is_ident_char(c) || c == '.'; }

std::optional<std::string_view> find_host_asm_directive(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  for (const auto directive : kHostAsmDirectives) {
    for (size_t at = lower.find(directive); at != std::string::npos;
         at = lower.find(directive, at + 1)) {
      const size_t end = at + directive.size();
      const bool starts = at == 0 || !is_word_char(lower[at - 1]);
      const bool ends = end >= lower.size() || !is_word_char(lower[end]);
      if (starts && ends) return directive;
    }
  }
  return std::nullopt;
}

// Attribute names (after normalisation) and why each is refused.
std::optional<Rejection> judge_attribute(std::string_view name, size_t line) {
  if (name.size() > 2 && name.substr(0, 2) == "__") name.remove_prefix(2);
  if (name.size() > 2 && name.substr(name.size() - 2) == "__") name.remove_suffix(2);
  static constexpr std::array<std::string_view, 4> kFlags = {"optimize", "target", "target_clones",
                                                             "target_version"};
  static constexpr std::array<std::string_view, 13> kPlacement = {
      "constructor",    "destructor", "init_priority", "section", "alias",
      "weakref",        "ifunc",      "symver",        "naked",   "copy",
      "fentry_section", "allocate",   "code_seg"};
  const std::string spelled = "attribute '" + std::string(name) + "'" + line_note(line);
  if (std::find(kFlags.begin(), kFlags.end(), name) != kFlags.end()) {
    return Rejection{rules::kCompilerFlagOverride,
                     spelled + ": compiler flags are fixed by the harness"};
  }
  if (std::find(kPlacement.begin(), kPlacement.end(), name) != kPlacement.end()) {
    return Rejection{rules::kBannedConstruct,
                     spelled +
                         ": no code may run outside kevin_forward, and code and data "
                         "are placed and named by the compiler"};
  }
  return std::nullopt;
}

}  // namespace

std::string decode_string_literal(std::string_view literal) {
  const size_t quote = literal.find('"');
  if (quote == std::string_view::npos) return {};
  if (quote > 0 && literal[quote - 1] == 'R') {
    const size_t open = literal.find('(', quote);
    const size_t close = literal.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open)
      return {};
    return std::string(literal.substr(open + 1, close - open - 1));
  }
  const size_t end =
      literal.size() > quote + 1 && literal.back() == '"' ? literal.size() - 1 : literal.size();
  return decode_escapes(literal.substr(quote + 1, end - quote - 1));
}

std::optional<Rejection> ConstructScanner::end_asm_run(size_t line) {
  if (asm_run_.empty()) return std::nullopt;
  const auto directive = find_host_asm_directive(asm_run_);
  asm_run_.clear();
  if (!directive) return std::nullopt;
  return Rejection{rules::kBannedConstruct,
                   "assembler directive '" + std::string(*directive) + "' in inline assembly" +
                       line_note(line) + ": assembly may not read files or place code and data"};
}

std::optional<Rejection> ConstructScanner::feed(const Token& token, bool own, size_t line) {
  if (asm_depth_ != 0 && token.kind == TokenKind::kString) {
    asm_run_ += decode_string_literal(token.text);
    return std::nullopt;
  }
  if (auto r = end_asm_run(line)) return r;
  if (token.kind == TokenKind::kPunctuator) {
    const std::string_view p = token.text;
    if (p == "(" || p == "[" || p == "{") return on_open(token, own);
    if (p == ")" || p == "]" || p == "}") {
      on_close();
      return std::nullopt;
    }
  }
  last_was_open_square_ = false;
  const Pending pending = std::exchange(pending_, Pending::kNone);
  if (token.kind == TokenKind::kString && pending == Pending::kPragmaParen) {
    const std::string body = destringize(token.text);
    Lexer lexer(body, DirectiveStyle::kNone);
    std::vector<Token> tokens;
    for (Token t = lexer.next(); t.kind != TokenKind::kEnd && tokens.size() < 2; t = lexer.next())
      tokens.push_back(t);
    return judge_pragma(tokens, line);
  }
  if (token.kind != TokenKind::kIdentifier) return std::nullopt;
  const std::string_view w = token.text;
  if (pending == Pending::kAsmKeyword &&
      (w == "volatile" || w == "__volatile__" || w == "__volatile" || w == "goto" ||
       w == "inline" || w == "__inline__")) {
    pending_ = Pending::kAsmKeyword;  // asm qualifiers come before the parenthesis
    return std::nullopt;
  }
  return on_word(token, own, line);
}

std::optional<Rejection> ConstructScanner::on_open(const Token& token, bool own) {
  ++depth_;
  const bool square = token.text == "[";
  const Pending pending = std::exchange(pending_, Pending::kNone);
  if (token.text == "(") {
    if (pending == Pending::kGnuKeyword) {
      pending_ = Pending::kGnuFirstParen;
    } else if (pending == Pending::kGnuFirstParen || pending == Pending::kDeclspecKeyword) {
      lists_.push_back(depth_);
    } else if (pending == Pending::kPragmaKeyword) {
      pending_ = Pending::kPragmaParen;
    } else if (pending == Pending::kAsmKeyword && asm_depth_ == 0) {
      asm_depth_ = depth_;
    }
  } else if (square && last_was_open_square_ && own) {
    lists_.push_back(depth_);  // "[[" (or "<:<:") opens a standard attribute list
  }
  last_was_open_square_ = square;
  return std::nullopt;
}

void ConstructScanner::on_close() {
  if (depth_ > 0) --depth_;
  while (!lists_.empty() && lists_.back() > depth_) lists_.pop_back();
  if (asm_depth_ > depth_) asm_depth_ = 0;
  pending_ = Pending::kNone;
  last_was_open_square_ = false;
}

std::optional<Rejection> ConstructScanner::on_word(const Token& token, bool own, size_t line) {
  const std::string_view word = token.text;
  // Every identifier at a list's own depth names an attribute (or a namespace, or `using`);
  // arguments sit deeper. Judging them all covers several entries and any spelling.
  if (!lists_.empty() && lists_.back() == depth_) {
    if (auto r = judge_attribute(word, line)) return r;
  }
  if (!own) return std::nullopt;
  if (word == "__attribute__" || word == "__attribute") {
    pending_ = Pending::kGnuKeyword;
  } else if (word == "__declspec") {
    pending_ = Pending::kDeclspecKeyword;
  } else if (word == "_Pragma" || word == "__pragma") {
    if (ban_pragma_operator_) {
      return Rejection{
          rules::kCompilerFlagOverride,
          "_Pragma" + line_note(line) + ": pragmas are not allowed through the operator form"};
    }
    pending_ = Pending::kPragmaKeyword;
  } else if (word == "asm" || word == "__asm__" || word == "__asm") {
    if (backend_ == Backend::kCpu) {
      return Rejection{rules::kBannedConstruct,
                       "inline assembly" + line_note(line) + " is not allowed in CPU candidates"};
    }
    pending_ = Pending::kAsmKeyword;
  }
  return std::nullopt;
}

std::optional<std::string> normalise_absolute_path(std::string_view path) {
  if (path.empty() || path[0] != '/') return std::nullopt;
  for (const char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
  }
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    const size_t end = std::min(path.find('/', i), path.size());
    const std::string_view segment = path.substr(i, end - i);
    i = end;
    if (segment.empty() || segment == ".") continue;
    if (segment == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
      continue;
    }
    parts.push_back(segment);
  }
  std::string out;
  for (const auto& part : parts) {
    out += '/';
    out += part;
  }
  return out.empty() ? std::string("/") : out;
}

}  // namespace gate_detail

namespace {

using gate_detail::DirectiveStyle;
using gate_detail::Lexer;
using gate_detail::Token;
using gate_detail::TokenKind;

// Places no candidate needs and that hold secrets or devices; used when the compile driver
// does not say where its include directories are.
constexpr std::array<std::string_view, 10> kDeniedRoots = {
    "/proc", "/dev", "/sys", "/etc", "/root", "/home", "/tmp", "/var", "/run", "/boot"};
// GCC allows 200 nested includes; deeper nesting is not compiler output.
constexpr size_t kMaxIncludeDepth = 1024;
// A linemarker has at most a number, a name and four flags; a pragma is judged on two words.
constexpr size_t kMaxDirectiveTokens = 8;

bool is_under(std::string_view path, std::string_view root) {
  if (root == "/") return true;
  return path.size() >= root.size() && path.substr(0, root.size()) == root &&
         (path.size() == root.size() || path[root.size()] == '/');
}

bool is_pseudo_file(std::string_view name) { return !name.empty() && name[0] == '<'; }

// The harness's own header may sit in a build tree under /home or /tmp; a file of that name
// is the ABI header (candidates cannot create files), so the deny-list spares it.
bool is_abi_header(std::string_view path) {
  constexpr std::string_view kName = "/kevin_abi.h";
  return path.size() > kName.size() && path.substr(path.size() - kName.size()) == kName;
}

// A linemarker's file name without its quotes, with GCC's escapes (\\, \", \ooo) undone.
std::string unquote_file_name(std::string_view quoted) {
  std::string out;
  const std::string_view inner =
      quoted.size() >= 2 ? quoted.substr(1, quoted.size() - 2) : std::string_view();
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] != '\\' || i + 1 >= inner.size()) {
      out += inner[i];
      continue;
    }
    size_t digits = 0;
    unsigned value = 0;
    while (digits < 3 && i + 1 + digits < inner.size() && inner[i + 1 + digits] >= '0' &&
           inner[i + 1 + digits] <= '7') {
      value = value * 8 + static_cast<unsigned>(inner[i + 1 + digits] - '0');
      ++digits;
    }
    if (digits > 0) {
      out += static_cast<char>(value & 0xff);
      i += digits;
    } else {
      out += inner[++i];
    }
  }
  return out;
}

struct Linemarker {
  size_t line = 0;
  std::optional<std::string> file;
  bool enter = false;  // flag 1
  bool leave = false;  // flag 2
};

// Parses `# LINE ["FILE" [FLAGS...]]` (or `#line ...`); nullopt when malformed.
std::optional<Linemarker> parse_linemarker(std::span<const Token> tokens, size_t total) {
  if (total > tokens.size()) return std::nullopt;
  size_t i = tokens[0].kind == TokenKind::kIdentifier && tokens[0].text == "line" ? 1 : 0;
  if (i >= tokens.size() || tokens[i].kind != TokenKind::kNumber) return std::nullopt;
  Linemarker marker;
  for (const char c : tokens[i].text) {
    if (c < '0' || c > '9') return std::nullopt;
    marker.line =
        std::min<size_t>(marker.line * 10 + static_cast<size_t>(c - '0'), size_t{1} << 40);
  }
  ++i;
  if (i < tokens.size()) {
    if (tokens[i].kind != TokenKind::kString || tokens[i].text.front() != '"') return std::nullopt;
    marker.file = unquote_file_name(tokens[i].text);
    ++i;
  }
  for (; i < tokens.size(); ++i) {
    const std::string_view flag = tokens[i].text;
    if (flag.size() != 1 || flag[0] < '1' || flag[0] > '4') return std::nullopt;
    marker.enter = marker.enter || flag == "1";
    marker.leave = marker.leave || flag == "2";
  }
  if (marker.enter && marker.leave) return std::nullopt;
  return marker;
}

Rejection malformed_markers(const std::string& why) {
  return Rejection{rules::kBannedConstruct,
                   "the preprocessed candidate has " + why +
                       " (#line and linemarker directives are not allowed)"};
}

// Which file each line of the preprocessor's output came from, following its linemarkers,
// and whether each file it names may be part of a candidate's translation unit.
class FileTracker {
 public:
  FileTracker(Backend backend, Profile profile, const std::vector<std::string>* roots)
      : backend_(backend), profile_(profile) {
    if (roots == nullptr) return;
    have_roots_ = true;
    for (const auto& root : *roots) {
      if (auto normal = gate_detail::normalise_absolute_path(root))
        roots_.push_back(std::move(*normal));
    }
  }

  // True while the output is the main file's (before any linemarker, everything is).
  bool in_main() const { return !have_main_ || stack_.back() == main_; }

  // The candidate's own code has started: the compiler's prologue of pseudo-files is over.
  void saw_own_code() {
    if (in_main()) prologue_ = false;
  }

  // The line in the current file of a token on physical output line `physical`.
  size_t file_line(size_t physical) const {
    if (!have_marker_) return physical;
    return physical > marker_physical_ ? marker_line_ + (physical - marker_physical_ - 1)
                                       : marker_line_;
  }

  std::optional<Rejection> apply(const Linemarker& marker, size_t physical) {
    have_marker_ = true;
    marker_physical_ = physical;
    marker_line_ = marker.line;
    if (!marker.file) return std::nullopt;
    const std::string& name = *marker.file;
    if (!have_main_) {
      main_ = name;
      have_main_ = true;
      stack_.push_back(name);
      return std::nullopt;
    }
    if (marker.enter) return enter(name);
    if (marker.leave) return leave(name);
    if (name != stack_.back()) return rename(name);
    return std::nullopt;
  }

 private:
  std::optional<Rejection> enter(const std::string& name) {
    const bool direct = stack_.back() == main_;
    if (name == main_) return Rejection{rules::kIncludeNotAllowed, "the candidate includes itself"};
    if (stack_.size() >= kMaxIncludeDepth) return malformed_markers("includes nested too deeply");
    if (auto r = check_file(name, direct)) return r;
    stack_.push_back(name);
    return std::nullopt;
  }

  std::optional<Rejection> leave(const std::string& name) {
    if (stack_.size() < 2 || stack_[stack_.size() - 2] != name)
      return malformed_markers("linemarkers that do not nest");
    stack_.pop_back();
    return std::nullopt;
  }

  // A flagless marker naming another file: only the compiler's prologue (main file, then
  // <built-in>, <command-line>, back to the main file) does this; from the candidate's own
  // lines it is a #line directive passing its code off as a header's.
  std::optional<Rejection> rename(const std::string& name) {
    if (prologue_) {
      if (name == main_) {
        prologue_ = false;
      } else if (!is_pseudo_file(name)) {
        return malformed_markers("a linemarker renaming the main file to '" + name + "'");
      }
    } else if (stack_.back() == main_) {
      return malformed_markers("a #line directive naming '" + name + "'");
    } else if (name != main_) {
      if (auto r = check_file(name, false)) return r;
    }
    stack_.back() = name;
    return std::nullopt;
  }

  std::optional<Rejection> check_file(const std::string& name, bool direct) const {
    if (is_pseudo_file(name) && !direct) return std::nullopt;
    const auto path = gate_detail::normalise_absolute_path(name);
    if (!path)
      return Rejection{rules::kIncludeNotAllowed,
                       "the candidate pulls in '" + name + "', which is not a plain absolute path"};
    if (have_roots_) {
      const bool inside = std::any_of(roots_.begin(), roots_.end(),
                                      [&](const std::string& r) { return is_under(*path, r); });
      if (!inside)
        return Rejection{rules::kIncludeNotAllowed,
                         "'" + *path + "' is outside the compiler's include directories"};
    } else if (!is_abi_header(*path)) {
      for (const auto root : kDeniedRoots) {
        if (is_under(*path, root))
          return Rejection{rules::kIncludeNotAllowed, "the candidate pulls in '" + *path + "'"};
      }
    }
    if (direct && !is_allowed_header_path(*path)) {
      return Rejection{rules::kIncludeNotAllowed,
                       "#include of '" + *path + "' is not on the list of allowed headers"};
    }
    return std::nullopt;
  }

  bool is_allowed_header_path(std::string_view path) const {
    for (const auto& header : allowed_includes(backend_, profile_)) {
      if (path.size() > header.size() && path.substr(path.size() - header.size()) == header &&
          path[path.size() - header.size() - 1] == '/') {
        return true;
      }
    }
    return false;
  }

  Backend backend_;
  Profile profile_;
  bool have_roots_ = false;
  std::vector<std::string> roots_;
  bool have_main_ = false;
  std::string main_;
  std::vector<std::string> stack_;  // the include chain; back() is the current file
  bool prologue_ = true;
  bool have_marker_ = false;
  size_t marker_physical_ = 0;
  size_t marker_line_ = 0;
};

// One pass over the preprocessor's output: linemarkers and pragmas from its directives, code
// tokens through the construct scanner, judged where they come from the main file.
class TranslationUnitGate {
 public:
  TranslationUnitGate(std::string_view text, Backend backend, Profile profile,
                      const std::vector<std::string>* roots)
      : lexer_(text, DirectiveStyle::kPreprocessed),
        scanner_(backend, false),
        files_(backend, profile, roots) {}

  std::optional<Rejection> run() {
    for (Token token = lexer_.next(); token.kind != TokenKind::kEnd; token = lexer_.next()) {
      std::optional<Rejection> r;
      if (token.kind == TokenKind::kDirectiveStart) {
        r = directive(token.line);
      } else if (token.kind != TokenKind::kDirectiveEnd) {
        const bool own = files_.in_main();
        if (own) files_.saw_own_code();
        r = scanner_.feed(token, own, files_.file_line(token.line));
      }
      if (r) return r;
    }
    return std::nullopt;
  }

 private:
  std::optional<Rejection> directive(size_t physical) {
    std::array<Token, kMaxDirectiveTokens> tokens;
    size_t kept = 0;
    size_t total = 0;
    for (Token t = lexer_.next(); t.kind != TokenKind::kDirectiveEnd && t.kind != TokenKind::kEnd;
         t = lexer_.next()) {
      if (kept < tokens.size()) tokens[kept++] = t;
      ++total;
    }
    if (kept == 0) return std::nullopt;
    const std::span<const Token> words(tokens.data(), kept);
    if (tokens[0].kind == TokenKind::kNumber || tokens[0].text == "line") {
      const auto marker = parse_linemarker(words, total);
      if (!marker) return malformed_markers("a malformed linemarker");
      return files_.apply(*marker, physical);
    }
    if (tokens[0].text == "pragma" && files_.in_main()) {
      files_.saw_own_code();
      return gate_detail::judge_pragma(words.subspan(1), files_.file_line(physical));
    }
    return std::nullopt;
  }

  Lexer lexer_;
  gate_detail::ConstructScanner scanner_;
  FileTracker files_;
};

std::optional<Rejection> check_preprocessed(std::string_view text, Backend backend, Profile profile,
                                            const std::vector<std::string>* roots) {
  if (text.size() > kMaxPreprocessedBytes) {
    return Rejection{rules::kSourceTooLarge,
                     "the preprocessed candidate is " + std::to_string(text.size()) +
                         " bytes; the limit is " + std::to_string(kMaxPreprocessedBytes >> 20) +
                         " MiB"};
  }
  return TranslationUnitGate(text, backend, profile, roots).run();
}

}  // namespace

std::optional<Rejection> check_translation_unit(std::string_view preprocessed, Backend backend) {
  return check_preprocessed(preprocessed, backend, Profile::kKevinAbi, nullptr);
}

std::optional<Rejection> check_translation_unit(std::string_view preprocessed, Backend backend,
                                                const std::vector<std::string>& allowed_roots,
                                                Profile profile) {
  return check_preprocessed(preprocessed, backend, profile, &allowed_roots);
}

std::vector<std::string> include_search_dirs(std::string_view verbose_output) {
  std::vector<std::string> dirs;
  bool in_list = false;
  size_t start = 0;
  while (start < verbose_output.size()) {
    const size_t end = std::min(verbose_output.find('\n', start), verbose_output.size());
    std::string_view line = verbose_output.substr(start, end - start);
    start = end + 1;
    if (line.find("search starts here:") != std::string_view::npos) {
      in_list = true;
    } else if (line.rfind("End of search list.", 0) == 0) {
      in_list = false;
    } else if (in_list) {
      line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
      if (line.empty() || line[0] != '/') continue;
      dirs.emplace_back(line);
      std::error_code ec;
      const std::filesystem::path real =
          std::filesystem::canonical(std::filesystem::path(line), ec);
      if (!ec && real.string() != line) dirs.push_back(real.string());
    }
  }
  return dirs;
}

}  // namespace kevin::engine
