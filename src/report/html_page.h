// html_page.h — the pieces every HTML report page shares: the page shell with its inline CSS,
// tables, the folder's name and its config.json settings. No scripts, no external resources.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kevin::report {

// A complete page: doctype, <head> with `title` (escaped here) and the inline style sheet,
// then <body> with `title` as its <h1> followed by `body` (markup, inserted as is). Pure.
std::string html_page(std::string_view title, std::string_view body);

// A <table> with one header row, in a box that scrolls sideways when the table is wider than
// the page (a phone's screen), so the page itself keeps its width. Header and cells are markup,
// inserted as is: callers escape any text that comes from records. Pure.
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);

// The folder's own name ("run" for "a/run" and "a/run/"), not escaped. Pure.
std::string folder_name(const std::filesystem::path& dir);

// DIR/FILE's top-level scalar fields as a table (keys and values escaped), or a note saying
// why there are none: no such file, unreadable, malformed or not an object. FILE is a run's
// config.json or a training folder's train_config.json. Never fails.
std::string config_section(const std::filesystem::path& dir,
                           const std::string& file = "config.json");

}  // namespace kevin::report
