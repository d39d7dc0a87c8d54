// fused_adamw.cpp — the fused CUDA step: per group, lazily created state as in libtorch's
// AdamW, step counts moved to the device in one copy, then one _fused_adamw_ call; and the
// host-state step, which streams the moments through the GPU a bucket of parameters at a time.
#include "train/grpo/fused_adamw.h"

#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#if KEVIN_TRAIN_CUDA_KERNELS
#include <cuda_runtime.h>
#endif

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

using Key =
    typename std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

// A zeroed host tensor like `p`, page-locked where `p` is on CUDA so copies to and from the
// GPU run asynchronously at full speed. Registered memory of exactly the tensor's size rather
// than libtorch's pinned allocator, which rounds every block up to a power of two (a 7B
// model's moments would take ~1.7× their 57 GiB of host memory). Pageable when registering
// fails (copies are then synchronous, never wrong).
torch::Tensor host_zeros_like(const torch::Tensor& p) {
  const auto options = p.options().device(torch::kCPU);
#if KEVIN_TRAIN_CUDA_KERNELS
  if (p.is_cuda()) {
    constexpr size_t kPage = 4096;
    const size_t bytes = p.nbytes();
    const size_t rounded = std::max(kPage, (bytes + kPage - 1) / kPage * kPage);
    void* data = std::aligned_alloc(kPage, rounded);
    TORCH_CHECK(data != nullptr, "FusedAdamW: out of host memory for ", rounded, " bytes");
    std::memset(data, 0, rounded);
    if (cudaHostRegister(data, rounded, cudaHostRegisterDefault) == cudaSuccess) {
      return torch::from_blob(
          data, p.sizes(),
          [](void* q) {
            cudaHostUnregister(q);
            std::free(q);
          },
          options);
    }
    (void)cudaGetLastError();  // clear the failed registration; the memory stays pageable
    return torch::from_blob(
        data, p.sizes(), [](void* q) { std::free(q); }, options);
  }
#endif
  return torch::zeros(p.sizes(), options);
}

// Where a moment of `p` lives: host memory (page-locked for a CUDA `p`) when `on_host`, else
// beside `p`.
torch::Tensor placed(const torch::Tensor& moment, const torch::Tensor& p, bool on_host) {
  if (!on_host) return moment.device() == p.device() ? moment : moment.to(p.device());
  if (moment.is_cpu() && (!p.is_cuda() || moment.is_pinned())) return moment;
  torch::Tensor host = host_zeros_like(p);
  host.copy_(moment);
  return host;
}

// libtorch's AdamW update of one parameter (its step count already advanced), for the host
// path where the fused kernel is not available.
void adamw_update(torch::Tensor& p, const torch::Tensor& grad, torch::Tensor& exp_avg,
                  torch::Tensor& exp_avg_sq, int64_t step,
                  const torch::optim::AdamWOptions& options) {
  const auto [beta1, beta2] = options.betas();
  if (options.weight_decay() != 0) p.mul_(1 - options.lr() * options.weight_decay());
  exp_avg.mul_(beta1).add_(grad, 1 - beta1);
  exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  const double correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  const auto denom = (exp_avg_sq.sqrt() / std::sqrt(correction2)).add_(options.eps());
  p.addcdiv_(exp_avg, denom, -options.lr() / correction1);
}

bool fused_kernel_takes(const torch::Tensor& p) {
  return KEVIN_HAVE_FUSED_ADAMW && p.is_cuda() && p.scalar_type() == torch::kFloat32 &&
         p.grad().scalar_type() == torch::kFloat32 && !p.grad().is_sparse();
}

// One _fused_adamw_ call over parallel lists (each parameter's step from a device scalar).
void fused_update(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                  const std::vector<torch::Tensor>& exp_avgs,
                  const std::vector<torch::Tensor>& exp_avg_sqs,
                  const std::vector<torch::Tensor>& max_exp_avg_sqs,
                  const std::vector<float>& steps, const torch::optim::AdamWOptions& options) {
#if KEVIN_HAVE_FUSED_ADAMW
  const auto device_steps = torch::tensor(steps).to(params.front().device());
  std::vector<torch::Tensor> step_views;
  step_views.reserve(steps.size());
  for (int64_t i = 0; i < device_steps.size(0); ++i)
    step_views.push_back(device_steps.select(0, i));
  const auto [beta1, beta2] = options.betas();
  at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step_views, options.lr(),
                    beta1, beta2, options.weight_decay(), options.eps(), options.amsgrad(),
                    /*maximize=*/false);
#else
  (void)params, (void)grads, (void)exp_avgs, (void)exp_avg_sqs, (void)max_exp_avg_sqs, (void)steps,
      (void)options;
  TORCH_CHECK(false, "this libtorch has no _fused_adamw_");
#endif
}

// One step's parallel lists over parameters, as _fused_adamw_ takes them.
struct StepLists {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
  std::vector<float> steps;

  // Advances `state`'s step count and appends `p` with its gradient, the moments as the update
  // is to see them (`exp_avg`, `exp_avg_sq`: the state's own, or copies on `p`'s device), and
  // the new count.
  void add(const torch::Tensor& p, torch::optim::AdamWParamState& state, torch::Tensor exp_avg,
           torch::Tensor exp_avg_sq) {
    state.step(state.step() + 1);
    params.push_back(p);
    grads.push_back(p.grad());
    exp_avgs.push_back(std::move(exp_avg));
    exp_avg_sqs.push_back(std::move(exp_avg_sq));
    steps.push_back(static_cast<float>(state.step()));
  }

