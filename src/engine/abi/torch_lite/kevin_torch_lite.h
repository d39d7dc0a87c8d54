// kevin_torch_lite.h — the slice of PyTorch's C++ tensor API that KernelBench answers' CUDA
// launchers use, declared as PyTorch declares it, each call made by kevin_torch_lite_bridge.cpp
// with PyTorch's own headers: the compile driver's fastest form of a device unit (docs/
// kernelbench.md, "Building"). A unit needing more builds with PyTorch's headers instead.
#pragma once

// The standard headers PyTorch's tensor headers bring in, so the same standard names (and
// overloads, such as abs(float)) are visible to a unit under either header.
#include <math.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <clocale>
#include <cmath>
#include <complex>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// The bridge (kevin_torch_lite_bridge.cpp). A tensor is passed as the address of an
// at::Tensor; `to` is one to assign the result to (so a throw leaves it as it was), or for
// kevin_lite_undefined, kevin_lite_copy and kevin_lite_move storage to construct one in.
// Errors are PyTorch's exceptions.
#define KEVIN_LITE_BRIDGE extern "C" __attribute__((visibility("hidden")))
KEVIN_LITE_BRIDGE void kevin_lite_undefined(void* to);
KEVIN_LITE_BRIDGE void kevin_lite_copy(void* to, const void* from);
KEVIN_LITE_BRIDGE void kevin_lite_move(void* to, void* from) noexcept;
KEVIN_LITE_BRIDGE void kevin_lite_copy_assign(void* to, const void* from);
KEVIN_LITE_BRIDGE void kevin_lite_move_assign(void* to, void* from) noexcept;
KEVIN_LITE_BRIDGE void kevin_lite_destroy(void* tensor) noexcept;
KEVIN_LITE_BRIDGE bool kevin_lite_defined(const void* tensor);
KEVIN_LITE_BRIDGE int64_t kevin_lite_numel(const void* tensor);
KEVIN_LITE_BRIDGE int64_t kevin_lite_dim(const void* tensor);
KEVIN_LITE_BRIDGE int64_t kevin_lite_size(const void* tensor, int64_t dim);
KEVIN_LITE_BRIDGE int64_t kevin_lite_stride(const void* tensor, int64_t dim);
KEVIN_LITE_BRIDGE const int64_t* kevin_lite_sizes(const void* tensor, size_t* length);
KEVIN_LITE_BRIDGE const int64_t* kevin_lite_strides(const void* tensor, size_t* length);
KEVIN_LITE_BRIDGE bool kevin_lite_is_cuda(const void* tensor);
KEVIN_LITE_BRIDGE bool kevin_lite_is_contiguous(const void* tensor);
KEVIN_LITE_BRIDGE int8_t kevin_lite_scalar_type(const void* tensor);
KEVIN_LITE_BRIDGE void* kevin_lite_data_ptr(const void* tensor);
KEVIN_LITE_BRIDGE void* kevin_lite_typed_data_ptr(const void* tensor, int8_t type);
KEVIN_LITE_BRIDGE void kevin_lite_contiguous(void* to, const void* tensor);
// Tensor options, held by value in 16 bytes (the bridge checks they fit).
KEVIN_LITE_BRIDGE void kevin_lite_default_options(void* to);
KEVIN_LITE_BRIDGE void kevin_lite_options(void* to, const void* tensor);
KEVIN_LITE_BRIDGE void kevin_lite_options_dtype(void* to, const void* options, int8_t type);
// Factories: `which` is 0 for at::, 1 for torch:: (autograd's variable factories).
KEVIN_LITE_BRIDGE void kevin_lite_empty_like(void* to, const void* tensor, int which);
KEVIN_LITE_BRIDGE void kevin_lite_zeros_like(void* to, const void* tensor, int which);
KEVIN_LITE_BRIDGE void kevin_lite_empty(void* to, const int64_t* sizes, size_t length,
                                        const void* options, int which);
KEVIN_LITE_BRIDGE void kevin_lite_zeros(void* to, const int64_t* sizes, size_t length,
                                        const void* options, int which);
