// tasks_command.cpp — `kevin tasks list|show|check|split`: the task suite as users and
// models see it.
#include <CLI/CLI.hpp>

#include <chrono>
#include <iomanip>
#include <ostream>

#include "cli/app.h"
#include "cli/paths.h"
#include "core/file.h"
#include "env/prompt.h"
#include "sys/cuda_probe.h"
#include "tasks/candidate_template.h"
#include "tasks/problem.h"
#include "tasks/reference_worker.h"
#include "tasks/suite.h"

namespace kevin::cli {
namespace fs = std::filesystem;

namespace {

struct TasksArgs {
  std::string dir, suite, split, python;
  std::string
      backend;  // set by the chosen subcommand's --backend (show: this machine's, check: cpu)
  std::string template_path;     // show --template: where the skeleton goes ("-": stdout)
  std::string format = "kevin";  // show --prompt: the answers asked for (kevin or kernelbench)
  std::vector<std::string> names;
  bool prompt = false;
  double holdout = 0.1;
  bool json = false, write = false;
};

Result<tasks::ReferenceWorker> start_worker(const TasksArgs& a) {
  tasks::WorkerOptions w;
  w.script = share_dir() / "reference_worker.py";
  if (!a.python.empty()) w.python_override = a.python;
  return tasks::ReferenceWorker::start(w);
}

// The tasks the command applies to: named ones, else the suite filter, else all.
Result<std::vector<tasks::TaskInfo>> selected(const TasksArgs& a,
                                              const std::vector<tasks::TaskInfo>& all) {
  std::vector<tasks::TaskInfo> out;
  if (!a.names.empty()) {
    for (const auto& n : a.names) {
      KEVIN_ASSIGN_OR_RETURN(tasks::TaskInfo t, tasks::resolve_task(all, n));
      out.push_back(std::move(t));
    }
    return out;
  }
  for (const auto& t : all) {
    if (a.suite.empty() || t.suite == a.suite) out.push_back(t);
  }
  if (out.empty()) return not_found("no tasks in suite '" + a.suite + "'");
  return out;
}

int fail(std::ostream& err, const char* what, const Status& s) {
  return report_failure(err, std::string("tasks ") + what, s);
}

int run_list(const TasksArgs& a, std::ostream& out, std::ostream& err) {
  const fs::path root = tasks_dir(a.dir);
  auto all = tasks::discover_tasks(root);
  if (!all.is_ok()) return fail(err, "list", all.status());
  auto splits = tasks::load_splits(root);
  if (!splits.is_ok()) return fail(err, "list", splits.status());
  auto chosen = selected(a, *all);
  if (!chosen.is_ok()) return fail(err, "list", chosen.status());
  Json rows = Json::array();
  const auto row = [&out](const std::string& id, const std::string& family,
                          const std::string& split) {
    out << std::left << std::setw(52) << id << std::setw(18) << family << split << "\n";
  };
  if (!a.json) row("id", "family", "split");
  size_t listed = 0;
  for (const auto& t : *chosen) {
    const std::string split = splits->split_of(t.id);
    if (!a.split.empty() && split != a.split) continue;
    ++listed;
    if (a.json) {
      rows.push_back({{"id", t.id},
                      {"suite", t.suite},
                      {"family", t.family},
                      {"split", split},
                      {"path", t.path.string()}});
    } else {
      row(t.id, t.family, split.empty() ? "-" : split);
    }
  }
  if (a.json) {
    out << dump_json(rows, 1) << "\n";
  } else {
    out << listed << (listed == 1 ? " task" : " tasks") << " in " << root.string() << "\n";
  }
  return kExitOk;
}

// The first prompt of `kevin run` for this task, message by message, for this machine's device.
void print_prompt(const TasksArgs& a, const std::string& problem, std::ostream& out) {
  env::PromptConfig config;
  config.backend = a.backend;
  config.format = *engine::format_from_name(a.format);
  if (a.backend == "cpu") {
    config.device_name = "CPU";
  } else if (sys::cuda_device_count() > 0) {
    config.device_name = sys::cuda_device_name(0);
  }
  const env::Prompt prompt = env::build_prompt(problem, {}, config);
  for (const auto& m : prompt.messages) out << "=== " << m.role << " ===\n" << m.content << "\n";
  out << "=== (about " << prompt.estimated_tokens << " tokens; device " << config.device_name
      << ") ===\n";
}

// Writes the candidate skeleton; an existing file is never replaced.
int write_template(const TasksArgs& a, const tasks::TaskInfo& task, const tasks::ArgumentList& args,
                   std::ostream& out, std::ostream& err) {
  const std::string source = tasks::candidate_template(task, args, a.backend);
  if (a.template_path == "-") {
    out << source;
    return kExitOk;
  }
  std::error_code ec;
  if (fs::exists(a.template_path, ec)) {
    err << "kevin tasks show: " << a.template_path
        << " exists; not replacing it (give another path, or - for stdout)\n";
    return kExitUsage;
  }
  if (Status s = write_file_atomic(a.template_path, source); !s.is_ok())
    return fail(err, "show", s);
  const bool cpu_in_cu = a.backend == "cpu" && fs::path(a.template_path).extension() == ".cu";
  out << "wrote " << a.template_path
      << (cpu_in_cu ? " (a C++ skeleton for the CPU backend: this machine has no GPU CUDA can "
                      "use; --backend cuda writes a CUDA one)"
                    : "")
      << "; judge it with: kevin eval --task " << task.id << " --candidate " << a.template_path
      << (a.backend == "cpu" ? " --backend cpu" : "") << "\n";
  return kExitOk;
}

int run_show(const TasksArgs& a, std::ostream& out, std::ostream& err) {
  auto all = tasks::discover_tasks(tasks_dir(a.dir));
  if (!all.is_ok()) return fail(err, "show", all.status());
  if (a.names.size() != 1) {
    err << "kevin tasks show: give exactly one task id\n";
    return kExitUsage;
  }
  auto task = tasks::resolve_task(*all, a.names[0]);
  if (!task.is_ok()) return fail(err, "show", task.status());
  auto source = read_file(task->path);
  if (!source.is_ok()) return fail(err, "show", source.status());
  auto worker = start_worker(a);
  if (!worker.is_ok()) return fail(err, "show", worker.status());
  auto reply = worker->describe(task->path, a.backend);
  if (!reply.is_ok()) return fail(err, "show", reply.status());
  auto args = tasks::argument_list_from_json(*reply);
  if (!args.is_ok()) return fail(err, "show", args.status());
  if (!a.template_path.empty()) return write_template(a, *task, *args, out, err);
  const std::string problem = tasks::problem_statement(*task, *source, *args, a.backend,
                                                       *engine::format_from_name(a.format));
  if (a.prompt) {
    print_prompt(a, problem, out);
  } else if (a.json) {
    Json j = tasks::to_json(*args);
    j["id"] = task->id;
    j["family"] = task->family;
    j["backend"] = a.backend;
    j["problem"] = problem;
    out << dump_json(j, 1) << "\n";
  } else {
    out << problem;
  }
  return kExitOk;
}

// One checked task as text, flushed at once: a long check cut short (a device lease, Ctrl-C)
// keeps every line it printed, even with its output in a file.
void print_check_row(const std::string& id, const Result<std::vector<std::string>>& flags,
                     const Json& row, std::ostream& out) {
  if (!flags.is_ok()) {
    out << "ERROR " << id << ": " << row["error"].get<std::string>() << "\n";
  } else if (flags->empty()) {
    out << "ok    " << id << "\n";
  } else {
    for (const auto& f : *flags) out << "FLAG  " << id << ": " << f << "\n";
  }
  out.flush();
}

int run_check(const TasksArgs& a, std::ostream& out, std::ostream& err) {
  auto all = tasks::discover_tasks(tasks_dir(a.dir));
  if (!all.is_ok()) return fail(err, "check", all.status());
  auto chosen = selected(a, *all);
  if (!chosen.is_ok()) return fail(err, "check", chosen.status());
  auto worker = start_worker(a);
  if (!worker.is_ok()) return fail(err, "check", worker.status());
  size_t flagged = 0, broken = 0, done = 0;
  Json rows = Json::array();
  for (const auto& t : *chosen) {
    if (!worker->alive()) {
      // The last task ended the worker (os._exit, a crash in C code, a limit, the OOM
      // killer): it must not take the later tasks with it.
      worker = start_worker(a);
      if (!worker.is_ok()) return fail(err, "check", worker.status());
    }
    const auto started = std::chrono::steady_clock::now();
    auto flags = worker->check(t.path, a.backend);
    Json row = {{"id", t.id}};
    if (!flags.is_ok()) {
      ++broken;
      row["error"] = flags.status().message() +
                     (worker->alive() ? "" : " (a fresh reference worker checks the next task)");
    } else {
      row["flags"] = *flags;
      flagged += !flags->empty();
    }
    err << "[check " << ++done << "/" << chosen->size() << "] " << t.id << " (" << std::fixed
        << std::setprecision(1)
        << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
        << " s)\n";
    if (a.json) {
      rows.push_back(row);
    } else {
      print_check_row(t.id, flags, row, out);
    }
  }
  if (a.json) out << dump_json(rows, 1) << "\n";
  err << "kevin tasks check: " << chosen->size() << " tasks on " << a.backend << ", " << flagged
      << " flagged, " << broken << " broken\n";
  return flagged + broken == 0 ? kExitOk : kExitFailure;
}

int run_split(const TasksArgs& a, std::ostream& out, std::ostream& err) {
  const fs::path root = tasks_dir(a.dir);
  auto all = tasks::discover_tasks(root);
  if (!all.is_ok()) return fail(err, "split", all.status());
  const tasks::Splits s = tasks::make_splits(*all, a.holdout);
  out << s.train.size() << " train, " << s.holdout.size()
      << " holdout (stratified by suite and family)\n";
  for (const auto& id : s.holdout) out << "  holdout " << id << "\n";
  if (a.write) {
    const Status st =
        write_file_atomic(root / "splits.json", dump_json(tasks::to_json(s), 1) + "\n");
    if (!st.is_ok()) return fail(err, "split", st);
    out << "wrote " << (root / "splits.json").string() << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_tasks_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<TasksArgs>();
  CLI::App* tasks = app.add_subcommand("tasks", "list, show, check and split the task suite");
  tasks->footer(
      "Examples:\n"
      "  kevin tasks list --suite level1\n"
      "  kevin tasks show level1/028_gelu --template my_gelu.cu\n"
      "  kevin tasks check --tasks ~/KernelBench/KernelBench --suite level1");
  tasks->require_subcommand(1);
  tasks->add_option("--tasks", args->dir,
                    "task folder: suites of .py files (default: the shipped tasks/)");
  tasks->add_option("--python", args->python,
                    "Python interpreter with PyTorch (also KEVIN_PYTHON)");
  // --tasks and --python may also follow the action: `kevin tasks list --tasks DIR`.
  tasks->fallthrough();
  const auto backend_option = [](CLI::App* sub, std::shared_ptr<std::string> value) {
    sub->add_option("--backend", *value, "sizes to use: cuda (full) or cpu (KEVIN_CPU_SIZES)")
        ->check(CLI::IsMember({"cuda", "cpu"}))
        ->default_str(*value);
  };
  // `show` defaults to what this machine would evaluate on.
  auto show_backend = std::make_shared<std::string>(sys::cuda_device_count() > 0 ? "cuda" : "cpu");
  auto check_backend = std::make_shared<std::string>("cpu");
  CLI::App* list =
      tasks->add_subcommand("list", "list task ids with family and split")->fallthrough();
  list->add_option("--suite", args->suite, "only this suite (e.g. level1)");
  list->add_option("--split", args->split, "only train or holdout tasks")
      ->check(CLI::IsMember({"train", "holdout"}));
  list->add_flag("--json", args->json, "JSON output");
  list->callback([args, &action] {
    action = [args](std::ostream& o, std::ostream& e) { return run_list(*args, o, e); };
  });

  CLI::App* show =
      tasks->add_subcommand("show", "print a task as the model sees it, with its ABI argument list")
          ->fallthrough();
  show->add_option("id", args->names, "task id, file stem or path")->required();
  show->add_flag("--json", args->json, "JSON output");
  show->add_flag("--prompt", args->prompt,
                 "print the first prompt of `kevin run` for this task (system and user messages)");
  show->add_option("--format", args->format,
                   "--prompt: the prompt of `kevin run --format kernelbench` (ModelNew answers) or "
                   "of kevin's ABI")
      ->check(CLI::IsMember({"kevin", "kernelbench"}));
  show->add_option(
      "--template", args->template_path,
      "write a compilable kevin_forward skeleton for the task to this file (- for stdout)");
  backend_option(show, show_backend);
  show->callback([args, show_backend, &action] {
    args->backend = *show_backend;
    action = [args](std::ostream& o, std::ostream& e) { return run_show(*args, o, e); };
  });

  CLI::App* check = tasks
                        ->add_subcommand("check",
                                         "flag degenerate tasks (constant/zero/identity/bf16 "
                                         "outputs pass, ignored inputs, NaN)")
                        ->fallthrough();
  check->add_option("ids", args->names, "task ids (default: all, or --suite)");
  check->add_option("--suite", args->suite, "only this suite");
  check->add_flag("--json", args->json, "JSON output");
  backend_option(check, check_backend);
  check->callback([args, check_backend, &action] {
    args->backend = *check_backend;
    action = [args](std::ostream& o, std::ostream& e) { return run_check(*args, o, e); };
  });

  CLI::App* split =
      tasks->add_subcommand("split", "compute the stratified train/holdout split")->fallthrough();
  split->add_option("--holdout", args->holdout, "holdout fraction per (suite, family)")
      ->check(CLI::Range(0.0, 1.0));
  split->add_flag("--write", args->write, "write <tasks>/splits.json");
  split->callback([args, &action] {
    action = [args](std::ostream& o, std::ostream& e) { return run_split(*args, o, e); };
  });
}

}  // namespace kevin::cli
