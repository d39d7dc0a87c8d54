// CPU solution for level1/015_conv2d_3x3: Conv2d, 3x3 kernel, stride 1, padding 1, with bias.
// Inputs: x (N, CIN, H, W), weight (COUT, CIN, 3, 3), bias (COUT). Each output plane starts at
// its bias and accumulates weight * shifted input rows; the clipped inner loop vectorises.
#include "kevin_abi.h"

#include <algorithm>
#include <cstdint>

static inline bool is_contiguous(const kevin_tensor& t) {
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}

extern "C" int kevin_forward(const kevin_args* args) {
  if (args->num_inputs < 3 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& w = args->inputs[1];
  const kevin_tensor& b = args->inputs[2];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || w.dtype != KEVIN_F32 || b.dtype != KEVIN_F32 || y.dtype != KEVIN_F32)
    return 2;
  if (x.ndim != 4 || w.ndim != 4 || b.ndim != 1 || y.ndim != 4) return 2;
  if (!is_contiguous(x) || !is_contiguous(w) || !is_contiguous(b)) return 2;
  const int64_t nb = x.shape[0], cin = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const int64_t cout = w.shape[0];
  if (w.shape[1] != cin || w.shape[2] != 3 || w.shape[3] != 3 || b.shape[0] != cout) return 3;
  if (y.shape[0] != nb || y.shape[1] != cout || y.shape[2] != h || y.shape[3] != wd) return 3;
  const float* X = static_cast<const float*>(x.data);
  const float* Wt = static_cast<const float*>(w.data);
  const float* Bs = static_cast<const float*>(b.data);
  float* Y = static_cast<float*>(y.data);
  const int64_t plane = h * wd;

  for (int64_t n = 0; n < nb; ++n) {
    for (int64_t co = 0; co < cout; ++co) {
      float* __restrict__ out = Y + (n * cout + co) * plane;
      const float bias = Bs[co];
      for (int64_t i = 0; i < plane; ++i) out[i] = bias;
      for (int64_t ci = 0; ci < cin; ++ci) {
        const float* __restrict__ in = X + (n * cin + ci) * plane;
        const float* wk = Wt + (co * cin + ci) * 9;
        for (int kh = 0; kh < 3; ++kh) {
          // output row oh reads input row oh + kh - 1
          const int64_t oh0 = std::max<int64_t>(0, 1 - kh);
          const int64_t oh1 = std::min<int64_t>(h, h + 1 - kh);
          for (int kw = 0; kw < 3; ++kw) {
            const float wv = wk[kh * 3 + kw];
            const int64_t ow0 = std::max<int64_t>(0, 1 - kw);
            const int64_t ow1 = std::min<int64_t>(wd, wd + 1 - kw);
            for (int64_t oh = oh0; oh < oh1; ++oh) {
              float* __restrict__ orow = out + oh * wd;
              const float* __restrict__ irow = in + (oh + kh - 1) * wd + (kw - 1);
              for (int64_t ow = ow0; ow < ow1; ++ow) orow[ow] += wv * irow[ow];
            }
          }
        }
      }
    }
  }
  return 0;
}