  // The update of every listed parameter: one fused kernel when it takes them all, else
  // libtorch's arithmetic parameter by parameter.
  void update(const torch::optim::AdamWOptions& options) {
    if (std::all_of(params.begin(), params.end(), fused_kernel_takes)) {
      fused_update(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, options);
      return;
    }
    TORCH_CHECK(max_exp_avg_sqs.empty(), "FusedAdamW: amsgrad off the fused path");
    for (size_t i = 0; i < params.size(); ++i)
      adamw_update(params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], static_cast<int64_t>(steps[i]),
                   options);
  }
};

// The end of the bucket that starts at `first`: parameters up to `bucket_bytes` in all, and at
// least one.
size_t bucket_end(const std::vector<torch::Tensor>& params, size_t first, int64_t bucket_bytes) {
  size_t end = first;
  int64_t bytes = 0;
  while (end < params.size() &&
         (end == first || bytes + static_cast<int64_t>(params[end].nbytes()) <= bucket_bytes))
    bytes += static_cast<int64_t>(params[end++].nbytes());
  return end;
}

// The updated moment back into its host tensor (nothing to do where the update ran on it).
void copy_back(const torch::Tensor& updated, torch::Tensor& host) {
  if (!updated.is_same(host)) host.copy_(updated, /*non_blocking=*/true);
}

}  // namespace

torch::optim::AdamWParamState& FusedAdamW::state_of(const torch::Tensor& p,
                                                    const torch::optim::AdamWOptions& options) {
  auto& slot = state_[state_key<Key>(p)];
  if (slot == nullptr) {
    auto fresh = std::make_unique<torch::optim::AdamWParamState>();
    fresh->step(0);
    const auto zeros = [&] {
      return state_on_host_ ? host_zeros_like(p)
                            : torch::zeros_like(p, torch::MemoryFormat::Preserve);
    };
    fresh->exp_avg(zeros());
    fresh->exp_avg_sq(zeros());
    if (options.amsgrad()) fresh->max_exp_avg_sq(zeros());
    slot = std::move(fresh);
  }
  return static_cast<torch::optim::AdamWParamState&>(*slot);
}

void FusedAdamW::set_state_on_host(bool on, int64_t bucket_bytes) {
  state_on_host_ = on;
  bucket_bytes_ = std::max<int64_t>(bucket_bytes, 1);
  place_state();
}

void FusedAdamW::place_state() {
  for (auto& group : param_groups_) {
    for (const auto& p : group.params()) {
      const auto it = state_.find(state_key<Key>(p));
      if (it == state_.end() || it->second == nullptr) continue;
      auto& state = static_cast<torch::optim::AdamWParamState&>(*it->second);
      state.exp_avg(placed(state.exp_avg(), p, state_on_host_));
      state.exp_avg_sq(placed(state.exp_avg_sq(), p, state_on_host_));
      if (state.max_exp_avg_sq().defined())
        state.max_exp_avg_sq(placed(state.max_exp_avg_sq(), p, state_on_host_));
    }
  }
}

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
  if (!state_on_host_ && !fused_eligible()) return torch::optim::AdamW::step(std::move(closure));
  torch::Tensor loss;
  if (closure != nullptr) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  if (state_on_host_) {
    host_state_step();
  } else {
    fused_step();
  }
  return loss;
}

void FusedAdamW::fused_step() {
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    StepLists lists;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = state_of(p, options);
      lists.add(p, state, state.exp_avg(), state.exp_avg_sq());
      if (options.amsgrad()) lists.max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
    }
    if (!lists.params.empty()) lists.update(options);
  }
}

void FusedAdamW::host_state_step() {
  torch::NoGradGuard no_grad;
  bool on_cuda = false;
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!options.amsgrad(), "FusedAdamW: amsgrad with the state in host memory");
    std::vector<torch::Tensor> params;
    for (const auto& p : group.params()) {
      if (p.grad().defined()) params.push_back(p);
      on_cuda = on_cuda || (p.grad().defined() && p.is_cuda());
    }
    for (size_t first = 0; first < params.size();) {
      const size_t end = bucket_end(params, first, bucket_bytes_);
      host_state_bucket({params.begin() + static_cast<std::ptrdiff_t>(first),
                         params.begin() + static_cast<std::ptrdiff_t>(end)},
                        options);
      first = end;
    }
  }
  // The last moments are still on their way to host memory: a checkpoint must not read them
  // before they land.
  if (on_cuda) torch::cuda::synchronize();
}

void FusedAdamW::host_state_bucket(const std::vector<torch::Tensor>& params,
                                   const torch::optim::AdamWOptions& options) {
  StepLists lists;
  std::vector<torch::Tensor> host_avgs, host_avg_sqs;
  for (const auto& p : params) {
    auto& state = state_of(p, options);
    host_avgs.push_back(state.exp_avg());
    host_avg_sqs.push_back(state.exp_avg_sq());
    lists.add(p, state, state.exp_avg().to(p.device(), /*non_blocking=*/true),
              state.exp_avg_sq().to(p.device(), /*non_blocking=*/true));
  }
  lists.update(options);
  for (size_t i = 0; i < params.size(); ++i) {
    copy_back(lists.exp_avgs[i], host_avgs[i]);
    copy_back(lists.exp_avg_sqs[i], host_avg_sqs[i]);
  }
}

}  // namespace kevin::train
