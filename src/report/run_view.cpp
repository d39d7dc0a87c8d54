// run_view.cpp — the run's settings table and the per-trajectory view, from config.json and
// trajectories.jsonl (read a line at a time; only the shown fields are kept).
#include "report/run_view.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "core/file.h"
#include "core/json.h"
#include "report/format.h"
#include "report/html_page.h"
#include "report/jsonl.h"

namespace kevin::report {
namespace fs = std::filesystem;

namespace {

constexpr const char* kNone = "—";
constexpr size_t kFeedbackChars = 600;  // feedback beyond this is cut in the view

// Unix seconds as "2026-12-04 09:27:18 UTC".
std::string utc_time(double unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm parts{};
  gmtime_r(&t, &parts);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return buf;
}

// `j[key]` as text: strings as they are, other scalars as JSON, absent/null as "—".
std::string text_of(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return kNone;
  return j[key].is_string() ? j[key].get<std::string>() : dump_json(j[key]);
}

std::string tasks_text(const Json& tasks) {
  if (!tasks.is_array() || tasks.empty()) return kNone;
  std::string out = std::to_string(tasks.size()) + ": ";
  const size_t shown = std::min<size_t>(tasks.size(), 8);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + text_of(tasks[i], "id");
  return out + (tasks.size() > shown ? ", …" : "");
}

std::string model_text(const Json& policy) {
  const std::string kind = text_of(policy, "kind");
  if (kind == "openai") return text_of(policy, "model");
  if (kind == "local") return "in-process: " + text_of(policy, "dir");
  if (kind == "scripted") return "scripted: " + text_of(policy, "file");
  return kNone;
}

std::string sampling_text(const Json& rollout) {
  return "temperature " + text_of(rollout, "temperature") + ", top_p " + text_of(rollout, "top_p") +
         ", max_tokens " + text_of(rollout, "max_tokens");
}

struct FinishRange {
  std::optional<double> first, last;  // Unix seconds, when records carry finished_at
};

std::string settings_section(const fs::path& run_dir, const FinishRange& finished) {
  auto text = read_file(run_dir / "config.json");
  if (!text.is_ok()) {
    if (text.status().code() == StatusCode::kNotFound)
      return "<p class=\"note\">No config.json in the folder.</p>\n";
    return "<p class=\"note\">config.json could not be read: " +
           html_escape(text.status().message()) + "</p>\n";
  }
  auto config = parse_json(*text);
  if (!config.is_ok() || !config->is_object()) {
    const std::string why = config.is_ok() ? "not a JSON object" : config.status().message();
    return "<p class=\"note\">config.json is unusable: " + html_escape(why) + "</p>\n";
  }
  const Json policy = config->value("policy", Json::object());
  const Json engine = config->value("engine", Json::object());
  const Json rollout = config->value("rollout", Json::object());
  std::string allocations = kNone;
  if (rollout.contains("allocations") && rollout["allocations"].is_array()) {
    allocations.clear();
    for (const Json& a : rollout["allocations"])
      allocations +=
          (allocations.empty() ? "" : ", ") + (a.is_string() ? a.get<std::string>() : dump_json(a));
    if (text_of(rollout, "search") == "beam")
      allocations += " (beam search, width " + text_of(rollout, "beam_width") + ", " +
                     text_of(rollout, "beam_rounds") + " rounds)";
    allocations += " (trajectories × turns)";
  }
  const std::optional<double> last = finished.last;
  const std::optional<double> created =
      config->contains("created_at") && (*config)["created_at"].is_number()
          ? std::optional<double>((*config)["created_at"].get<double>())
          : finished.first;
  std::string devices = text_of(engine, "backend");
  if (engine.contains("queue") && engine["queue"].is_string() &&
      !engine["queue"].get<std::string>().empty()) {
    devices += " on workers of " + engine["queue"].get<std::string>();
  } else if (devices == "cuda") {
    devices += ", devices " + text_of(engine, "devices");
  }
  const std::vector<std::vector<std::string>> rows = {
      {"model", html_escape(model_text(policy))},
      {"endpoint", html_escape(text_of(policy, "url"))},
      {"backend", html_escape(devices)},
      {"allocations", html_escape(allocations)},
      {"sampling", html_escape(sampling_text(rollout))},
      {"tasks", html_escape(tasks_text(config->value("tasks", Json())))},
      {"started", created ? utc_time(*created) : kNone},
      {"last turn", last ? utc_time(*last) : kNone},
      {"duration", created && last ? duration(1000.0 * std::max(0.0, *last - *created)) +
                                         " (including any pause before a resume)"
                                   : kNone},
      {"kevin", html_escape(text_of(*config, "kevin_version"))}};
  return html_table({"setting", "value"}, rows);
}

struct TurnText {
  int turn = 0;
  std::string verdict, reason, feedback, code;
  std::optional<double> speedup;
};
// (allocation, task) → trajectory → its turns.
using TrajectoryTexts =
    std::map<std::pair<std::string, std::string>, std::map<int, std::vector<TurnText>>>;

Status collect(const Json& r, TrajectoryTexts& out, FinishRange& finished) {
  if (r.is_object() && r.contains("finished_at") && r["finished_at"].is_number()) {
    const double t = r["finished_at"].get<double>();
    finished.first = std::min(finished.first.value_or(t), t);
    finished.last = std::max(finished.last.value_or(t), t);
  }
  KEVIN_ASSIGN_OR_RETURN(std::string task, required_string(r, "task"));
  KEVIN_ASSIGN_OR_RETURN(std::string allocation, required_string(r, "allocation"));
  KEVIN_ASSIGN_OR_RETURN(int64_t trajectory, required_integer(r, "trajectory", kNoUpperBound));
  TurnText t;
  KEVIN_ASSIGN_OR_RETURN(int64_t turn, required_integer(r, "turn", kNoUpperBound));
  t.turn = static_cast<int>(turn);
  KEVIN_ASSIGN_OR_RETURN(t.verdict, optional_string(r, "verdict"));
  KEVIN_ASSIGN_OR_RETURN(t.reason, optional_string(r, "reason"));
  KEVIN_ASSIGN_OR_RETURN(t.feedback, optional_string(r, "feedback"));
  KEVIN_ASSIGN_OR_RETURN(t.code, optional_string(r, "code"));
  KEVIN_ASSIGN_OR_RETURN(t.speedup, optional_amount(r, "speedup"));
  if (t.feedback.size() > kFeedbackChars) t.feedback = t.feedback.substr(0, kFeedbackChars) + " …";
  out[{allocation, task}][static_cast<int>(trajectory)].push_back(std::move(t));
  return Status::ok();
}

// A turn as two rows: turn, verdict and speedup, then a row spanning the table with the
// feedback and the collapsed kernel, so neither is squeezed into a column of its own.
std::string turn_rows(const TurnText& t, size_t* code_budget) {
  std::string kernel = "<p class=\"note\">no kernel</p>";
  if (!t.code.empty() && t.code.size() <= *code_budget) {
    *code_budget -= t.code.size();
    kernel = "<details><summary>kernel, " + std::to_string(t.code.size()) +
             " bytes</summary><pre>" + html_escape(t.code) + "</pre></details>";
  } else if (!t.code.empty()) {
    kernel = "<p class=\"note\">kernel in trajectories.jsonl (page limit reached)</p>";
  }
  const std::string verdict =
      html_escape(t.verdict) +
      (t.reason.empty() ? "" : " <small>(" + html_escape(t.reason) + ")</small>");
  const std::string feedback =
      t.feedback.empty() ? "" : "<div class=\"feedback\">" + html_escape(t.feedback) + "</div>";
  return "<tr><td>" + std::to_string(t.turn) + "</td><td>" + verdict + "</td><td>" +
         (t.speedup ? times(*t.speedup) : kNone) +
         "</td></tr>\n<tr class=\"detail\"><td colspan=\"3\">" + feedback + kernel + "</td></tr>\n";
}

std::string trajectories_section(TrajectoryTexts& texts, const Status& read,
                                 size_t max_code_bytes) {
  std::ostringstream out;
  out << "<h2>Trajectories</h2>\n<p class=\"note\">Each trajectory turn by turn: the verdict "
         "and the speedup of a correct kernel, and under them the feedback the model received "
         "next (cut at "
      << kFeedbackChars << " characters) and the kernel.</p>\n";
  if (!read.is_ok())
    return out.str() + "<p class=\"note\">" + html_escape(read.message()) + "</p>\n";
  size_t budget = max_code_bytes;
  for (auto& [group, trajectories] : texts) {
    out << "<details><summary><code>" << html_escape(group.second) << "</code> · "
        << html_escape(group.first) << " · " << trajectories.size() << " trajectories</summary>\n";
    for (auto& [id, turns] : trajectories) {
      std::sort(turns.begin(), turns.end(),
                [](const TurnText& a, const TurnText& b) { return a.turn < b.turn; });
      out << "<h4>trajectory " << id
          << "</h4>\n<table class=\"turns\"><tr><th class=\"turn\">turn</th><th>verdict</th><th "
             "class=\"speedup\">speedup</th></tr>\n";
      for (const TurnText& t : turns) out << turn_rows(t, &budget);
      out << "</table>\n";
    }
    out << "</details>\n";
  }
  return out.str();
}

}  // namespace

RunView render_run_view(const fs::path& run_dir, size_t max_code_bytes) {
  TrajectoryTexts texts;
  FinishRange finished;
  const Status read = read_json_lines(run_dir / "trajectories.jsonl", [&](const Json& r, size_t) {
    return collect(r, texts, finished);
  });
  return {settings_section(run_dir, finished), trajectories_section(texts, read, max_code_bytes)};
}

}  // namespace kevin::report
