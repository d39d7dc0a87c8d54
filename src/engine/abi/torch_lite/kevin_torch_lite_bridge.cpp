// kevin_torch_lite_bridge.cpp — kevin_torch_lite.h's calls, made with PyTorch's own headers;
// built once per PyTorch by the compile driver (KEVIN_LITE_CUDA on the CUDA backend) and linked
// where a device unit used the lite header. Its static_asserts check the lite header's types
// and values against this PyTorch: one that differs fails here, and its answers use its headers.
#include <ATen/ATen.h>
#include <torch/types.h>

#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#ifdef KEVIN_LITE_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#endif

#define KEVIN_LITE_BRIDGE extern "C" __attribute__((visibility("hidden")))

namespace {

// What the lite header assumes of PyTorch.
static_assert(sizeof(at::Tensor) == sizeof(void*) && alignof(at::Tensor) == alignof(void*));
static_assert(!std::is_trivially_copyable_v<at::Tensor>);
static_assert(std::is_nothrow_move_constructible_v<at::Tensor>);
static_assert(sizeof(c10::IntArrayRef) == 2 * sizeof(void*));
static_assert(std::is_trivially_copyable_v<c10::IntArrayRef>);
static_assert(std::is_same_v<std::underlying_type_t<c10::ScalarType>, int8_t>);
static_assert(static_cast<int>(c10::ScalarType::Byte) == 0 &&
              static_cast<int>(c10::ScalarType::Char) == 1 &&
              static_cast<int>(c10::ScalarType::Short) == 2 &&
              static_cast<int>(c10::ScalarType::Int) == 3 &&
              static_cast<int>(c10::ScalarType::Long) == 4 &&
              static_cast<int>(c10::ScalarType::Half) == 5 &&
              static_cast<int>(c10::ScalarType::Float) == 6 &&
              static_cast<int>(c10::ScalarType::Double) == 7 &&
              static_cast<int>(c10::ScalarType::Bool) == 11 &&
              static_cast<int>(c10::ScalarType::BFloat16) == 15);
static_assert(sizeof(c10::TensorOptions) <= 16 && alignof(c10::TensorOptions) <= 8 &&
              std::is_trivially_copyable_v<c10::TensorOptions>);
// The members the lite header declares, with PyTorch's result types.
using T = const at::Tensor&;
static_assert(std::is_same_v<decltype(std::declval<T>().numel()), int64_t>);
static_assert(std::is_same_v<decltype(std::declval<T>().dim()), int64_t>);
static_assert(std::is_same_v<decltype(std::declval<T>().ndimension()), int64_t>);
static_assert(std::is_same_v<decltype(std::declval<T>().size(int64_t{0})), int64_t>);
static_assert(std::is_same_v<decltype(std::declval<T>().stride(int64_t{0})), int64_t>);
static_assert(std::is_same_v<decltype(std::declval<T>().sizes()), c10::IntArrayRef>);
static_assert(std::is_same_v<decltype(std::declval<T>().strides()), c10::IntArrayRef>);
static_assert(std::is_same_v<decltype(std::declval<T>().is_cuda()), bool>);
static_assert(std::is_same_v<decltype(std::declval<T>().is_contiguous()), bool>);
static_assert(std::is_same_v<decltype(std::declval<T>().defined()), bool>);
static_assert(std::is_same_v<decltype(std::declval<T>().scalar_type()), c10::ScalarType>);
static_assert(std::is_same_v<decltype(std::declval<T>().data_ptr()), void*>);
static_assert(std::is_same_v<decltype(std::declval<T>().data_ptr<float>()), float*>);
static_assert(std::is_same_v<decltype(std::declval<T>().contiguous()), at::Tensor>);
static_assert(std::is_same_v<decltype(torch::kFloat32), const c10::ScalarType>);

const at::Tensor& tensor(const void* p) { return *static_cast<const at::Tensor*>(p); }
at::Tensor& tensor(void* p) { return *static_cast<at::Tensor*>(p); }
c10::TensorOptions options(const void* p) {
  c10::TensorOptions o;
  std::memcpy(static_cast<void*>(&o), p, sizeof o);
  return o;
}
void store(void* to, const c10::TensorOptions& o) {
  std::memcpy(to, static_cast<const void*>(&o), sizeof o);
}

// `which` picks at:: (0) or torch:: (1), the namespace the answer named.
template <typename At, typename Torch>
at::Tensor either(int which, At at_call, Torch torch_call) {
  return which == 0 ? at_call() : torch_call();
}

}  // namespace

