// candidate_template.h — a compilable starting point for a task's candidate: kevin_forward
// with every input, scalar and output named and typed as kevin passes them, computing nothing
// yet (so it compiles and is judged `wrong_answer` until the computation is written).
#pragma once

#include <string>

#include "tasks/problem.h"
#include "tasks/suite.h"

namespace kevin::tasks {

// The source of a candidate for `task` on `backend` ("cuda": a .cu file with one kernel
// launched on the harness stream; "cpu": a .cpp file). Names are made C identifiers
// ("conv.weight" becomes conv_weight).
std::string candidate_template(const TaskInfo& task, const ArgumentList& args,
                               const std::string& backend);

}  // namespace kevin::tasks
