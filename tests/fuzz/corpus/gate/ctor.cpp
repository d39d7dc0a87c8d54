// hostile: load-time code that forks (docs/sandbox.md #8/#31) for vector_add.
// An __attribute__((constructor)) runs at dlopen, before any call, and forks a child that
// lingers; kevin_forward itself is a correct, clean sum.
#include "kevin_abi.h"

extern "C" int fork(void);

__attribute__((constructor)) static void at_load() {
  if (fork() == 0) {
    volatile unsigned long spin = 0;
    for (;;) ++spin;
  }
}

extern "C" int kevin_forward(const kevin_args* args) {
  const float* pa = static_cast<const float*>(args->inputs[0].data);
  const float* pb = static_cast<const float*>(args->inputs[1].data);
  float* po = static_cast<float*>(args->outputs[0].data);
  const int64_t n = args->outputs[0].shape[0] * args->outputs[0].shape[1];
  for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
  return 0;
}
