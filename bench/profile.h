// profile.h — a Chrome trace (CPU ops and CUDA kernels, PyTorch's Kineto profiler) of one
// piece of GPU work, for the benchmarks' --profile options.
#pragma once

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <functional>
#include <set>
#include <string>

namespace kevin::bench {

// Runs `work` under the profiler and writes the trace to `path` (chrome://tracing, Perfetto).
inline void profile(const std::function<void()>& work, const std::string& path) {
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  const std::set<ActivityType> activities{ActivityType::CPU, ActivityType::CUDA};
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  work();
  torch::cuda::synchronize();
  profiler::disableProfiler()->save(path);
}

}  // namespace kevin::bench
