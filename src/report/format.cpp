// format.cpp — fixed-point formatting through iostreams (no printf format strings), escaping.
#include "report/format.h"

#include <algorithm>
#include <cmath>
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

std::string significant(double value, int digits) {
  if (value == 0) return "0";
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
  digits = std::max(digits, 1);
  int exponent = static_cast<int>(std::floor(std::log10(std::abs(value))));
  if (exponent >= -4 && exponent < 6) {
    const int decimals = digits - 1 - exponent;
    if (decimals >= 0) return trimmed(value, decimals);
    const double unit = std::pow(10.0, -decimals);  // 123456 → 123000
    return trimmed(std::round(value / unit) * unit, 0);
  }
  const double scale = std::pow(10.0, digits - 1);
  double mantissa = std::round(value / std::pow(10.0, exponent) * scale) / scale;
  if (std::abs(mantissa) >= 10) {  // 9.995e-7 rounds up to 1e-6
    mantissa /= 10;
    ++exponent;
  }
  return trimmed(mantissa, digits - 1) + "e" + std::to_string(exponent);
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
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
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
