// prompt.cpp — prompt text and the context budget.
#include "env/prompt.h"

#include <algorithm>

#include "engine/gates/gate.h"

namespace kevin::env {
namespace {

std::string system_text(const PromptConfig& c) {
  const bool cuda = c.backend == "cuda";
  return std::string("You are an expert in ") +
         (cuda ? "CUDA programming and GPU performance" : "high-performance C++") +
         ". You replace PyTorch operations with hand-written " +
         (cuda ? "CUDA kernels" : "C++ code") +
         " that compute the same result faster, and you improve them over several rounds of "
         "feedback.";
}

bool kernelbench(const PromptConfig& c) {
  return c.format == engine::CandidateFormat::kKernelBench;
}

// KernelBench's style: a Python module replacing the PyTorch operators with load_inline code.
std::string kernelbench_rules_text(const PromptConfig& c) {
  const bool cuda = c.backend == "cuda";
  std::string r = "Rules for your answer:\n";
  r += "- Write one Python module that defines class ModelNew(nn.Module), with the same "
       "constructor arguments and "
       "forward arguments as Model, computing the same outputs.\n";
  r += std::string("- Build your ") + (cuda ? "CUDA kernels" : "C++ code") +
       " with torch.utils.cpp_extension.load_inline at module level (name, cpp_sources, " +
       (cuda ? "cuda_sources, " : "") + "functions), writing the sources as string literals.\n";
  r += "- forward may only allocate, reshape and pass tensors to your functions: all computation "
       "happens in your own "
       "code (no torch operators, torch.nn.functional, nn modules called in forward, cuBLAS/cuDNN, "
       "torch.compile, "
       "threads, streams, try/except, files or lower precision). __init__ may hold nn modules for "
       "their weights.\n";
  r += cuda ? "- The code runs on an " + c.device_name +
                  " (nvcc -O3 -arch=sm_90a); only cpp_sources and cuda_sources "
                  "are used, your compiler flags are not.\n"
            : "- The code runs single-threaded on the CPU (g++ -O3): only cpp_sources are built.\n";
  r += "- Results must match the reference to within the tolerance (fp32: atol = rtol = 1e-4).\n";
  r += "- You will get feedback on compilation, correctness and speed, and can improve your code "
       "in later rounds.\n";
  return r;
}

std::string kernelbench_example_text(const PromptConfig& c) {
  const bool cuda = c.backend == "cuda";
  std::string e =
      "Example of the expected form, for a Model whose forward returns a + b:\n```python\n"
      "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n";
  if (cuda) {
    e += "source = r\"\"\"\n#include <torch/extension.h>\n"
         "__global__ void add_kernel(const float* a, const float* b, float* out, long long n) {\n"
         "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n  if (i < n) out[i] = "
         "a[i] + b[i];\n}\n"
         "torch::Tensor add(torch::Tensor a, torch::Tensor b) {\n  auto out = "
         "torch::empty_like(a);\n"
         "  long long n = a.numel();\n  add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), "
         "b.data_ptr<float>(), "
         "out.data_ptr<float>(), n);\n  return out;\n}\n\"\"\"\n\n"
         "ext = load_inline(name=\"add_ext\", cpp_sources=\"torch::Tensor add(torch::Tensor a, "
         "torch::Tensor b);\", "
         "cuda_sources=source, functions=[\"add\"])\n";
  } else {
    e += "source = r\"\"\"\n#include <torch/extension.h>\n"
         "torch::Tensor add(torch::Tensor a, torch::Tensor b) {\n  auto out = "
         "torch::empty_like(a);\n"
         "  const float* pa = a.data_ptr<float>();\n  const float* pb = b.data_ptr<float>();\n"
         "  float* po = out.data_ptr<float>();\n  for (int64_t i = 0; i < a.numel(); ++i) po[i] = "
         "pa[i] + pb[i];\n"
         "  return out;\n}\n\"\"\"\n\n"
         "ext = load_inline(name=\"add_ext\", cpp_sources=source, functions=[\"add\"])\n";
  }
  e += "\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
       "    def forward(self, a, b):\n        return ext.add(a.contiguous(), b.contiguous())\n```\n"
       "Element-wise addition in one pass.\n";
  return e;
}

std::string rules_text(const PromptConfig& c) {
  if (kernelbench(c)) return kernelbench_rules_text(c);
  const bool cuda = c.backend == "cuda";
  std::string r = "Rules for your answer:\n";
  r += "- Write exactly one ";
  r += cuda ? "CUDA C++ source file" : "C++17 source file";
  r += " that includes \"kevin_abi.h\" and defines\n    extern \"C\" int kevin_forward(const "
       "kevin_args* args);\n";
  r += "  returning 0 on success. kevin_abi.h declares kevin_tensor {data, dtype, ndim, shape, "
       "strides} and kevin_args "
       "{inputs, num_inputs, outputs, num_outputs, scalars, num_scalars, workspace, "
       "workspace_bytes, stream}.\n";
  r += "- Read every size from the tensors' shape arrays; do not hard-code sizes. Inputs are "
       "read-only; write every "
       "element of every output.\n";
  r += "- Do all computation yourself: no PyTorch, no cuBLAS/cuDNN or other libraries, no host or "
       "device memory "
       "allocation (use args->workspace for scratch space), no threads, streams, files, printing "
       "or system calls.\n";
  if (cuda) {
    r += "- Launch every kernel on (cudaStream_t)args->stream and do not synchronise the "
         "device.\n";
    r += "- The code runs on an " + c.device_name +
         " (compiled with nvcc -O3 -arch=sm_90a). Results must match the "
         "reference to within the tolerance (fp32: atol = rtol = 1e-4), so do not lower the "
         "precision.\n";
  } else {
    r += "- The code runs single-threaded on the CPU (g++ -O3 -march=x86-64-v2); SSE intrinsics "
         "are allowed. Results "
         "must match the reference to within the tolerance (fp32: atol = rtol = 1e-4).\n";
  }
  // The gate's own list, so the prompt can never promise a header the gate refuses.
  r += "- Allowed headers: \"kevin_abi.h\" and " +
       engine::allowed_includes_text(cuda ? engine::Backend::kCuda : engine::Backend::kCpu) +
       "; any other include is refused.\n";
  r += "- You will get feedback on compilation, correctness and speed, and can improve your kernel "
       "in later rounds.\n";
  return r;
}

std::string example_text(const PromptConfig& c) {
  if (kernelbench(c)) return kernelbench_example_text(c);
  if (c.backend == "cuda") {
    return "Example of the expected form, for a module whose forward returns a + b:\n"
           "```cuda\n"
           "#include <cuda_runtime.h>\n#include \"kevin_abi.h\"\n\n"
           "__global__ void add_kernel(const float* a, const float* b, float* out, long long n) {\n"
           "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
           "  if (i < n) out[i] = a[i] + b[i];\n}\n\n"
           "extern \"C\" int kevin_forward(const kevin_args* args) {\n"
           "  long long n = 1;\n"
           "  for (int d = 0; d < args->outputs[0].ndim; ++d) n *= args->outputs[0].shape[d];\n"
           "  const int threads = 256;\n"
           "  const long long blocks = (n + threads - 1) / threads;\n"
           "  add_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)args->stream>>>(\n"
           "      (const float*)args->inputs[0].data, (const float*)args->inputs[1].data,\n"
           "      (float*)args->outputs[0].data, n);\n"
           "  return cudaGetLastError() == cudaSuccess ? 0 : 1;\n}\n"
           "```\n"
           "Element-wise addition with one thread per element.\n";
  }
  return "Example of the expected form, for a module whose forward returns a + b:\n"
         "```cpp\n"
         "#include <cstdint>\n#include \"kevin_abi.h\"\n\n"
         "extern \"C\" int kevin_forward(const kevin_args* args) {\n"
         "  int64_t n = 1;\n"
         "  for (int d = 0; d < args->outputs[0].ndim; ++d) n *= args->outputs[0].shape[d];\n"
         "  const float* a = (const float*)args->inputs[0].data;\n"
         "  const float* b = (const float*)args->inputs[1].data;\n"
         "  float* out = (float*)args->outputs[0].data;\n"
         "  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];\n"
         "  return 0;\n}\n"
         "```\n"
         "A single vectorisable loop over the elements.\n";
}

std::string answer_request(bool first_turn) {
  return std::string(first_turn ? ""
                                : "Think again from the start about how to do better, then write "
                                  "new, complete code.\n") +
         "Answer with your reasoning, then the complete source in one fenced code block, then a "
         "few sentences "
         "(after the code) summarising what your kernel does and what you changed.";
}

std::string history_text(const std::vector<TurnRecord>& history, size_t first, size_t dropped,
                         const PromptConfig& c) {
  std::string h = "Your earlier attempts at this task";
  if (dropped > 0) h += " (the " + std::to_string(dropped) + " oldest are left out for space)";
  h += ", oldest first:\n";
  const char* fence = kernelbench(c)        ? "```python\n"
                      : c.backend == "cuda" ? "```cuda\n"
                                            : "```cpp\n";
  for (size_t i = first; i < history.size(); ++i) {
    const TurnRecord& t = history[i];
    h += "\n### Attempt " + std::to_string(i + 1) + "\n";
    h += t.code.empty() ? std::string("(no code could be extracted from this answer)\n")
                        : fence + t.code + (t.code.back() == '\n' ? "" : "\n") + "```\n";
    if (!t.summary.empty()) h += "Your summary: " + t.summary + "\n";
    h += "Feedback: " + truncate_middle(t.feedback, c.max_feedback_chars) + "\n";
  }
  return h;
}

}  // namespace

size_t estimate_tokens(std::string_view text) { return (text.size() + 2) / 3; }

std::string truncate_middle(std::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  const size_t head = max_chars * 2 / 3, tail = max_chars - head;
  return std::string(text.substr(0, head)) + "\n[... " + std::to_string(text.size() - head - tail) +
         " characters omitted ...]\n" + std::string(text.substr(text.size() - tail));
}

Prompt build_prompt(const std::string& problem, const std::vector<TurnRecord>& history,
                    const PromptConfig& config) {
  Prompt p;
  const std::string system = system_text(config);
  const bool first_turn = history.empty();
  std::string fixed = problem + "\n" + rules_text(config) + "\n";
  if (first_turn) fixed += example_text(config) + "\n";
  const std::string request = answer_request(first_turn);
  const size_t base_tokens =
      estimate_tokens(system) + estimate_tokens(fixed) + estimate_tokens(request);

  // Newest turns matter most: keep as many of them as fit, dropping from the oldest.
  size_t first = history.size();
  while (first > 0 &&
         base_tokens + estimate_tokens(history_text(history, first - 1, first - 1, config)) <=
             config.context_tokens) {
    --first;
  }
  std::string user = fixed;
  if (first < history.size()) user += history_text(history, first, first, config) + "\n";
  user += request;
  p.messages = {{"system", system}, {"user", user}};
  p.turns_included = history.size() - first;
  p.turns_dropped = first;
  p.estimated_tokens = estimate_tokens(system) + estimate_tokens(user);
  return p;
}

}  // namespace kevin::env
