// kernel_launch.h — the libtorch side of calling kernels.h: a tensor's element type, its
// device's current CUDA stream, and launch errors turned into c10::Error (thrown inside the train
// module's autograd functions, as libtorch's own ops do). Only for builds with the kernels.
#pragma once

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include "train/model/kernels.h"

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

// Makes the device of `t` current for a launch and names its current stream: the calling
// thread may have another device current (a data-parallel replica's thread), and a kernel
// must run on the device of its data, in that device's stream order.
class OnDeviceOf {
 public:
  explicit OnDeviceOf(const torch::Tensor& t) : guard_(t.device()) {}
  cudaStream_t stream() const {
    return c10::cuda::getCurrentCUDAStream(guard_.current_device().index()).stream();
  }

 private:
  c10::cuda::CUDAGuard guard_;
};

inline void check_launch(cudaError_t status, const char* what) {
  TORCH_CHECK(status == cudaSuccess, what, " failed: ", cudaGetErrorString(status));
}

}  // namespace kevin::train
