// records.cpp — building a turn's record and reading one back, and scoring a run's records:
// returns over each trajectory's full lineage (a beam copy's turns follow its parent's),
// advantages per (allocation, task) group, per-task outcomes, and the run's output files.
#include "rollout/records.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/file.h"
#include "reward/reward.h"

namespace kevin::rollout {
namespace fs = std::filesystem;

namespace {

// Every field of a turn record, named once: fields(record, visit) calls visit(name, member) in
// the record's order, for a const record (writing) and a mutable one (reading).
template <typename Record, typename Visit>
void fields(Record& r, Visit&& visit) {
  visit("task", r.task);
  visit("trajectory", r.trajectory);
  visit("turn", r.turn);
  visit("allocation", r.allocation);
  visit("parent", r.parent);
  visit("prompt", r.prompt);
  visit("prompt_estimated_tokens", r.prompt_estimated_tokens);
  visit("turns_dropped", r.turns_dropped);
  visit("response", r.response);
  visit("reasoning_chars", r.reasoning_chars);
  visit("finish_reason", r.finish_reason);
  visit("code", r.code);
  visit("summary", r.summary);
  visit("verdict", r.verdict);
  visit("reason", r.reason);
  visit("feedback", r.feedback);
  visit("correct", r.correct);
  visit("speedup", r.speedup);
  visit("score", r.score);
  visit("prompt_tokens", r.prompt_tokens);
  visit("completion_tokens", r.completion_tokens);
  visit("candidate_ms", r.candidate_ms);
  visit("baseline_ms", r.baseline_ms);
  visit("compile_ms", r.compile_ms);
  visit("eval_ms", r.eval_ms);
  visit("cache_hit", r.cache_hit);
  visit("roofline_fraction", r.roofline_fraction);
  visit("baseline_roofline_fraction", r.baseline_roofline_fraction);
  visit("prompt_token_ids", r.prompt_token_ids);
  visit("completion_token_ids", r.completion_token_ids);
  visit("logprobs", r.logprobs);
}

// The JSON of one field's value; presence (null, omitted) is decided by put below.
template <typename T>
Json value_json(const T& value) {
  return Json(value);
}
Json value_json(const std::vector<ChatMessage>& messages) {
  Json out = Json::array();
  for (const auto& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}
template <typename T>
Json value_json(const std::optional<T>& value) {
  return value ? value_json(*value) : Json();
}

template <typename T>
void put(Json& j, const char* name, const T& value) {
  j[name] = value_json(value);
}
template <typename T>
void put(Json& j, const char* name, const Omitted<T>& field) {
  if (field.value) j[name] = value_json(*field.value);
}

// `j[name]` read into `value` when it is there and of the right type; `value` kept otherwise.
template <typename T>
void take(const Json& j, const char* name, T& value) {
  auto got = json_get<T>(j, name);
  if (got.is_ok()) value = *std::move(got);
}
void take(const Json& j, const char* name, std::vector<ChatMessage>& messages) {
  if (!j.is_object() || !j.contains(name) || !j[name].is_array()) return;
  for (const auto& m : j[name]) {
    ChatMessage message;
    take(m, "role", message.role);
    take(m, "content", message.content);
    messages.push_back(std::move(message));
  }
}
template <typename T>
void take(const Json& j, const char* name, std::optional<T>& value) {
  auto got = json_get<T>(j, name);
  if (got.is_ok()) value = *std::move(got);
}
// An Omitted field is there when its key is; a value of the wrong type reads as absent,
// except that an Omitted optional reads it as null.
template <typename T>
void take(const Json& j, const char* name, Omitted<T>& field) {
  if (!j.is_object() || !j.contains(name)) return;
  if constexpr (std::is_same_v<T, std::optional<double>>) {
    take(j, name, field.value.emplace());
  } else {
    take(j, name, field.value);
  }
}

}  // namespace

Json to_json(const TurnRecord& record) {
  Json j = Json::object();
  fields(record, [&](const char* name, const auto& value) { put(j, name, value); });
  return j;
}

TurnRecord parse_turn_record(const Json& record) {
  TurnRecord r;
  if (!record.is_object()) return r;
  fields(r, [&](const char* name, auto& value) { take(record, name, value); });
  return r;
}

Json turn_record(std::optional<int> parent, const TurnKey& key, const env::Prompt& prompt,
                 const policy::Generation& gen, const env::TurnOutcome& t) {
  TurnRecord r;
  r.task = key.task;
  r.trajectory = key.trajectory;
  r.turn = key.turn;
  r.allocation = key.allocation;
  r.parent = parent;
  r.prompt = prompt.messages;
  r.prompt_estimated_tokens = static_cast<int64_t>(prompt.estimated_tokens);
  r.turns_dropped = static_cast<int64_t>(prompt.turns_dropped);
  r.response = gen.content;
  r.reasoning_chars =
      static_cast<int64_t>((gen.reasoning.empty() ? t.reasoning : gen.reasoning).size());
  r.finish_reason = gen.finish_reason;
  r.code = t.code;
  r.summary = t.summary;
  r.verdict = verdict_name(t.verdict);
  r.reason = t.reason;
  r.feedback = t.feedback;
  r.correct = t.correct();
  r.speedup = t.speedup;
  r.score = t.score;
  r.prompt_tokens = gen.prompt_tokens;
  r.completion_tokens = gen.completion_tokens;
  if (!gen.completion_token_ids.empty()) {
    r.prompt_token_ids.value = gen.prompt_token_ids;
    r.completion_token_ids.value = gen.completion_token_ids;
    r.logprobs.value = gen.completion_logprobs;
  }
  if (t.eval) {
    r.candidate_ms = t.eval->candidate_ms;
    r.baseline_ms = t.eval->baseline_ms;
    r.compile_ms = t.eval->compile_ms;
    r.eval_ms = t.eval->total_ms;
    r.cache_hit.value = t.eval->cache_hit;
    if (const auto& sol = t.eval->speed_of_light) {
      // Fractions of the roofline bound: what `kevin report` plots against turns.
      r.roofline_fraction.value =
          sol->candidate ? std::optional(sol->candidate->fraction) : std::nullopt;
      r.baseline_roofline_fraction.value =
          sol->baseline ? std::optional(sol->baseline->fraction) : std::nullopt;
    }
  }
  return to_json(r);
}

env::TurnOutcome outcome_from_record(const Json& record) {
  const TurnRecord r = parse_turn_record(record);
  env::TurnOutcome t;
  t.code = r.code;
  t.summary = r.summary;
  t.verdict = verdict_from_name(r.verdict).value_or(VerdictKind::kParseError);
  t.reason = r.reason;
  t.feedback = r.feedback;
  if (t.correct()) t.speedup = r.speedup;
  t.score = r.score;
  return t;
}

ScoredTurn read_turn(const TurnKey& key, Json record) {
  TurnRecord r = parse_turn_record(record);
  ScoredTurn t;
  t.key = key;
  t.parent = r.parent;
  t.code = std::move(r.code);
  t.finish_reason = std::move(r.finish_reason);
  t.correct = r.correct;
  if (t.correct) t.speedup = r.speedup;
  t.score = r.score;
  t.completion_tokens = r.completion_tokens;
  t.has_tokens = r.prompt_token_ids.value && r.completion_token_ids.value && r.logprobs.value;
  if (t.has_tokens) {
    t.prompt_token_ids = std::move(*r.prompt_token_ids.value);
    t.completion_token_ids = std::move(*r.completion_token_ids.value);
    t.logprobs = std::move(*r.logprobs.value);
  }
  t.record = std::move(record);
  return t;
}

Result<std::vector<ScoredTurn>> scored_turns(const RunStore& store, const RolloutConfig& config) {
  KEVIN_ASSIGN_OR_RETURN(auto stored, store.turns());
  std::vector<ScoredTurn> turns;
  turns.reserve(stored.size());
  for (auto& [key, record] : stored) turns.push_back(read_turn(key, std::move(record)));
  // (allocation, task) → trajectory → its turns in turn order.
  std::map<std::pair<std::string, std::string>, std::map<int, std::vector<ScoredTurn*>>> groups;
  for (auto& t : turns) groups[{t.key.allocation, t.key.task}][t.key.trajectory].push_back(&t);

  for (auto& group : groups) {
    // Not a structured binding: clang 14 (the thread-safety check) cannot capture one.
    auto& trajectories = group.second;
    // Full lineage scores: a beam copy's turns follow its parent's earlier turns.
    const auto lineage_scores = [&](int id, int before_turn,
                                    const auto& self) -> std::vector<double> {
      std::vector<double> scores;
      const auto found = trajectories.find(id);
      if (found == trajectories.end() || found->second.empty()) return scores;  // parent not stored
      const auto& own = found->second;
      const ScoredTurn& first = *own.front();
      if (first.parent) scores = self(*first.parent, first.key.turn, self);
      for (const ScoredTurn* t : own) {
        if (t->key.turn < before_turn) scores.push_back(t->score);
      }
      return scores;
    };
    std::vector<std::vector<double>> own_returns;
    for (auto& [id, records] : trajectories) {
      const std::vector<double> scores =
          lineage_scores(id, std::numeric_limits<int>::max(), lineage_scores);
      const std::vector<double> returns =
          reward::turn_returns(scores, config.gamma, config.return_mode);
      const size_t offset = scores.size() - records.size();
      own_returns.emplace_back(returns.begin() + static_cast<std::ptrdiff_t>(offset),
                               returns.end());
    }
    const auto advantages = reward::advantages(own_returns, config.advantage_mode);
    size_t i = 0;
    for (auto& [id, records] : trajectories) {
      for (size_t t = 0; t < records.size(); ++t) {
        ScoredTurn& turn = *records[t];
        turn.turn_return = own_returns[i][t];
        turn.advantage = advantages[i][t];
        turn.record["return"] = turn.turn_return;
        turn.record["advantage"] = turn.advantage;
      }
      ++i;
    }
  }
  return turns;
}

std::vector<TaskOutcome> task_outcomes(const std::vector<ScoredTurn>& turns,
                                       const std::vector<std::string>& task_ids) {
  std::map<std::string, TaskOutcome> by_task;
  for (const ScoredTurn& t : turns) {
    TaskOutcome& o = by_task[t.key.task];
    ++o.turns;
    if (t.speedup) o.best_speedup = std::max(o.best_speedup.value_or(0.0), *t.speedup);
  }
  std::vector<TaskOutcome> out;
  for (const auto& id : task_ids) {
    TaskOutcome o = by_task[id];
    o.task = id;
    out.push_back(std::move(o));
  }
  return out;
}

Status write_run_outputs(const std::vector<ScoredTurn>& turns, const fs::path& run_dir,
                         const std::string& extension) {
  std::map<std::string, const ScoredTurn*> best;  // task → fastest correct turn
  for (const ScoredTurn& t : turns) {
    if (!t.speedup) continue;
    const ScoredTurn*& b = best[t.key.task];
    if (b == nullptr || *t.speedup > *b->speedup) b = &t;
  }
  std::string lines;
  for (const ScoredTurn& t : turns) lines += dump_json(t.record) + "\n";
  KEVIN_RETURN_IF_ERROR(write_file_atomic(run_dir / "trajectories.jsonl", lines));
  for (const auto& [task, turn] : best) {
    const fs::path file = run_dir / "best" / (task + "." + extension);
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    KEVIN_RETURN_IF_ERROR(write_file_atomic(file, turn->code));
  }
  return Status::ok();
}

}  // namespace kevin::rollout