KEVIN_LITE_BRIDGE [[noreturn]] void kevin_lite_check_failed(const char* function, const char* file,
                                                            uint32_t line, const char* message);
KEVIN_LITE_BRIDGE [[noreturn]] void kevin_lite_dispatch_failed(const char* name, int8_t type);
KEVIN_LITE_BRIDGE cudaStream_t kevin_lite_current_stream();
KEVIN_LITE_BRIDGE void kevin_lite_cuda_check(int error);

namespace c10 {

// PyTorch's scalar types with their values (the bridge checks each).
enum class ScalarType : int8_t {
  Byte = 0,
  Char = 1,
  Short = 2,
  Int = 3,
  Long = 4,
  Half = 5,
  Float = 6,
  Double = 7,
  Bool = 11,
  BFloat16 = 15,
};
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;

// Declared only: a pointer to one is all this header hands out.
struct Half;
struct BFloat16;

// c10::ArrayRef's layout and conversions: a pointer and a length, borrowed.
template <typename T>
class ArrayRef {
 public:
  using iterator = const T*;
  using const_iterator = const T*;
  using size_type = size_t;
  using value_type = T;

  constexpr ArrayRef() : data_(nullptr), length_(0) {}
  constexpr ArrayRef(const T& one) : data_(&one), length_(1) {}
  constexpr ArrayRef(const T* data, size_t length) : data_(data), length_(length) {}
  constexpr ArrayRef(const T* begin, const T* end) : data_(begin), length_(end - begin) {}
  template <typename Container,
            typename = std::enable_if_t<std::is_same_v<
                std::remove_const_t<decltype(std::declval<Container>().data())>, T*>>>
  ArrayRef(const Container& c) : data_(c.data()), length_(c.size()) {}
  template <typename A>
  ArrayRef(const std::vector<T, A>& v) : data_(v.data()), length_(v.size()) {}
  template <size_t N>
  constexpr ArrayRef(const std::array<T, N>& a) : data_(a.data()), length_(N) {}
  template <size_t N>
  constexpr ArrayRef(const T (&a)[N]) : data_(a), length_(N) {}
  constexpr ArrayRef(const std::initializer_list<T>& list)
      : data_(list.begin() == list.end() ? static_cast<T*>(nullptr) : list.begin()),
        length_(list.size()) {}

  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + length_; }
  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return length_; }
  constexpr bool empty() const { return length_ == 0; }
  constexpr const T& front() const { return data_[0]; }
  constexpr const T& back() const { return data_[length_ - 1]; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  std::vector<T> vec() const { return std::vector<T>(data_, data_ + length_); }

 private:
  const T* data_;
  size_t length_;
};
using IntArrayRef = ArrayRef<int64_t>;

}  // namespace c10

namespace kevin_lite {

// Tensor options by value; its name is not PyTorch's, so no signature shared with PyTorch's
// headers can carry it.
class alignas(8) Options {
 public:
  Options() { kevin_lite_default_options(bytes_); }
  Options dtype(c10::ScalarType type) const {
    Options out(0);
    kevin_lite_options_dtype(out.bytes_, bytes_, static_cast<int8_t>(type));
    return out;
  }
  const void* get() const { return bytes_; }
  void* get() { return bytes_; }

 private:
  explicit Options(int) {}
  unsigned char bytes_[16];
};

// PyTorch's current stream as its CUDAStream is used in a launch; not PyTorch's type, so it
// cannot meet PyTorch's headers in a signature.
class CurrentStream {
 public:
  CurrentStream() : stream_(kevin_lite_current_stream()) {}
  operator cudaStream_t() const { return stream_; }
  cudaStream_t stream() const { return stream_; }

