// kv_pool.h — the paged KV cache's memory: per layer one key and one value pool of
// pages × page_size token slots, allocated once; pages handed out by reference count, so a
// prompt's pages are shared by every sequence that continues it and a shared page is copied
// before a sequence writes into it (copy on write). Not thread-safe: one generator owns a pool.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace kevin::train {

struct KVPoolShape {
  int64_t layers = 0, kv_heads = 0, head_dim = 0;
  int64_t page_size = 16;  // tokens per page
  int64_t pages = 0;
};

// A sequence's keys and values: token j in page pages[j / page_size] at offset j % page_size.
// Holds one reference on each of its pages, taken and given back through KVPool.
struct PagedSequence {
  std::vector<int32_t> pages;
  int64_t length = 0;  // tokens whose keys and values are stored
};

class KVPool {
 public:
  // Allocates 2 × layers pools of [pages × page_size, kv_heads, head_dim] in `options`.
  // Torch's allocation errors (out of memory) throw.
  KVPool(const KVPoolShape& shape, const torch::TensorOptions& options);

  // Bytes one token takes over all layers, keys and values, at `element_size` bytes each.
  static int64_t bytes_per_token(const KVPoolShape& shape, int64_t element_size);

  const KVPoolShape& shape() const { return shape_; }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  int64_t used_pages() const { return shape_.pages - free_pages(); }
  // One layer's pools, [pages × page_size, kv_heads, head_dim] (views: writes land in the pool).
  const torch::Tensor& keys(size_t layer) const { return keys_[layer]; }
  const torch::Tensor& values(size_t layer) const { return values_[layer]; }

  // Makes room in `sequence` for `length` tokens: adds pages, and first copies a shared last
  // page that the new tokens would be written into. Returns false, leaving the sequence as it
  // was, when the pool has too few free pages. `length` below sequence.length is a no-op.
  bool grow(PagedSequence& sequence, int64_t length);
  // A new sequence holding the first `length` (<= sequence.length) tokens of `sequence`,
  // sharing its pages.
  PagedSequence share(const PagedSequence& sequence, int64_t length);
  // Gives back the sequence's pages; it is empty afterwards.
  void release(PagedSequence& sequence);
  // The pool slot of token `token` of `sequence` (its page must be there).
  int64_t slot(const PagedSequence& sequence, int64_t token) const {
    return sequence.pages[static_cast<size_t>(token / shape_.page_size)] * shape_.page_size +
           token % shape_.page_size;
  }
  // Pool slots of tokens [from, to) of `sequence` (pages for them must be there).
  std::vector<int64_t> slots(const PagedSequence& sequence, int64_t from, int64_t to) const;

 private:
  int64_t pages_for(int64_t length) const {
    return (length + shape_.page_size - 1) / shape_.page_size;
  }
  void copy_page(int32_t from, int32_t to);

  KVPoolShape shape_;
  std::vector<torch::Tensor> keys_, values_;
  std::vector<int32_t> free_;  // a stack: the most recently freed page is reused first
  std::vector<int32_t> refs_;  // per page
};

}  // namespace kevin::train
