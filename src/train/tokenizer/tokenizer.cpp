// tokenizer.cpp — tokenizer.json loading, the PCRE2 pre-tokenizer, byte-level BPE merges with a
// shared piece cache, decoding, and the ChatML helpers.
#include "train/tokenizer/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>

#include "core/file.h"
#include "core/mutex.h"

namespace kevin::train {
namespace {

// ---- GPT-2's byte-level alphabet ---------------------------------------------------------

// Bytes that are printable Latin-1 ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the
// other 68 get code points 256, 257, ... in byte order, so every token is printable text.
constexpr size_t kByteLevelCodePoints = 256 + 68;

constexpr bool is_printable_byte(size_t b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

constexpr std::array<char32_t, 256> make_byte_to_code_point() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (size_t b = 0; b < 256; ++b)
    table[b] = is_printable_byte(b) ? static_cast<char32_t>(b) : next++;
  return table;
}

// Inverse of kByteToCodePoint; -1 marks code points outside the alphabet.
constexpr std::array<int16_t, kByteLevelCodePoints> make_code_point_to_byte() {
  std::array<int16_t, kByteLevelCodePoints> table{};
  table.fill(-1);
  const std::array<char32_t, 256> forward = make_byte_to_code_point();
  for (size_t b = 0; b < 256; ++b) table[forward[b]] = static_cast<int16_t>(b);
  return table;
}

constexpr std::array<char32_t, 256> kByteToCodePoint = make_byte_to_code_point();
constexpr std::array<int16_t, kByteLevelCodePoints> kCodePointToByte = make_code_point_to_byte();

// The alphabet's code points are all below U+0800, so one or two UTF-8 bytes each.
void append_byte_level(unsigned char byte, std::string& out) {
  const char32_t cp = kByteToCodePoint[byte];
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The bytes a byte-level token spells, or nothing when it uses a character outside the
// alphabet (then the file is not a byte-level vocabulary).
std::optional<std::string> from_byte_level(std::string_view token) {
  std::string bytes;
  for (size_t i = 0; i < token.size(); ++i) {
    const auto lead = static_cast<unsigned char>(token[i]);
    char32_t cp = lead;
    if (lead >= 0x80) {
      if ((lead & 0xE0) != 0xC0 || i + 1 == token.size()) return std::nullopt;
      const auto trail = static_cast<unsigned char>(token[++i]);
      if ((trail & 0xC0) != 0x80) return std::nullopt;
      cp = (static_cast<char32_t>(lead & 0x1F) << 6) | (trail & 0x3F);
    }
    if (cp >= kByteLevelCodePoints || kCodePointToByte[cp] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(kCodePointToByte[cp]));
  }
  return bytes;
}

// ---- small types ---------------------------------------------------------------------------

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
template <typename T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

enum class TokenKind : uint8_t { kNone, kVocab, kAdded, kSpecial };

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
};

// The merge of an adjacent pair: its priority (lower first) and the token it makes.
struct MergeRule {
  int32_t rank = 0;
  int32_t merged_id = 0;
};

uint64_t pair_key(int32_t left, int32_t right) {
  return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
}

struct CodeFree {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
using RegexPtr = std::unique_ptr<pcre2_code, CodeFree>;
struct MatchDataFree {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using MatchDataPtr = std::unique_ptr<pcre2_match_data, MatchDataFree>;

// Bounds a hostile tokenizer.json's id table allocation; real vocabularies are ~150k-260k.
constexpr int64_t kMaxTokenId = int64_t{1} << 24;
// Pieces as long as HF caches, and as many: past capacity the cache only serves lookups, so
// its memory stays bounded however much distinct text is encoded.
constexpr size_t kMaxCachedPieceBytes = 256;
constexpr size_t kCacheCapacity = 10000;

// Encoded pieces by their bytes, shared by all threads encoding with one tokenizer.
class PieceCache {
 public:
  // Appends the cached ids of `piece` to `out`; false (nothing appended) on a miss.
  bool append(std::string_view piece, std::vector<int32_t>& out) const {
    ReaderLock lock(mutex_);
    const auto it = map_.find(piece);
    if (it == map_.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }

  void insert(std::string_view piece, std::span<const int32_t> ids) {
    WriterLock lock(mutex_);
    if (map_.size() >= kCacheCapacity) return;
    map_.try_emplace(std::string(piece), ids.begin(), ids.end());
  }

 private:
  mutable SharedMutex mutex_;
  StringMap<std::vector<int32_t>> map_ GUARDED_BY(mutex_);
};

std::string_view trim_leading_newlines(std::string_view s) {
  const size_t first = s.find_first_not_of('\n');
  return first == std::string_view::npos ? std::string_view() : s.substr(first);
}

std::string_view trim_newlines(std::string_view s) {
  s = trim_leading_newlines(s);
  return s.substr(0, s.find_last_not_of('\n') + 1);
}

}  // namespace

// ---- the loaded tables and the encoding steps ----------------------------------------------

namespace detail {

struct BpeModel {
  std::vector<std::string> id_bytes;  // the bytes each id decodes to
  std::vector<TokenKind> id_kinds;    // kNone marks ids no token has
  StringMap<int32_t> vocab_by_bytes;
  std::array<int32_t, 256> byte_ids{};  // the single-byte token of each byte
  std::unordered_map<uint64_t, MergeRule> merges;
  std::vector<AddedToken> added;
  std::array<std::vector<size_t>, 256> added_by_first_byte;  // indices into added, longest first
  StringMap<int32_t> added_by_content;
  RegexPtr split;  // the Split pre-tokenizer; null when there is none
  bool ignore_merges = false;
  mutable PieceCache cache;

