// kv_pool.cpp — page allocation, sharing and copy on write.
#include "train/sampling/kv_pool.h"

#include <c10/util/Exception.h>

namespace kevin::train {

KVPool::KVPool(const KVPoolShape& shape, const torch::TensorOptions& options) : shape_(shape) {
  TORCH_CHECK(shape.page_size > 0 && shape.pages > 0 && shape.layers > 0,
              "a KV pool needs layers, pages and a page size");
  for (int64_t layer = 0; layer < shape.layers; ++layer) {
    keys_.push_back(
        torch::zeros({shape.pages * shape.page_size, shape.kv_heads, shape.head_dim}, options));
    values_.push_back(torch::zeros_like(keys_.back()));
  }
  refs_.assign(static_cast<size_t>(shape.pages), 0);
  for (int64_t page = shape.pages - 1; page >= 0; --page)
    free_.push_back(static_cast<int32_t>(page));
}

int64_t KVPool::bytes_per_token(const KVPoolShape& shape, int64_t element_size) {
  return 2 * shape.layers * shape.kv_heads * shape.head_dim * element_size;
}

void KVPool::copy_page(int32_t from, int32_t to) {
  const int64_t size = shape_.page_size;
  for (size_t layer = 0; layer < keys_.size(); ++layer) {
    keys_[layer].narrow(0, to * size, size).copy_(keys_[layer].narrow(0, from * size, size));
    values_[layer].narrow(0, to * size, size).copy_(values_[layer].narrow(0, from * size, size));
  }
}

bool KVPool::grow(PagedSequence& sequence, int64_t length) {
  if (length <= sequence.length) return true;
  const int64_t have = static_cast<int64_t>(sequence.pages.size());
  // The last page is written into if it is partly filled; shared, it must be copied first.
  const bool writes_shared_page = sequence.length % shape_.page_size != 0 &&
                                  refs_[static_cast<size_t>(sequence.pages.back())] > 1;
  const int64_t needed =
      std::max<int64_t>(0, pages_for(length) - have) + (writes_shared_page ? 1 : 0);
  if (needed > free_pages()) return false;
  if (writes_shared_page) {
    const int32_t copy = free_.back();
    free_.pop_back();
    refs_[static_cast<size_t>(copy)] = 1;
    copy_page(sequence.pages.back(), copy);
    --refs_[static_cast<size_t>(sequence.pages.back())];
    sequence.pages.back() = copy;
  }
  while (static_cast<int64_t>(sequence.pages.size()) < pages_for(length)) {
    sequence.pages.push_back(free_.back());
    refs_[static_cast<size_t>(free_.back())] = 1;
    free_.pop_back();
  }
  return true;
}

PagedSequence KVPool::share(const PagedSequence& sequence, int64_t length) {
  TORCH_CHECK(length <= sequence.length, "cannot share more tokens than the sequence holds");
  PagedSequence shared;
  shared.length = length;
  shared.pages.assign(sequence.pages.begin(),
                      sequence.pages.begin() + static_cast<std::ptrdiff_t>(pages_for(length)));
  for (const int32_t page : shared.pages) ++refs_[static_cast<size_t>(page)];
  return shared;
}

void KVPool::release(PagedSequence& sequence) {
  for (const int32_t page : sequence.pages) {
    if (--refs_[static_cast<size_t>(page)] == 0) free_.push_back(page);
  }
  sequence.pages.clear();
  sequence.length = 0;
}

std::vector<int64_t> KVPool::slots(const PagedSequence& sequence, int64_t from, int64_t to) const {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, to - from)));
  for (int64_t j = from; j < to; ++j) out.push_back(slot(sequence, j));
  return out;
}

}  // namespace kevin::train
