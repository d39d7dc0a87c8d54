// paged_attention_test.cpp — paged decode attention equals dense attention over the same keys:
// the stock-op reference on the CPU, the CUDA kernel against the same on the GPU (fp32 and bf16,
// several partitions, the group sizes of Qwen2.5-0.5B and QwQ-32B); the decode step's rotary
// and cache append equal the model's rotary.
#include "train/model/paged_attention.h"
#include "train/model/rotary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

namespace kevin::train {
namespace {

struct Case {
  PagedKeys keys;
  torch::Tensor q;
  std::vector<torch::Tensor> dense_k, dense_v;  // per sequence [L, KV, D]
};

// Sequences of `lengths` keys stored in shuffled pages of a pool, with their dense copies.
Case make_case(const std::vector<int64_t>& lengths, int64_t heads, int64_t kv_heads, int64_t dim,
               const torch::TensorOptions& options) {
  const int64_t page = 16, n = static_cast<int64_t>(lengths.size());
  int64_t pages = 0, widest = 0;
  for (const int64_t l : lengths) {
    pages += (l + page - 1) / page;
    widest = std::max(widest, (l + page - 1) / page);
  }
  std::vector<int32_t> order(static_cast<size_t>(pages + 3));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  Case c;
  c.keys.page_size = page;
  c.keys.k_pool = torch::randn({(pages + 3) * page, kv_heads, dim}, options);
  c.keys.v_pool = torch::randn({(pages + 3) * page, kv_heads, dim}, options);
  auto table = torch::zeros({n, widest}, torch::kInt32);
  size_t next = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> slots;
    for (int64_t j = 0; j < lengths[static_cast<size_t>(i)]; ++j) {
      if (j % page == 0) table[i][j / page] = order[next++];
      slots.push_back(table[i][j / page].item<int64_t>() * page + j % page);
    }
    const auto index = torch::tensor(slots, torch::kLong).to(options.device());
    c.dense_k.push_back(c.keys.k_pool.index_select(0, index));
    c.dense_v.push_back(c.keys.v_pool.index_select(0, index));
  }
  c.keys.block_table = table.to(options.device());
  c.keys.lengths =
      torch::tensor(std::vector<int32_t>(lengths.begin(), lengths.end()), torch::kInt32)
          .to(options.device());
  c.keys.max_length = *std::max_element(lengths.begin(), lengths.end());
  c.q = torch::randn({n, heads, dim}, options);
  return c;
}

// Attention of each query over its dense keys, in fp64, head h reading kv head h / groups.
torch::Tensor dense_attention(const Case& c) {
  std::vector<torch::Tensor> rows;
  const int64_t groups = c.q.size(1) / c.keys.k_pool.size(1);
  for (size_t i = 0; i < c.dense_k.size(); ++i) {
    const auto k = c.dense_k[i].to(torch::kFloat64).repeat_interleave(groups, 1);  // [L, H, D]
    const auto v = c.dense_v[i].to(torch::kFloat64).repeat_interleave(groups, 1);
    const auto q = c.q[static_cast<int64_t>(i)].to(torch::kFloat64);  // [H, D]
    const auto scores = torch::einsum("hd,lhd->hl", {q, k}) / std::sqrt(double(q.size(1)));
    rows.push_back(torch::einsum("hl,lhd->hd", {torch::softmax(scores, -1), v}));
  }
  return torch::stack(rows);
}

TEST(PagedAttention, ReferenceEqualsDenseAttentionOverShuffledPages) {
  for (const auto& [heads, kv_heads, dim] : {std::tuple{4, 2, 8}, std::tuple{14, 2, 64}}) {
    const Case c = make_case({1, 17, 40, 5}, heads, kv_heads, dim, torch::kFloat32);
    const auto got = paged_decode_attention(c.q, c.keys).to(torch::kFloat64);
    EXPECT_LT((got - dense_attention(c)).abs().max().item<double>(), 1e-5)
        << heads << "/" << kv_heads;
  }
}

TEST(PagedAttention, StaleSlotsBeyondALengthAreNeverRead) {
  Case c = make_case({3, 20}, 4, 2, 8, torch::kFloat32);
  const auto before = paged_decode_attention(c.q, c.keys);
  // Poison the rest of the first sequence's page: a reader past its length would see NaN.
  const int64_t page = c.keys.block_table[0][0].item<int64_t>();
  c.keys.k_pool.narrow(0, page * 16 + 3, 13).fill_(NAN);
  c.keys.v_pool.narrow(0, page * 16 + 3, 13).fill_(NAN);
  EXPECT_TRUE(torch::allclose(paged_decode_attention(c.q, c.keys), before));
}

// Kernel against fp64 dense attention: a bf16 output within a few units in its last place
// (2^-8 relative) at most, 1e-3 on average.
void expect_kernel_matches_dense(const Case& c, torch::ScalarType dtype, const std::string& what) {
  const auto got = paged_decode_attention(c.q, c.keys).to(torch::kFloat64);
  const auto error = (got - dense_attention(c)).abs();
  EXPECT_LT(error.max().item<double>(), dtype == torch::kFloat32 ? 1e-5 : 3e-2) << what;
  EXPECT_LT(error.mean().item<double>(), dtype == torch::kFloat32 ? 1e-6 : 1e-3) << what;
}

TEST(PagedAttention, CudaKernelEqualsDenseAttention) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto cuda = torch::TensorOptions(torch::kCUDA);
  // 0.5B's groups of 7 over 64-wide heads, QwQ-32B's 5 over 128, 3B's 8 over 128, and the
  // narrowest and widest heads; lengths within one partition and across up to 71.
  for (const auto& [heads, kv_heads, dim] :
       {std::tuple{14, 2, 64}, std::tuple{40, 8, 128}, std::tuple{16, 2, 128}, std::tuple{4, 2, 32},
        std::tuple{4, 4, 256}}) {
    for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      const Case c =
          make_case({1, 33, 64, 65, 511, 1500, 4500}, heads, kv_heads, dim, cuda.dtype(dtype));
      expect_kernel_matches_dense(
          c, dtype,
          std::to_string(heads) + "/" + std::to_string(kv_heads) + " " + c10::toString(dtype));
    }
  }
}