  struct AddedMatch {
    size_t begin = 0;  // text.size() when there is no match
    const AddedToken* token = nullptr;
  };
  AddedMatch find_added(std::string_view text, size_t from, bool allow_special) const;
  void encode_segment(std::string_view segment, std::vector<int32_t>& ids) const;
  void encode_piece(std::string_view piece, std::vector<int32_t>& ids) const;
  void merge_piece(std::string_view piece, std::vector<int32_t>& ids) const;
};

// The leftmost added token at or after `from`, the longest when several start there (HF's
// leftmost-longest rule). All Qwen added tokens start with '<', so most bytes cost one lookup.
BpeModel::AddedMatch BpeModel::find_added(std::string_view text, size_t from,
                                          bool allow_special) const {
  for (size_t i = from; i < text.size(); ++i) {
    for (const size_t index : added_by_first_byte[static_cast<unsigned char>(text[i])]) {
      const AddedToken& token = added[index];
      if (token.special && !allow_special) continue;
      if (text.substr(i).starts_with(token.content)) return {i, &token};
    }
  }
  return {text.size(), nullptr};
}

// Splits a segment (text between added tokens, matched on its own as HF does, so lookaheads
// see its end) into pieces with the Split regex, "Isolated": each match is a piece and so is
// each gap between matches. Qwen's pattern matches every valid character, so gaps hold only
// invalid UTF-8, which PCRE2_MATCH_INVALID_UTF never matches.
void BpeModel::encode_segment(std::string_view segment, std::vector<int32_t>& ids) const {
  if (segment.empty()) return;
  const MatchDataPtr data(split ? pcre2_match_data_create_from_pattern(split.get(), nullptr)
                                : nullptr);
  if (!data) {
    encode_piece(segment, ids);
    return;
  }
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(segment.data());
  size_t done = 0;    // end of the last piece encoded
  size_t search = 0;  // where the next match may start
  while (search < segment.size()) {
    // A negative result is no match, or a resource limit (never hit by Qwen's pattern, whose
    // repeats are single characters); either way the rest becomes one piece below.
    if (pcre2_match(split.get(), subject, segment.size(), search, 0, data.get(), nullptr) < 0)
      break;
    const PCRE2_SIZE* match = pcre2_get_ovector_pointer(data.get());
    if (match[1] == match[0]) {  // an empty match splits nothing; retry one character on
      search = match[0] + 1;
      while (search < segment.size() &&
             (static_cast<unsigned char>(segment[search]) & 0xC0) == 0x80)
        ++search;
      continue;
    }
    if (match[0] > done) encode_piece(segment.substr(done, match[0] - done), ids);
    encode_piece(segment.substr(match[0], match[1] - match[0]), ids);
    done = search = match[1];
  }
  if (done < segment.size()) encode_piece(segment.substr(done), ids);
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t>& ids) const {
  if (ignore_merges) {
    if (const auto it = vocab_by_bytes.find(piece); it != vocab_by_bytes.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  const bool cacheable = piece.size() < kMaxCachedPieceBytes;
  if (cacheable && cache.append(piece, ids)) return;
  const size_t first = ids.size();
  merge_piece(piece, ids);
  if (cacheable) cache.insert(piece, std::span<const int32_t>(ids).subspan(first));
}

// BPE on one piece: start from its single-byte tokens and repeatedly apply the lowest-ranked
// merge among adjacent pairs, leftmost first on ties (HF's order). A queue of candidate merges
// keeps this O(n log n), so even a hostile megabyte-long piece takes about a second; entries
// made stale by an earlier merge of a neighbour are recognised and dropped when popped.
void BpeModel::merge_piece(std::string_view piece, std::vector<int32_t>& ids) const {
  constexpr size_t kNone = static_cast<size_t>(-1);
  struct Symbol {
    int32_t id;
    size_t prev;
    size_t next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    size_t left;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::vector<Symbol> symbols(piece.size());
  for (size_t i = 0; i < piece.size(); ++i) {
    symbols[i] = {byte_ids[static_cast<unsigned char>(piece[i])], i == 0 ? kNone : i - 1,
                  i + 1 < piece.size() ? i + 1 : kNone, true};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto rule_after = [&](size_t left) -> const MergeRule* {
    if (symbols[left].next == kNone) return nullptr;
    const auto it = merges.find(pair_key(symbols[left].id, symbols[symbols[left].next].id));
    return it == merges.end() ? nullptr : &it->second;
  };
  const auto push = [&](size_t left) {
    if (const MergeRule* rule = rule_after(left)) queue.push({rule->rank, left});
  };
  for (size_t i = 0; i + 1 < piece.size(); ++i) push(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    if (!symbols[top.left].alive) continue;
    const MergeRule* rule = rule_after(top.left);
    if (rule == nullptr || rule->rank != top.rank) continue;  // stale
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[left.next];
    right.alive = false;
    left.id = rule->merged_id;
    left.next = right.next;
    if (left.next != kNone) symbols[left.next].prev = top.left;
    if (left.prev != kNone) push(left.prev);
    push(top.left);
  }
  for (size_t i = piece.empty() ? kNone : 0; i != kNone; i = symbols[i].next)
    ids.push_back(symbols[i].id);
}

}  // namespace detail

// ---- loading -------------------------------------------------------------------------------

namespace {

using detail::BpeModel;

// obj[key] without copying (the vocabulary is large), or null when obj is not an object or
// lacks the key.
const Json& member(const Json& obj, const char* key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  const auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

Status check_normalizer(const Json& normalizer) {
  if (normalizer.is_null()) return Status::ok();
  // NFC is deliberately not applied: see the class comment in tokenizer.h.
  if (member(normalizer, "type") == "NFC") return Status::ok();
  return unimplemented("tokenizer.json normalizer: only NFC (or none) is supported");
}

Status check_decoder(const Json& decoder) {
  if (decoder.is_null() || member(decoder, "type") == "ByteLevel") {
    return Status::ok();
  }
  return unimplemented("tokenizer.json decoder: only ByteLevel is supported");
}

bool json_flag(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

// The Split step's regex, or "" when there is no Split. Accepts what Qwen uses: an optional
// Split (Regex pattern, Isolated, not inverted) followed by a ByteLevel step that neither adds
// a prefix space nor applies GPT-2's built-in regex.
Result<std::string> split_pattern(const Json& pre) {
  if (!pre.is_object())
    return unimplemented("tokenizer.json pre_tokenizer: a ByteLevel step is required");
  const Json steps =
      member(pre, "type") == "Sequence" ? member(pre, "pretokenizers") : Json::array({pre});
  if (!steps.is_array())
    return invalid_argument("tokenizer.json pre_tokenizer.pretokenizers: expected an array");
  std::string pattern;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Json& step = steps[i];
    const Json& type = member(step, "type");
    if (type == "ByteLevel" && i + 1 == steps.size()) {
      if (json_flag(step, "add_prefix_space") || json_flag(step, "use_regex")) {
        return unimplemented(
            "tokenizer.json pre_tokenizer ByteLevel: add_prefix_space and use_regex must be false");
      }
      return pattern;
    }
    if (type != "Split" || i != 0) break;
    if (member(step, "behavior") != "Isolated" || json_flag(step, "invert")) {
      return unimplemented(
          "tokenizer.json pre_tokenizer Split: only behavior Isolated, not inverted, is supported");
    }
    const Json& regex = member(member(step, "pattern"), "Regex");
    if (!regex.is_string())
      return unimplemented("tokenizer.json pre_tokenizer Split: only a Regex pattern is supported");
    pattern = regex.get<std::string>();
  }
  return unimplemented("tokenizer.json pre_tokenizer: only [Split,] ByteLevel is supported");
}

// Compiled for UTF-8 with Unicode properties (\p{L}, \s as Unicode whitespace) and tolerant of
// invalid UTF-8, which it never matches (see encode_segment).
Result<RegexPtr> compile_regex(const std::string& pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  RegexPtr code(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset,
                              nullptr));
  if (!code) {
    std::array<PCRE2_UCHAR, 256> message{};
    pcre2_get_error_message(error, message.data(), message.size());
    return invalid_argument("tokenizer.json pre_tokenizer regex at offset " +
                            std::to_string(offset) + ": " +
                            reinterpret_cast<const char*>(message.data()));
  }
  // JIT makes matching several times faster; without it (unsupported CPU) the interpreter runs.
  pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);
  return code;
}

Result<int32_t> token_id_from_json(const Json& value, const std::string& where) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
      value.get<int64_t>() >= kMaxTokenId) {
    return invalid_argument(where + ": expected a token id in [0, 2^24)");
  }
  return static_cast<int32_t>(value.get<int64_t>());
}

// Records what `id` decodes to. An added token may take over the id of a vocabulary entry (HF
// allows that; its content then decodes); any other reuse of an id is an error.
Status set_token(BpeModel& m, int32_t id, std::string bytes, TokenKind kind,
                 const std::string& where) {
  const auto index = static_cast<size_t>(id);
  if (index >= m.id_bytes.size()) {
    m.id_bytes.resize(index + 1);
    m.id_kinds.resize(index + 1, TokenKind::kNone);
  }
  const TokenKind before = m.id_kinds[index];
  if (before != TokenKind::kNone && (before != TokenKind::kVocab || kind == TokenKind::kVocab)) {
    return invalid_argument(where + ": id " + std::to_string(id) + " is used twice");
  }
  m.id_bytes[index] = std::move(bytes);
  m.id_kinds[index] = kind;
  return Status::ok();
}

// model.vocab into the id tables; returns byte-level spelling → id for resolving merges.
Result<StringMap<int32_t>> load_vocab(const Json& vocab, BpeModel& m) {
  if (!vocab.is_object()) return invalid_argument("tokenizer.json model.vocab: expected an object");
  StringMap<int32_t> by_spelling;
  for (const auto& [spelling, value] : vocab.items()) {
    const std::string where = "tokenizer.json model.vocab[\"" + spelling + "\"]";
    KEVIN_ASSIGN_OR_RETURN(const int32_t id, token_id_from_json(value, where));
    std::optional<std::string> bytes = from_byte_level(spelling);
    if (!bytes) return invalid_argument(where + ": not a byte-level token");
    m.vocab_by_bytes.emplace(*bytes, id);
    KEVIN_RETURN_IF_ERROR(set_token(m, id, std::move(*bytes), TokenKind::kVocab, where));
    by_spelling.emplace(spelling, id);
  }
  for (size_t b = 0; b < 256; ++b) {
    const auto it = m.vocab_by_bytes.find(std::string(1, static_cast<char>(b)));
    if (it == m.vocab_by_bytes.end()) {
      return invalid_argument("tokenizer.json model.vocab: no token for byte " + std::to_string(b) +
                              " (not a byte-level vocabulary)");
    }
    m.byte_ids[b] = it->second;
  }
  return by_spelling;
}

// model.merges, in either format: "a b" strings (older files) or ["a", "b"] pairs. A later
// duplicate pair overrides an earlier one, as in HF.
Status load_merges(const Json& merges, const StringMap<int32_t>& by_spelling, BpeModel& m) {
  if (!merges.is_array()) return invalid_argument("tokenizer.json model.merges: expected an array");
  m.merges.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Json& merge = merges[rank];
    const std::string where = "tokenizer.json model.merges[" + std::to_string(rank) + "]";
    std::string left;
    std::string right;
    if (merge.is_string()) {
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        return invalid_argument(where + ": expected \"left right\"");
      }
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      return invalid_argument(where + ": expected \"left right\" or [left, right]");
    }
    const auto l = by_spelling.find(left);
    const auto r = by_spelling.find(right);
    const auto merged = by_spelling.find(left + right);
    if (l == by_spelling.end() || r == by_spelling.end() || merged == by_spelling.end()) {
      return invalid_argument(where + ": \"" + left + "\", \"" + right +
                              "\" or their merge is not in the vocabulary");
    }
    m.merges.insert_or_assign(pair_key(l->second, r->second),
                              MergeRule{static_cast<int32_t>(rank), merged->second});
  }
  return Status::ok();
}

Status load_added_tokens(const Json& added, BpeModel& m) {
  if (added.is_null()) return Status::ok();
  if (!added.is_array()) return invalid_argument("tokenizer.json added_tokens: expected an array");
  for (size_t i = 0; i < added.size(); ++i) {
    const Json& entry = added[i];
    const std::string where = "tokenizer.json added_tokens[" + std::to_string(i) + "]";
    if (!entry.is_object()) return invalid_argument(where + ": expected an object");
    KEVIN_ASSIGN_OR_RETURN(const int32_t id,
                           token_id_from_json(member(entry, "id"), where + ".id"));
    KEVIN_ASSIGN_OR_RETURN(std::string content, json_get<std::string>(entry, "content"));
    KEVIN_ASSIGN_OR_RETURN(const bool special, json_get_or<bool>(entry, "special", false));
    if (content.empty()) return invalid_argument(where + ": empty content");
    if (json_flag(entry, "lstrip") || json_flag(entry, "rstrip") ||
        json_flag(entry, "single_word")) {
      return unimplemented(where + ": lstrip, rstrip and single_word are not supported");
    }
    // "normalized" is not read: with NFC not applied, matching raw or normalized text is the same.
    if (!m.added_by_content.emplace(content, id).second)
      return invalid_argument(where + ": duplicate content");
    KEVIN_RETURN_IF_ERROR(
        set_token(m, id, content, special ? TokenKind::kSpecial : TokenKind::kAdded, where));
    m.added.push_back({std::move(content), id, special});
  }
  for (size_t i = 0; i < m.added.size(); ++i) {
    m.added_by_first_byte[static_cast<unsigned char>(m.added[i].content[0])].push_back(i);
  }
  for (auto& candidates : m.added_by_first_byte) {
    std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
      return m.added[a].content.size() > m.added[b].content.size();
    });
  }
  return Status::ok();
}

Status check_model_options(const Json& model) {
  KEVIN_ASSIGN_OR_RETURN(const std::string type, json_get<std::string>(model, "type"));
  if (type != "BPE")
    return unimplemented("tokenizer.json model.type: only BPE is supported, got " + type);
  if (const auto it = model.find("dropout"); it != model.end() && !it->is_null()) {
    return unimplemented("tokenizer.json model.dropout: BPE dropout is not supported");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto it = model.find(key);
    if (it != model.end() && !it->is_null() && *it != "") {
      return unimplemented(std::string("tokenizer.json model.") + key + ": not supported");
    }
  }
  return Status::ok();
}

Result<std::shared_ptr<BpeModel>> build_model(const Json& j) {
  if (!j.is_object()) return invalid_argument("tokenizer.json: expected an object");
  KEVIN_RETURN_IF_ERROR(check_normalizer(member(j, "normalizer")));
  KEVIN_RETURN_IF_ERROR(check_decoder(member(j, "decoder")));
  KEVIN_ASSIGN_OR_RETURN(const std::string pattern, split_pattern(member(j, "pre_tokenizer")));
  const Json& model = member(j, "model");
  if (!model.is_object()) return invalid_argument("tokenizer.json model: expected an object");
  KEVIN_RETURN_IF_ERROR(check_model_options(model));

  auto m = std::make_shared<BpeModel>();
  KEVIN_ASSIGN_OR_RETURN(m->ignore_merges, json_get_or<bool>(model, "ignore_merges", false));
  if (!pattern.empty()) {
    KEVIN_ASSIGN_OR_RETURN(m->split, compile_regex(pattern));
  }
  KEVIN_ASSIGN_OR_RETURN(const StringMap<int32_t> by_spelling,
                         load_vocab(member(model, "vocab"), *m));
  KEVIN_RETURN_IF_ERROR(load_merges(member(model, "merges"), by_spelling, *m));
  KEVIN_RETURN_IF_ERROR(load_added_tokens(member(j, "added_tokens"), *m));
  return m;
}

}  // namespace

// ---- Tokenizer -----------------------------------------------------------------------------

Tokenizer::Tokenizer(std::shared_ptr<const detail::BpeModel> model) : model_(std::move(model)) {}

Result<Tokenizer> Tokenizer::load(const std::filesystem::path& tokenizer_json) {
  KEVIN_ASSIGN_OR_RETURN(const std::string text, read_file(tokenizer_json));
  KEVIN_ASSIGN_OR_RETURN(const Json j, parse_json(text));
  return from_json(j);
}

Result<Tokenizer> Tokenizer::from_json(const Json& tokenizer_json) {
  try {
    KEVIN_ASSIGN_OR_RETURN(std::shared_ptr<detail::BpeModel> model, build_model(tokenizer_json));
    return Tokenizer(std::move(model));
  } catch (const Json::exception& e) {  // a field of an unexpected type slipped past the checks
    return invalid_argument(std::string("tokenizer.json: ") + e.what());
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3);
  size_t pos = 0;
  while (pos < text.size()) {
    const auto match = model_->find_added(text, pos, allow_special);
    model_->encode_segment(text.substr(pos, match.begin - pos), ids);
    if (match.token == nullptr) break;
    ids.push_back(match.token->id);
    pos = match.begin + match.token->content.size();
  }
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string text;
  for (const int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= model_->id_bytes.size()) continue;
    const TokenKind kind = model_->id_kinds[static_cast<size_t>(id)];
    if (kind == TokenKind::kNone || (skip_special && kind == TokenKind::kSpecial)) continue;
    text += model_->id_bytes[static_cast<size_t>(id)];
  }
  return text;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (const auto it = model_->added_by_content.find(token); it != model_->added_by_content.end())
    return it->second;
  if (const auto it = model_->vocab_by_bytes.find(token); it != model_->vocab_by_bytes.end())
    return it->second;
  return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < model_->id_kinds.size() &&
         model_->id_kinds[static_cast<size_t>(id)] == TokenKind::kSpecial;
}

