// json_test.cpp — non-throwing JSON parsing and typed access.
#include "core/json.h"

#include <gtest/gtest.h>

namespace kevin {
namespace {

TEST(Json, ParsesValidDocument) {
  auto doc = parse_json(R"({"a": 1, "b": "x"})");
  ASSERT_TRUE(doc.is_ok());
  EXPECT_EQ((*doc)["a"], 1);
}

TEST(Json, MalformedIsInvalidArgumentNotException) {
  auto doc = parse_json("{\"a\": ");
  ASSERT_FALSE(doc.is_ok());
  EXPECT_EQ(doc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(doc.status().message().find("malformed JSON: parse error at line 1"), std::string::npos)
      << doc.status().message();
  EXPECT_EQ(doc.status().message().find("json.exception"), std::string::npos)
      << "the library's tag is not the user's business: " << doc.status().message();
  auto typed = json_get<int>(Json{{"n", "seven"}}, "n");
  EXPECT_EQ(typed.status().message(), "field \"n\": type must be number, but is string");
}

TEST(Json, LimitsBoundSizeAndNestingBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto nested = parse_json(deep, JsonLimits{SIZE_MAX, 8});
  ASSERT_FALSE(nested.is_ok());
  EXPECT_EQ(nested.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nested.status().message().find("nested deeper than 8"), std::string::npos);
  auto by_default = parse_json(deep);
  ASSERT_FALSE(by_default.is_ok()) << "the default depth limit applies to every parse";
  EXPECT_EQ(by_default.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(by_default.status().message().find("nested deeper than 256"), std::string::npos)
      << by_default.status().to_string();
  // Brackets inside strings (escaped quotes included) are text, not nesting.
  auto text = parse_json(R"({"a": "[[[[[[[[[[\"[[[[["})", JsonLimits{SIZE_MAX, 2});
  EXPECT_TRUE(text.is_ok()) << text.status().to_string();
  auto big = parse_json(R"({"a": "0123456789"})", JsonLimits{10, 8});
  ASSERT_FALSE(big.is_ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("of 19 bytes exceeds the limit of 10"), std::string::npos)
      << big.status().to_string();
  EXPECT_TRUE(parse_json("[[[1]]]", JsonLimits{7, 3}).is_ok());
  auto one_deeper = parse_json("[[[[1]]]]", JsonLimits{SIZE_MAX, 3});
  ASSERT_FALSE(one_deeper.is_ok());
  EXPECT_EQ(one_deeper.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(one_deeper.status().message().find("nested deeper than 3"), std::string::npos)
      << one_deeper.status().to_string();
}

TEST(Json, TypedGetReportsMissingAndWrongType) {
  Json obj = {{"n", 3}, {"s", "text"}};
  EXPECT_EQ(json_get<int>(obj, "n").value(), 3);
  auto missing = json_get<int>(obj, "missing");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing field \"missing\""), std::string::npos)
      << missing.status().to_string();
  auto wrong = json_get<int>(obj, "s");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("\"s\""), std::string::npos);
  EXPECT_EQ(json_get_or<int>(obj, "missing", 9).value(), 9);
  auto wrong_or = json_get_or<int>(obj, "s", 9);
  ASSERT_FALSE(wrong_or.is_ok()) << "a fallback stands in for a missing key, not a wrong type";
  EXPECT_EQ(wrong_or.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_or.status().message().find("field \"s\""), std::string::npos)
      << wrong_or.status().to_string();
  auto not_object = json_get<int>(Json::array(), "n");
  ASSERT_FALSE(not_object.is_ok());
  EXPECT_EQ(not_object.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(not_object.status().message().find("expected a JSON object"), std::string::npos)
      << not_object.status().to_string();
}

TEST(Json, TypedGetRefusesFloatsAnIntegerCannotHold) {
  auto doc = parse_json(
      R"({"big": 4.6e23, "shape": [4, 1e300], "minus": -1.0, "ok": 2.0, "edge": -2147483648.0})");
  ASSERT_TRUE(doc.is_ok());
  auto big = json_get<int64_t>(*doc, "big");
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.status().message().find("field \"big\": a number out of range"), std::string::npos)
      << big.status().to_string();
  auto shape = json_get<std::vector<int64_t>>(*doc, "shape");
  EXPECT_EQ(shape.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shape.status().message().find("field \"shape\": a number out of range"),
            std::string::npos)
      << shape.status().to_string();
  auto minus = json_get<uint32_t>(*doc, "minus");
  EXPECT_EQ(minus.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(minus.status().message().find("field \"minus\": a number out of range"),
            std::string::npos)
      << minus.status().to_string();
  EXPECT_EQ(json_get<int>(*doc, "minus").value(), -1);
  EXPECT_EQ(json_get<size_t>(*doc, "ok").value(), 2u);
  EXPECT_EQ(json_get<int32_t>(*doc, "edge").value(), INT32_MIN);
  auto big_unsigned = json_get<uint64_t>(*doc, "big");
  EXPECT_EQ(big_unsigned.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big_unsigned.status().message().find("field \"big\": a number out of range"),
            std::string::npos)
      << big_unsigned.status().to_string();
  EXPECT_DOUBLE_EQ(json_get<double>(*doc, "big").value(), 4.6e23);
}

TEST(Json, LinesSkipBlanksAndNameBadLine) {
  auto docs = parse_json_lines("{\"a\":1}\n\n  \n{\"a\":2}\n");
  ASSERT_TRUE(docs.is_ok());
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[1]["a"], 2);
  auto bad = parse_json_lines("{\"a\":1}\nnot json\n");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos);
}

TEST(Json, DumpReplacesInvalidUtf8) {
  Json obj = {{"log", std::string("bad \xff byte")}};
  const std::string text = dump_json(obj);
  EXPECT_NE(text.find("bad"), std::string::npos);
  EXPECT_TRUE(parse_json(text).is_ok());
}

}  // namespace
}  // namespace kevin
