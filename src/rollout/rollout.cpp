// rollout.cpp — the trajectory scheduler: a queue of trajectory segments served by a pool of
// threads, per-(allocation, task) groups that open the next beam round when a round ends,
// and the turn itself (prompt → generation → parse → judge → record → store).
#include "rollout/rollout.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "core/log.h"
#include "core/mutex.h"
#include "core/parallel.h"
#include "core/sha256.h"
#include "env/episode.h"
#include "env/reply.h"
#include "rollout/records.h"

namespace kevin::rollout {

Result<Allocation> parse_allocation(const std::string& text) {
  const auto bad = [&] {
    return invalid_argument("allocation '" + text + "': expected TRAJECTORIESxTURNS, e.g. 16x8");
  };
  const auto x = text.find('x');
  if (x == std::string::npos) return bad();
  Allocation a;
  const char* end = text.data() + text.size();
  const auto m = std::from_chars(text.data(), text.data() + x, a.trajectories);
  const auto n = std::from_chars(text.data() + x + 1, end, a.turns);
  if (m.ec != std::errc() || m.ptr != text.data() + x || n.ec != std::errc() || n.ptr != end)
    return bad();
  if (a.trajectories < 1 || a.turns < 1)
    return invalid_argument("allocation '" + text + "': both numbers must be >= 1");
  return a;
}

std::vector<Allocation> budget_allocations(int kernels) {
  std::vector<Allocation> out;
  for (int turns : {8, 4, 1}) {
    if (kernels >= turns && kernels % turns == 0) out.push_back({kernels / turns, turns});
  }
  return out;
}

Json to_json(const RolloutConfig& c) {
  Json allocations = Json::array();
  for (const auto& a : c.allocations) allocations.push_back(a.label());
  Json j = {{"allocations", allocations},
            {"search", c.beam ? "beam" : "none"},
            {"beam_width", c.beam_config.width},
            {"beam_rounds", c.beam_config.rounds},
            {"temperature", c.generation.temperature},
            {"top_p", c.generation.top_p},
            {"max_tokens", c.generation.max_tokens},
            {"stop", c.generation.stop},
            {"context_tokens", c.prompt.context_tokens},
            {"max_feedback_chars", c.prompt.max_feedback_chars},
            {"max_summary_chars", c.max_summary_chars},
            {"correct_bonus", c.score.correct_bonus},
            {"speedup_cap", c.score.speedup_cap ? Json(*c.score.speedup_cap) : Json()},
            {"speedup_lower_bound", c.score.speedup_lower_bound},
            {"gamma", c.gamma},
            {"returns", c.return_mode == reward::ReturnMode::kDiscountedSum ? "sum" : "max"},
            {"parallel", c.parallel}};
  switch (c.advantage_mode) {
    case reward::AdvantageMode::kGroup:
      j["advantages"] = "group";
      break;
    case reward::AdvantageMode::kPerTurn:
      j["advantages"] = "per_turn";
      break;
    case reward::AdvantageMode::kLeaveOneOut:
      j["advantages"] = "leave_one_out";
      break;
  }
  return j;
}

Result<RolloutConfig> rollout_config_from_json(const Json& j) {
  RolloutConfig c;
  c.allocations.clear();
  KEVIN_ASSIGN_OR_RETURN(auto labels, json_get<std::vector<std::string>>(j, "allocations"));
  for (const auto& l : labels) {
    KEVIN_ASSIGN_OR_RETURN(Allocation a, parse_allocation(l));
    c.allocations.push_back(a);
  }
  if (c.allocations.empty()) return invalid_argument("config: no allocations");
  KEVIN_ASSIGN_OR_RETURN(std::string search, json_get<std::string>(j, "search"));
  c.beam = search == "beam";
  KEVIN_ASSIGN_OR_RETURN(c.beam_config.width, json_get<int>(j, "beam_width"));
  KEVIN_ASSIGN_OR_RETURN(c.beam_config.rounds, json_get<int>(j, "beam_rounds"));
  KEVIN_ASSIGN_OR_RETURN(c.generation.temperature, json_get<double>(j, "temperature"));
  KEVIN_ASSIGN_OR_RETURN(c.generation.top_p, json_get<double>(j, "top_p"));
  KEVIN_ASSIGN_OR_RETURN(c.generation.max_tokens, json_get<int>(j, "max_tokens"));
  KEVIN_ASSIGN_OR_RETURN(c.generation.stop, json_get<std::vector<std::string>>(j, "stop"));
  KEVIN_ASSIGN_OR_RETURN(c.prompt.context_tokens, json_get<size_t>(j, "context_tokens"));
  KEVIN_ASSIGN_OR_RETURN(c.prompt.max_feedback_chars, json_get<size_t>(j, "max_feedback_chars"));
  KEVIN_ASSIGN_OR_RETURN(c.max_summary_chars, json_get<size_t>(j, "max_summary_chars"));
  KEVIN_ASSIGN_OR_RETURN(c.score.correct_bonus, json_get<double>(j, "correct_bonus"));
  if (j.contains("speedup_cap") && !j["speedup_cap"].is_null()) {
    KEVIN_ASSIGN_OR_RETURN(double cap, json_get<double>(j, "speedup_cap"));
    c.score.speedup_cap = cap;
  }
  // Runs written before the option score the median.
  KEVIN_ASSIGN_OR_RETURN(c.score.speedup_lower_bound,
                         json_get_or<bool>(j, "speedup_lower_bound", false));
  KEVIN_ASSIGN_OR_RETURN(c.gamma, json_get<double>(j, "gamma"));
  KEVIN_ASSIGN_OR_RETURN(std::string returns, json_get<std::string>(j, "returns"));
  KEVIN_ASSIGN_OR_RETURN(std::string advantages, json_get<std::string>(j, "advantages"));
  const auto rm = reward::return_mode_from_name(returns);
  const auto am = reward::advantage_mode_from_name(advantages);
  if (!rm || !am) return invalid_argument("config: unknown returns/advantages mode");
  c.return_mode = *rm;
  c.advantage_mode = *am;
  KEVIN_ASSIGN_OR_RETURN(c.parallel, json_get<int>(j, "parallel"));
  return c;
}

namespace {

// One (allocation, task): its trajectories' full histories and the current beam round.
struct Group {
  std::string label;
  Allocation allocation;
  tasks::TaskInfo task;
  std::string problem;
  int round = 0;
  int pending = 0;                                         // segments of this round not yet done
  std::map<int, std::vector<env::TurnOutcome>> histories;  // trajectory → every turn it has seen
  std::vector<int> round_members;
};

// Turns [first_turn, end_turn) of one trajectory, which inherits `inherited` from `parent`.
struct Segment {
  Group* group = nullptr;
  int trajectory = 0;
  std::optional<int> parent;
  int first_turn = 0, end_turn = 0;
  std::vector<env::TurnOutcome> inherited;
};

// Wall-clock time as Unix seconds with millisecond digits (the report's start and end).
double unix_seconds_now() {
  const auto since = std::chrono::system_clock::now().time_since_epoch();
  return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(since).count()) /
         1000.0;
}

void raise_best(std::atomic<double>& best, double value) {
  double seen = best.load();
  while (value > seen && !best.compare_exchange_weak(seen, value)) {
  }
}

}  // namespace

