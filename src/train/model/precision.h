// precision.h — thread-local execution settings. bf16 mixed precision on CUDA: fp32 master
// weights and optimizer state, with matmuls and attention autocast to bf16 inside a scope (the
// usual recipe; pure bf16 weights lose small AdamW updates to rounding). And the current
// device of a thread that runs one replica of a model.
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/DeviceGuard.h>
#include <torch/version.h>

namespace kevin::train {

// While alive (and `enabled`), CUDA ops of this thread run under bf16 autocast. Autocast is
// thread-local: open one in every thread that runs the model. Nesting is allowed.
class Bf16Autocast {
 public:
  explicit Bf16Autocast(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    was_enabled_ = at::autocast::is_autocast_enabled(at::kCUDA);
    was_dtype_ = at::autocast::get_autocast_dtype(at::kCUDA);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
#else
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_enabled(true);
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
#endif
    at::autocast::increment_nesting();
  }
  ~Bf16Autocast() {
    if (!enabled_) return;
    // The weight-cast cache lives until the outermost scope closes.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, was_enabled_);
    at::autocast::set_autocast_dtype(at::kCUDA, was_dtype_);
#else
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
#endif
  }
  Bf16Autocast(const Bf16Autocast&) = delete;
  Bf16Autocast& operator=(const Bf16Autocast&) = delete;

 private:
  bool enabled_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

// While alive, CUDA autocast is off in this thread (restored after): code that prepared its
// weights in the dtype it computes in, whose kernels must not be recast or graph-captured
// with autocast's weight cache.
class AutocastOff {
 public:
  AutocastOff() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    was_enabled_ = at::autocast::is_autocast_enabled(at::kCUDA);
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    was_enabled_ = at::autocast::is_enabled();
    at::autocast::set_enabled(false);
#endif
  }
  ~AutocastOff() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, was_enabled_);
#else
    at::autocast::set_enabled(was_enabled_);
#endif
  }
  AutocastOff(const AutocastOff&) = delete;
  AutocastOff& operator=(const AutocastOff&) = delete;

 private:
  bool was_enabled_ = false;
};

// While alive, `device` (when a CUDA device) is this thread's current device: what libtorch
// allocates without a device and what our kernels launch on follow it, so a thread driving
// the replica on GPU 1 must hold one. A CPU device changes nothing.
class DeviceOfThread {
 public:
  explicit DeviceOfThread(c10::Device device) {
    if (device.is_cuda()) guard_.reset_device(device);
  }

 private:
  c10::OptionalDeviceGuard guard_;
};

}  // namespace kevin::train
