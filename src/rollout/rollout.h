// rollout.h — the paper's multi-turn loop over many tasks (docs/run.md,
// after the Kevin paper): for every task, m trajectories of n turns in which the policy writes a
// kernel, the environment judges it and the next prompt carries the earlier kernels, summaries and
// feedback. Trajectories advance independently on a pool of threads, so generation and
// evaluation overlap; every finished turn goes to the RunStore at once, and turns already
// stored are restored instead of redone (resume). Beam search (test-time only) keeps the best
// trajectories after each round of turns and continues copies of them.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "env/evaluator.h"
#include "policy/policy.h"
#include "env/prompt.h"
#include "reward/reward.h"
#include "rollout/run_store.h"
#include "tasks/suite.h"

namespace kevin::rollout {

// m trajectories of n turns per task.
struct Allocation {
  int trajectories = 16;
  int turns = 8;
  std::string label() const { return std::to_string(trajectories) + "x" + std::to_string(turns); }
};
// "16x8" → {16, 8}; kInvalidArgument otherwise.
Result<Allocation> parse_allocation(const std::string& text);
// The allocations of a fixed budget of `kernels` per task compared by --budget: m x n for
// n in {8, 4, 1} where n divides the budget (e.g. 128 → 16x8, 32x4, 128x1).
std::vector<Allocation> budget_allocations(int kernels);

// Beam search (the blog's test-time variant, docs/run.md): `rounds` rounds of `turns`
// turns over `trajectories` trajectories; after each round the `width` trajectories with
// the fastest correct kernel (ties: more correct turns, then lower id) are kept and each is
// copied trajectories/width times, the copies continuing from its history.
struct BeamConfig {
  int width = 4;
  int rounds = 2;
};

struct RolloutConfig {
  std::vector<Allocation> allocations{Allocation{}};
  bool beam = false;  // one beam search with allocations[0] as trajectories x turns per round
  BeamConfig beam_config;
  env::PromptConfig prompt;
  policy::GenerationParams generation;
  reward::ScoreConfig score;
  double gamma = 0.4;
  reward::ReturnMode return_mode = reward::ReturnMode::kDiscountedSum;
  reward::AdvantageMode advantage_mode = reward::AdvantageMode::kGroup;
  size_t max_summary_chars = 2000;
  int parallel = 16;  // trajectories advancing at once
};
// The config as config.json stores it, and back; kInvalidArgument names a missing or
// ill-typed key, an unknown mode or an empty allocation list.
Json to_json(const RolloutConfig& c);
Result<RolloutConfig> rollout_config_from_json(const Json& j);

// Live counters for progress displays; written by the rollout, read by anyone.
struct Progress {
  std::atomic<size_t> turns_total{0}, turns_done{0}, turns_restored{0};
  std::atomic<size_t> tasks_total{0}, tasks_done{0};
  std::atomic<int> generating{0}, evaluating{0};
  std::atomic<size_t> correct{0};
  std::atomic<double> best_speedup{0};
};

class Rollout {
 public:
  // All pointers are borrowed and must outlive run().
  Rollout(RolloutConfig config, policy::Policy* policy, env::Evaluator* evaluator, RunStore* store,
          Progress* progress)
      : config_(std::move(config)),
        policy_(policy),
        evaluator_(evaluator),
        store_(store),
        progress_(progress) {}

  // Runs every allocation over `tasks` until all turns are stored. A policy or harness
  // failure stops new turns (turns in flight finish and are stored) and is returned; the run
  // can be resumed later. A task whose problem statement cannot be built fails the run.
  // Once `interrupt` (optional, borrowed) reads true, no turn starts, generations in progress
  // are abandoned (not stored), evaluations in progress finish and are stored, and run()
  // returns kCancelled. An evaluation that fails with kCancelled (the evaluator's reference
  // preparation stopped by the same interrupt) is not a verdict: its turn is not stored and
  // run() returns kCancelled.
  Status run(const std::vector<tasks::TaskInfo>& tasks,
             const std::atomic<bool>* interrupt = nullptr);

 private:
  struct Impl;
  RolloutConfig config_;
  policy::Policy* policy_;
  env::Evaluator* evaluator_;
  RunStore* store_;
  Progress* progress_;
};

}  // namespace kevin::rollout
