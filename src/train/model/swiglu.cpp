// swiglu.cpp — swiglu(): the fused CUDA path as a custom autograd function that saves only
// its input, and the stock-op path.
#include "train/model/swiglu.h"

#if KEVIN_TRAIN_CUDA_KERNELS
#include "train/model/kernel_launch.h"
#endif

namespace kevin::train {
namespace {

torch::Tensor stock_swiglu(const torch::Tensor& gate_up) {
  const auto halves = gate_up.chunk(2, -1);
  return torch::silu(halves[0]) * halves[1];
}

#if KEVIN_TRAIN_CUDA_KERNELS

// gate_up [N, 2W] contiguous.
struct FusedSwiglu : torch::autograd::Function<FusedSwiglu> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& gate_up) {
    const int64_t rows = gate_up.size(0), width = gate_up.size(1) / 2;
    auto out = torch::empty({rows, width}, gate_up.options());
    const OnDeviceOf on(gate_up);
    check_launch(kernels::swiglu_forward(gate_up.data_ptr(), kernel_type(gate_up), rows, width,
                                         out.data_ptr(), on.stream()),
                 "swiglu_forward");
    ctx->save_for_backward({gate_up});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    const auto gate_up = ctx->get_saved_variables()[0];
    const auto grad = grad_out[0].to(gate_up.scalar_type()).contiguous();
    auto grad_gate_up = torch::empty_like(gate_up);
    const OnDeviceOf on(gate_up);
    check_launch(kernels::swiglu_backward(gate_up.data_ptr(), grad.data_ptr(), kernel_type(gate_up),
                                          gate_up.size(0), gate_up.size(1) / 2,
                                          grad_gate_up.data_ptr(), on.stream()),
                 "swiglu_backward");
    return {grad_gate_up};
  }
};

#endif

}  // namespace

torch::Tensor swiglu(const torch::Tensor& gate_up) {
#if KEVIN_TRAIN_CUDA_KERNELS
  if (gate_up.is_cuda() && has_kernel_type(gate_up) && gate_up.dim() >= 1 &&
      gate_up.size(-1) % 2 == 0) {
    const int64_t width = gate_up.size(-1);
    auto sizes = gate_up.sizes().vec();
    sizes.back() = width / 2;
    return FusedSwiglu::apply(gate_up.reshape({-1, width}).contiguous()).view(sizes);
  }
#endif
  return stock_swiglu(gate_up);
}

}  // namespace kevin::train
