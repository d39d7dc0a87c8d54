// tu_gate.h — internals shared by the two source gates (check_source over the candidate's
// text, check_translation_unit over the preprocessor's output): a bounds-safe C/C++ lexer
// and the rules for pragmas, attributes and inline assembly. Not a public interface: only
// gate.cpp, tu_gate.cpp and their tests include it.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gates/backend.h"
#include "engine/gates/gate.h"

namespace kevin::engine::gate_detail {

enum class TokenKind {
  kIdentifier,
  kNumber,
  kString,          // any string literal, prefix and quotes included (raw strings too)
  kCharacter,       // a character literal, prefix and quotes included
  kHeaderName,      // <...> right after #include / #include_next / #import
  kPunctuator,      // one character, or "::", "##"; digraphs are given in their usual spelling
  kDirectiveStart,  // the '#' that begins a directive
  kDirectiveEnd,    // the end of that directive's line
  kEnd,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view text;  // a view into the lexed text (or a static spelling for digraphs)
  size_t line = 1;        // physical line of the token's first character, 1-based
  size_t offset = 0;      // byte offset of its first character in the lexed text
  size_t length = 0;      // bytes it spans there (differs from text.size() for digraphs)
};

// Which '#' begins a directive.
enum class DirectiveStyle {
  kSource,        // '#' or '%:' as the first token of a line; comments count as blanks
  kPreprocessed,  // only '#' in column 0: GCC prints a '#' made by a macro after a space
  kNone,          // never (pragma bodies, _Pragma strings)
};

// Splits text into preprocessing tokens. Every step consumes input, so the work is linear in
// the text's size whatever it holds; nothing recurses. Comments are skipped (a block comment
// does not end a directive, as in translation phase 3); string and character literals, raw
// strings with any prefix, and numbers with digit separators are single tokens, so nothing
// inside them is mistaken for code. Backslash-newline splices must be undone beforehand.
class Lexer {
 public:
  Lexer(std::string_view text, DirectiveStyle style) : text_(text), style_(style) {}
  Token next();

 private:
  bool skip_blanks();  // true when it stopped at the newline that ends a directive
  bool directive_here() const;
  Token make(TokenKind kind, size_t start, size_t line) const;
  Token lex_identifier_or_literal(size_t start, size_t line);
  Token lex_quoted(size_t start, size_t quote, size_t line);
  Token lex_raw_string(size_t start, size_t quote, size_t line);
  Token lex_number(size_t start, size_t line);
  Token lex_punctuator(size_t start, size_t line);
  Token lex_header_name(size_t start, size_t line);
  char at(size_t i) const { return i < text_.size() ? text_[i] : '\0'; }

  std::string_view text_;
  DirectiveStyle style_;
  size_t pos_ = 0;
  size_t line_ = 1;
  bool line_start_ = true;  // only blanks since the last newline outside a comment
  bool in_directive_ = false;
  size_t directive_tokens_ = 0;
  bool header_name_next_ = false;
};

// The rule for a pragma whose tokens follow the word `pragma` (spacing already normalised
// by lexing). nullopt when the pragma is allowed.
std::optional<Rejection> judge_pragma(std::span<const Token> body, size_t line);

// The text a _Pragma string literal stands for (prefix and quotes removed, \" and \\ undone).
std::string destringize(std::string_view literal);

// The bytes a string literal token stands for: prefix and quotes removed, escapes (simple,
// octal, hex) decoded, raw strings taken as written. What an asm statement hands the assembler.
std::string decode_string_literal(std::string_view literal);

// Judges code tokens one at a time for attributes, __declspec, inline assembly and the
// _Pragma operator. Tracks bracket depth without recursion; every attribute entry of every
// list is judged, whatever its spelling (__attribute__/__attribute, [[...]] with or without a
// namespace or `using`, leading/trailing "__"). Inline assembly is refused on the CPU
// backend; on CUDA (where device PTX is legitimate and host and device code share the text)
// the strings of each asm statement, joined and decoded, must not hold assembler directives
// that read files, define macros or switch sections (.incbin, .include, .macro, .irp, .irpc,
// .rept, .altmacro, .purgem, .section, .pushsection, .popsection, .previous, .subsection,
// .text, .data, .bss; any case), none of which PTX has.
class ConstructScanner {
 public:
  // `ban_pragma_operator`: any _Pragma/__pragma is refused outright (the text gate, which
  // cannot see what it expands to); otherwise its string is judged as a pragma.
  ConstructScanner(Backend backend, bool ban_pragma_operator)
      : backend_(backend), ban_pragma_operator_(ban_pragma_operator) {}

  // Feeds the next code token (never one of a directive). `own`: the token is the
  // candidate's own code, so constructs that start there are judged. `line` is what messages
  // cite. Returns the rule that fired, if any.
  std::optional<Rejection> feed(const Token& token, bool own, size_t line);

 private:
  enum class Pending {
    kNone,
    kGnuKeyword,
    kGnuFirstParen,
    kDeclspecKeyword,
    kPragmaKeyword,
    kPragmaParen,
    kAsmKeyword
  };
  std::optional<Rejection> on_open(const Token& token, bool own);
  void on_close();
  std::optional<Rejection> on_word(const Token& token, bool own, size_t line);
  std::optional<Rejection> end_asm_run(size_t line);

  Backend backend_;
  bool ban_pragma_operator_;
  size_t depth_ = 0;
  std::vector<size_t> lists_;  // open attribute lists of the candidate's: the depth of their names
  Pending pending_ = Pending::kNone;
  bool pending_own_ = false;
  bool last_was_open_square_ = false;
  size_t asm_depth_ = 0;  // depth inside the open asm statement's parentheses; 0: none open
  std::string asm_run_;   // adjacent string literals of that statement, decoded
};

// Removes "." and ".." segments of an absolute path lexically (nvcc names its own headers
// "/usr/local/cuda/bin/../targets/..."). nullopt when the path is not absolute, holds a NUL
// or control character, or climbs above "/".
std::optional<std::string> normalise_absolute_path(std::string_view path);

}  // namespace kevin::engine::gate_detail
