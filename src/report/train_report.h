// train_report.h — the report of a training folder (TRAIN_DIR/train_log.jsonl): plain-text
// tables for the terminal and one self-contained HTML page with SVG charts versus step.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "report/train_log.h"

namespace kevin::report {

// How many of the latest train steps, and of the latest holdout evaluations, the tables show.
inline constexpr size_t kRecentTrainLines = 10;

// The summary (steps, reward trend, best holdout, last lr, time and token totals), then the
// last kRecentTrainLines train steps and holdout evaluations as text tables; absent values
// print as "-". Pure.
std::string render_train_tables(const std::vector<TrainLogLine>& lines);

// The page for the log `lines` of the training folder `train_dir`: the summary,
// TRAIN_DIR/config.json's top-level scalar fields (a missing or malformed config is noted, not
// an error), eleven charts versus step (reward, correct rate, speedup, response length,
// clipped and not-okay responses, grad norm, KL, entropy, loss, learning rate, tokens/s) and
// the tables of render_train_tables. Every string from the folder is HTML-escaped.
std::string render_train_html_report(const std::filesystem::path& train_dir,
                                     const std::vector<TrainLogLine>& lines);

// Renders the page and writes it to `out_file` atomically (creating its folder). Fails only
// when the file cannot be written (kIoError).
Status write_train_html_report(const std::filesystem::path& train_dir,
                               const std::vector<TrainLogLine>& lines,
                               const std::filesystem::path& out_file);

}  // namespace kevin::report