TEST(PagedAttention, CudaKernelLaunchedForLongerContextsThanTheSequencesHave) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // A CUDA graph launches for its bucket's context: partitions past each sequence's end idle.
  Case c = make_case({3, 70, 200}, 14, 2, 64, torch::TensorOptions(torch::kCUDA));
  c.keys.max_length = 8192;
  expect_kernel_matches_dense(c, torch::kFloat32, "graph bucket");
}

TEST(PagedAttention, CudaKernelNeverReadsStaleSlotsBeyondALength) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Case c = make_case({3, 20}, 4, 2, 64, torch::TensorOptions(torch::kCUDA));
  const auto before = paged_decode_attention(c.q, c.keys);
  const int64_t page = c.keys.block_table[0][0].item<int64_t>();
  c.keys.k_pool.narrow(0, page * 16 + 3, 13).fill_(NAN);
  c.keys.v_pool.narrow(0, page * 16 + 3, 13).fill_(NAN);
  EXPECT_TRUE(torch::allclose(paged_decode_attention(c.q, c.keys), before));
}

// The store's pools and rotated query against apply_rotary's (the model's prefill path) on the
// rows of a fused projection's output.
void expect_store_matches_rotary(const torch::TensorOptions& options, double tolerance) {
  const int64_t n = 5, heads = 6, kv_heads = 2, dim = 8;
  const auto qkv = torch::randn({n, (heads + 2 * kv_heads) * dim}, options);
  const auto q = qkv.narrow(1, 0, heads * dim), k = qkv.narrow(1, heads * dim, kv_heads * dim),
             v = qkv.narrow(1, (heads + kv_heads) * dim, kv_heads * dim);
  const auto angles = torch::rand({n, 1, dim}, options.dtype(torch::kFloat32)) * 6;
  const auto cos = angles.cos(), sin = angles.sin();
  auto k_pool = torch::zeros({32, kv_heads, dim}, options), v_pool = torch::zeros_like(k_pool);
  const auto slots = torch::tensor({7, 0, 31, 12, 3}, torch::kLong).to(options.device());
  const auto got =
      rotary_store(q, k, v, cos.view({n, dim}), sin.view({n, dim}), slots, k_pool, v_pool);
  // apply_rotary's [B, T, H, D] with one token per row.
  const auto rotary = [&](const torch::Tensor& x, int64_t h) {
    return apply_rotary(x.reshape({n, 1, h, dim}), cos, sin).reshape({n, h, dim});
  };
  const auto near = [&](const torch::Tensor& a, const torch::Tensor& b) {
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
  };
  EXPECT_LT(near(got, rotary(q, heads)), tolerance);
  EXPECT_LT(near(k_pool.index_select(0, slots), rotary(k, kv_heads)), tolerance);
  EXPECT_EQ(near(v_pool.index_select(0, slots), v.reshape({n, kv_heads, dim})), 0.0);
  // Slots nobody named stay as they were.
  EXPECT_EQ(k_pool.index_select(0, torch::tensor({1, 2}, torch::kLong).to(options.device()))
                .abs()
                .sum()
                .item<double>(),
            0.0);
}

TEST(RotaryStore, ReferenceRotatesLikeTheModelAndFillsTheNamedSlots) {
  expect_store_matches_rotary(torch::TensorOptions(), 1e-6);
}

TEST(RotaryStore, CudaKernelRotatesLikeTheModelAndFillsTheNamedSlots) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  expect_store_matches_rotary(torch::TensorOptions(torch::kCUDA), 1e-6);
  // bf16: one rounding after the fp32 rotation, as apply_rotary's kernel.
  expect_store_matches_rotary(torch::TensorOptions(torch::kCUDA).dtype(torch::kBFloat16), 1e-2);
}

}  // namespace
}  // namespace kevin::train
