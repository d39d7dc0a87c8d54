// chunked_scores.cpp — chunked_token_scores() as a custom autograd function: a loop over row
// chunks each way (logits by matmul, then the fused kernels of token_scores_kernels.cu or the
// stock ops), saving the inputs and one log-sum-exp per row instead of the logits.
#include "train/model/chunked_scores.h"

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/version.h>

#include <algorithm>

#if KEVIN_TRAIN_CUDA_KERNELS
#include "train/model/kernel_launch.h"
#endif

namespace kevin::train {
namespace {

double effective_temperature(double temperature) { return temperature > 0 ? temperature : 1.0; }

// The dtype lm_logits(hidden) would get in this thread: autocast's for a CUDA tensor while CUDA
// autocast is on (it leaves fp64 alone), else hidden's own.
torch::ScalarType compute_dtype(const torch::Tensor& hidden) {
  if (!hidden.is_cuda() || hidden.scalar_type() == torch::kDouble) return hidden.scalar_type();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  if (at::autocast::is_autocast_enabled(at::kCUDA))
    return at::autocast::get_autocast_dtype(at::kCUDA);
#else
  if (at::autocast::is_enabled()) return at::autocast::get_autocast_gpu_dtype();
#endif
  return hidden.scalar_type();
}

// fp32, or fp64 for fp64: the stock softmax's arithmetic, and the dtype in which the head's
// gradient adds up over chunks (a reduced-precision sum would round once per chunk).
torch::ScalarType wide_dtype(torch::ScalarType compute) {
  return compute == torch::kDouble ? torch::kDouble : torch::kFloat32;
}

// Whether the chunks' softmax takes the fused kernels (else the stock ops below).
bool takes_fused_path(const torch::Tensor& hidden, torch::ScalarType compute) {
  return KEVIN_TRAIN_CUDA_KERNELS != 0 && hidden.is_cuda() &&
         (compute == torch::kFloat32 || compute == torch::kBFloat16 || compute == torch::kHalf);
}

#if KEVIN_TRAIN_CUDA_KERNELS
// The kernels' 1/T: the same float in forward and backward, as in score_tokens' fused path.
float inv_temperature(double temperature) { return static_cast<float>(1.0 / temperature); }
#endif

// Rows [begin, begin + rows) of hidden · weightᵀ, in weight's dtype (the compute dtype).
torch::Tensor chunk_logits(const torch::Tensor& hidden, const torch::Tensor& weight, int64_t begin,
                           int64_t rows) {
  return torch::mm(hidden.narrow(0, begin, rows).to(weight.scalar_type()), weight.t());
}

// Stock forward of one chunk: writes its rows of logprobs, entropy and lse (all `logits` rows).
void stock_forward(const torch::Tensor& logits, const torch::Tensor& targets, double temperature,
                   torch::Tensor logprobs, torch::Tensor entropy, torch::Tensor lse) {
  const auto wide = logits.to(lse.scalar_type());
  const auto scaled = temperature != 1.0 ? wide / temperature : wide;
  const auto row_lse = scaled.logsumexp(1);
  const auto log_p = scaled - row_lse.unsqueeze(1);
  logprobs.copy_(log_p.gather(1, targets.unsqueeze(1)).squeeze(1));
  entropy.copy_(-(log_p.exp() * log_p).sum(1));
  lse.copy_(row_lse);
}

// Stock gradient of one chunk's logits: grad / T · (onehot(target) − softmax(logits / T)),
// softmax from the forward's lse, in lse's dtype, returned in the logits' dtype.
torch::Tensor stock_backward(const torch::Tensor& logits, const torch::Tensor& targets,
                             const torch::Tensor& lse, const torch::Tensor& grad,
                             double temperature) {
  const auto wide = logits.to(lse.scalar_type());
  const auto scaled = temperature != 1.0 ? wide / temperature : wide;
  auto grad_logits = (scaled - lse.unsqueeze(1)).exp_().neg_();
  grad_logits.scatter_add_(1, targets.unsqueeze(1),
                           torch::ones({logits.size(0), 1}, lse.options()));
  grad_logits.mul_((grad / temperature).unsqueeze(1));
  return grad_logits.to(logits.scalar_type());
}

// hidden [K, H], weight [V, H] (cast to `compute` here), targets [K] int64 contiguous, all on
// one device; temperature > 0; chunk_rows >= 1; `compute` decided by the caller, under its
// autocast state (forward and backward exclude autocast).
struct ChunkedTokenScores : torch::autograd::Function<ChunkedTokenScores> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& hidden,
                                                const torch::Tensor& weight,
                                                const torch::Tensor& targets, double temperature,
                                                int64_t chunk_rows, torch::ScalarType compute) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const int64_t rows = hidden.size(0);
    const bool fused = takes_fused_path(hidden, compute);
    const auto score_type = fused ? torch::kFloat32 : wide_dtype(compute);
    const auto options = hidden.options().dtype(score_type);
    auto logprobs = torch::empty({rows}, options), entropy = torch::empty({rows}, options),
         lse = torch::empty({rows}, options);
    const auto head = weight.to(compute);  // the one cast of this call; saved for backward
    for (int64_t begin = 0; begin < rows; begin += chunk_rows) {
      const int64_t n = std::min(chunk_rows, rows - begin);
      const auto logits = chunk_logits(hidden, head, begin, n);
      const auto chunk_targets = targets.narrow(0, begin, n);
#if KEVIN_TRAIN_CUDA_KERNELS
      if (fused) {
        const OnDeviceOf on(logits);
        check_launch(
            kernels::token_scores_forward(
                logits.data_ptr(), kernel_type(logits), chunk_targets.data_ptr<int64_t>(), n,
                logits.size(1), inv_temperature(temperature), logprobs.data_ptr<float>() + begin,
                entropy.data_ptr<float>() + begin, lse.data_ptr<float>() + begin, on.stream()),
            "token_scores_forward");
        continue;
      }
#endif
      stock_forward(logits, chunk_targets, temperature, logprobs.narrow(0, begin, n),
                    entropy.narrow(0, begin, n), lse.narrow(0, begin, n));
    }
    ctx->save_for_backward({hidden, head, targets, lse});
    ctx->saved_data["temperature"] = temperature;
    ctx->saved_data["chunk_rows"] = chunk_rows;
    ctx->saved_data["weight_dtype"] = weight.scalar_type();
    ctx->saved_data["fused"] = fused;
    const auto entropy_out = entropy.to(torch::kFloat32);
    ctx->mark_non_differentiable({entropy_out});
    return {logprobs.to(torch::kFloat32), entropy_out};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const auto saved = ctx->get_saved_variables();
    const auto& hidden = saved[0];
    const auto& head = saved[1];
    const auto& targets = saved[2];
    const auto& lse = saved[3];
    const double temperature = ctx->saved_data["temperature"].toDouble();
    const int64_t chunk_rows = ctx->saved_data["chunk_rows"].toInt();
    const bool fused = ctx->saved_data["fused"].toBool();
    const bool want_hidden = ctx->needs_input_grad(0), want_weight = ctx->needs_input_grad(1);
    const auto grad = grad_out[0].to(lse.scalar_type()).contiguous();

