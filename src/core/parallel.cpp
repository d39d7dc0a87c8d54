// parallel.cpp — std::thread fan-out and join; the caller's thread does the first share.
#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace kevin {

void run_workers(size_t workers, const std::function<void(size_t worker)>& fn) {
  if (workers == 0) return;
  std::vector<std::thread> others;
  others.reserve(workers - 1);
  for (size_t w = 1; w < workers; ++w) others.emplace_back(fn, w);
  fn(0);
  for (auto& t : others) t.join();
}

void for_each_index(size_t count, size_t width, const std::function<void(size_t i)>& fn) {
  std::atomic<size_t> next{0};
  run_workers(std::min(std::max<size_t>(width, 1), count), [&](size_t) {
    for (size_t i = next++; i < count; i = next++) fn(i);
  });
}

size_t chunk_parts(uint64_t count) {
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  return static_cast<size_t>(
      std::min<uint64_t>(hardware_threads(), std::max<uint64_t>(1, count / kChunk)));
}

size_t parallel_chunks(uint64_t count, const std::function<void(uint64_t, uint64_t, size_t)>& fn) {
  const size_t parts = chunk_parts(count);
  run_workers(parts, [&](size_t p) { fn(count * p / parts, count * (p + 1) / parts, p); });
  return parts;
}

void copy_parallel(const uint8_t* from, uint64_t bytes, uint8_t* to) {
  parallel_chunks(bytes, [&](uint64_t begin, uint64_t end, size_t) {
    std::memcpy(to + begin, from + begin, end - begin);
  });
}

unsigned hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace kevin
