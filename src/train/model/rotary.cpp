// rotary.cpp — apply_rotary(): the fused CUDA path as a custom autograd function (backward
// is the same kernel applying the transpose), and the stock-op path.
#include "train/model/rotary.h"

#if KEVIN_TRAIN_CUDA_KERNELS
#include "train/model/kernel_launch.h"
#endif

namespace kevin::train {
namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

torch::Tensor stock_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin) {
  const auto c = cos.unsqueeze(2), s = sin.unsqueeze(2);  // broadcast over heads
  return (x * c + rotate_half(x) * s).to(x.scalar_type());
}

#if KEVIN_TRAIN_CUDA_KERNELS

kernels::RotaryShape shape_of(const torch::Tensor& x) {
  return {x.size(0), x.size(1), x.size(2), x.size(3), x.stride(0), x.stride(1), x.stride(2)};
}

// x [B, T, H, D] with unit stride in D; cos/sin [B, T, D] fp32 contiguous.
struct FusedRotary : torch::autograd::Function<FusedRotary> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& cos, const torch::Tensor& sin) {
    auto out = torch::empty(x.sizes(), x.options());
    const OnDeviceOf on(x);
    check_launch(kernels::rotary(x.data_ptr(), kernel_type(x), shape_of(x), cos.data_ptr<float>(),
                                 sin.data_ptr<float>(),
                                 /*inverse=*/false, out.data_ptr(), on.stream()),
                 "rotary");
    ctx->save_for_backward({cos, sin});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto grad = grad_out[0].contiguous();
    auto grad_x = torch::empty(grad.sizes(), grad.options());
    const OnDeviceOf on(grad);
    check_launch(kernels::rotary(grad.data_ptr(), kernel_type(grad), shape_of(grad),
                                 saved[0].data_ptr<float>(), saved[1].data_ptr<float>(),
                                 /*inverse=*/true, grad_x.data_ptr(), on.stream()),
                 "rotary backward");
    return {grad_x, torch::Tensor(), torch::Tensor()};
  }
};

bool takes_fused_path(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  return x.is_cuda() && x.dim() == 4 && has_kernel_type(x) && x.size(3) % 2 == 0 &&
         x.stride(3) == 1 && cos.device() == x.device() && sin.device() == x.device() &&
         cos.dim() == 3 && cos.sizes() == sin.sizes() && cos.size(0) == x.size(0) &&
         cos.size(1) == x.size(1) && cos.size(2) == x.size(3);
}

#endif

}  // namespace

torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin) {
#if KEVIN_TRAIN_CUDA_KERNELS
  if (takes_fused_path(x, cos, sin)) {
    return FusedRotary::apply(x, cos.to(torch::kFloat32).contiguous(),
                              sin.to(torch::kFloat32).contiguous());
  }
#endif
  return stock_rotary(x, cos, sin);
}

}  // namespace kevin::train
