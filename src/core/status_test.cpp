// status_test.cpp — Status/Result behaviour and the propagation macros.
#include "core/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace kevin {
namespace {

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_EQ(s.to_string(), "ok");
}

TEST(Status, ErrorCarriesCodeAndMessage) {
  Status s = not_found("task foo");
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.to_string(), "not_found: task foo");
  EXPECT_EQ(s.with_context("loading").message(), "loading: task foo");
  EXPECT_TRUE(Status::ok().with_context("x").is_ok());
}

Result<int> parse_positive(int x) {
  if (x <= 0) return invalid_argument("not positive");
  return x;
}

Result<int> doubled(int x) {
  KEVIN_ASSIGN_OR_RETURN(int v, parse_positive(x));
  return 2 * v;
}

Status check_both(int a, int b) {
  KEVIN_RETURN_IF_ERROR(parse_positive(a).status());
  KEVIN_RETURN_IF_ERROR(parse_positive(b).status());
  return Status::ok();
}

TEST(Result, HoldsValueOrError) {
  auto good = doubled(21);
  ASSERT_TRUE(good.is_ok());
  EXPECT_EQ(*good, 42);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(7), 7);
}

TEST(Result, MacrosPropagateFirstError) {
  EXPECT_TRUE(check_both(1, 2).is_ok());
  EXPECT_EQ(check_both(1, -2).message(), "not positive");
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.is_ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
}

}  // namespace
}  // namespace kevin
