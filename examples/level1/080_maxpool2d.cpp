// CPU solution for level1/080_maxpool2d: MaxPool2d, window 3, stride 2, padding 1.
// Plain loops over output pixels with the window clipped to the image; output sizes come
// from the output tensor, so padded positions are never read and never win.
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
  const int64_t K = 3, S = 2, P = 1;
  if (args->num_inputs < 1 || args->num_outputs < 1) return 1;
  const kevin_tensor& x = args->inputs[0];
  const kevin_tensor& y = args->outputs[0];
  if (x.dtype != KEVIN_F32 || y.dtype != KEVIN_F32 || x.ndim != 4 || y.ndim != 4) return 2;
  if (!is_contiguous(x)) return 2;
  const int64_t planes = x.shape[0] * x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t oh_n = y.shape[2], ow_n = y.shape[3];
  if (y.shape[0] * y.shape[1] != planes) return 3;
  const float* X = static_cast<const float*>(x.data);
  float* Y = static_cast<float*>(y.data);
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = X + p * h * w;
    float* out = Y + p * oh_n * ow_n;
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      const int64_t h0 = std::max<int64_t>(oh * S - P, 0);
      const int64_t h1 = std::min<int64_t>(oh * S - P + K, h);
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        const int64_t w0 = std::max<int64_t>(ow * S - P, 0);
        const int64_t w1 = std::min<int64_t>(ow * S - P + K, w);
        float m = -3.402823466e38f;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) m = std::max(m, in[ih * w + iw]);
        out[oh * ow_n + ow] = m;
      }
    }
  }
  return 0;
}
