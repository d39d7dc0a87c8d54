// app.cpp — top-level parser: global flags, subcommand dispatch, one-line errors.
#include "cli/app.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <exception>
#include <ostream>
#include <vector>

#include "core/log.h"
#include "core/suggest.h"
#include "core/version.h"

namespace kevin::cli {

int exit_code_of(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kUnimplemented:
      return kExitUsage;
    default:
      return kExitFailure;
  }
}

int report_failure(std::ostream& err, std::string_view command, const Status& status) {
  err << "kevin " << command << ": " << status.message() << "\n";
  return exit_code_of(status);
}

void add_unavailable_command(CLI::App& app, Action& action, const char* name,
                             const char* description, const char* when) {
  CLI::App* sub = app.add_subcommand(name, std::string(description) + " (not available yet)");
  sub->allow_extras();
  sub->callback([&action, name, when] {
    action = [name, when](std::ostream&, std::ostream& err) {
      err << "kevin " << name << ": not available yet (" << when << ")\n";
      return kExitFailure;
    };
  });
}

namespace {

std::unique_ptr<CLI::App> build_app(Action& action, std::string& log_level) {
  auto app = std::make_unique<CLI::App>(
      "kevin — train and evaluate language models that write CUDA kernels", "kevin");
  // Every option's help shows its default (subcommands inherit this when they are added).
  app->option_defaults()->always_capture_default();
  app->set_version_flag("--version", std::string("kevin ") + version_string());
  app->add_option("--log-level", log_level, "debug, info, warn, error or off")
      ->check(CLI::IsMember({"debug", "info", "warn", "error", "off"}));
  app->require_subcommand(1);
  add_eval_command(*app, action);
  add_run_command(*app, action);
  add_train_command(*app, action);
  add_serve_command(*app, action);
  add_generate_command(*app, action);
  add_worker_command(*app, action);
  add_tasks_command(*app, action);
  add_report_command(*app, action);
  return app;
}

// The long flags the deepest chosen command takes, its parents' included (flags fall through).
std::vector<std::string> long_flags(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* a = &app; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* o : a->get_options()) {
      for (const auto& n : o->get_lnames()) names.push_back("--" + n);
    }
  }
  return names;
}

const CLI::App& deepest_chosen(const CLI::App& app) {
  const CLI::App* chosen = &app;
  for (auto subs = app.get_subcommands(); !subs.empty(); subs = chosen->get_subcommands())
    chosen = subs.front();
  return *chosen;
}

// Suggestions for the long flags in argv the chosen command does not know.
std::string flag_suggestions(const CLI::App& app, int argc, const char* const* argv) {
  const std::vector<std::string> known = long_flags(deepest_chosen(app));
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    out += did_you_mean(arg, known);
  }
  return out;
}

// The first word that is neither a flag nor a flag's value must name a subcommand; CLI11
// alone would report a misspelt command as a missing one.
std::string unknown_command(const CLI::App& app, int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--log-level") {
      ++i;
      continue;
    }
    if (arg.empty() || arg[0] == '-') continue;
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == arg) return "";
      names.push_back(sub->get_name());
    }
    return "'" + arg + "'" + did_you_mean(arg, names);
  }
  return "";
}

int parse(CLI::App& app, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  if (const std::string bad = unknown_command(app, argc, argv); !bad.empty()) {
    err << "kevin: error: unknown command " << bad << " (see kevin --help)\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // Subcommand help is reported through the same exception type with exit code 0.
    if (e.get_exit_code() == 0) {
      const CLI::App* chosen = &app;
      for (const CLI::App* sub : app.get_subcommands()) chosen = sub;
      out << chosen->help();
      return kExitOk;
    }
    const std::string hint = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr
                                 ? flag_suggestions(app, argc, argv)
                                 : "";
    err << "kevin: error: " << e.what() << hint << " (see kevin --help)\n";
    return kExitUsage;
  }
  return -1;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    Action action;
    std::string log_level;
    auto app = build_app(action, log_level);
    const int parse_code = parse(*app, argc, argv, out, err);
    if (parse_code >= 0) return parse_code;
    if (!log_level.empty()) log::set_level(*log::parse_level(log_level));
    if (!action) {
      err << "kevin: error: no command given (see kevin --help)\n";
      return kExitUsage;
    }
    return action(out, err);
  } catch (const std::exception& e) {
    err << "kevin: internal error: " << e.what() << "\n";
    return kExitFailure;
  } catch (...) {
    err << "kevin: internal error\n";
    return kExitFailure;
  }
}

}  // namespace kevin::cli
