// parallel.h — the one way kevin fans work out over threads and waits for it: a fixed set of
// workers started together and joined together. Every fan-out (rollout trajectories, batch
// evaluations, compiler jobs, data-parallel ranks, comparing large tensors) goes through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace kevin {

// Calls fn(worker) for every worker in [0, workers) on its own thread — the calling thread is
// worker 0 — and returns when all have returned. workers == 0 calls nothing. fn must not throw
// (an exception ends the process, as on any std::thread); errors go back as values it stores.
void run_workers(size_t workers, const std::function<void(size_t worker)>& fn);

// Calls fn(i) once for every i in [0, count), on min(width, count) workers that each take the
// next index not yet taken, so long and short items balance; returns when all are done. width 0
// counts as 1. fn may run concurrently with itself for different i; same no-throw rule.
void for_each_index(size_t count, size_t width, const std::function<void(size_t i)>& fn);

// Calls fn(begin, end, part) over chunk_parts(count) contiguous slices of [0, count), one worker
// per slice (one slice, inline, for small counts); returns the number of parts used. fn must only
// touch state owned by its part.
size_t parallel_chunks(uint64_t count, const std::function<void(uint64_t, uint64_t, size_t)>& fn);
// Copies `bytes` from `from` to `to` (which must not overlap) over parallel_chunks(): buffers of
// gigabytes are copied, and first touched, on all cores rather than one.
void copy_parallel(const uint8_t* from, uint64_t bytes, uint8_t* to);
// How many parts parallel_chunks() uses for `count` elements: one per 2^20 elements, at most one
// per hardware thread.
size_t chunk_parts(uint64_t count);

// The machine's hardware threads, at least 1 (the default width of --jobs-style options).
unsigned hardware_threads();

}  // namespace kevin