int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(model_->id_bytes.size()); }

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) append_byte_level(static_cast<unsigned char>(c), out);
  return out;
}

// ---- ChatML --------------------------------------------------------------------------------

std::string render_chatml(const std::vector<ChatTurn>& turns, bool add_generation_prompt,
                          bool open_think) {
  std::string text;
  for (const ChatTurn& turn : turns) {
    text.append(kImStart)
        .append(turn.role)
        .append("\n")
        .append(turn.content)
        .append(kImEnd)
        .append("\n");
  }
  if (add_generation_prompt) {
    text.append(kImStart).append("assistant\n");
    if (open_think) text.append(kThinkOpen).append("\n");
  }
  return text;
}

ThinkSplit split_think(std::string_view generated, bool opened_in_prompt) {
  ThinkSplit out;
  std::string_view rest = generated;
  const size_t first = rest.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && rest.substr(first).starts_with(kThinkOpen)) {
    rest.remove_prefix(first + kThinkOpen.size());
    out.has_think = true;
  }
  out.has_think = out.has_think || opened_in_prompt;
  if (!out.has_think) {
    out.answer = generated;
    return out;
  }
  const size_t close = rest.find(kThinkClose);
  out.think_closed = close != std::string_view::npos;
  out.reasoning = trim_newlines(rest.substr(0, close));
  if (out.think_closed) out.answer = trim_leading_newlines(rest.substr(close + kThinkClose.size()));
  return out;
}

}  // namespace kevin::train
