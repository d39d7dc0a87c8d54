// gpu_memory.h — what the judge can learn about a runner process from outside it: its GPU
// memory as the NVIDIA management library (NVML) reports it, its children and its CPU time.
// NVML is loaded with dlopen, so machines without the driver build and run: every GPU query
// then answers "unknown".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace kevin::sys {

// Device memory held by the processes `pids`, summed over every GPU; nullopt when NVML is
// unavailable or lists none of them (some container runtimes hide processes from it).
// Thread-safe.
std::optional<uint64_t> gpu_memory_of(const std::vector<pid_t>& pids);

// The direct children of `pid` (from /proc; empty when it has none or /proc cannot say).
std::vector<pid_t> child_processes(pid_t pid);

// Nanoseconds process `pid` has run on a CPU (the kernel's accounting, which time spent
// waiting for a CPU does not count); nullopt when the kernel will not say. Exact when the
// process is asleep; while it runs, the current slice may not be counted yet.
std::optional<uint64_t> cpu_time_ns(pid_t pid);

// The process's scheduler state letter from /proc ('R' running, 'S' sleeping, ...); nullopt
// when it is gone.
std::optional<char> process_state(pid_t pid);

}  // namespace kevin::sys
