// test_records.h — synthetic run records for the report tests (test-only, header-only): full
// records with every field the rollout writes, and the 2-task × 3-trajectory × 3-turn run
// whose metrics metrics_test.cpp works out by hand.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "report/records.h"

namespace kevin::report::testing {

struct KernelSpec {
  const char* verdict;
  double speedup = 0;  // used only when verdict is "correct"
};

// One record as the rollout writes it (prompt, response, code and the rest included).
inline Json turn_record(const std::string& task, const std::string& allocation, int trajectory,
                        int turn, const KernelSpec& kernel,
                        std::optional<int> parent = std::nullopt) {
  const bool correct = std::string(kernel.verdict) == "correct";
  const bool timed = correct && kernel.speedup > 0;
  return {{"task", task},
          {"trajectory", trajectory},
          {"turn", turn},
          {"allocation", allocation},
          {"parent", parent ? Json(*parent) : Json(nullptr)},
          {"prompt", Json::array({{{"role", "user"}, {"content", "write a faster kernel"}}})},
          {"response", "<think>...</think>```cuda\n__global__ void k() {}\n```"},
          {"reasoning_chars", 1200},
          {"code", "__global__ void k() {}"},
          {"summary", "tiled the loop"},
          {"verdict", kernel.verdict},
          {"reason", correct ? "" : "output mismatch"},
          {"feedback", "..."},
          {"correct", correct},
          {"speedup", correct ? Json(kernel.speedup) : Json(nullptr)},
          {"candidate_ms", timed ? Json(2.0 / kernel.speedup) : Json(nullptr)},
          {"baseline_ms", timed ? Json(2.0) : Json(nullptr)},
          {"compile_ms", 100.0},
          {"eval_ms", 50.0},
          {"generation_ms", 1000.0},
          {"finish_reason", "stop"},
          {"score", correct ? 0.3 + kernel.speedup : 0.0},
          {"return", 0.0},
          {"advantage", 0.0},
          {"prompt_tokens", 812},
          {"completion_tokens", -1},
          {"cached_eval", false}};
}

// The records of one trajectory: one per kernel, at turns first_turn, first_turn + 1, ...
inline std::vector<Json> trajectory_records(const std::string& task, const std::string& allocation,
                                            int trajectory, const std::vector<KernelSpec>& kernels,
                                            int first_turn = 0,
                                            std::optional<int> parent = std::nullopt) {
  std::vector<Json> out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    out.push_back(turn_record(task, allocation, trajectory, first_turn + static_cast<int>(i),
                              kernels[i], parent));
  }
  return out;
}

// Allocation "1x2", task lvl/sol: trajectory 0 = correct reaching 0.2 then 0.5 of the roofline
// bound (eager: 0.1 both times); trajectory 1 = a wrong answer carrying fractions (ignored),
// then correct at 0.3 (eager: 0.2).
inline std::vector<Json> speed_of_light_records() {
  const auto with = [](Json r, double fraction, double eager) {
    r["roofline_fraction"] = fraction;
    r["baseline_roofline_fraction"] = eager;
    return r;
  };
  return {with(turn_record("lvl/sol", "1x2", 0, 0, {"correct", 1.5}), 0.2, 0.1),
          with(turn_record("lvl/sol", "1x2", 0, 1, {"correct", 2.0}), 0.5, 0.1),
          with(turn_record("lvl/sol", "1x2", 1, 0, {"wrong_answer"}), 0.9, 0.9),
          with(turn_record("lvl/sol", "1x2", 1, 1, {"correct", 1.1}), 0.3, 0.2)};
}

inline void append(std::vector<Json>& to, const std::vector<Json>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

// Allocation "3x3". Task lvl/a: trajectory 0 = wrong, 1.2x, 0.8x; 1 = compile, compile, wrong;
// 2 = 2.0x, 0.5x, runtime. Task lvl/b: 0 = parse, timeout, 0.5x; 1 and 2 = wrong x3.
inline std::vector<Json> two_task_records() {
  const KernelSpec wrong{"wrong_answer"};
  std::vector<Json> r;
  append(r, trajectory_records("lvl/a", "3x3", 0, {wrong, {"correct", 1.2}, {"correct", 0.8}}));
  append(r, trajectory_records("lvl/a", "3x3", 1, {{"compile_error"}, {"compile_error"}, wrong}));
  append(r, trajectory_records("lvl/a", "3x3", 2,
                               {{"correct", 2.0}, {"correct", 0.5}, {"runtime_error"}}));
  append(r,
         trajectory_records("lvl/b", "3x3", 0, {{"parse_error"}, {"timeout"}, {"correct", 0.5}}));
  append(r, trajectory_records("lvl/b", "3x3", 1, {wrong, wrong, wrong}));
  append(r, trajectory_records("lvl/b", "3x3", 2, {wrong, wrong, wrong}));
  return r;
}

// Rows from records, through the same conversion read_trajectories uses.
inline std::vector<TurnRow> rows_of(const std::vector<Json>& records) {
  std::vector<TurnRow> rows;
  for (const Json& record : records) {
    auto row = turn_row_from_json(record);
    EXPECT_TRUE(row.is_ok()) << row.status().to_string();
    if (row.is_ok()) rows.push_back(std::move(row).value());
  }
  return rows;
}

inline std::string jsonl(const std::vector<Json>& records) {
  std::string text;
  for (const Json& record : records) text += dump_json(record) + "\n";
  return text;
}

}  // namespace kevin::report::testing
