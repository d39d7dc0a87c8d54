// degenerate.h — is a task's reference data degenerate under a tolerance? A task is when a
// trivial output — all zeros, one constant, a copy of an input, or the same answer whatever
// the inputs — would pass the correctness check on every correctness set: a candidate could
// then be judged correct (and fast) without doing the work. The judge refuses such tasks at
// evaluation time, whatever their source (the shipped suite or a KernelBench checkout).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "engine/judge/compare.h"
#include "engine/run/reference.h"

namespace kevin::engine {

// One sentence per trivial output that passes on all K correctness sets, e.g. "an all-zero
// output passes the tolerance"; empty when the data is sound. Reads the reference data files
// (uses several threads for large outputs). Errors: the data files are missing or short.
Result<std::vector<std::string>> degenerate_outputs(const ReferenceSet& ref,
                                                    const ToleranceProfile& tolerance);

}  // namespace kevin::engine
