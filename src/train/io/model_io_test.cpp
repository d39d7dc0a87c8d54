// model_io_test.cpp — HF folders in and out: the streaming loader gives the same parameters as
// copying every mapped tensor into a model built first, in the folder's dtype or converted;
// stream_into's chunking, conversion and errors.
#include "train/io/model_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/file.h"
#include "train/io/safetensors.h"
#include "train/test_configs.h"

namespace kevin::train {
namespace {

namespace fs = std::filesystem;

class ModelIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kevin_model_io_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A random tiny model written as a folder of several shards in `dtype`.
  Qwen2ForCausalLM write_model(torch::ScalarType dtype) {
    torch::manual_seed(7);
    Qwen2ForCausalLM model(tiny_qwen2(40, 32, 48));
    EXPECT_TRUE(save_qwen2_dir(model->config(), model->named_weights(), dir_, dtype,
                               /*max_shard_bytes=*/8 << 10)
                    .is_ok());
    return model;
  }

  // What loading did before streaming: the whole folder mapped, a random model built on the
  // CPU in fp32, every tensor copied into it at once.
  Qwen2ForCausalLM load_whole() {
    auto weights = load_safetensors_dir(dir_);
    EXPECT_TRUE(weights.is_ok());
    Qwen2ForCausalLM model(load_qwen2_config(dir_).value());
    EXPECT_TRUE(model->load_weights(*weights).is_ok());
    return model;
  }

  fs::path dir_;
};

void expect_same_weights(const Qwen2ForCausalLM& a, const Qwen2ForCausalLM& b) {
  const auto wa = a->named_weights(), wb = b->named_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    ASSERT_EQ(wa[i].first, wb[i].first);
    EXPECT_EQ(wa[i].second.scalar_type(), wb[i].second.scalar_type()) << wa[i].first;
    EXPECT_TRUE(torch::equal(wa[i].second, wb[i].second)) << wa[i].first;
  }
}

TEST_F(ModelIoTest, StreamedLoadEqualsLoadingWholeBitForBit) {
  write_model(torch::kFloat32);
  ASSERT_GT(load_safetensors_dir(dir_)->size(), 1u);
  auto streamed = load_qwen2_dir(dir_);
  ASSERT_TRUE(streamed.is_ok()) << streamed.status().to_string();
  expect_same_weights(*streamed, load_whole());
}

TEST_F(ModelIoTest, LoadsStraightIntoTheRequestedDtype) {
  write_model(torch::kBFloat16);
  auto bf16 = load_qwen2_dir(dir_, torch::kCPU, torch::kBFloat16);
  ASSERT_TRUE(bf16.is_ok()) << bf16.status().to_string();
  // The folder holds bf16: the values are the file's exactly, whatever the route.
  Qwen2ForCausalLM whole = load_whole();
  whole->to(torch::kBFloat16);
  expect_same_weights(*bf16, whole);
  for (const auto& p : (*bf16)->parameters()) EXPECT_EQ(p.scalar_type(), torch::kBFloat16);
}

TEST_F(ModelIoTest, AdaptersOnABf16BaseAreFp32AndTheLayerRunsWithoutAutocast) {
  write_model(torch::kBFloat16);
  auto model = load_qwen2_dir(dir_, torch::kCPU, torch::kBFloat16);
  ASSERT_TRUE(model.is_ok());
  LoraConfig lora;
  lora.rank = 4;
  ASSERT_TRUE((*model)->add_lora(lora).is_ok());
  for (const auto& [name, t] : (*model)->lora_weights())
    EXPECT_EQ(t.scalar_type(), torch::kFloat32);
  for (const auto& [name, t] : (*model)->named_weights())
    EXPECT_EQ(t.scalar_type(), torch::kBFloat16);
  auto& q = *(*model)->model->layers->ptr<DecoderLayerImpl>(0)->self_attn->q_proj;
  {
    torch::NoGradGuard no_grad;
    q.lora_B->weight.normal_();
  }
  const auto x = torch::randn({3, 32}).to(torch::kBFloat16);
  const auto y = q.forward(x);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  const auto want =
      torch::nn::functional::linear(x.to(torch::kFloat32), q.weight.to(torch::kFloat32),
                                    q.bias.to(torch::kFloat32)) +
      torch::matmul(torch::matmul(x.to(torch::kFloat32), q.lora_A->weight.t()),
                    q.lora_B->weight.t()) *
          q.lora_scale;
  EXPECT_TRUE(torch::allclose(y.to(torch::kFloat32), want, 2e-2, 2e-2));
  // The adapter has a gradient and the frozen base none.
  y.to(torch::kFloat32).sum().backward();
  EXPECT_TRUE(q.lora_A->weight.grad().defined());
  EXPECT_FALSE(q.weight.grad().defined());
}

