// records.h — the turn records of a run (docs/run.md): the JSON record each judged turn is
// stored as, the turn an episode restores from a stored record, and what a finished run makes of
// its records (returns and advantages, per-task outcomes, trajectories.jsonl and best kernels).
// The scheduling that produces the turns is rollout.h.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/chat.h"
#include "core/json.h"
#include "env/episode.h"
#include "policy/policy.h"
#include "env/prompt.h"
#include "rollout/rollout.h"
#include "rollout/run_store.h"

namespace kevin::rollout {

// One judged turn's stored record, typed (docs/run.md, "The run directory"). Its fields are
// listed once (records.cpp), and that list both writes the JSON and reads it back. An empty
// std::optional is written as null; an empty Omitted is left out of the record; an Omitted
// holding an empty std::optional is written as null.
template <typename T>
struct Omitted {
  std::optional<T> value;
};
struct TurnRecord {
  std::string task, allocation;
  int trajectory = 0, turn = 0;
  std::optional<int> parent;  // a beam copy's source trajectory
  std::vector<ChatMessage> prompt;
  int64_t prompt_estimated_tokens = 0, turns_dropped = 0;
  std::string response;
  int64_t reasoning_chars = 0;
  std::string finish_reason, code, summary, verdict, reason, feedback;
  bool correct = false;
  std::optional<double> speedup;
  double score = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::optional<double> candidate_ms, baseline_ms;
  double compile_ms = 0, eval_ms = 0;
  Omitted<bool> cache_hit;  // with an evaluation only
  // With a speed-of-light bound only (each null when that side has none).
  Omitted<std::optional<double>> roofline_fraction, baseline_roofline_fraction;
  // In-process sampling only: the exact tokens and their log-probabilities.
  Omitted<std::vector<int32_t>> prompt_token_ids, completion_token_ids;
  Omitted<std::vector<float>> logprobs;
};
// The record as JSON. A field the caller adds afterwards (generation_ms, ...) is not in it.
Json to_json(const TurnRecord& record);
// The record a stored JSON object holds. A missing or ill-typed field takes its default (an
// absent Omitted stays absent); never fails.
TurnRecord parse_turn_record(const Json& record);

// The record stored for one judged turn `key` of a trajectory continued from `parent` (a beam
// copy's source trajectory; none for a first-round trajectory): the prompt as sent, the
// response and its token counts (token ids and log-probabilities when the policy returned
// them), the code, summary, verdict, feedback, speedup and score, and the evaluation's
// timings. The caller adds generation_ms, cached_eval and finished_at.
Json turn_record(std::optional<int> parent, const TurnKey& key, const env::Prompt& prompt,
                 const policy::Generation& gen, const env::TurnOutcome& t);
// The turn a stored record describes, for an episode to restore (resume, beam copies): code,
// summary, verdict (parse_error when unknown), reason, feedback, score, and the speedup of a
// correct turn. Missing fields take their defaults; never fails.
env::TurnOutcome outcome_from_record(const Json& r);

// A stored turn as a finished run reads it, decoded once from its record (read_turn), with
// its return and advantage (scored_turns). What the trainer and the run's outputs use; no
// reader of a run's turns looks a field up by name.
struct ScoredTurn {
  TurnKey key;
  std::optional<int> parent;  // the trajectory a beam copy continued (none: its own lineage)
  std::string code;
  std::string finish_reason;  // the policy's ("stop", "length", ...)
  bool correct = false;
  std::optional<double> speedup;  // correct turns only
  double score = 0;
  int64_t completion_tokens = 0;
  // The exact tokens and log-probabilities of in-process sampling; has_tokens is false when
  // the record lacks any of the three (a policy that does not report them).
  bool has_tokens = false;
  std::vector<int32_t> prompt_token_ids, completion_token_ids;
  std::vector<float> logprobs;
  double turn_return = 0, advantage = 0;
  Json record;  // the stored record, with "return" and "advantage" once scored
};

// The turn stored as `record` under `key`. A missing or ill-typed field takes its default (a
// stored record is ours, but may be older than this reader); never fails.
ScoredTurn read_turn(const TurnKey& key, Json record);

// Every stored turn, in key order, with its return and advantage (also written into its
// record as "return" and "advantage"): returns over each trajectory's full lineage,
// advantages within each (allocation, task) group.
Result<std::vector<ScoredTurn>> scored_turns(const RunStore& store, const RolloutConfig& config);

// What a run did for one task: its stored turns and the best speedup among its correct ones.
struct TaskOutcome {
  std::string task;
  size_t turns = 0;
  std::optional<double> best_speedup;  // none: no correct turn
};
// One outcome per id of `task_ids`, in that order (tasks without stored turns included).
std::vector<TaskOutcome> task_outcomes(const std::vector<ScoredTurn>& turns,
                                       const std::vector<std::string>& task_ids);

// Writes RUN_DIR/trajectories.jsonl (every turn scored_turns returned, with its return and
// advantage, in key order) and RUN_DIR/best/<task>.<ext> (the fastest correct kernel of each
// task over all allocations; ext "cu" or "cpp").
Status write_run_outputs(const std::vector<ScoredTurn>& scored,
                         const std::filesystem::path& run_dir, const std::string& extension);

}  // namespace kevin::rollout