 private:
  cudaStream_t stream_;
};

// The scalar type data_ptr<T>() expects, or -1 for a T it does not take.
template <typename T>
constexpr int8_t scalar_type_of() {
  using c10::ScalarType;
  const auto code = [](ScalarType type) { return static_cast<int8_t>(type); };
  if constexpr (std::is_same_v<T, uint8_t>) return code(ScalarType::Byte);
  if constexpr (std::is_same_v<T, int8_t>) return code(ScalarType::Char);
  if constexpr (std::is_same_v<T, int16_t>) return code(ScalarType::Short);
  if constexpr (std::is_same_v<T, int32_t>) return code(ScalarType::Int);
  if constexpr (std::is_same_v<T, int64_t>) return code(ScalarType::Long);
  if constexpr (std::is_same_v<T, c10::Half>) return code(ScalarType::Half);
  if constexpr (std::is_same_v<T, float>) return code(ScalarType::Float);
  if constexpr (std::is_same_v<T, double>) return code(ScalarType::Double);
  if constexpr (std::is_same_v<T, bool>) return code(ScalarType::Bool);
  if constexpr (std::is_same_v<T, c10::BFloat16>) return code(ScalarType::BFloat16);
  return -1;
}

// TORCH_CHECK's message as PyTorch makes it: its text when it has none, else c10::str of
// its parts (each through an ostream).
inline std::string check_message(const char* text) { return text; }
template <typename... Parts>
std::string check_message(const char*, const Parts&... parts) {
  std::ostringstream out;
  (void)std::initializer_list<int>{((out << parts), 0)...};
  return out.str();
}

}  // namespace kevin_lite

namespace at {

using c10::ArrayRef;
using c10::BFloat16;
using c10::Half;
using c10::IntArrayRef;
using c10::kBFloat16;
using c10::kBool;
using c10::kByte;
using c10::kChar;
using c10::kDouble;
using c10::kFloat;
using c10::kHalf;
using c10::kInt;
using c10::kLong;
using c10::kShort;
using c10::ScalarType;

// at::Tensor's layout (one pointer to its implementation, never trivially copied, so passed
// and returned as PyTorch's is), every operation PyTorch's own through the bridge.
class Tensor {
 public:
  Tensor() { kevin_lite_undefined(this); }
  Tensor(const Tensor& other) { kevin_lite_copy(this, &other); }
  Tensor(Tensor&& other) noexcept { kevin_lite_move(this, &other); }
  Tensor& operator=(const Tensor& other) & {
    kevin_lite_copy_assign(this, &other);
    return *this;
  }
  Tensor& operator=(Tensor&& other) & noexcept {
    kevin_lite_move_assign(this, &other);
    return *this;
  }
  ~Tensor() { kevin_lite_destroy(this); }

  bool defined() const { return kevin_lite_defined(this); }
  int64_t numel() const { return kevin_lite_numel(this); }
  int64_t dim() const { return kevin_lite_dim(this); }
  int64_t ndimension() const { return kevin_lite_dim(this); }
  int64_t size(int64_t dim) const { return kevin_lite_size(this, dim); }
  int64_t stride(int64_t dim) const { return kevin_lite_stride(this, dim); }
  IntArrayRef sizes() const {
    size_t length = 0;
    const int64_t* data = kevin_lite_sizes(this, &length);
    return IntArrayRef(data, length);
  }
  IntArrayRef strides() const {
    size_t length = 0;
    const int64_t* data = kevin_lite_strides(this, &length);
    return IntArrayRef(data, length);
  }
  bool is_cuda() const { return kevin_lite_is_cuda(this); }
  bool is_contiguous() const { return kevin_lite_is_contiguous(this); }
  ScalarType scalar_type() const { return static_cast<ScalarType>(kevin_lite_scalar_type(this)); }
  void* data_ptr() const { return kevin_lite_data_ptr(this); }
  template <typename T>
  T* data_ptr() const {
    static_assert(kevin_lite::scalar_type_of<T>() >= 0, "no such data_ptr<T> here");
    return static_cast<T*>(kevin_lite_typed_data_ptr(this, kevin_lite::scalar_type_of<T>()));
  }
  Tensor contiguous() const {
    Tensor out;
    kevin_lite_contiguous(&out, this);
    return out;
  }
  kevin_lite::Options options() const {
    kevin_lite::Options out;
    kevin_lite_options(out.get(), this);
    return out;
  }

 private:
  void* impl_;
};

}  // namespace at