struct Rollout::Impl {
  Impl(Rollout& owner, env::Evaluator* shared) : r(owner), evaluator(shared) {}

  Rollout& r;
  env::Evaluator* evaluator;  // identical kernels are judged once
  std::map<TurnKey, Json> stored;
  std::deque<Group> groups;  // stable addresses
  // Guards the schedule below and the groups' rounds (pending, histories, round members).
  Mutex mu;
  CondVar cv;
  std::deque<Segment> queue GUARDED_BY(mu);
  int active GUARDED_BY(mu) = 0;  // segments being run
  bool stopping GUARDED_BY(mu) = false;
  Status first_error GUARDED_BY(mu);
  std::set<std::string> judged GUARDED_BY(mu);  // task id + code hash, for cached_eval
  const std::atomic<bool>* interrupt = nullptr;

  bool interrupted() const { return interrupt != nullptr && interrupt->load(); }

  void enqueue_round(Group& g, std::vector<Segment> segments) REQUIRES(mu) {
    g.pending = static_cast<int>(segments.size());
    g.round_members.clear();
    for (auto& s : segments) {
      g.round_members.push_back(s.trajectory);
      queue.push_back(std::move(s));
    }
  }

  void start_group(Group& g) REQUIRES(mu) {
    std::vector<Segment> first;
    for (int t = 0; t < g.allocation.trajectories; ++t) {
      first.push_back(Segment{&g, t, std::nullopt, 0, g.allocation.turns, {}});
    }
    enqueue_round(g, std::move(first));
  }

