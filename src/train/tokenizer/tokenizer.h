// tokenizer.h — the byte-level BPE tokenizer of Qwen2/Qwen3-family models (QwQ-32B, Qwen2.5),
// loaded from a Hugging Face tokenizer.json, and the ChatML prompt format with QwQ's <think>
// convention. Verified id for id against the real Qwen tokenizer (docs/trainer.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kevin::train {

namespace detail {
struct BpeModel;  // the loaded tables, defined in tokenizer.cpp
}  // namespace detail

// Byte-level BPE as tokenizer.json describes it: added tokens matched first, then the Split
// pre-tokenizer's regex (PCRE2, UTF + Unicode properties), GPT-2's byte-to-character map and
// merges by rank. Immutable after loading except for an internal, locked cache of encoded
// pieces, so one instance may encode and decode from many threads at once. Copies are cheap
// and share the loaded tables.
//
// Differences from Hugging Face `tokenizers`, all outside what Qwen text normally holds:
//  - The NFC normalizer is accepted but not applied. Text already in NFC (almost all text;
//    the verification corpus is checked to be) encodes exactly as HF does; text with
//    decomposed characters (e.g. "e" + U+0301) gets different, still lossless, ids.
//  - Invalid UTF-8 is accepted (HF only takes valid strings): each run of bytes that is not
//    valid UTF-8 becomes a piece of its own, BPE-encoded like any other, so
//    decode(encode(b)) == b for every byte string b. Valid text around it is split as HF
//    would split it.
//  - decode returns the exact bytes of the tokens; HF replaces invalid UTF-8 (a multi-byte
//    character cut between ids) with U+FFFD.
class Tokenizer {
 public:
  // Reads and parses a tokenizer.json file. kNotFound/kIoError from reading, otherwise as
  // from_json.
  static Result<Tokenizer> load(const std::filesystem::path& tokenizer_json);

  // Builds a tokenizer from a parsed tokenizer.json. kInvalidArgument for malformed content
  // (a merge of tokens not in the vocabulary, duplicate ids, a vocabulary without all 256 byte
  // tokens, a regex PCRE2 rejects); kUnimplemented for a configuration this class does not
  // implement (a normalizer other than NFC, a pre-tokenizer other than Split + ByteLevel,
  // added tokens with lstrip/rstrip/single_word, BPE dropout or subword affixes). Either way
  // the message names the field.
  static Result<Tokenizer> from_json(const Json& tokenizer_json);

  // Token ids of `text`, without any BOS/EOS added (Qwen adds none). Added tokens (such as
  // "<|im_start|>" or "<think>") are found first, leftmost and then longest match, and each
  // becomes its id. With allow_special = false, tokens marked special are not recognised and
  // their text is encoded as ordinary text (HF's encode_special_tokens), which is what
  // untrusted text spliced into a prompt needs; non-special added tokens such as "<think>"
  // are still recognised, as in HF. Accepts any bytes and never fails (see the class comment).
  std::vector<int32_t> encode(std::string_view text, bool allow_special = true) const;

  // The bytes the ids stand for, concatenated. Ids outside the vocabulary are skipped (as HF
  // does); with skip_special, so are tokens marked special (non-special added tokens such as
  // "<think>" are kept).
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // The id of the token whose text is exactly `token`: an added token's content
  // ("<|im_end|>") or the bytes of a vocabulary entry (" the", not tokenizer.json's "Ġthe").
  // Empty when no token has that text.
  std::optional<int32_t> token_id(std::string_view token) const;

  // True when `id` is an added token marked special (the ones decode can skip).
  bool is_special(int32_t id) const;

  // One more than the largest id (vocabulary and added tokens): 151669 for Qwen3/QwQ. The
  // model's embedding usually has more rows than this.
  int64_t vocab_size() const;

 private:
  explicit Tokenizer(std::shared_ptr<const detail::BpeModel> model);
  std::shared_ptr<const detail::BpeModel> model_;
};

// GPT-2's byte-level spelling of `bytes`, the form in which tokenizer.json stores vocabulary
// entries and merges: printable bytes stand for themselves, the others map to U+0100 and up
// (a space becomes "Ġ", a newline "Ċ"). Returns UTF-8; never fails.
std::string to_byte_level(std::string_view bytes);

// ---- ChatML ------------------------------------------------------------------------------

inline constexpr std::string_view kImStart = "<|im_start|>";
inline constexpr std::string_view kImEnd = "<|im_end|>";
inline constexpr std::string_view kEndOfText = "<|endoftext|>";
inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";

// One message of a conversation: role is "system", "user" or "assistant" (not checked).
struct ChatTurn {
  std::string role;
  std::string content;
};

// Renders `turns` as Qwen's ChatML text, exactly:
//   for each turn:              "<|im_start|>" + role + "\n" + content + "<|im_end|>\n"
//   if add_generation_prompt:   "<|im_start|>assistant\n"
//   and if open_think too:      "<think>\n"   (QwQ-32B's template; the model then starts
//                                              inside its thought). Ignored otherwise.
// Nothing else is added: no default system prompt (Qwen2.5-Instruct's template adds one when
// none is given; pass it as the first turn to reproduce that), and contents are copied
// verbatim, thoughts included (QwQ's template keeps only the text after "</think>" of past
// assistant turns: pass split_think(...).answer to reproduce that). Encode the result with
// allow_special = true so the markers become their ids; a content that itself contains marker
// text then also becomes markers, so untrusted contents should be encoded separately with
// allow_special = false.
std::string render_chatml(const std::vector<ChatTurn>& turns, bool add_generation_prompt,
                          bool open_think);

// A generated assistant text split into its thought and its answer.
struct ThinkSplit {
  std::string reasoning;      // the thought, without tags and surrounding newlines
  std::string answer;         // after "</think>", leading newlines removed; all of the text
                              // when there is no thought
  bool has_think = false;     // a thought was open (in the prompt or at the text's start)
  bool think_closed = false;  // ... and "</think>" closed it; false means it was cut off, and
                              // then the whole text is reasoning and answer is empty
};

// Splits `generated` at its leading thought. The thought is open from the start when
// opened_in_prompt (the prompt ended with "<think>\n", render_chatml's open_think) or when
// the text, after leading whitespace, starts with "<think>" (that tag is dropped in both
// cases); it ends at the first "</think>". Never fails.
ThinkSplit split_think(std::string_view generated, bool opened_in_prompt);

}  // namespace kevin::train
