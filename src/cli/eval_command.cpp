// eval_command.cpp — `kevin eval`: evaluate one candidate (or a JSONL batch of pairs)
// against tasks; prints a human report, one JSON object, or JSON lines / a table (batch).
#include <cstdint>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <ctime>
#include <iomanip>
#include <regex>
#include <map>
#include <ostream>
#include <sstream>

#include "cli/app.h"
#include "cli/engine_flags.h"
#include "cli/paths.h"
#include "cli/run_setup.h"
#include "core/file.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/parallel.h"
#include "env/engine_evaluator.h"
#include "sys/cuda_probe.h"

namespace kevin::cli {
namespace fs = std::filesystem;

namespace {

struct EvalArgs {
  std::string task, candidate, batch;
  EngineFlags engine;
  QueueFlags queue;  // judge on remote workers instead
  bool json = false, table = false, fresh_seeds = false, fresh_baseline = false, full_size = false;
  bool fail_unless_correct = false;
};

// Exit code of --fail-unless-correct when everything was evaluated but not all was correct.
constexpr int kExitNotCorrect = 3;

// The backend `--backend auto` means on this machine.
engine::Backend local_backend(const EvalArgs& a) {
  if (a.engine.backend != "auto") return *engine::backend_from_name(a.engine.backend);
  return sys::cuda_device_count() > 0 ? engine::Backend::kCuda : engine::Backend::kCpu;
}

// Whether `source` uses CUDA (kernels, launches, the CUDA runtime). A .cu file without any is
// a C++ candidate: what `kevin tasks show --template x.cu` writes on a machine without a GPU.
bool uses_cuda(std::string_view source) {
  static const std::regex kCuda(
      R"(__global__|__device__|<<<|\bcuda[A-Z]\w*|#\s*include\s*[<"]cuda)");
  return std::regex_search(source.begin(), source.end(), kCuda);
}

// A CUDA source given to the CPU backend, said plainly instead of as g++'s errors.
Status check_candidate_kind(const EvalArgs& a, const fs::path& candidate, std::string_view source) {
  if (!a.queue.queue.empty() || candidate.extension() != ".cu" ||
      local_backend(a) != engine::Backend::kCpu || !uses_cuda(source)) {
    return Status::ok();
  }
  if (a.engine.backend == "auto") {
    return failed_precondition(
        candidate.string() +
        " is a CUDA candidate and this machine has no GPU CUDA can use: "
        "the CPU backend takes C++ (.cpp) candidates. Run it on a GPU machine, or on GPU "
        "workers with --queue (docs/distributed.md)");
  }
  return invalid_argument(candidate.string() +
                          " is a CUDA candidate; --backend cpu takes C++ (.cpp) candidates");
}

// The engine settings of this command's flags, with the eval-only ones (fresh data).
Json eval_settings(const EvalArgs& a) {
  Json settings = a.engine.settings();
  settings["fresh_seeds"] = a.fresh_seeds;
  settings["fresh_baseline"] = a.fresh_baseline;
  if (a.engine.format == "auto" && !a.candidate.empty()) {
    // One candidate: its format is known now, and kevin's ABI needs no PyTorch toolchain.
    if (auto text = read_file(a.candidate, size_t{64} << 20); text.is_ok()) {
      settings["format"] = engine::format_name(engine::detect_format(*text));
    }
  }
  return settings;
}

// The local engine for this command's flags.
Result<std::unique_ptr<env::EngineEvaluator>> make_evaluator(const EvalArgs& a) {
  KEVIN_ASSIGN_OR_RETURN(const Json resolved, resolve_engine_json(eval_settings(a)));
  KEVIN_ASSIGN_OR_RETURN(const env::EngineOptions options, engine_options(resolved));
  return env::EngineEvaluator::create(options);
}

std::string ms(const std::optional<double>& v, int precision = 4) {
  if (!v) return "-";
  std::ostringstream o;
  o << std::setprecision(precision) << *v;
  return o.str();
}

// "just now", "12 min ago", "3.5 h ago": how old a baseline measured at `unix_seconds` is.
std::string age(int64_t unix_seconds, int64_t now) {
  const int64_t s = std::max<int64_t>(0, now - unix_seconds);
  if (s < 60) return "just now";
  if (s < 3600) return std::to_string(s / 60) + " min ago";
  std::ostringstream o;
  o << std::setprecision(2) << static_cast<double>(s) / 3600.0 << " h ago";
  return o.str();
}

// Where the baseline time comes from: re-timed after the candidate, or a cached measurement
// of that age (with how to re-measure it).
std::string baseline_origin(const engine::EvalResult& r) {
  if (r.baseline_source == "retimed") return "re-timed once the candidate was gone";
  if (r.baseline->measured_at <= 0) return "cached";
  const std::string when = age(r.baseline->measured_at, static_cast<int64_t>(std::time(nullptr)));
  return when == "just now" ? "measured just now"
                            : "measured " + when + "; --fresh-baseline re-times it";
}

void print_human(std::ostream& out, const std::string& task, const engine::EvalResult& r) {
  out << "task         " << task << (r.device_name.empty() ? "" : " on " + r.device_name) << "\n";
  out << "verdict      " << verdict_name(r.verdict)
      << (r.reason.empty() ? "" : " (" + r.reason + ")") << "\n";
  out << "compile      " << ms(r.compile_ms, 5) << " ms" << (r.cache_hit ? " (cache hit)" : "")
      << "\n";
  if (r.max_abs_error) {
    out << "correctness  max abs error " << ms(r.max_abs_error) << ", max rel error "
        << ms(r.max_rel_error) << "\n";
  }
  if (r.timing) {
    out << "candidate    " << ms(r.timing->median_ms) << " ms median (min " << ms(r.timing->min_ms)
        << ", p90 " << ms(r.timing->p90_ms) << ", " << r.timing->calls << " timed calls)\n";
  }
  if (r.baseline) {
    out << "baseline     " << ms(r.baseline->median_ms) << " ms median (PyTorch eager, "
        << r.baseline->calls << " timed calls, " << baseline_origin(r) << ")\n";
  }
  if (r.speedup) out << "speedup      " << ms(r.speedup, 3) << "x\n";
  if (const auto& sol = r.speed_of_light) {
    out << "roofline     " << ms(sol->bound_ms) << " ms bound (" << sol->limit << "-bound)";
    if (sol->candidate) out << ", kernel at " << ms(100 * sol->candidate->fraction, 3) << "%";
    if (sol->baseline) out << ", baseline at " << ms(100 * sol->baseline->fraction, 3) << "%";
    out << "\n";
  }
  out << "sandbox      " << (r.sandbox_enforced.empty() ? std::string("none") : [&] {
    std::string s;
    for (const auto& e : r.sandbox_enforced) s += (s.empty() ? "" : ", ") + e;
    return s;
  }()) << "\n";
  out << "total        " << ms(r.total_ms, 5) << " ms\n";
  out << "feedback (as the model receives it):\n";
  std::istringstream lines(r.feedback);
  for (std::string line; std::getline(lines, line);) out << "  | " << line << "\n";
}

Result<std::string> read_candidate(const fs::path& path) {
  return read_file(path, size_t{64} << 20);
}

// How this command judges a (task file, source) pair: on this machine's engine, reference data
// prepared once per task, or on remote workers, which prepare their own. Thread-safe.
class PairJudge {
 public:
  virtual ~PairJudge() = default;
  // Whether `task` may run here at all (the CPU backend's full-size check; remote workers
  // decide for themselves). kInvalidArgument says why not: a usage error.
  virtual Status admit(const fs::path&) { return Status::ok(); }
  // Reference data for `task` before any candidate of it (a no-op for remote workers).
  virtual Status prepare(const fs::path& task) = 0;
  virtual Result<engine::EvalResult> judge(const fs::path& task, const std::string& source) = 0;
};

class LocalJudge final : public PairJudge {
 public:
  // `seeds` and `full_size` decide whether a task at full size may run on the CPU.
  LocalJudge(std::unique_ptr<env::EngineEvaluator> ev, int seeds, bool full_size)
      : ev_(std::move(ev)), seeds_(seeds), full_size_(full_size) {}
  Status admit(const fs::path& task) override {
    return check_cpu_call_size(ev_.get(), task, seeds_, full_size_);
  }
  Status prepare(const fs::path& task) override {
    {
      MutexLock lock(mu_);
      if (refs_.count(task)) return refs_.at(task).status();
    }
    // Made outside the lock: other tasks prepare meanwhile (the provider serves them on
    // workers of their own). A task asked for twice at once is made twice; the first is kept.
    Result<engine::ReferenceSet> made = ev_->reference(task);
    MutexLock lock(mu_);
    return refs_.emplace(task, std::move(made)).first->second.status();
  }
  Result<engine::EvalResult> judge(const fs::path& task, const std::string& source) override {
    KEVIN_RETURN_IF_ERROR(prepare(task));
    return ev_->judge(source, reference(task));
  }

