// host_kernels.h — host implementations of the harness arithmetic (fills, hashes, element
// conversion). The judge uses them on expected outputs and input copies; the CPU runner uses
// them on candidate buffers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kevin::runner {

void host_fill32(void* dst, uint32_t word, size_t bytes);
// Writes `bytes` at `data` back and out of every cache level (a CPU timed call starts cold).
// With clflushopt (where the processor has it) the lines are flushed in parallel: about ten
// times faster than clflush for a freshly written buffer, which keeps the harness's overhead,
// and with it the judge's clock allowance, small.
void host_evict(const void* data, size_t bytes);
uint64_t host_hash(const void* data, size_t bytes);
// Element `i` of a buffer of `dtype` (kevin_abi numbering) as a double.
double load_as_double(const void* data, int32_t dtype, uint64_t i);

}  // namespace kevin::runner
