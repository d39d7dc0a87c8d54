// app.h — the `kevin` command line: argument parsing and wiring of the jobs, nothing else.
// Exit codes: 0 done (an evaluation that ends in any verdict is "done"), 1 the job failed,
// 2 bad usage (unknown subcommand, bad flag, missing file).
#pragma once

#include <functional>
#include <iosfwd>
#include <string_view>

#include "core/status.h"

namespace CLI {
class App;
}

namespace kevin::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Runs the command line given by argv. Writes results to `out`, diagnostics to `err`, and
// returns the exit code. Never throws and never prints a stack trace.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// What a subcommand does once its arguments are parsed; returns an exit code.
using Action = std::function<int(std::ostream& out, std::ostream& err)>;

// Each job registers its subcommand on `app` and stores its action in `action` when chosen.
void add_eval_command(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_train_command(CLI::App& app, Action& action);
void add_serve_command(CLI::App& app, Action& action);
void add_generate_command(CLI::App& app, Action& action);
void add_worker_command(CLI::App& app, Action& action);
void add_tasks_command(CLI::App& app, Action& action);
void add_report_command(CLI::App& app, Action& action);

// The exit code every command gives a status: kExitOk for OK; kExitUsage where the caller got
// something wrong (kInvalidArgument, kNotFound, kAlreadyExists — a run folder in use —,
// kUnimplemented — a setting this build lacks); kExitFailure otherwise.
int exit_code_of(const Status& status);
// Writes "kevin <command>: <message>" to `err` and returns exit_code_of(status).
int report_failure(std::ostream& err, std::string_view command, const Status& status);

// Registers a subcommand whose job has not landed yet: it accepts any arguments and fails
// with "kevin <name>: not available yet (<when>)".
void add_unavailable_command(CLI::App& app, Action& action, const char* name,
                             const char* description, const char* when);

}  // namespace kevin::cli
