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

#include "core/json.h"
#include "env/episode.h"
#include "policy/policy.h"
#include "policy/prompt.h"
#include "policy/response_parser.h"
#include "rollout/rollout.h"
#include "rollout/run_store.h"

namespace kevin::rollout {

// The record stored for one judged turn `key` of a trajectory continued from `parent` (a beam
// copy's source trajectory; none for a first-round trajectory): the prompt as sent, the
// response and its token counts (token ids and log-probabilities when the policy returned
// them), the code, summary, verdict, feedback, speedup and score, and the evaluation's
// timings. The caller adds generation_ms, cached_eval and finished_at.
Json turn_record(std::optional<int> parent, const TurnKey& key, const policy::Prompt& prompt,
                 const policy::Generation& gen, const policy::ParsedResponse& parsed,
                 const env::TurnOutcome& t);
// The turn a stored record describes, for an episode to restore (resume, beam copies): code,
// summary, verdict (parse_error when unknown), reason, feedback, score, and the speedup of a
// correct turn. Missing fields take their defaults; never fails.
env::TurnOutcome outcome_from_record(const Json& r);

// Every stored turn, in key order, with "return" and "advantage" added: returns over each
// trajectory's full lineage, advantages within each (allocation, task) group.
Result<std::vector<std::pair<TurnKey, Json>>> scored_turns(const RunStore& store,
                                                           const RolloutConfig& config);

// What a run did for one task: its stored turns and the best speedup among its correct ones.
struct TaskOutcome {
  std::string task;
  size_t turns = 0;
  std::optional<double> best_speedup;  // none: no correct turn
};
// One outcome per id of `task_ids`, in that order (tasks without stored turns included).
std::vector<TaskOutcome> task_outcomes(const std::vector<std::pair<TurnKey, Json>>& turns,
                                       const std::vector<std::string>& task_ids);

// Writes RUN_DIR/trajectories.jsonl (every turn scored_turns returned, with its return and
// advantage, in key order) and RUN_DIR/best/<task>.<ext> (the fastest correct kernel of each
// task over all allocations; ext "cu" or "cpp").
Status write_run_outputs(const std::vector<std::pair<TurnKey, Json>>& scored,
                         const std::filesystem::path& run_dir, const std::string& extension);

}  // namespace kevin::rollout
