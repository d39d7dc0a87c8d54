// tensor.h — tensor vocabulary shared by the engine, tasks and prompts: dtypes with the
// candidate ABI's numbering (docs/eval.md, src/engine/abi/kevin_abi.h) and TensorSpec (name, dtype,
// shape).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"

namespace kevin {

// Values equal kevin_dtype in kevin_abi.h; never renumber.
enum class DType : int32_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kF64 = 3,
  kI8 = 4,
  kU8 = 5,
  kI16 = 6,
  kI32 = 7,
  kI64 = 8,
  kBool = 9,
};

// Bytes per element.
size_t dtype_size(DType dtype);
// PyTorch-style name: "float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16",
// "int32", "int64", "bool".
const char* dtype_name(DType dtype);
// Inverse of dtype_name; also accepts "float", "half", "double", "long", "int".
std::optional<DType> dtype_from_name(std::string_view name);
bool is_floating(DType dtype);

// A named tensor's type and shape; the role says where it goes in kevin_args.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;

  int64_t numel() const;
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  // "float32[128, 64]"
  std::string type_string() const;
};

Json to_json(const TensorSpec& spec);
Result<TensorSpec> tensor_spec_from_json(const Json& json);

}  // namespace kevin
