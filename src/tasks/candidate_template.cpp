// candidate_template.cpp — the skeleton `kevin tasks show --template` writes.
#include "tasks/candidate_template.h"

#include <cctype>
#include <set>
#include <sstream>

namespace kevin::tasks {
namespace {

// The C type of an element as a candidate reads it on `backend`.
std::string element_type(DType dtype, bool cuda) {
  switch (dtype) {
    case DType::kF32:
      return "float";
    case DType::kF64:
      return "double";
    case DType::kF16:
      return cuda ? "__half" : "uint16_t";
    case DType::kBF16:
      return cuda ? "__nv_bfloat16" : "uint16_t";
    case DType::kI8:
      return "int8_t";
    case DType::kU8:
      return "uint8_t";
    case DType::kI16:
      return "int16_t";
    case DType::kI32:
      return "int32_t";
    case DType::kI64:
      return "int64_t";
    case DType::kBool:
      return "bool";
  }
  return "float";
}

// `name` as a C identifier not yet in `taken` (a suffix makes repeats unique).
std::string identifier(const std::string& name, std::set<std::string>* taken) {
  std::string id;
  for (const char c : name) id.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "t_" + id;
  std::string unique = id;
  for (int n = 2; !taken->insert(unique).second; ++n) unique = id + "_" + std::to_string(n);
  return unique;
}

struct Binding {
  std::string
      declaration;  // e.g. "const float* x = static_cast<const float*>(args->inputs[0].data);"
  std::string name;
  std::string type;
};

std::vector<Binding> bindings(const ArgumentList& args, bool cuda) {
  std::set<std::string> taken{"args", "n", "i", "stream", "kevin_forward", "forward_kernel"};
  std::vector<Binding> out;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const std::string type = "const " + element_type(args.inputs[i].tensor.dtype, cuda) + "*";
    const std::string name = identifier(args.inputs[i].tensor.name, &taken);
    out.push_back({type + " " + name + " = static_cast<" + type + ">(args->inputs[" +
                       std::to_string(i) + "].data);",
                   name, type});
  }
  for (size_t i = 0; i < args.scalar_names.size(); ++i) {
    const std::string name = identifier(args.scalar_names[i], &taken);
    out.push_back(
        {"const double " + name + " = args->scalars[" + std::to_string(i) + "];", name, "double"});
  }
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    const std::string type = element_type(args.outputs[i].dtype, cuda) + "*";
    const std::string name = identifier(args.outputs[i].name, &taken);
    out.push_back({type + " " + name + " = static_cast<" + type + ">(args->outputs[" +
                       std::to_string(i) + "].data);",
                   name, type});
  }
  return out;
}

void header(std::ostringstream& o, const TaskInfo& task, const ArgumentList& args,
            const std::string& backend) {
  o << "// Candidate for " << task.id << " (" << (backend == "cuda" ? "CUDA" : "CPU")
    << " backend), from\n"
    << "// `kevin tasks show " << task.id << " --backend " << backend
    << " --template`. kevin_forward must\n"
    << "// compute the task's forward into the outputs; as written it computes nothing, so it\n"
    << "// compiles and is judged wrong_answer. Arguments, in the order kevin passes them:\n";
  std::istringstream table(format_argument_list(args));
  for (std::string row; std::getline(table, row);) o << "//" << row << "\n";
  // The model's constructor constants reach the kernel only as written here (or in the task).
  if (args.init_inputs.is_array() && !args.init_inputs.empty()) {
    o << "// The task's model is built with get_init_inputs() = " << dump_json(args.init_inputs)
      << " (its constructor's\n// constants: use them as the task's source does).\n";
  }
  o << "// Judge it: kevin eval --task " << task.path.string() << " --backend " << backend
    << " --candidate THIS_FILE\n";
}

}  // namespace

std::string candidate_template(const TaskInfo& task, const ArgumentList& args,
                               const std::string& backend) {
  const bool cuda = backend == "cuda";
  const std::vector<Binding> bound = bindings(args, cuda);
  std::ostringstream o;
  header(o, task, args, backend);
  o << "#include <stdint.h>\n";
  if (cuda) o << "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_runtime.h>\n";
  o << "\n#include \"kevin_abi.h\"\n\n";
  const std::string count = std::to_string(args.outputs.front().numel());
  if (cuda) {
    o << "__global__ void forward_kernel(";
    for (size_t i = 0; i < bound.size(); ++i) o << bound[i].type << " " << bound[i].name << ", ";
    o << "int64_t n) {\n"
      << "  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += "
         "(int64_t)gridDim.x * blockDim.x) {\n"
      << "    // Compute element i of the outputs here.\n"
      << "  }\n}\n\n";
  }
  o << "extern \"C\" int kevin_forward(const kevin_args* args) {\n";
  for (const auto& b : bound) o << "  " << b.declaration << "\n";
  // Read from the shape, as the prompt asks: the CPU backend runs tasks at other sizes.
  o << "  int64_t n = 1;  // elements of " << args.outputs.front().name << " (" << count
    << " here), from its shape\n"
    << "  for (int32_t d = 0; d < args->outputs[0].ndim; ++d) n *= args->outputs[0].shape[d];\n";
  if (cuda) {
    o << "  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);  // launch only on this "
         "stream\n"
      << "  const int threads = 256;\n"
      << "  const int blocks = static_cast<int>((n + threads - 1) / threads < 65535 ? (n + threads "
         "- 1) / threads : 65535);\n"
      << "  forward_kernel<<<blocks, threads, 0, stream>>>(";
    for (const auto& b : bound) o << b.name << ", ";
    o << "n);\n"
      << "  return cudaGetLastError() == cudaSuccess ? 0 : 1;\n";
  } else {
    for (const auto& b : bound) o << "  (void)" << b.name << ";\n";
    o << "  for (int64_t i = 0; i < n; ++i) {\n"
      << "    // Compute element i of the outputs here.\n"
      << "  }\n"
      << "  return 0;\n";
  }
  o << "}\n";
  return o.str();
}

}  // namespace kevin::tasks