    const int64_t rows = hidden.size(0);
    torch::Tensor grad_hidden, grad_weight;
    if (want_hidden) grad_hidden = torch::empty(hidden.sizes(), hidden.options());
    if (want_weight) {
      grad_weight =
          torch::zeros(head.sizes(), head.options().dtype(wide_dtype(head.scalar_type())));
    }
    for (int64_t begin = 0; begin < rows; begin += chunk_rows) {
      const int64_t n = std::min(chunk_rows, rows - begin);
      const auto logits = chunk_logits(hidden, head, begin, n);
      const auto chunk_targets = targets.narrow(0, begin, n);
      torch::Tensor grad_logits;
#if KEVIN_TRAIN_CUDA_KERNELS
      if (fused) {
        grad_logits = torch::empty_like(logits);
        const OnDeviceOf on(logits);
        check_launch(
            kernels::token_scores_backward(
                logits.data_ptr(), kernel_type(logits), chunk_targets.data_ptr<int64_t>(),
                lse.data_ptr<float>() + begin, grad.data_ptr<float>() + begin, n, logits.size(1),
                inv_temperature(temperature), grad_logits.data_ptr(), on.stream()),
            "token_scores_backward");
      }
#endif
      if (!fused) {
        grad_logits = stock_backward(logits, chunk_targets, lse.narrow(0, begin, n),
                                     grad.narrow(0, begin, n), temperature);
      }
      if (want_hidden) grad_hidden.narrow(0, begin, n).copy_(torch::mm(grad_logits, head));
      if (want_weight) {
        const auto chunk_hidden = hidden.narrow(0, begin, n).to(head.scalar_type());
        if (grad_weight.scalar_type() == head.scalar_type()) {
          grad_weight.addmm_(grad_logits.t(), chunk_hidden);
        } else {
          grad_weight.add_(torch::mm(grad_logits.t(), chunk_hidden));
        }
      }
    }
    if (want_weight) grad_weight = grad_weight.to(ctx->saved_data["weight_dtype"].toScalarType());
    return {grad_hidden,     grad_weight,     torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

TokenScores chunked_token_scores(const torch::Tensor& hidden, const torch::Tensor& head_weight,
                                 const torch::Tensor& targets, double temperature,
                                 int64_t chunk_rows) {
  TORCH_CHECK(hidden.dim() == 2 && head_weight.dim() == 2 && hidden.size(1) == head_weight.size(1),
              "chunked_token_scores: hidden [K, H] and head_weight [V, H] expected, got ",
              hidden.sizes(), " and ", head_weight.sizes());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == hidden.size(0),
              "chunked_token_scores: targets [K] expected for K = ", hidden.size(0), ", got ",
              targets.sizes());
  TORCH_CHECK(head_weight.device() == hidden.device(), "chunked_token_scores: hidden on ",
              hidden.device(), " but head_weight on ", head_weight.device());
  const int64_t rows = hidden.size(0);
  const int64_t chunk = chunk_rows >= 1 ? chunk_rows : std::max<int64_t>(rows, 1);
  const auto outputs = ChunkedTokenScores::apply(
      hidden, head_weight, targets.to(hidden.device(), torch::kLong).contiguous(),
      effective_temperature(temperature), chunk, compute_dtype(hidden));
  return {outputs[0], outputs[1]};
}

}  // namespace kevin::train