  // Called when the last segment of a round is done.
  void close_round(Group& g) REQUIRES(mu) {
    if (stopping || !r.config_.beam || g.round + 1 >= r.config_.beam_config.rounds) {
      ++r.progress_->tasks_done;
      return;
    }
    std::vector<int> ranked = g.round_members;
    const auto stats = [&](int id) {
      double best = 0;
      int correct = 0;
      for (const auto& t : g.histories[id]) {
        if (t.correct()) {
          best = std::max(best, t.speedup.value_or(0));
          ++correct;
        }
      }
      return std::make_pair(best, correct);
    };
    std::sort(ranked.begin(), ranked.end(), [&](int a, int b) {
      const auto sa = stats(a), sb = stats(b);
      if (sa != sb) return sa > sb;
      return a < b;
    });
    const int m = g.allocation.trajectories, n = g.allocation.turns;
    const int width = std::clamp(r.config_.beam_config.width, 1, m);
    const int copies = std::max(1, m / width);
    ++g.round;
    std::vector<Segment> next;
    for (int j = 0; j < m; ++j) {
      const int parent = ranked[static_cast<size_t>(std::min(j / copies, width - 1))];
      next.push_back(Segment{&g, g.round * m + j, parent, g.round * n, (g.round + 1) * n,
                             g.histories[parent]});
    }
    enqueue_round(g, std::move(next));
  }

  void worker() {
    while (std::optional<Segment> s = next_segment()) {
      std::vector<env::TurnOutcome> history;
      Status st = run_segment(*s, &history);
      finish_segment(*s, std::move(st), std::move(history));
    }
  }

  // The next segment to run (counted active); nullopt once nothing is queued and nothing is
  // running, when no more work can appear. After a failure, queued segments are dropped.
  std::optional<Segment> next_segment() {
    MutexLock lock(mu);
    while (true) {
      while (queue.empty() && active > 0) cv.wait(mu);
      if (queue.empty()) return std::nullopt;
      Segment s = std::move(queue.front());
      queue.pop_front();
      if (stopping) {
        cv.notify_all();
        continue;
      }
      ++active;
      return s;
    }
  }

  void finish_segment(const Segment& s, Status st, std::vector<env::TurnOutcome> history) {
    MutexLock lock(mu);
    --active;
    if (!st.is_ok() && !stopping) {
      stopping = true;
      first_error = std::move(st);
    }
    Group& g = *s.group;
    g.histories[s.trajectory] = std::move(history);
    if (--g.pending == 0) close_round(g);
    cv.notify_all();
  }

  Status run_segment(const Segment& s, std::vector<env::TurnOutcome>* history) {
    const Group& g = *s.group;
    env::Episode episode(g.task, g.problem, evaluator, r.config_.score);
    for (const auto& t : s.inherited) episode.restore(t);
    Status status;
    for (int turn = s.first_turn; turn < s.end_turn; ++turn) {
      {
        MutexLock lock(mu);
        if (stopping) break;
      }
      if (interrupted()) {
        status = cancelled("interrupted");
        break;
      }
      const TurnKey key{g.label, g.task.id, s.trajectory, turn};
      if (auto it = stored.find(key); it != stored.end()) {
        episode.restore(outcome_from_record(it->second));
        note_judged(g.task.id, it->second.value("code", ""));
        count_turn(episode.turns().back(), true);
        continue;
      }
      status = run_turn(s, key, &episode);
      if (!status.is_ok()) break;
    }
    *history = episode.turns();
    return status;
  }

  // True when this task's run has judged `code` before.
  bool note_judged(const std::string& task, const std::string& code) {
    MutexLock lock(mu);
    return !judged.insert(task + "\n" + sha256_hex(code)).second;
  }

