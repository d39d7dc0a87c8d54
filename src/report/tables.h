// tables.h — the metrics of a run as plain-text tables for the terminal (`kevin report`).
#pragma once

#include <string>

#include "report/metrics.h"

namespace kevin::report {

// Per allocation: the overall best@k/avg@k table, solved tasks and geometric-mean speedup,
// pass@k, the serial and parallel scaling curves, verdicts and time spent, then one row per
// task. Record strings (task ids, allocations) are printed as they are. Pure.
std::string render_tables(const Metrics& metrics);

}  // namespace kevin::report
