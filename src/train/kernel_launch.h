// kernel_launch.h — the libtorch side of calling kernels.h: a tensor's element type, the
// current CUDA stream, and launch errors turned into c10::Error (thrown inside the train
// module's autograd functions, as libtorch's own ops do). Only for builds with the kernels.
#pragma once

#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include "train/kernels.h"

namespace kevin::train {

inline bool has_kernel_type(const torch::Tensor& t) {
  const auto type = t.scalar_type();
  return type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kHalf;
}

// Precondition: has_kernel_type(t).
inline kernels::ElementType kernel_type(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kBFloat16:
      return kernels::ElementType::kBFloat16;
    case torch::kHalf:
      return kernels::ElementType::kFloat16;
    default:
      return kernels::ElementType::kFloat32;
  }
}

inline cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

inline void check_launch(cudaError_t status, const char* what) {
  TORCH_CHECK(status == cudaSuccess, what, " failed: ", cudaGetErrorString(status));
}

}  // namespace kevin::train
