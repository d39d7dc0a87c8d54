// token_scores.cpp — score_tokens(): the fused CUDA path as a custom autograd function (saves
// the logits by reference and one fp32 log-sum-exp per row), and the stock-op path.
#include "train/model/token_scores.h"

#if KEVIN_TRAIN_CUDA_KERNELS
#include "train/model/kernel_launch.h"
#endif

namespace kevin::train {
namespace {

double effective_temperature(double temperature) { return temperature > 0 ? temperature : 1.0; }

TokenScores stock_scores(const torch::Tensor& logits, const torch::Tensor& targets,
                         double temperature) {
  const auto wide = logits.to(torch::kFloat32);
  const double t = effective_temperature(temperature);
  // Temperature 1 (the usual) skips a vocabulary-wide pass each way.
  const auto log_softmax = torch::log_softmax(t != 1.0 ? wide / t : wide, -1);
  TokenScores out;
  out.logprobs = log_softmax.gather(-1, targets.unsqueeze(-1)).squeeze(-1);
  torch::NoGradGuard no_grad;
  const auto lp = log_softmax.detach();
  out.entropy = -(lp.exp() * lp).sum(-1);
  return out;
}

#if KEVIN_TRAIN_CUDA_KERNELS

// logits [N, V] contiguous, targets [N] int64, both on one CUDA device.
struct FusedTokenScores : torch::autograd::Function<FusedTokenScores> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& logits,
                                                const torch::Tensor& targets, double temperature) {
    const int64_t rows = logits.size(0), vocab = logits.size(1);
    const auto options = logits.options().dtype(torch::kFloat32);
    auto logprobs = torch::empty({rows}, options), entropy = torch::empty({rows}, options),
         lse = torch::empty({rows}, options);
    const float inv_t = static_cast<float>(1.0 / temperature);
    const OnDeviceOf on(logits);
    check_launch(kernels::token_scores_forward(
                     logits.data_ptr(), kernel_type(logits), targets.data_ptr<int64_t>(), rows,
                     vocab, inv_t, logprobs.data_ptr<float>(), entropy.data_ptr<float>(),
                     lse.data_ptr<float>(), on.stream()),
                 "token_scores_forward");
    ctx->save_for_backward({logits, targets, lse});
    ctx->saved_data["inv_t"] = static_cast<double>(inv_t);
    ctx->mark_non_differentiable({entropy});
    return {logprobs, entropy};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto& logits = saved[0];
    const auto& targets = saved[1];
    const auto& lse = saved[2];
    const auto grad = grad_out[0].defined() ? grad_out[0].to(torch::kFloat32).contiguous()
                                            : torch::zeros_like(lse);
    auto grad_logits = torch::empty_like(logits);
    const OnDeviceOf on(logits);
    check_launch(kernels::token_scores_backward(
                     logits.data_ptr(), kernel_type(logits), targets.data_ptr<int64_t>(),
                     lse.data_ptr<float>(), grad.data_ptr<float>(), logits.size(0), logits.size(1),
                     static_cast<float>(ctx->saved_data["inv_t"].toDouble()),
                     grad_logits.data_ptr(), on.stream()),
                 "token_scores_backward");
    return {grad_logits, torch::Tensor(), torch::Tensor()};
  }
};

bool takes_fused_path(const torch::Tensor& logits, const torch::Tensor& targets) {
  return logits.is_cuda() && targets.device() == logits.device() && logits.dim() >= 1 &&
         has_kernel_type(logits);
}

#endif

}  // namespace

bool fused_kernels_available() { return KEVIN_TRAIN_CUDA_KERNELS != 0; }

TokenScores score_tokens(const torch::Tensor& logits, const torch::Tensor& targets,
                         double temperature) {
#if KEVIN_TRAIN_CUDA_KERNELS
  if (takes_fused_path(logits, targets)) {
    const int64_t vocab = logits.size(-1);
    const auto flat_logits = logits.reshape({-1, vocab}).contiguous();
    const auto flat_targets = targets.reshape({-1}).to(torch::kLong).contiguous();
    const auto outputs =
        FusedTokenScores::apply(flat_logits, flat_targets, effective_temperature(temperature));
    return {outputs[0].view(targets.sizes()), outputs[1].view(targets.sizes())};
  }
#endif
  return stock_scores(logits, targets, temperature);
}

}  // namespace kevin::train
