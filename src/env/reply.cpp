// reply.cpp — a line-based scan for fences, tolerant of CRLF and indentation, and the rules
// that turn what it finds into a turn's action.
#include "env/reply.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

namespace kevin::env {
namespace {

struct Line {
  size_t begin, end;  // [begin, end) without the newline
};

std::vector<Line> split_lines(std::string_view s) {
  std::vector<Line> lines;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string_view::npos) end = s.size();
    size_t stop = end;
    if (stop > start && s[stop - 1] == '\r') --stop;
    lines.push_back({start, stop});
    if (end == s.size()) break;
    start = end + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A fence line: up to 3 spaces, then 3+ backticks. Returns the backtick count and the info
// string after them.
std::optional<std::pair<size_t, std::string>> fence(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && i < 3 && line[i] == ' ') ++i;
  size_t ticks = 0;
  while (i + ticks < line.size() && line[i + ticks] == '`') ++ticks;
  if (ticks < 3) return std::nullopt;
  std::string info(trim(line.substr(i + ticks)));
  std::transform(info.begin(), info.end(), info.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return std::make_pair(ticks, info);
}

bool is_code_language(const std::string& info, engine::CandidateFormat format) {
  const std::string lang = info.substr(0, info.find_first_of(" \t{"));
  if (format == engine::CandidateFormat::kKernelBench)
    return lang.empty() || lang == "python" || lang == "py";
  for (const char* ok : {"", "cuda", "cu", "cpp", "c++", "c", "cc", "cxx", "cuh", "hpp", "h"}) {
    if (lang == ok) return true;
  }
  return false;
}

engine::CandidateFormat format_of(std::string_view reply, const ReplyRules& rules) {
  if (!rules.either_format) return rules.format;
  const bool python = reply.find("```python") != std::string_view::npos ||
                      reply.find("```py\n") != std::string_view::npos ||
                      engine::detect_format(reply) == engine::CandidateFormat::kKernelBench;
  return python ? engine::CandidateFormat::kKernelBench : engine::CandidateFormat::kKevin;
}

bool unfenced_source(std::string_view reply, engine::CandidateFormat format, Unfenced rule) {
  if (rule == Unfenced::kParseError || reply.find("```") != std::string_view::npos) return false;
  if (rule == Unfenced::kAlwaysSource) return true;
  const char* entry =
      format == engine::CandidateFormat::kKernelBench ? "class ModelNew" : "kevin_forward";
  return reply.find(entry) != std::string_view::npos;
}

}  // namespace

ParsedResponse parse_response(std::string_view response, size_t max_summary,
                              engine::CandidateFormat format) {
  const std::string block =
      format == engine::CandidateFormat::kKernelBench ? "```python" : "```cuda";
  ParsedResponse out;
  std::string_view body = response;
  const size_t think_open = body.find("<think>");
  const size_t think_close = body.find("</think>");
  if (think_close != std::string_view::npos) {
    const size_t start =
        think_open != std::string_view::npos && think_open < think_close ? think_open + 7 : 0;
    out.reasoning = std::string(trim(body.substr(start, think_close - start)));
    body = body.substr(think_close + 8);
  } else if (think_open != std::string_view::npos) {
    out.error =
        "the response ended inside its reasoning (<think> was never closed), so it contains no "
        "code; "
        "keep the reasoning shorter and finish with the code block";
    return out;
  }

  const std::vector<Line> lines = split_lines(body);
  std::optional<std::pair<size_t, size_t>> best;  // [first code line, closing fence line)
  bool truncated = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto open = fence(body.substr(lines[i].begin, lines[i].end - lines[i].begin));
    if (!open) continue;
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      const auto close = fence(body.substr(lines[j].begin, lines[j].end - lines[j].begin));
      if (close && close->first >= open->first && close->second.empty()) break;
    }
    if (j == lines.size()) {  // never closed: the response was cut off
      truncated = is_code_language(open->second, format);
      break;
    }
    if (is_code_language(open->second, format)) best = std::make_pair(i + 1, j);
    i = j;
  }
  if (truncated) {
    out.error =
        "the last code block was never closed with ``` (the response was probably cut off at the "
        "length "
        "limit); send the complete source in one closed " +
        block + " block";
    return out;
  }
  if (!best) {
    out.error = "no fenced code block was found; put the complete source in one " + block +
                " ... ``` block";
    return out;
  }
  const size_t code_begin = best->first < lines.size() ? lines[best->first].begin : body.size();
  const size_t code_end = lines[best->second].begin;
  out.code =
      std::string(body.substr(code_begin, code_end > code_begin ? code_end - code_begin : 0));
  if (trim(out.code).empty()) {
    out.error = "the code block is empty";
    out.code.clear();
    return out;
  }
  const size_t after = std::min(body.size(), lines[best->second].end + 1);
  std::string_view summary = trim(body.substr(after));
  if (summary.size() > max_summary) summary = summary.substr(0, max_summary);
  out.summary = std::string(summary);
  out.ok = true;
  return out;
}

Action read_reply(std::string_view reply, const ReplyRules& rules) {
  const engine::CandidateFormat format = format_of(reply, rules);
  if (unfenced_source(reply, format, rules.unfenced)) return {true, std::string(reply), "", "", ""};
  ParsedResponse parsed = parse_response(reply, rules.max_summary, format);
  if (parsed.ok)
    return {true, std::move(parsed.code), std::move(parsed.summary), "",
            std::move(parsed.reasoning)};
  std::string why = std::move(parsed.error);
  if (rules.cut_off_at_tokens) {
    why = "the response was cut off at the token limit (" +
          std::to_string(*rules.cut_off_at_tokens) + " tokens) before a complete code block; " +
          why;
  }
  return {false, "", "", std::move(why), std::move(parsed.reasoning)};
}

}  // namespace kevin::env