 private:
  // The prepared (and successfully made) reference of `task`, copied out of the map.
  engine::ReferenceSet reference(const fs::path& task) {
    MutexLock lock(mu_);
    return refs_.at(task).value();
  }

  std::unique_ptr<env::EngineEvaluator> ev_;
  int seeds_;
  bool full_size_;
  Mutex mu_;
  std::map<fs::path, Result<engine::ReferenceSet>> refs_ GUARDED_BY(mu_);
};

class RemoteJudge final : public PairJudge {
 public:
  explicit RemoteJudge(std::unique_ptr<env::Evaluator> ev) : ev_(std::move(ev)) {}
  Status prepare(const fs::path&) override { return Status::ok(); }
  Result<engine::EvalResult> judge(const fs::path& task, const std::string& source) override {
    return ev_->evaluate({task.stem().string(), "eval", "unknown", task}, source);
  }

 private:
  std::unique_ptr<env::Evaluator> ev_;
};

Result<std::unique_ptr<PairJudge>> make_judge(const EvalArgs& a) {
  if (a.queue.queue.empty()) {
    KEVIN_ASSIGN_OR_RETURN(auto local, make_evaluator(a));
    return std::unique_ptr<PairJudge>(
        std::make_unique<LocalJudge>(std::move(local), a.engine.seeds, a.full_size));
  }
  // The judging settings travel with every job (workers judging otherwise refuse it).
  KEVIN_ASSIGN_OR_RETURN(Json engine, resolve_engine_json(a.queue.with_queue(eval_settings(a))));
  KEVIN_ASSIGN_OR_RETURN(auto remote, cli::make_evaluator(engine));
  return std::unique_ptr<PairJudge>(std::make_unique<RemoteJudge>(std::move(remote)));
}

int eval_single(const EvalArgs& a, PairJudge& judge, std::ostream& out, std::ostream& err) {
  auto source = read_candidate(a.candidate);
  if (!source.is_ok()) {
    err << "kevin eval: " << source.status().message() << "\n";
    return kExitUsage;
  }
  if (Status kind = check_candidate_kind(a, a.candidate, *source); !kind.is_ok())
    return report_failure(err, "eval", kind);
  if (Status admitted = judge.admit(a.task); !admitted.is_ok()) {
    err << "kevin eval: " << admitted.message() << "\n";
    return kExitUsage;
  }
  if (Status prepared = judge.prepare(a.task); !prepared.is_ok()) {
    err << "kevin eval: " << prepared.message() << "\n";
    return kExitFailure;
  }
  auto result = judge.judge(a.task, *source);
  if (!result.is_ok()) {
    err << "kevin eval: evaluation failed: " << result.status().message() << "\n";
    return kExitFailure;
  }
  if (a.json) {
    Json j = engine::to_json(*result);
    j["task"] = a.task;
    j["candidate"] = a.candidate;
    out << dump_json(j) << "\n";
  } else {
    print_human(out, fs::path(a.task).stem().string(), *result);
  }
  return a.fail_unless_correct && !result->correct() ? kExitNotCorrect : kExitOk;
}

struct Pair {
  size_t index;
  fs::path task, candidate;
  std::string error;  // set when the line itself is unusable
};

Result<std::vector<Pair>> read_pairs(const fs::path& file) {
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(file, size_t{64} << 20));
  KEVIN_ASSIGN_OR_RETURN(auto docs, parse_json_lines(text));
  const fs::path base = fs::absolute(file).parent_path();
  std::vector<Pair> pairs;
  for (size_t i = 0; i < docs.size(); ++i) {
    Pair p{i, {}, {}, {}};
    auto task = json_get<std::string>(docs[i], "task");
    auto cand = json_get<std::string>(docs[i], "candidate");
    if (!task.is_ok() || !cand.is_ok()) {
      p.error =
          "entry " + std::to_string(i + 1) + ": needs string fields \"task\" and \"candidate\"";
    } else {
      p.task = fs::path(*task).is_absolute() ? fs::path(*task) : base / *task;
      p.candidate = fs::path(*cand).is_absolute() ? fs::path(*cand) : base / *cand;
      if (!fs::exists(p.task)) p.error = "no such task file: " + p.task.string();
      if (!fs::exists(p.candidate)) p.error = "no such candidate file: " + p.candidate.string();
    }
    pairs.push_back(std::move(p));
  }
  return pairs;
}

