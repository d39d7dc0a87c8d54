// tensor.cpp — dtype tables and TensorSpec helpers.
#include <cstdint>
#include "core/tensor.h"

namespace kevin {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
  bool floating;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, "float32", 4, true},   {DType::kF16, "float16", 2, true},
    {DType::kBF16, "bfloat16", 2, true}, {DType::kF64, "float64", 8, true},
    {DType::kI8, "int8", 1, false},      {DType::kU8, "uint8", 1, false},
    {DType::kI16, "int16", 2, false},    {DType::kI32, "int32", 4, false},
    {DType::kI64, "int64", 8, false},    {DType::kBool, "bool", 1, false},
};

const DTypeInfo& info(DType dtype) {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry;
  }
  return kDTypes[0];
}

}  // namespace

size_t dtype_size(DType dtype) { return info(dtype).size; }
const char* dtype_name(DType dtype) { return info(dtype).name; }
bool is_floating(DType dtype) { return info(dtype).floating; }

std::optional<DType> dtype_from_name(std::string_view name) {
  if (name.rfind("torch.", 0) == 0) name.remove_prefix(6);
  for (const auto& entry : kDTypes) {
    if (name == entry.name) return entry.dtype;
  }
  if (name == "float") return DType::kF32;
  if (name == "half") return DType::kF16;
  if (name == "double") return DType::kF64;
  if (name == "long") return DType::kI64;
  if (name == "int") return DType::kI32;
  return std::nullopt;
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorSpec::type_string() const {
  std::string s = dtype_name(dtype);
  s += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

Json to_json(const TensorSpec& spec) {
  return Json{{"name", spec.name}, {"dtype", dtype_name(spec.dtype)}, {"shape", spec.shape}};
}

Result<TensorSpec> tensor_spec_from_json(const Json& json) {
  TensorSpec spec;
  KEVIN_ASSIGN_OR_RETURN(spec.name, json_get<std::string>(json, "name"));
  KEVIN_ASSIGN_OR_RETURN(std::string dtype, json_get<std::string>(json, "dtype"));
  const auto parsed = dtype_from_name(dtype);
  if (!parsed) return invalid_argument("tensor " + spec.name + ": unknown dtype " + dtype);
  spec.dtype = *parsed;
  KEVIN_ASSIGN_OR_RETURN(spec.shape, json_get<std::vector<int64_t>>(json, "shape"));
  // numel() and bytes() multiply the dims in order: a shape from JSON must not overflow them.
  auto bytes = static_cast<int64_t>(dtype_size(spec.dtype));
  for (int64_t d : spec.shape) {
    if (d < 0) return invalid_argument("tensor " + spec.name + ": negative dimension");
    if (__builtin_mul_overflow(bytes, d, &bytes))
      return invalid_argument("tensor " + spec.name + ": shape overflows");
  }
  return spec;
}

}  // namespace kevin