  void count_turn(const env::TurnOutcome& t, bool restored) {
    ++r.progress_->turns_done;
    if (restored) ++r.progress_->turns_restored;
    if (t.correct()) {
      ++r.progress_->correct;
      raise_best(r.progress_->best_speedup, t.speedup.value_or(0));
    }
  }

  Status run_turn(const Segment& s, const TurnKey& key, env::Episode* episode) {
    const Group& g = *s.group;
    const env::Prompt prompt = episode->next_prompt(r.config_.prompt);

    ++r.progress_->generating;
    const auto gen_start = std::chrono::steady_clock::now();
    policy::GenerationParams params = r.config_.generation;
    params.cancel = interrupt;
    auto generated = r.policy_->generate(prompt.messages, params);
    const double generation_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - gen_start)
            .count();
    --r.progress_->generating;
    if (!generated.is_ok()) {
      if (interrupted()) return cancelled("interrupted");
      return Status(generated.status().code(),
                    "policy " + r.policy_->name() + ": " + generated.status().message());
    }
    // An answer that arrives after Ctrl-C is not judged: its evaluation could first prepare
    // the task's reference data, minutes after the user asked to stop.
    if (interrupted()) return cancelled("interrupted");
    const policy::Generation& gen = *generated;
    env::ReplyRules rules;
    rules.format = r.config_.prompt.format;
    rules.max_summary = r.config_.max_summary_chars;
    if (gen.truncated()) rules.cut_off_at_tokens = r.config_.generation.max_tokens;
    const env::Action action = env::read_reply(gen.content, rules);
    const bool seen = action.parsed && note_judged(g.task.id, action.code);
    ++r.progress_->evaluating;
    auto judged_turn = episode->step(action);
    --r.progress_->evaluating;
    if (!judged_turn.is_ok()) {
      // Reference preparation stopped by Ctrl-C: no verdict on the candidate, and the turn is
      // not stored (--resume generates it again).
      if (judged_turn.status().code() == StatusCode::kCancelled) return cancelled("interrupted");
      return Status(judged_turn.status().code(),
                    g.task.id + ": evaluation failed: " + judged_turn.status().message());
    }
    const env::TurnOutcome& t = *judged_turn;
    Json record = turn_record(s.parent, key, prompt, gen, t);
    record["generation_ms"] = gen.latency_ms > 0 ? gen.latency_ms : generation_ms;
    record["cached_eval"] = seen;
    record["finished_at"] = unix_seconds_now();
    KEVIN_RETURN_IF_ERROR(r.store_->put_turn(key, record));
    count_turn(t, false);
    return Status::ok();
  }
};

Status Rollout::run(const std::vector<tasks::TaskInfo>& tasks, const std::atomic<bool>* interrupt) {
  env::SharingEvaluator sharing(evaluator_);
  Impl impl(*this, &sharing);
  impl.interrupt = interrupt;
  KEVIN_ASSIGN_OR_RETURN(auto stored, store_->turns());
  for (auto& [key, record] : stored) impl.stored.emplace(key, std::move(record));

  const std::vector<Allocation> allocations =
      config_.beam ? std::vector<Allocation>{config_.allocations.front()} : config_.allocations;
  const size_t rounds =
      config_.beam ? static_cast<size_t>(std::max(1, config_.beam_config.rounds)) : 1;
  // Totals first: the progress display shows them while the problem statements are built.
  for (const auto& a : allocations) {
    progress_->turns_total +=
        tasks.size() * static_cast<size_t>(a.trajectories) * static_cast<size_t>(a.turns) * rounds;
    progress_->tasks_total += tasks.size();
  }
  for (const auto& task : tasks) {
    if (impl.interrupted()) return cancelled("interrupted");
    KEVIN_ASSIGN_OR_RETURN(std::string problem, evaluator_->problem(task));
    for (const auto& a : allocations) {
      impl.groups.push_back(
          Group{config_.beam ? "beam" : a.label(), a, task, problem, 0, 0, {}, {}});
    }
  }
  {
    MutexLock lock(impl.mu);
    for (auto& g : impl.groups) impl.start_group(g);
  }
  run_workers(static_cast<size_t>(std::max(1, config_.parallel)),
              [&impl](size_t) { impl.worker(); });
  MutexLock lock(impl.mu);
  return impl.first_error;
}

}  // namespace kevin::rollout
