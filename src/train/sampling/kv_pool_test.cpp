// kv_pool_test.cpp — page accounting, sharing and copy on write of the paged KV cache.
#include "train/sampling/kv_pool.h"

#include <gtest/gtest.h>

namespace kevin::train {
namespace {

KVPool small_pool(int64_t pages) {
  return KVPool({/*layers=*/2, /*kv_heads=*/1, /*head_dim=*/2, /*page_size=*/4, pages},
                torch::TensorOptions().dtype(torch::kFloat32));
}

// Writes `value` into every stored slot of tokens [from, to) of `s`, in every layer's keys.
void write(KVPool& pool, const PagedSequence& s, int64_t from, int64_t to, float value) {
  for (size_t layer = 0; layer < 2; ++layer) {
    for (const int64_t slot : pool.slots(s, from, to)) pool.keys(layer)[slot].fill_(value);
  }
}

float key_at(const KVPool& pool, const PagedSequence& s, int64_t token) {
  return pool.keys(1)[pool.slots(s, token, token + 1).front()][0][0].item<float>();
}

TEST(KVPool, GrowTakesWholePagesAndReleaseGivesThemBack) {
  KVPool pool = small_pool(4);
  PagedSequence s;
  ASSERT_TRUE(pool.grow(s, 5));
  EXPECT_EQ(s.pages.size(), 2u);
  EXPECT_EQ(pool.free_pages(), 2);
  s.length = 5;
  ASSERT_TRUE(pool.grow(s, 8));  // fits the second page
  EXPECT_EQ(pool.free_pages(), 2);
  EXPECT_EQ(pool.slots(s, 3, 5), (std::vector<int64_t>{s.pages[0] * 4 + 3, s.pages[1] * 4}));
  pool.release(s);
  EXPECT_EQ(pool.free_pages(), 4);
  EXPECT_TRUE(s.pages.empty());
}

TEST(KVPool, AGrowThePoolCannotHoldLeavesTheSequenceAsItWas) {
  KVPool pool = small_pool(2);
  PagedSequence s;
  ASSERT_TRUE(pool.grow(s, 4));
  s.length = 4;
  EXPECT_FALSE(pool.grow(s, 13));
  EXPECT_EQ(s.pages.size(), 1u);
  EXPECT_EQ(pool.free_pages(), 1);
}

TEST(KVPool, SharedPagesOutliveTheirFirstOwner) {
  KVPool pool = small_pool(4);
  PagedSequence a;
  ASSERT_TRUE(pool.grow(a, 8));
  a.length = 8;
  write(pool, a, 0, 8, 7.0f);
  PagedSequence b = pool.share(a, 6);
  EXPECT_EQ(b.pages, a.pages);  // 6 tokens span both pages
  pool.release(a);
  EXPECT_EQ(pool.free_pages(), 2);
  EXPECT_EQ(key_at(pool, b, 5), 7.0f);
  pool.release(b);
  EXPECT_EQ(pool.free_pages(), 4);
}

TEST(KVPool, WritingIntoASharedPartlyFilledPageCopiesItFirst) {
  KVPool pool = small_pool(4);
  PagedSequence a;
  ASSERT_TRUE(pool.grow(a, 6));
  a.length = 6;
  write(pool, a, 0, 6, 3.0f);
  PagedSequence b = pool.share(a, 6);
  ASSERT_TRUE(pool.grow(b, 7));       // token 6 lands in the shared second page
  EXPECT_EQ(b.pages[0], a.pages[0]);  // the full first page stays shared
  EXPECT_NE(b.pages[1], a.pages[1]);
  EXPECT_EQ(key_at(pool, b, 5), 3.0f);  // the copy holds what was stored
  write(pool, b, 6, 7, 9.0f);
  b.length = 7;
  EXPECT_EQ(key_at(pool, b, 6), 9.0f);
  EXPECT_EQ(key_at(pool, a, 5), 3.0f);
  EXPECT_EQ(pool.free_pages(), 1);
  // A sequence alone on its partial page writes in place.
  ASSERT_TRUE(pool.grow(a, 7));
  EXPECT_EQ(pool.free_pages(), 1);
}

TEST(KVPool, BytesPerTokenCountsKeysAndValuesOfEveryLayer) {
  // QwQ-32B: 64 layers, 8 kv heads of 128, bf16: 256 KiB per token.
  EXPECT_EQ(KVPool::bytes_per_token({64, 8, 128, 16, 1}, 2), 256 * 1024);
}

}  // namespace
}  // namespace kevin::train
