// scripted_policy.cpp — script loading and matching.
#include "policy/scripted_policy.h"

#include <algorithm>

#include "core/file.h"
#include "core/mutex.h"

namespace kevin::policy {

void split_inline_reasoning(Generation* g) {
  const size_t close = g->content.find("</think>");
  if (close == std::string::npos) return;
  const size_t open = g->content.find("<think>");
  const size_t start = open != std::string::npos && open < close ? open + 7 : 0;
  if (g->reasoning.empty()) g->reasoning = g->content.substr(start, close - start);
  g->content.erase(0, close + 8);
}

ScriptedPolicy::ScriptedPolicy(std::vector<Entry> entries, std::string source)
    : entries_(std::move(entries)), source_(std::move(source)), used_(entries_.size(), false) {}

Result<std::unique_ptr<ScriptedPolicy>> ScriptedPolicy::load(const std::filesystem::path& file) {
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(file));
  auto docs = parse_json_lines(text);
  if (!docs.is_ok()) return docs.status().with_context(file.string());
  std::vector<Entry> entries;
  for (size_t i = 0; i < docs->size(); ++i) {
    const Json& d = (*docs)[i];
    Entry e;
    auto response = json_get<std::string>(d, "response");
    if (!response.is_ok())
      return response.status().with_context(file.string() + " line " + std::to_string(i + 1));
    e.response = *response;
    e.match = d.value("match", "");
    e.reasoning = d.value("reasoning", "");
    e.finish_reason = d.value("finish_reason", "stop");
    entries.push_back(std::move(e));
  }
  if (entries.empty()) return invalid_argument(file.string() + " holds no responses");
  return std::make_unique<ScriptedPolicy>(std::move(entries), file.filename().string());
}

Result<Generation> ScriptedPolicy::generate(const std::vector<ChatMessage>& messages,
                                            const GenerationParams&) {
  const std::string& last = messages.empty() ? std::string() : messages.back().content;
  MutexLock lock(mu_);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (used_[i] ||
        (!entries_[i].match.empty() && last.find(entries_[i].match) == std::string::npos))
      continue;
    used_[i] = true;
    Generation g;
    g.content = entries_[i].response;
    g.reasoning = entries_[i].reasoning;
    g.finish_reason = entries_[i].finish_reason;
    split_inline_reasoning(&g);
    return g;
  }
  return failed_precondition("the script " + source_ + " has no unused response for this request");
}

size_t ScriptedPolicy::remaining() const {
  MutexLock lock(mu_);
  return static_cast<size_t>(std::count(used_.begin(), used_.end(), false));
}

}  // namespace kevin::policy
