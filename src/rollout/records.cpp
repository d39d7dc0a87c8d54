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

}  // namespace

Json turn_record(std::optional<int> parent, const TurnKey& key, const policy::Prompt& prompt,
                 const policy::Generation& gen, const policy::ParsedResponse& parsed,
                 const env::TurnOutcome& t) {
  Json messages = Json::array();
  for (const auto& m : prompt.messages)
    messages.push_back({{"role", m.role}, {"content", m.content}});
  const std::string reasoning = gen.reasoning.empty() ? parsed.reasoning : gen.reasoning;
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
  t.code = r.value("code", "");
  t.summary = r.value("summary", "");
  t.verdict = verdict_from_name(r.value("verdict", "")).value_or(VerdictKind::kParseError);
  t.reason = r.value("reason", "");
  t.feedback = r.value("feedback", "");
  if (t.correct() && r.contains("speedup") && r["speedup"].is_number())
    t.speedup = r["speedup"].get<double>();
  t.score = r.value("score", 0.0);
  return t;
}

Result<std::vector<std::pair<TurnKey, Json>>> scored_turns(const RunStore& store,
                                                           const RolloutConfig& config) {
  KEVIN_ASSIGN_OR_RETURN(auto turns, store.turns());
  // (allocation, task) → trajectory → its records in turn order.
  std::map<std::pair<std::string, std::string>, std::map<int, std::vector<Json*>>> groups;
  for (auto& [key, record] : turns)
    groups[{key.allocation, key.task}][key.trajectory].push_back(&record);

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
      const Json& first = *own.front();
      if (first.contains("parent") && first["parent"].is_number_integer()) {
        scores = self(first["parent"].get<int>(), first.value("turn", 0), self);
      }
      for (const Json* r : own) {
        if (r->value("turn", 0) < before_turn) scores.push_back(r->value("score", 0.0));
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
        (*records[t])["return"] = own_returns[i][t];
        (*records[t])["advantage"] = advantages[i][t];
      }
      ++i;
    }
  }
  return turns;
}

std::vector<TaskOutcome> task_outcomes(const std::vector<std::pair<TurnKey, Json>>& turns,
                                       const std::vector<std::string>& task_ids) {
  std::map<std::string, TaskOutcome> by_task;
  for (const auto& [key, r] : turns) {
    TaskOutcome& o = by_task[key.task];
    ++o.turns;
    if (r.value("correct", false) && r.contains("speedup") && r.at("speedup").is_number()) {
      o.best_speedup = std::max(o.best_speedup.value_or(0.0), r.at("speedup").get<double>());
    }
  }
  std::vector<TaskOutcome> out;
  for (const auto& id : task_ids) {
    TaskOutcome o = by_task[id];
    o.task = id;
    out.push_back(std::move(o));
  }
  return out;
}

Status write_run_outputs(const std::vector<std::pair<TurnKey, Json>>& turns,
                         const fs::path& run_dir, const std::string& extension) {
  std::map<std::string, const Json*> best;  // task → fastest correct record
  for (const auto& [key, r] : turns) {
    if (r.value("correct", false) && r.contains("speedup") && r.at("speedup").is_number()) {
      const Json*& b = best[key.task];
      if (b == nullptr || r.at("speedup").get<double>() > b->at("speedup").get<double>()) b = &r;
    }
  }
  std::string lines;
  for (const auto& [key, record] : turns) lines += dump_json(record) + "\n";
  KEVIN_RETURN_IF_ERROR(write_file_atomic(run_dir / "trajectories.jsonl", lines));
  for (const auto& [task, record] : best) {
    const fs::path file = run_dir / "best" / (task + "." + extension);
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    KEVIN_RETURN_IF_ERROR(write_file_atomic(file, record->value("code", "")));
  }
  return Status::ok();
}

}  // namespace kevin::rollout
