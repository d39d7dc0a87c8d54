// suggest.h — "did you mean" for a mistyped name (a command, a flag, a config key): the
// nearest candidate by edit distance, when one is near enough to be a plausible typo.
#pragma once

#include <string>
#include <vector>

namespace kevin {

// Levenshtein distance between `a` and `b` (bytes).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest `word` when within max(2, |word|/3) edits (a candidate that `word`
// begins, for words of 3+ characters, counts as one edit); "" when none is.
std::string nearest_name(const std::string& word, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for nearest_name(), or "" when there is none.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace kevin
