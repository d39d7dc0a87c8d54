// python_support.cpp — libkevin-runner-support.so: what the Python runner (KernelBench answers,
// kernelbench_runner.py) calls through ctypes so that it is confined by exactly the code that
// confines kevin-runner, and hashes inputs with the judge's own function. C functions only;
// each returns 0 on success, otherwise -1 with the reason written (NUL-terminated) into `err`.
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "engine/runner/host_kernels.h"
#include "engine/runner/sandbox.h"

namespace {

int fail(const kevin::Status& s, char* err, size_t n) {
  if (s.is_ok()) return 0;
  if (err != nullptr && n > 0) {
    const std::string m = s.message();
    const size_t len = std::min(n - 1, m.size());
    std::memcpy(err, m.data(), len);
    err[len] = '\0';
  }
  return -1;
}

// The stages applied so far, comma-separated, for the runner's setup reply.
void report_into(const kevin::runner::SandboxReport& report, char* out, size_t n) {
  std::string joined;
  for (const auto& e : report.enforced) joined += (joined.empty() ? "" : ",") + e;
  const size_t len = std::min(n - 1, joined.size());
  std::memcpy(out, joined.data(), len);
  out[len] = '\0';
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void kevin_runner_adopt(int judge_pid, int lifeline_fd) {
  kevin::runner::adopt_judge(judge_pid, lifeline_fd);
}

__attribute__((visibility("default"))) int kevin_runner_close_doors(
    uint64_t cpu_seconds, uint64_t output_bytes, uint64_t address_space, uint64_t data,
    char* enforced, size_t n, char* err, size_t err_n) {
  kevin::runner::SandboxReport report;
  const int rc =
      fail(kevin::runner::close_doors(cpu_seconds, output_bytes, address_space, data, &report), err,
           err_n);
  if (rc == 0) report_into(report, enforced, n);
  return rc;
}

__attribute__((visibility("default"))) int kevin_runner_allow_loading(int object_fd, int gpu,
                                                                      char* err, size_t n) {
  return fail(kevin::runner::allow_loading(object_fd, {gpu != 0, true}), err, n);
}

__attribute__((visibility("default"))) int kevin_runner_seal(int gpu, char* err, size_t n) {
  kevin::runner::SandboxReport report;
  return fail(kevin::runner::seal({gpu != 0, true}, &report), err, n);
}

__attribute__((visibility("default"))) uint64_t kevin_runner_hash(const void* data, size_t bytes) {
  return kevin::runner::host_hash(data, bytes);
}

// Evicts `bytes` at `data` from every cache level (the CPU backend's flush before a timed call).
__attribute__((visibility("default"))) void kevin_runner_flush(const void* data, size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  for (size_t at = 0; at < bytes; at += 64) _mm_clflush(p + at);
  _mm_mfence();
}
}