namespace kevin_lite {
// The factories of at:: (which 0) and torch:: (which 1), as PyTorch defines each.
inline at::Tensor empty_like(const at::Tensor& self, int which) {
  at::Tensor out;
  kevin_lite_empty_like(&out, &self, which);
  return out;
}
inline at::Tensor zeros_like(const at::Tensor& self, int which) {
  at::Tensor out;
  kevin_lite_zeros_like(&out, &self, which);
  return out;
}
inline at::Tensor empty(at::IntArrayRef size, const Options& options, int which) {
  at::Tensor out;
  kevin_lite_empty(&out, size.data(), size.size(), options.get(), which);
  return out;
}
inline at::Tensor zeros(at::IntArrayRef size, const Options& options, int which) {
  at::Tensor out;
  kevin_lite_zeros(&out, size.data(), size.size(), options.get(), which);
  return out;
}
}  // namespace kevin_lite

namespace at {
inline Tensor empty_like(const Tensor& self) { return kevin_lite::empty_like(self, 0); }
inline Tensor zeros_like(const Tensor& self) { return kevin_lite::zeros_like(self, 0); }
inline Tensor empty(IntArrayRef size, const kevin_lite::Options& options = {}) {
  return kevin_lite::empty(size, options, 0);
}
inline Tensor zeros(IntArrayRef size, const kevin_lite::Options& options = {}) {
  return kevin_lite::zeros(size, options, 0);
}
}  // namespace at

namespace torch {
using namespace at;
constexpr auto kUInt8 = at::kByte;
constexpr auto kInt8 = at::kChar;
constexpr auto kInt16 = at::kShort;
constexpr auto kInt32 = at::kInt;
constexpr auto kInt64 = at::kLong;
constexpr auto kFloat16 = at::kHalf;
constexpr auto kFloat32 = at::kFloat;
constexpr auto kFloat64 = at::kDouble;

inline at::Tensor empty_like(const at::Tensor& self) { return kevin_lite::empty_like(self, 1); }
inline at::Tensor zeros_like(const at::Tensor& self) { return kevin_lite::zeros_like(self, 1); }
inline at::Tensor empty(at::IntArrayRef size, const kevin_lite::Options& options = {}) {
  return kevin_lite::empty(size, options, 1);
}
inline at::Tensor zeros(at::IntArrayRef size, const kevin_lite::Options& options = {}) {
  return kevin_lite::zeros(size, options, 1);
}
}  // namespace torch

namespace c10::cuda {
inline kevin_lite::CurrentStream getCurrentCUDAStream() { return {}; }
}  // namespace c10::cuda
namespace at::cuda {
using c10::cuda::getCurrentCUDAStream;
}  // namespace at::cuda

// PyTorch's macros, with PyTorch's messages.
#define TORCH_CHECK(cond, ...)                                                                \
  if (__builtin_expect(static_cast<bool>(!(cond)), 0)) {                                      \
    ::kevin_lite_check_failed(                                                                \
        __func__, __FILE__, static_cast<uint32_t>(__LINE__),                                  \
        ::kevin_lite::check_message("Expected " #cond                                         \
                                    " to be true, but got false.  (Could this error message " \
                                    "be improved?  If so, please report an enhancement "      \
                                    "request to PyTorch.)",                                   \
                                    ##__VA_ARGS__)                                            \
            .c_str());                                                                        \
  }
#define C10_CUDA_CHECK(expr) ::kevin_lite_cuda_check(static_cast<int>(expr))
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                                          \
  [&] {                                                                                      \
    const ::c10::ScalarType kevin_lite_type = (TYPE);                                        \
    constexpr const char* kevin_lite_name = NAME;                                            \
    switch (kevin_lite_type) {                                                               \
      case ::c10::ScalarType::Double: {                                                      \
        using scalar_t = double;                                                             \
        return __VA_ARGS__();                                                                \
      }                                                                                      \
      case ::c10::ScalarType::Float: {                                                       \
        using scalar_t = float;                                                              \
        return __VA_ARGS__();                                                                \
      }                                                                                      \
      default:                                                                               \
        ::kevin_lite_dispatch_failed(kevin_lite_name, static_cast<int8_t>(kevin_lite_type)); \
    }                                                                                        \
  }()
