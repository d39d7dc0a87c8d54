// records.cpp — building a turn's record and reading one back, and scoring a run's records:
// returns over each trajectory's full lineage (a beam copy's turns follow its parent's),
// advantages per (allocation, task) group, per-task outcomes, and the run's output files.
#include "rollout/records.h"

#include <algorithm>
#include <limits>
#include <map>

#include "core/file.h"
#include "reward/reward.h"

namespace kevin::rollout {
namespace fs = std::filesystem;

namespace {

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

// `record[key]` as T, or `fallback` when it is missing or of another type.
template <typename T>
T field(const Json& record, std::string_view key, T fallback) {
  auto value = json_get_or<T>(record, key, fallback);
  return value.is_ok() ? *std::move(value) : fallback;
}

template <typename T>
std::optional<T> optional_field(const Json& record, std::string_view key) {
  auto value = json_get<T>(record, key);
  return value.is_ok() ? std::optional<T>(*std::move(value)) : std::nullopt;
}

}  // namespace

Json turn_record(std::optional<int> parent, const TurnKey& key, const env::Prompt& prompt,
                 const policy::Generation& gen, const env::TurnOutcome& t) {
  Json messages = Json::array();
  for (const auto& m : prompt.messages)
    messages.push_back({{"role", m.role}, {"content", m.content}});
  const std::string& reasoning = gen.reasoning.empty() ? t.reasoning : gen.reasoning;
  Json j = {{"task", key.task},
            {"trajectory", key.trajectory},
            {"turn", key.turn},
            {"allocation", key.allocation},
            {"parent", parent ? Json(*parent) : Json()},
            {"prompt", messages},
            {"prompt_estimated_tokens", prompt.estimated_tokens},
            {"turns_dropped", prompt.turns_dropped},
            {"response", gen.content},
            {"reasoning_chars", reasoning.size()},
            {"finish_reason", gen.finish_reason},
            {"code", t.code},
            {"summary", t.summary},
            {"verdict", verdict_name(t.verdict)},
            {"reason", t.reason},
            {"feedback", t.feedback},
            {"correct", t.correct()},
            {"speedup", optional_number(t.speedup)},
            {"score", t.score},
            {"prompt_tokens", gen.prompt_tokens},
            {"completion_tokens", gen.completion_tokens},
            {"candidate_ms", Json()},
            {"baseline_ms", Json()},
            {"compile_ms", 0.0},
            {"eval_ms", 0.0}};
  if (!gen.completion_token_ids.empty()) {
    j["prompt_token_ids"] = gen.prompt_token_ids;
    j["completion_token_ids"] = gen.completion_token_ids;
    j["logprobs"] = gen.completion_logprobs;
  }
  if (t.eval) {
    j["candidate_ms"] = optional_number(t.eval->candidate_ms);
    j["baseline_ms"] = optional_number(t.eval->baseline_ms);
    j["compile_ms"] = t.eval->compile_ms;
    j["eval_ms"] = t.eval->total_ms;
    j["cache_hit"] = t.eval->cache_hit;
    if (const auto& sol = t.eval->speed_of_light) {
      // Fractions of the roofline bound: what `kevin report` plots against turns.
      j["roofline_fraction"] = sol->candidate ? Json(sol->candidate->fraction) : Json();
      j["baseline_roofline_fraction"] = sol->baseline ? Json(sol->baseline->fraction) : Json();
    }
  }
  return j;
}

env::TurnOutcome outcome_from_record(const Json& r) {
  env::TurnOutcome t;
  t.code = field<std::string>(r, "code", "");
  t.summary = field<std::string>(r, "summary", "");
  t.verdict =
      verdict_from_name(field<std::string>(r, "verdict", "")).value_or(VerdictKind::kParseError);
  t.reason = field<std::string>(r, "reason", "");
  t.feedback = field<std::string>(r, "feedback", "");
  if (t.correct()) t.speedup = optional_field<double>(r, "speedup");
  t.score = field<double>(r, "score", 0.0);
  return t;
}

ScoredTurn read_turn(const TurnKey& key, Json record) {
  ScoredTurn t;
  t.key = key;
  t.parent = optional_field<int>(record, "parent");
  t.code = field<std::string>(record, "code", "");
  t.finish_reason = field<std::string>(record, "finish_reason", "");
  t.correct = field<bool>(record, "correct", false);
  if (t.correct) t.speedup = optional_field<double>(record, "speedup");
  t.score = field<double>(record, "score", 0.0);
  t.completion_tokens = field<int64_t>(record, "completion_tokens", 0);
  auto prompt = optional_field<std::vector<int32_t>>(record, "prompt_token_ids");
  auto completion = optional_field<std::vector<int32_t>>(record, "completion_token_ids");
  auto logprobs = optional_field<std::vector<float>>(record, "logprobs");
  t.has_tokens = prompt && completion && logprobs;
  if (t.has_tokens) {
    t.prompt_token_ids = std::move(*prompt);
    t.completion_token_ids = std::move(*completion);
    t.logprobs = std::move(*logprobs);
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
