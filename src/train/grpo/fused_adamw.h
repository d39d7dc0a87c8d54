// fused_adamw.h — AdamW whose step on CUDA runs as one fused multi-tensor kernel per parameter
// group (ATen's _fused_adamw_) instead of libtorch's ~10 kernels per parameter. Same update
// rule, same state objects, so optimizer checkpoints are interchangeable with torch::optim::AdamW.
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

 private:
  void fused_step();
};

}  // namespace kevin::train
