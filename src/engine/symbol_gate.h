// symbol_gate.h — the gate after compiling: a built candidate may import only what the ABI
// needs (CUDA launch/registration and a few runtime calls, libm, memory copies, C++ runtime
// support), export only kevin_forward (plus C++ inline instantiations), and hold limited
// writable static storage, and no thread-local storage (the runner resets static storage
// between calls; TLS would escape that). Rules: import_not_allowed, export_not_allowed,
// static_storage_too_large, thread_local_storage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/backend.h"
#include "engine/elf.h"
#include "engine/gate.h"

namespace kevin::engine {

inline constexpr uint64_t kMaxWritableStaticBytes = 64ull << 20;
// __device__ globals are not reset between calls (host statics are), so they are kept small:
// enough for counters and flags, too small to cache outputs of realistic size.
inline constexpr uint64_t kMaxDeviceGlobalBytes = 1ull << 20;

// True if a candidate for `backend` may import `symbol` (version suffix already removed).
bool import_allowed(const std::string& symbol, Backend backend);

// nullopt when the built object passes; otherwise the first rule that fired.
// `device_global_bytes` is the CUDA __device__ storage reported by ptxas (0 on CPU).
std::optional<Rejection> check_symbols(const ElfSymbols& symbols, Backend backend,
                                       uint64_t device_global_bytes);

}  // namespace kevin::engine
