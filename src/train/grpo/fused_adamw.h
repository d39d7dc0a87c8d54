// fused_adamw.h — AdamW whose step on CUDA runs as one fused multi-tensor kernel per parameter
// group (ATen's _fused_adamw_) instead of libtorch's ~10 kernels per parameter, optionally with
// its two moments in host memory (full fine-tuning past the GPU's memory). Same update rule,
// same state objects, so optimizer checkpoints are interchangeable with torch::optim::AdamW.
#pragma once

#include <torch/torch.h>

namespace kevin::train {

// Drop-in torch::optim::AdamW. step() takes the fused path when every parameter with a
// gradient is a dense fp32 CUDA tensor on one device (and this libtorch has the kernel);
// otherwise it runs the base class's step unchanged. Owns nothing beyond the base class.
class FusedAdamW : public torch::optim::AdamW {
 public:
  FusedAdamW(std::vector<torch::Tensor> params, torch::optim::AdamWOptions options)
      : torch::optim::AdamW(std::move(params), std::move(options)) {}

  torch::Tensor step(LossClosure closure = nullptr) override;

  // Whether the next step() can take the fused path (exposed for tests and benchmarks).
  bool fused_eligible() const;

  // Keeps the moments (exp_avg, exp_avg_sq) in host memory, pinned where the parameters are on
  // CUDA: 8 bytes per trainable parameter leave the GPU. Each step() then streams them through
  // the GPU `bucket_bytes` of parameters at a time (moments in, the update, moments out) and
  // waits for the last copy before it returns. Moves the state that exists (place_state).
  // amsgrad is not supported there: step() on such a group aborts through TORCH_CHECK.
  void set_state_on_host(bool on, int64_t bucket_bytes = int64_t{256} << 20);
  bool state_on_host() const { return state_on_host_; }

  // Moves every moment to where it belongs (host memory, or its parameter's device), e.g.
  // after torch::load put a checkpoint's state on one device.
  void place_state();

 private:
  // The state of `p`, created on first use (zero moments where they belong).
  torch::optim::AdamWParamState& state_of(const torch::Tensor& p,
                                          const torch::optim::AdamWOptions& options);
  void fused_step();
  void host_state_step();
  // The moments of `params` in to their device, the update, and the moments back out.
  void host_state_bucket(const std::vector<torch::Tensor>& params,
                         const torch::optim::AdamWOptions& options);

  bool state_on_host_ = false;
  int64_t bucket_bytes_ = int64_t{256} << 20;
};

}  // namespace kevin::train
