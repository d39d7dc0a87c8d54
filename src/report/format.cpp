// format.cpp — fixed-point formatting through iostreams (no printf format strings), escaping.
#include "report/format.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace kevin::report {

std::string fixed(double value, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << value;
  return s.str();
}

std::string percent(double fraction) { return fixed(100.0 * fraction, 1) + "%"; }

std::string times(double speedup) { return fixed(speedup, 2) + "x"; }

std::string trimmed(double value, int max_digits) {
  std::string s = fixed(value, max_digits);
  if (s.find('.') == std::string::npos) return s;
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string duration(double ms) {
  if (ms < 1000) return fixed(ms, 0) + " ms";
  if (ms < 60'000) return fixed(ms / 1000, 1) + " s";
  if (ms < 3'600'000) return fixed(ms / 60'000, 1) + " min";
  return fixed(ms / 3'600'000, 1) + " h";
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string text_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::ostringstream out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(widths[c] - row[c].size(), ' ');
      if (c > 0) line += "  ";
      line += c == 0 ? row[c] + pad : pad + row[c];
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  }
  return out.str();
}

}  // namespace kevin::report
