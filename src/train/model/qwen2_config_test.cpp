// qwen2_config_test.cpp — config.json parsing: defaults, validation, round trip, and the
// parameter count of a published shape (Qwen2.5-0.5B: 494M with tied embeddings).
#include "train/model/qwen2_config.h"

#include <gtest/gtest.h>

namespace kevin::train {
namespace {

Json small() {
  return {{"vocab_size", 1000},     {"hidden_size", 64},        {"intermediate_size", 128},
          {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}};
}

TEST(Qwen2Config, DefaultsAndRoundTrip) {
  auto c = qwen2_config_from_json(small());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->head_dim(), 16);
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);
  EXPECT_FALSE(c->tie_word_embeddings);
  auto back = qwen2_config_from_json(to_json(*c));
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(to_json(*back), to_json(*c));
}

TEST(Qwen2Config, RejectsShapesThatDoNotFit) {
  Json j = small();
  j["num_key_value_heads"] = 3;
  auto kv = qwen2_config_from_json(j);
  EXPECT_EQ(kv.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      kv.status().message().find("num_attention_heads is not a multiple of num_key_value_heads"),
      std::string::npos)
      << kv.status().to_string();
  j = small();
  j["hidden_size"] = 66;
  auto hidden = qwen2_config_from_json(j);
  EXPECT_EQ(hidden.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(hidden.status().message().find("hidden_size is not a multiple of num_attention_heads"),
            std::string::npos)
      << hidden.status().to_string();
  j = small();
  j.erase("vocab_size");
  auto missing = qwen2_config_from_json(j);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing field \"vocab_size\""), std::string::npos)
      << missing.status().to_string();
}

TEST(Qwen2Config, OtherModelFamiliesAreRefusedByName) {
  Json j = small();
  j["model_type"] = "llama";
  auto llama = qwen2_config_from_json(j);
  EXPECT_EQ(llama.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(llama.status().message().find("model_type \"llama\" is not supported"),
            std::string::npos);
  j = small();
  j["architectures"] = {"MistralForCausalLM"};
  auto mistral = qwen2_config_from_json(j);
  EXPECT_EQ(mistral.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(mistral.status().message().find("architecture MistralForCausalLM is not supported"),
            std::string::npos);
}

TEST(Qwen2Config, ReadsTransformers5Keys) {
  Json j = small();
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
  j["dtype"] = "float32";
  auto c = qwen2_config_from_json(j);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->torch_dtype, "float32");
  j["rope_parameters"]["rope_type"] = "yarn";
  auto yarn = qwen2_config_from_json(j);
  EXPECT_EQ(yarn.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(yarn.status().message().find("rope_parameters of type \"yarn\" is not supported"),
            std::string::npos)
      << yarn.status().to_string();
  j = small();
  j["use_sliding_window"] = true;
  auto sliding = qwen2_config_from_json(j);
  EXPECT_EQ(sliding.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(sliding.status().message().find("use_sliding_window is not supported"),
            std::string::npos)
      << sliding.status().to_string();
}

TEST(Qwen2Config, ParameterCountOfAPublishedShape) {
  // Qwen2.5-0.5B: 24 layers, width 896, 14 heads / 2 KV heads, MLP 4864, vocab 151936, tied.
  auto c = qwen2_config_from_json({{"vocab_size", 151936},
                                   {"hidden_size", 896},
                                   {"intermediate_size", 4864},
                                   {"num_hidden_layers", 24},
                                   {"num_attention_heads", 14},
                                   {"num_key_value_heads", 2},
                                   {"tie_word_embeddings", true}});
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->parameter_count(), 494032768);
}

}  // namespace
}  // namespace kevin::train
