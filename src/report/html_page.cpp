// html_page.cpp — the shared page shell and style sheet, tables and the config.json section;
// the report pages (html_report.cpp, train_report.cpp) build their sections on these.
#include "report/html_page.h"

#include <sstream>

#include "core/file.h"
#include "core/json.h"
#include "report/format.h"

namespace kevin::report {
namespace fs = std::filesystem;

namespace {

constexpr const char* kStyle =
    R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;max-width:1120px;margin:2em auto;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:2px solid #ddd;padding-bottom:.2em}h3{margin-top:1.5em}
table{border-collapse:collapse;margin:.4em 0 1.2em}
.scroll{overflow-x:auto;max-width:100%}
th,td{padding:.2em .7em;border-bottom:1px solid #e3e3e3;text-align:right;font-variant-numeric:tabular-nums}
th:first-child,td:first-child{text-align:left}
th{background:#f5f5f5}
code{background:#f3f3f3;padding:0 .25em;border-radius:3px}
.note{color:#666}
.charts{display:flex;flex-wrap:wrap;gap:1em}
.charts svg{border:1px solid #e3e3e3;border-radius:4px;background:#fff}
summary{cursor:pointer}
pre{text-align:left;overflow-x:auto;max-width:100%;margin:.3em 0;padding:.5em .7em;background:#f6f6f6;border:1px solid #e3e3e3;border-radius:4px;font-size:.8em;line-height:1.35}
.turns{width:100%;table-layout:fixed}
.turns th,.turns td{text-align:left;border-bottom:none}
.turns th.turn{width:3.5em}
.turns th.speedup{width:5.5em}
.turns tr.detail td{border-bottom:1px solid #e3e3e3;padding-bottom:.6em}
.feedback{white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:.8em;color:#444;margin:.1em 0 .3em}
)";

std::string cell(const std::string& text) { return "<td>" + text + "</td>"; }

}  // namespace

std::string html_page(std::string_view title, std::string_view body) {
  const std::string heading = html_escape(title);
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta "
          "name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
       << heading << "</title>\n<style>\n"
       << kStyle << "</style>\n</head>\n<body>\n<h1>" << heading << "</h1>\n"
       << body << "</body>\n</html>\n";
  return html.str();
}

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
  std::ostringstream out;
  out << "<div class=\"scroll\"><table><tr>";
  for (const std::string& h : header) out << "<th>" << h << "</th>";
  out << "</tr>\n";
  for (const auto& row : rows) {
    out << "<tr>";
    for (const std::string& c : row) out << cell(c);
    out << "</tr>\n";
  }
  out << "</table></div>\n";
  return out.str();
}

std::string config_section(const fs::path& dir, const std::string& file) {
  auto text = read_file(dir / file);
  if (!text.is_ok()) {
    if (text.status().code() == StatusCode::kNotFound)
      return "<p class=\"note\">No " + html_escape(file) + " in the folder.</p>\n";
    return "<p class=\"note\">" + html_escape(file) +
           " could not be read: " + html_escape(text.status().message()) + "</p>\n";
  }
  auto config = parse_json(*text);
  if (!config.is_ok() || !config->is_object()) {
    const std::string why = config.is_ok() ? "not a JSON object" : config.status().message();
    return "<p class=\"note\">" + html_escape(file) + " is unusable: " + html_escape(why) +
           "</p>\n";
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& [key, value] : config->items()) {
    if (value.is_structured()) continue;
    rows.push_back({"<code>" + html_escape(key) + "</code>",
                    html_escape(value.is_string() ? value.get<std::string>() : dump_json(value))});
  }
  return html_table({"setting", "value"}, rows);
}

std::string folder_name(const fs::path& dir) {
  return dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
}

}  // namespace kevin::report
