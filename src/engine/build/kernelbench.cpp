// kernelbench.cpp — format detection, the checker's JSON, the extension's translation units
// and the PyTorch facts a build needs.
#include "engine/build/kernelbench.h"

#include <cctype>
#include <optional>
#include <regex>

#include "engine/gates/gate.h"

namespace kevin::engine {

const char* format_name(CandidateFormat format) {
  return format == CandidateFormat::kKernelBench ? "kernelbench" : "kevin";
}

std::optional<CandidateFormat> format_from_name(std::string_view name) {
  if (name == "kevin") return CandidateFormat::kKevin;
  if (name == "kernelbench") return CandidateFormat::kKernelBench;
  return std::nullopt;
}

namespace {

// True when the first line that is not blank or a Python comment ("# ...", "#!") imports
// something: no C++ file starts that way.
bool starts_with_python_import(std::string_view source) {
  size_t at = 0;
  while (at < source.size()) {
    size_t end = source.find('\n', at);
    if (end == std::string_view::npos) end = source.size();
    std::string_view line = source.substr(at, end - at);
    at = end + 1;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t' || line.front() == '\r'))
      line.remove_prefix(1);
    if (line.empty() || line == "#" || line.substr(0, 2) == "# " || line.substr(0, 2) == "#!")
      continue;
    return line.substr(0, 7) == "import " || line.substr(0, 5) == "from ";
  }
  return false;
}

}  // namespace

CandidateFormat detect_format(std::string_view source) {
  // A line starting `class ModelNew` is Python (C++ would not put ':' after the name or its
  // bases); so is a file that starts with imports (an answer that lost its ModelNew is still
  // judged, and refused, as one).
  static const std::regex kModelNew(R"((^|\n)class[ \t]+ModelNew[ \t]*(\([^)\n]*\))?[ \t]*:)");
  const bool model_new = std::regex_search(source.begin(), source.end(), kModelNew);
  return model_new || starts_with_python_import(source) ? CandidateFormat::kKernelBench
                                                        : CandidateFormat::kKevin;
}

namespace {

Result<AnswerCheck> read_answer_check(const Json& j) {
  AnswerCheck check;
  if (!j.is_object() || !j.contains("findings") || !j["findings"].is_array()) {
    return invalid_argument("checker output lacks its findings");
  }
  for (const auto& f : j["findings"]) {
    AnswerFinding finding;
    KEVIN_ASSIGN_OR_RETURN(finding.rule, json_get<std::string>(f, "rule"));
    KEVIN_ASSIGN_OR_RETURN(finding.detail, json_get<std::string>(f, "detail"));
    KEVIN_ASSIGN_OR_RETURN(finding.line, json_get<int>(f, "line"));
    check.findings.push_back(std::move(finding));
  }
  KEVIN_ASSIGN_OR_RETURN(Json extensions, json_get_or<Json>(j, "extensions", Json::array()));
  if (!extensions.is_array()) return invalid_argument("checker output: extensions is not a list");
  for (const auto& e : extensions) {
    ExtensionSpec ext;
    KEVIN_ASSIGN_OR_RETURN(ext.name, json_get<std::string>(e, "name"));
    KEVIN_ASSIGN_OR_RETURN(ext.cpp_sources, json_get<std::string>(e, "cpp_sources"));
    KEVIN_ASSIGN_OR_RETURN(ext.cuda_sources, json_get<std::string>(e, "cuda_sources"));
    KEVIN_ASSIGN_OR_RETURN(ext.functions, json_get<std::vector<std::string>>(e, "functions"));
    check.extensions.push_back(std::move(ext));
  }
  return check;
}

Result<TorchToolchain> read_torch_toolchain(const Json& j) {
  TorchToolchain t;
  KEVIN_ASSIGN_OR_RETURN(t.torch_version, json_get<std::string>(j, "torch_version"));
  KEVIN_ASSIGN_OR_RETURN(t.include_dirs, json_get<std::vector<std::string>>(j, "include_dirs"));
  KEVIN_ASSIGN_OR_RETURN(t.library_dirs, json_get<std::vector<std::string>>(j, "library_dirs"));
  KEVIN_ASSIGN_OR_RETURN(t.defines, json_get<std::vector<std::string>>(j, "defines"));
  KEVIN_ASSIGN_OR_RETURN(t.cuda, json_get<bool>(j, "cuda"));
  if (t.include_dirs.empty() || t.library_dirs.empty())
    return invalid_argument("torch toolchain without include or library folders");
  for (const auto* dirs : {&t.include_dirs, &t.library_dirs}) {
    for (const auto& dir : *dirs) {
      if (dir.empty() || dir[0] != '/')
        return invalid_argument("torch folder is not absolute: " + dir);
    }
  }
  return t;
}

// Any reason a document does not read as expected is an invalid argument, naming the field.
template <typename T>
Result<T> as_invalid_argument(Result<T> r, const char* what) {
  if (r.is_ok() || r.status().code() == StatusCode::kInvalidArgument) return r;
  return invalid_argument(std::string(what) + ": " + r.status().message());
}

}  // namespace

Result<AnswerCheck> answer_check_from_json(const Json& j) {
  return as_invalid_argument(read_answer_check(j), "checker output");
}

ExtensionUnits extension_units(const ExtensionSpec& ext) {
  // load_inline's own preambles (less <cuda.h>: the driver API is not for answers); the
  // answer's sources keep their own lines so compiler messages point at what the model wrote.
  ExtensionUnits units;
  units.name = ext.name;
  const std::string name_macro = "#define TORCH_EXTENSION_NAME " + ext.name + "\n";
  units.host = name_macro + "#include <torch/extension.h>\n" + ext.cpp_sources + "\n";
  if (!ext.functions.empty()) {
    units.host += "PYBIND11_MODULE(" + ext.name + ", m) {\n";
    for (const auto& f : ext.functions)
      units.host += "  m.def(\"" + f + "\", &" + f + ", \"" + f + "\");\n";
    units.host += "}\n";
  }
  if (!ext.cuda_sources.empty()) {
    units.device = name_macro + "#include <torch/types.h>\n#include <cuda_runtime.h>\n" +
                   ext.cuda_sources + "\n";
  }
  return units;
}

const char* light_torch_includes(UnitKind kind) {
  return kind == UnitKind::kHost ? "#include <torch/types.h>\n#include <torch/csrc/utils/pybind.h>"
                                 : "#include <torch/types.h>";
}

std::string with_light_torch_header(std::string_view unit, UnitKind kind) {
  static const std::regex kExtensionInclude(
      R"(^[ \t]*#[ \t]*include[ \t]*(<torch/extension\.h>|"torch/extension\.h")[ \t\r]*$)");
  const char* light = light_torch_includes(kind);
  std::string out;
  size_t start = 0;
  while (start < unit.size()) {
    size_t end = unit.find('\n', start);
    if (end == std::string_view::npos) end = unit.size();
    const std::string line(unit.substr(start, end - start));
    out += std::regex_match(line, kExtensionInclude) ? light : line;
    if (end < unit.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

namespace {

// The unit with every backslash-newline removed, as translation phase 2 does.
std::string without_line_splices(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      size_t next = i + 1;
      if (next < text.size() && text[next] == '\r') ++next;
      if (next < text.size() && text[next] == '\n') {
        i = next;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// The identifier `text` starts with, after blanks.
std::string_view leading_identifier(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  size_t n = 0;
  while (n < text.size() && (std::isalnum(static_cast<unsigned char>(text[n])) || text[n] == '_'))
    ++n;
  return text.substr(0, n);
}

// The directive a line of comment-free text starts (#name or %:name) and the rest of the line,
// or nullopt if none.
std::optional<std::pair<std::string_view, std::string_view>> directive(std::string_view line) {
  const auto skip_blanks = [&] {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t' || line.front() == '\r'))
      line.remove_prefix(1);
  };
  skip_blanks();
  if (line.substr(0, 1) == "#") {
    line.remove_prefix(1);
  } else if (line.substr(0, 2) == "%:") {
    line.remove_prefix(2);
  } else {
    return std::nullopt;
  }
  skip_blanks();
  const std::string_view name = leading_identifier(line);
  return std::make_pair(name, line.substr(name.size()));
}

}  // namespace

bool lite_torch_header_applies(std::string_view unit) {
  const std::string code = strip_comments_and_strings(without_line_splices(unit));
  if (code.find("kevin_lite") != std::string::npos) return false;
  bool macro_defined = false;
  size_t start = 0;
  while (start < code.size()) {
    size_t end = code.find('\n', start);
    if (end == std::string::npos) end = code.size();
    const auto found = directive(std::string_view(code).substr(start, end - start));
    start = end + 1;
    if (!found) continue;
    const auto& [name, rest] = *found;
    if (name == "define" || name == "undef") {
      // The extension's name, which every unit defines first (as load_inline does), is not
      // read by PyTorch's headers.
      macro_defined = macro_defined || leading_identifier(rest) != "TORCH_EXTENSION_NAME";
    } else if (name == "include") {
      if (macro_defined) return false;
    } else if (name != "pragma" && !name.empty()) {
      return false;
    }
  }
  return true;
}

Result<TorchToolchain> torch_toolchain_from_json(const Json& j) {
  return as_invalid_argument(read_torch_toolchain(j), "torch toolchain");
}

}  // namespace kevin::engine
