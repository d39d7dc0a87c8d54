// fused_adamw.cpp — the fused CUDA step: per group, lazily created state as in libtorch's
// AdamW, step counts moved to the device in one copy, then one _fused_adamw_ call.
#include "train/grpo/fused_adamw.h"

#include <torch/version.h>

#include <optional>
#include <sstream>
#include <string>
#include <type_traits>

// _fused_adamw_ appeared in PyTorch 2.0; Debian's 1.13 runs the base class's step.
#if TORCH_VERSION_MAJOR >= 2
#define KEVIN_HAVE_FUSED_ADAMW 1
#else
#define KEVIN_HAVE_FUSED_ADAMW 0
#endif

namespace kevin::train {
namespace {

// libtorch keys optimizer state by the TensorImpl's address (a string of it before 2.x).
template <typename Key>
Key state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream address;  // as c10::guts::to_string wrote it
    address << p.unsafeGetTensorImpl();
    return address.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

}  // namespace

bool FusedAdamW::fused_eligible() const {
  if (!KEVIN_HAVE_FUSED_ADAMW) return false;
  std::optional<torch::Device> device;
  for (const auto& group : param_groups_) {
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (!p.is_cuda() || p.scalar_type() != torch::kFloat32 || p.grad().is_sparse() ||
          p.grad().scalar_type() != torch::kFloat32) {
        return false;
      }
      if (device && *device != p.device()) return false;
      device = p.device();
    }
  }
  return device.has_value();
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  if (!fused_eligible()) return torch::optim::AdamW::step(std::move(closure));
  torch::Tensor loss;
  if (closure != nullptr) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  fused_step();
  return loss;
}

void FusedAdamW::fused_step() {
#if KEVIN_HAVE_FUSED_ADAMW
  torch::NoGradGuard no_grad;
  using Key = typename std::decay_t<decltype(state_)>::key_type;
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
    std::vector<float> steps;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& slot = state_[state_key<Key>(p)];
      if (slot == nullptr) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (options.amsgrad())
          fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::AdamWParamState&>(*slot);
      state.step(state.step() + 1);
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(state.exp_avg());
      exp_avg_sqs.push_back(state.exp_avg_sq());
      if (options.amsgrad()) max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
      steps.push_back(static_cast<float>(state.step()));
    }
    if (params.empty()) continue;
    // The kernel reads each parameter's step from a device scalar: one copy, then views.
    const auto device_steps = torch::tensor(steps).to(params.front().device());
    std::vector<torch::Tensor> step_views;
    step_views.reserve(steps.size());
    for (int64_t i = 0; i < device_steps.size(0); ++i)
      step_views.push_back(device_steps.select(0, i));
    const auto [beta1, beta2] = options.betas();
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step_views,
                      options.lr(), beta1, beta2, options.weight_decay(), options.eps(),
                      options.amsgrad(), /*maximize=*/false);
  }
#endif
}

}  // namespace kevin::train