TEST_F(ModelIoTest, LoadErrorsNameTheFolder) {
  write_model(torch::kFloat32);
  auto config = read_file(dir_ / "config.json").value();
  const auto at = config.find("\"hidden_size\": 32");
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, 17, "\"hidden_size\": 64");
  ASSERT_TRUE(write_file_atomic(dir_ / "config.json", config).is_ok());
  auto wrong = load_qwen2_dir(dir_);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find(dir_.string()), std::string::npos)
      << wrong.status().to_string();
  EXPECT_NE(wrong.status().message().find("has shape"), std::string::npos)
      << wrong.status().to_string();
}

TEST_F(ModelIoTest, MergedExportsEqualTheMergedWeights) {
  torch::manual_seed(8);
  Qwen2ForCausalLM model(tiny_qwen2(40, 32, 48));
  LoraConfig lora;
  lora.rank = 4;
  ASSERT_TRUE(model->add_lora(lora).is_ok());
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : model->lora_weights()) t.normal_(0.0, 0.1);
  }
  // Small shards: merged projections are made a shard at a time.
  ASSERT_TRUE(save_merged_qwen2_dir(model, dir_, torch::kFloat32, 16 << 10).is_ok());
  ASSERT_GT(load_safetensors_dir(dir_)->size(), 1u);
  auto exported = load_qwen2_dir(dir_);
  ASSERT_TRUE(exported.is_ok()) << exported.status().to_string();
  const auto want = model->merged_weights();
  const auto got = (*exported)->named_weights();
  ASSERT_EQ(want.size(), got.size());
  bool some_merged = false;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i].first, got[i].first);
    EXPECT_TRUE(torch::equal(want[i].second, got[i].second)) << want[i].first;
    some_merged |= !torch::equal(want[i].second, model->named_weights()[i].second);
  }
  EXPECT_TRUE(some_merged);  // the adapters changed the exported weights
}

TEST(StreamInto, CopiesAcrossChunksAndConvertsWithoutChangingTheSource) {
  // Three chunks, the last one short.
  const int64_t n = 2 * kStreamChunkBytes / 4 + 1000;
  const auto source = torch::arange(n, torch::kFloat32) * 0.5;
  const auto before = source.clone();
  auto floats = torch::empty({n}, torch::kFloat32);
  ASSERT_TRUE(stream_into(source, floats).is_ok());
  EXPECT_TRUE(torch::equal(floats, before));
  EXPECT_TRUE(torch::equal(source, before));  // the reclaim hint never changes contents
  auto halves = torch::empty({n}, torch::kBFloat16);
  ASSERT_TRUE(stream_into(source, halves).is_ok());
  EXPECT_TRUE(torch::equal(halves, before.to(torch::kBFloat16)));
}

TEST(StreamInto, RefusesMismatchedShapesAndStridedTensors) {
  const auto source = torch::ones({4, 6});
  auto other = torch::empty({6, 4});
  const Status shape = stream_into(source, other);
  EXPECT_EQ(shape.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shape.message().find("[4, 6]"), std::string::npos) << shape.to_string();
  auto transposed = torch::empty({6, 4}).t();
  EXPECT_EQ(stream_into(source, transposed).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kevin::train
