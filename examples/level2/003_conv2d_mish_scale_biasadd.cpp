// CPU example for level2/003_conv2d_mish_scale_biasadd: 5x5 convolution with padding 2
// (stride 1), then out = mish(conv) * 1.5 + bias[c]. Direct convolution that accumulates
// one output plane at a time (contiguous row updates), with the epilogue fused per plane.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include "kevin_abi.h"

namespace {
constexpr int kK = 5;  // init arg kernel_size
constexpr int kPad = kK / 2;
constexpr float kScale = 1.5f;  // init arg scale

inline float mish(float v) { return v * std::tanh(std::log1p(std::exp(v))); }
}  // namespace

// Inputs (state_dict order after x): bias (C,1,1), conv.weight (C,Cin,5,5), conv.bias (C).
extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs != 4 || args->num_outputs != 1) return 1;
  const kevin_tensor& tx = args->inputs[0];
  const kevin_tensor& tb2 = args->inputs[1];
  const kevin_tensor& tw = args->inputs[2];
  const kevin_tensor& tb = args->inputs[3];
  const kevin_tensor& to = args->outputs[0];
  if (tx.ndim != 4 || tw.ndim != 4 || tb.ndim != 1 || tb2.ndim != 3 || to.ndim != 4) return 2;
  const int64_t N = tx.shape[0], Ci = tx.shape[1], H = tx.shape[2], W = tx.shape[3];
  const int64_t Co = tw.shape[0];
  if (tw.shape[1] != Ci || tw.shape[2] != kK || tw.shape[3] != kK) return 3;
  if (tb.shape[0] != Co || tb2.shape[0] != Co) return 3;
  if (to.shape[0] != N || to.shape[1] != Co || to.shape[2] != H || to.shape[3] != W) return 3;
  if (tx.strides[3] != 1 || tx.strides[2] != W) return 4;

  const float* x = static_cast<const float*>(tx.data);
  const float* wgt = static_cast<const float*>(tw.data);
  const float* cb = static_cast<const float*>(tb.data);
  const float* b2 = static_cast<const float*>(tb2.data);
  float* out = static_cast<float*>(to.data);

  for (int64_t n = 0; n < N; ++n) {
    for (int64_t co = 0; co < Co; ++co) {
      float* o = out + (n * Co + co) * H * W;
      for (int64_t p = 0; p < H * W; ++p) o[p] = cb[co];
      for (int64_t ci = 0; ci < Ci; ++ci) {
        const float* xp = x + n * tx.strides[0] + ci * tx.strides[1];
        const float* wp = wgt + ((co * Ci + ci) * kK) * kK;
        for (int kh = 0; kh < kK; ++kh) {
          for (int kw = 0; kw < kK; ++kw) {
            const float wv = wp[kh * kK + kw];
            const int64_t dw = kw - kPad;
            const int64_t ow0 = std::max<int64_t>(0, -dw);
            const int64_t ow1 = std::min<int64_t>(W, W - dw);
            for (int64_t oh = 0; oh < H; ++oh) {
              const int64_t ih = oh + kh - kPad;
              if (ih < 0 || ih >= H) continue;
              const float* xr = xp + ih * W;
              float* orow = o + oh * W;
              for (int64_t ow = ow0; ow < ow1; ++ow) orow[ow] += wv * xr[ow + dw];
            }
          }
        }
      }
      const float add = b2[co];
      for (int64_t p = 0; p < H * W; ++p) o[p] = mish(o[p]) * kScale + add;
    }
  }
  return 0;
}