void print_table(std::ostream& out, const std::vector<Pair>& pairs,
                 const std::vector<std::optional<engine::EvalResult>>& results,
                 const std::vector<std::string>& errors) {
  out << std::left << std::setw(44) << "task" << std::setw(16) << "verdict" << std::right
      << std::setw(13) << "baseline ms" << std::setw(14) << "candidate ms" << std::setw(10)
      << "speedup"
      << "\n";
  for (const auto& p : pairs) {
    std::string name = p.task.stem().string();
    if (p.candidate.stem() != p.task.stem()) name += " <- " + p.candidate.filename().string();
    out << std::left << std::setw(44) << name.substr(0, 43);
    if (!results[p.index]) {
      out << "error: " << errors[p.index] << "\n";
      continue;
    }
    const auto& r = *results[p.index];
    out << std::setw(16) << verdict_name(r.verdict) << std::right << std::setw(13)
        << ms(r.baseline_ms) << std::setw(14) << ms(r.candidate_ms) << std::setw(10)
        << (r.speedup ? ms(r.speedup, 3) + "x" : "-") << "\n";
  }
}

int eval_batch(const EvalArgs& a, PairJudge& judge, std::ostream& out, std::ostream& err) {
  auto pairs_or = read_pairs(a.batch);
  if (!pairs_or.is_ok()) {
    err << "kevin eval: " << a.batch << ": " << pairs_or.status().message() << "\n";
    return kExitUsage;
  }
  auto& pairs = *pairs_or;
  std::vector<std::optional<engine::EvalResult>> results(pairs.size());
  std::vector<std::string> errors(pairs.size());
  for (auto& p : pairs) errors[p.index] = p.error;

  // Reference data first: the distinct tasks at once, as many as the reference workers serve
  // (each baseline still holds its device alone).
  std::vector<fs::path> tasks;
  for (const auto& p : pairs) {
    if (p.error.empty() && std::find(tasks.begin(), tasks.end(), p.task) == tasks.end())
      tasks.push_back(p.task);
  }
  std::vector<Status> statuses(tasks.size());
  for_each_index(tasks.size(), static_cast<size_t>(a.engine.reference_workers), [&](size_t i) {
    KEVIN_LOG(info) << "reference for " << tasks[i].stem().string();
    const Status admitted = judge.admit(tasks[i]);
    statuses[i] = admitted.is_ok() ? judge.prepare(tasks[i]) : admitted;
  });
  std::map<fs::path, Status> prepared;
  for (size_t i = 0; i < tasks.size(); ++i) prepared.emplace(tasks[i], statuses[i]);

  Mutex out_mu;
  size_t done = 0;  // under out_mu
  const auto emit = [&](const Pair& p) {
    MutexLock lock(out_mu);
    ++done;
    if (results[p.index]) {
      KEVIN_LOG(info) << "[" << done << "/" << pairs.size() << "] " << p.task.stem().string()
                      << " <- " << p.candidate.filename().string() << ": "
                      << verdict_name(results[p.index]->verdict);
    } else {
      KEVIN_LOG(warn) << "[" << done << "/" << pairs.size() << "] " << p.task.stem().string()
                      << ": " << errors[p.index];
    }
    if (a.table) return;
    Json j =
        results[p.index] ? engine::to_json(*results[p.index]) : Json{{"error", errors[p.index]}};
    j["index"] = p.index;
    j["task"] = p.task.string();
    j["candidate"] = p.candidate.string();
    out << dump_json(j) << "\n" << std::flush;
  };
  const auto work = [&](size_t i) {
    const Pair& p = pairs[i];
    if (p.error.empty()) {
      const Status& ref = prepared.at(p.task);
      if (!ref.is_ok()) {
        errors[i] = ref.message();
      } else if (auto source = read_candidate(p.candidate); !source.is_ok()) {
        errors[i] = source.status().message();
      } else if (Status kind = check_candidate_kind(a, p.candidate, *source); !kind.is_ok()) {
        errors[i] = kind.message();
      } else if (auto r = judge.judge(p.task, *source); !r.is_ok()) {
        errors[i] = "evaluation failed: " + r.status().message();
      } else {
        results[i] = std::move(r).value();
      }
    }
    emit(p);
  };
  for_each_index(pairs.size(),
                 a.engine.jobs > 0 ? static_cast<size_t>(a.engine.jobs) : hardware_threads(), work);
  if (a.table) print_table(out, pairs, results, errors);
  const bool any_error =
      std::any_of(errors.begin(), errors.end(), [](const std::string& e) { return !e.empty(); });
  const bool all_correct =
      std::all_of(results.begin(), results.end(), [](const auto& r) { return r && r->correct(); });
  if (any_error) return kExitFailure;
  return a.fail_unless_correct && !all_correct ? kExitNotCorrect : kExitOk;
}

}  // namespace

