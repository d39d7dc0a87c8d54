// problem.cpp — formatting of argument lists and problem statements.
#include "tasks/problem.h"

#include <iomanip>
#include <sstream>

namespace kevin::tasks {

Result<ArgumentList> argument_list_from_json(const Json& reply) {
  if (!reply.is_object()) return invalid_argument("the describe reply is not a JSON object");
  ArgumentList a;
  for (const auto& item : reply.value("inputs", Json::array())) {
    engine::ArgSpec spec;
    KEVIN_ASSIGN_OR_RETURN(spec.tensor, tensor_spec_from_json(item));
    KEVIN_ASSIGN_OR_RETURN(const std::string role, json_get_or<std::string>(item, "role", "input"));
    spec.role = role == "parameter" ? engine::ArgRole::kParameter
                : role == "buffer"  ? engine::ArgRole::kBuffer
                                    : engine::ArgRole::kInput;
    a.inputs.push_back(std::move(spec));
  }
  KEVIN_ASSIGN_OR_RETURN(a.scalar_names,
                         json_get_or<std::vector<std::string>>(reply, "scalar_names", {}));
  KEVIN_ASSIGN_OR_RETURN(a.scalars, json_get_or<std::vector<double>>(reply, "scalars", {}));
  for (const auto& item : reply.value("outputs", Json::array())) {
    KEVIN_ASSIGN_OR_RETURN(TensorSpec out, tensor_spec_from_json(item));
    a.outputs.push_back(std::move(out));
  }
  if (a.outputs.empty()) return invalid_argument("the task has no outputs");
  a.init_inputs = reply.value("init_inputs", Json());
  return a;
}

Json to_json(const ArgumentList& args) {
  Json inputs = Json::array(), outputs = Json::array();
  for (const auto& in : args.inputs) {
    Json j = to_json(in.tensor);
    j["role"] = engine::arg_role_name(in.role);
    inputs.push_back(j);
  }
  for (const auto& o : args.outputs) outputs.push_back(to_json(o));
  return {{"inputs", inputs},
          {"scalar_names", args.scalar_names},
          {"scalars", args.scalars},
          {"outputs", outputs},
          {"init_inputs", args.init_inputs}};
}

namespace {

const char* role_note(engine::ArgRole role) {
  switch (role) {
    case engine::ArgRole::kInput:
      return "forward argument";
    case engine::ArgRole::kParameter:
      return "parameter (state_dict)";
    case engine::ArgRole::kBuffer:
      return "buffer (state_dict)";
  }
  return "";
}

void line(std::ostringstream& o, const std::string& slot, const std::string& name,
          const std::string& type, const std::string& note) {
  o << "  " << std::left << std::setw(12) << slot << std::setw(24) << name << std::setw(30) << type
    << note << "\n";
}

}  // namespace

std::string format_argument_list(const ArgumentList& args) {
  std::ostringstream o;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const auto& in = args.inputs[i];
    line(o, "inputs[" + std::to_string(i) + "]", in.tensor.name, in.tensor.type_string(),
         role_note(in.role));
  }
  for (size_t i = 0; i < args.scalar_names.size(); ++i) {
    std::ostringstream v;
    v << "double = " << (i < args.scalars.size() ? args.scalars[i] : 0.0);
    line(o, "scalars[" + std::to_string(i) + "]", args.scalar_names[i], v.str(),
         "forward argument");
  }
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    line(o, "outputs[" + std::to_string(i) + "]", args.outputs[i].name,
         args.outputs[i].type_string(), "preallocated, contiguous");
  }
  return o.str();
}

std::string problem_statement(const TaskInfo& task, const std::string& source,
                              const ArgumentList& args, const std::string& backend,
                              engine::CandidateFormat format) {
  std::ostringstream o;
  o << "Task " << task.id << " (" << (backend == "cuda" ? "CUDA" : "CPU") << " backend)\n\n";
  if (format == engine::CandidateFormat::kKernelBench) {
    o << "Here is a PyTorch module, Model. Write ModelNew, a module that computes the same outputs "
         "faster with "
      << (backend == "cuda" ? "custom CUDA kernels" : "custom C++ code")
      << " built by load_inline:\n\n";
    o << "```python\n"
      << source << (source.empty() || source.back() == '\n' ? "" : "\n") << "```\n";
    return o.str();
  }
  o << "Write one " << (backend == "cuda" ? "CUDA C++" : "C++") << " source file whose\n"
    << "  extern \"C\" int kevin_forward(const kevin_args* args)\n"
    << "computes what this PyTorch module's forward computes:\n\n";
  o << "```python\n"
    << source << (source.empty() || source.back() == '\n' ? "" : "\n") << "```\n\n";
  o << "kevin_forward receives (tensors are contiguous; shapes and strides also arrive in each "
       "kevin_tensor):\n";
  o << format_argument_list(args);
  return o.str();
}

}  // namespace kevin::tasks
