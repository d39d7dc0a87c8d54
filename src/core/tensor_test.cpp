// tensor_test.cpp — dtype table and TensorSpec JSON round trip.
#include "core/tensor.h"

#include <gtest/gtest.h>

#include "core/verdict.h"

namespace kevin {
namespace {

TEST(DType, NamesAndSizesMatchAbi) {
  EXPECT_EQ(static_cast<int>(DType::kBool), 9);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_EQ(dtype_from_name("torch.float32"), DType::kF32);
  EXPECT_EQ(dtype_from_name("bfloat16"), DType::kBF16);
  EXPECT_FALSE(dtype_from_name("complex64").has_value());
  EXPECT_TRUE(is_floating(DType::kF16));
  EXPECT_FALSE(is_floating(DType::kI32));
}

TEST(TensorSpec, JsonRoundTripAndErrors) {
  TensorSpec spec{"x", DType::kF16, {2, 3, 4}};
  EXPECT_EQ(spec.numel(), 24);
  EXPECT_EQ(spec.bytes(), 48u);
  EXPECT_EQ(spec.type_string(), "float16[2, 3, 4]");
  auto back = tensor_spec_from_json(to_json(spec));
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(back->shape, spec.shape);
  EXPECT_EQ(back->dtype, DType::kF16);
  auto dtype = tensor_spec_from_json(Json{{"name", "y"}, {"dtype", "cplx"}, {"shape", {1}}});
  ASSERT_FALSE(dtype.is_ok());
  EXPECT_EQ(dtype.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dtype.status().message().find("tensor y: unknown dtype cplx"), std::string::npos)
      << dtype.status().to_string();
  auto negative = tensor_spec_from_json(Json{{"name", "y"}, {"dtype", "float32"}, {"shape", {-1}}});
  ASSERT_FALSE(negative.is_ok());
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(negative.status().message().find("tensor y: negative dimension"), std::string::npos)
      << negative.status().to_string();
  EXPECT_EQ(TensorSpec{}.numel(), 1) << "a 0-d tensor holds one element";
}

TEST(Verdict, NamesRoundTrip) {
  for (const char* name : {"parse_error", "rejected", "compile_error", "runtime_error", "timeout",
                           "wrong_answer", "correct"}) {
    auto kind = verdict_from_name(name);
    ASSERT_TRUE(kind.has_value()) << name;
    EXPECT_STREQ(verdict_name(*kind), name);
  }
  EXPECT_FALSE(verdict_from_name("maybe").has_value());
}

}  // namespace
}  // namespace kevin
