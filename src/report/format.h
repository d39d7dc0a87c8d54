// format.h — text formatting shared by the terminal tables and the HTML report, so both show
// the same digits: percentages, speedups ("1.25x"), durations, text tables, HTML escaping.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kevin::report {

// `value` with exactly `digits` decimals ("0.667").
std::string fixed(double value, int digits);

// A fraction as a percentage with one decimal ("66.7%").
std::string percent(double fraction);

// A speedup with two decimals and an "x" ("1.25x").
std::string times(double speedup);

// Shortest plain form with at most `max_digits` decimals, trailing zeros dropped ("1.5", "2").
std::string trimmed(double value, int max_digits = 2);

// `value` rounded to `digits` significant digits, trailing zeros dropped: plain for magnitudes
// from 1e-4 to below 1e6 ("0.000123", "-2.5", "123000"), else scientific ("1e-6", "1.25e7").
// digits below 1 count as 1; 0 gives "0", NaN and infinities print as "nan", "inf", "-inf".
std::string significant(double value, int digits);

// Milliseconds in the largest fitting unit: "850 ms", "12.3 s", "4.5 min", "2.1 h".
std::string duration(double ms);

// Escapes & < > " ' so `text` is inert in HTML or SVG text and in quoted attribute values.
std::string html_escape(std::string_view text);

// Rows of cells as a text table: the first column left-aligned, the others right-aligned,
// columns separated by two spaces, one line per row. Rows may differ in length.
std::string text_table(const std::vector<std::vector<std::string>>& rows);

}  // namespace kevin::report