KEVIN_LITE_BRIDGE void kevin_lite_undefined(void* to) { new (to) at::Tensor(); }
KEVIN_LITE_BRIDGE void kevin_lite_copy(void* to, const void* from) {
  new (to) at::Tensor(tensor(from));
}
KEVIN_LITE_BRIDGE void kevin_lite_move(void* to, void* from) noexcept {
  new (to) at::Tensor(std::move(tensor(from)));
}
KEVIN_LITE_BRIDGE void kevin_lite_copy_assign(void* to, const void* from) {
  tensor(to) = tensor(from);
}
KEVIN_LITE_BRIDGE void kevin_lite_move_assign(void* to, void* from) noexcept {
  tensor(to) = std::move(tensor(from));
}
KEVIN_LITE_BRIDGE void kevin_lite_destroy(void* t) noexcept { tensor(t).~Tensor(); }
KEVIN_LITE_BRIDGE bool kevin_lite_defined(const void* t) { return tensor(t).defined(); }
KEVIN_LITE_BRIDGE int64_t kevin_lite_numel(const void* t) { return tensor(t).numel(); }
KEVIN_LITE_BRIDGE int64_t kevin_lite_dim(const void* t) { return tensor(t).dim(); }
KEVIN_LITE_BRIDGE int64_t kevin_lite_size(const void* t, int64_t dim) {
  return tensor(t).size(dim);
}
KEVIN_LITE_BRIDGE int64_t kevin_lite_stride(const void* t, int64_t dim) {
  return tensor(t).stride(dim);
}
KEVIN_LITE_BRIDGE const int64_t* kevin_lite_sizes(const void* t, size_t* length) {
  const c10::IntArrayRef sizes = tensor(t).sizes();
  *length = sizes.size();
  return sizes.data();
}
KEVIN_LITE_BRIDGE const int64_t* kevin_lite_strides(const void* t, size_t* length) {
  const c10::IntArrayRef strides = tensor(t).strides();
  *length = strides.size();
  return strides.data();
}
KEVIN_LITE_BRIDGE bool kevin_lite_is_cuda(const void* t) { return tensor(t).is_cuda(); }
KEVIN_LITE_BRIDGE bool kevin_lite_is_contiguous(const void* t) { return tensor(t).is_contiguous(); }
KEVIN_LITE_BRIDGE int8_t kevin_lite_scalar_type(const void* t) {
  return static_cast<int8_t>(tensor(t).scalar_type());
}
KEVIN_LITE_BRIDGE void* kevin_lite_data_ptr(const void* t) { return tensor(t).data_ptr(); }
KEVIN_LITE_BRIDGE void* kevin_lite_typed_data_ptr(const void* t, int8_t type) {
  const at::Tensor& x = tensor(t);
  switch (static_cast<c10::ScalarType>(type)) {
    case c10::ScalarType::Byte:
      return x.data_ptr<uint8_t>();
    case c10::ScalarType::Char:
      return x.data_ptr<int8_t>();
    case c10::ScalarType::Short:
      return x.data_ptr<int16_t>();
    case c10::ScalarType::Int:
      return x.data_ptr<int32_t>();
    case c10::ScalarType::Long:
      return x.data_ptr<int64_t>();
    case c10::ScalarType::Half:
      return x.data_ptr<c10::Half>();
    case c10::ScalarType::Float:
      return x.data_ptr<float>();
    case c10::ScalarType::Double:
      return x.data_ptr<double>();
    case c10::ScalarType::Bool:
      return x.data_ptr<bool>();
    case c10::ScalarType::BFloat16:
      return x.data_ptr<c10::BFloat16>();
    default:
      TORCH_INTERNAL_ASSERT(false, "kevin_torch_lite: no data_ptr for this type");
  }
}
KEVIN_LITE_BRIDGE void kevin_lite_contiguous(void* to, const void* t) {
  tensor(to) = tensor(t).contiguous();
}
KEVIN_LITE_BRIDGE void kevin_lite_default_options(void* to) { store(to, c10::TensorOptions()); }
KEVIN_LITE_BRIDGE void kevin_lite_options(void* to, const void* t) {
  store(to, tensor(t).options());
}
KEVIN_LITE_BRIDGE void kevin_lite_options_dtype(void* to, const void* from, int8_t type) {
  store(to, options(from).dtype(static_cast<c10::ScalarType>(type)));
}
KEVIN_LITE_BRIDGE void kevin_lite_empty_like(void* to, const void* t, int which) {
  tensor(to) = either(
      which, [&] { return at::empty_like(tensor(t)); },
      [&] { return torch::empty_like(tensor(t)); });
}
KEVIN_LITE_BRIDGE void kevin_lite_zeros_like(void* to, const void* t, int which) {
  tensor(to) = either(
      which, [&] { return at::zeros_like(tensor(t)); },
      [&] { return torch::zeros_like(tensor(t)); });
}
KEVIN_LITE_BRIDGE void kevin_lite_empty(void* to, const int64_t* sizes, size_t length,
                                        const void* o, int which) {
  const c10::IntArrayRef size(sizes, length);
  tensor(to) = either(
      which, [&] { return at::empty(size, options(o)); },
      [&] { return torch::empty(size, options(o)); });
}
KEVIN_LITE_BRIDGE void kevin_lite_zeros(void* to, const int64_t* sizes, size_t length,
                                        const void* o, int which) {
  const c10::IntArrayRef size(sizes, length);
  tensor(to) = either(
      which, [&] { return at::zeros(size, options(o)); },
      [&] { return torch::zeros(size, options(o)); });
}
KEVIN_LITE_BRIDGE [[noreturn]] void kevin_lite_check_failed(const char* function, const char* file,
                                                            uint32_t line, const char* message) {
  c10::detail::torchCheckFail(function, file, line, std::string(message));
}
KEVIN_LITE_BRIDGE [[noreturn]] void kevin_lite_dispatch_failed(const char* name, int8_t type) {
  const auto scalar_type = static_cast<c10::ScalarType>(type);
  const std::string message =
      c10::str('"', name, "\" not implemented for '", c10::toString(scalar_type), "'");
  // PyTorch's own dispatch says which error it is (NotImplementedError in newer PyTorch).
  try {
    AT_DISPATCH_FLOATING_TYPES(scalar_type, "kevin_lite", [] {});
  } catch (const c10::NotImplementedError&) {
    TORCH_CHECK_NOT_IMPLEMENTED(false, message);
  } catch (const c10::Error&) {
  }
  TORCH_CHECK(false, message);
}

#ifdef KEVIN_LITE_CUDA
KEVIN_LITE_BRIDGE cudaStream_t kevin_lite_current_stream() {
  return c10::cuda::getCurrentCUDAStream().stream();
}
KEVIN_LITE_BRIDGE void kevin_lite_cuda_check(int error) {
  C10_CUDA_CHECK(static_cast<cudaError_t>(error));
}
#endif
