// problem.h — a task as a model sees it: the PyTorch source plus the exact ABI argument list
// (inputs, parameters and buffers, scalars, outputs with names, shapes and dtypes). Prompts
// (the rollout module) build on this text.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "core/tensor.h"
#include "engine/build/kernelbench.h"
#include "engine/run/reference.h"
#include "tasks/suite.h"

namespace kevin::tasks {

struct ArgumentList {
  std::vector<engine::ArgSpec> inputs;  // ABI order
  std::vector<std::string> scalar_names;
  std::vector<double> scalars;
  std::vector<TensorSpec> outputs;
  // get_init_inputs() as JSON, the constants the task's model is built with (null when the
  // worker did not say, or they are not JSON: tensors, objects).
  Json init_inputs;
};

// From the reference worker's describe reply.
Result<ArgumentList> argument_list_from_json(const Json& reply);
Json to_json(const ArgumentList& args);

// The table of kevin_args entries, one line each, e.g.
//   inputs[0]   x             float32[8192, 8192]   forward argument
std::string format_argument_list(const ArgumentList& args);

// The whole problem statement for `backend` ("cuda" or "cpu"): for kevin's ABI, the module and
// the kevin_args list; for KernelBench answers, the module to be rewritten as ModelNew.
std::string problem_statement(const TaskInfo& task, const std::string& source,
                              const ArgumentList& args, const std::string& backend,
                              engine::CandidateFormat format = engine::CandidateFormat::kKevin);

}  // namespace kevin::tasks
