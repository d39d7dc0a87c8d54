// fuzz_tokenizer.cpp — fuzz target: tokenizer.json from an untrusted model folder, through the
// loader's checks (vocabulary, merges, added tokens, the pre-tokenizer's PCRE2 regex); a
// tokenizer that loads then encodes and decodes a fixed text with every kind of piece.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "train/tokenizer/tokenizer.h"

namespace {

// ASCII words and digits, multi-byte UTF-8, invalid UTF-8 and ChatML markers.
constexpr std::string_view kSample =
    "<|im_start|>user\nint main() { return 42; }  \xc3\xa9\xe4\xb8\xad \xff\xfe<think>\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto doc = kevin::parse_json(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!doc.is_ok()) return 0;
  auto tokenizer = kevin::train::Tokenizer::from_json(*doc);
  if (!tokenizer.is_ok()) return 0;
  for (const bool allow_special : {true, false}) {
    const std::vector<int32_t> ids = tokenizer->encode(kSample, allow_special);
    (void)tokenizer->decode(ids, !allow_special);
  }
  // Ids past the table, as a model with a larger embedding emits: decode skips them.
  const std::vector<int32_t> edges = {-1, 0, static_cast<int32_t>(tokenizer->vocab_size()),
                                      INT32_MAX};
  (void)tokenizer->decode(edges);
  (void)tokenizer->token_id("<|im_end|>");
  return 0;
}