void add_eval_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* sub = app.add_subcommand(
      "eval", "evaluate a candidate kernel against a task: verdict, feedback, timings, speedup");
  sub->footer(
      "Examples:\n"
      "  kevin eval --task tasks/level1/028_gelu.py --candidate my_gelu.cu\n"
      "  kevin eval --task tasks/level1/028_gelu.py --candidate my_gelu.cpp --backend cpu --json\n"
      "  kevin eval --batch examples/demo-cuda.jsonl --table --fail-unless-correct");
  auto* task = sub->add_option("--task", args->task,
                               "the task: an id such as level1/028_gelu (kevin tasks list), or a "
                               "task file (KernelBench format .py)");
  // Checked when the command runs, after --task: swapped arguments then get a hint.
  auto* cand = sub->add_option("--candidate", args->candidate,
                               "candidate source (CUDA C++ for cuda, C++ for cpu, or a "
                               "KernelBench answer)");
  auto* batch = sub->add_option("--batch", args->batch,
                                "JSONL file of {\"task\":..., \"candidate\":...} pairs")
                    ->check(CLI::ExistingFile);
  task->needs(cand);
  cand->needs(task);
  batch->excludes(task)->excludes(cand);
  args->engine.format = "auto";
  add_engine_flags(sub, &args->engine,
                   "candidate format: kevin (C ABI), kernelbench (ModelNew + load_inline), auto "
                   "(by the file's text)");
  sub->add_flag("--json", args->json, "print one JSON object");
  sub->add_flag("--table", args->table, "batch: print a table instead of JSON lines");
  sub->add_flag("--fresh-seeds", args->fresh_seeds,
                "draw a new secret seed set instead of reusing the cached one");
  sub->add_flag("--full-size", args->full_size,
                "on the CPU backend, run a task without reduced CPU sizes (a KernelBench file) at "
                "full size even when large");
  sub->add_flag("--fresh-baseline", args->fresh_baseline,
                "time the PyTorch baseline again instead of using the cached one (cached for 6 h "
                "per task and GPU model)");
  sub->add_flag(
      "--fail-unless-correct", args->fail_unless_correct,
      "exit 3 when a candidate was judged but not correct (batch: unless every pair is correct)");
  add_queue_options(sub, &args->queue);
  sub->callback([args, sub, &action] {
    action = [args, sub](std::ostream& out, std::ostream& err) {
      if (args->batch.empty() && args->task.empty()) {
        err << "kevin eval: give --task and --candidate, or --batch (see kevin eval --help)\n";
        return kExitUsage;
      }
      (void)sub;
      if (!args->task.empty()) {
        auto file = task_file(args->task);
        if (!file.is_ok()) {
          err << "kevin eval: --task: " << file.status().message() << "\n";
          return kExitUsage;
        }
        args->task = file->string();
      }
      if (std::error_code ec; !args->candidate.empty() && !fs::exists(args->candidate, ec)) {
        err << "kevin: error: --candidate: File does not exist: " << args->candidate
            << (fs::path(args->candidate).extension() == ".py" && task_file(args->candidate).is_ok()
                    ? " (that names a task: --task takes the task, --candidate the kernel)"
                    : "")
            << " (see kevin --help)\n";
        return kExitUsage;
      }
      auto judge = make_judge(*args);
      if (!judge.is_ok()) return report_failure(err, "eval", judge.status());
      return args->batch.empty() ? eval_single(*args, **judge, out, err)
                                 : eval_batch(*args, **judge, out, err);
    };
  });
}

}  // namespace kevin::cli
