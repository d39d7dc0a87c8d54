// python_support.cpp — libkevin-runner-support.so: what the Python runner (KernelBench answers,
// kernelbench_runner.py) calls through ctypes so that it is confined by exactly the code that
// confines kevin-runner, and hashes inputs with the judge's own function. C functions only;
// each returns 0 on success, otherwise -1 with the reason written (NUL-terminated) into `err`.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/runner/exit_codes.h"
#include "engine/runner/host_kernels.h"
#include "engine/runner/sandbox.h"

namespace {

// The interpreter's audit events that mean the answer is reaching into the interpreter, its
// frames, its hooks or the process (docs/sandbox.md): the runner's protocol, clocks and checks
// live in the same interpreter. The static checks refuse every spelling of these they can see;
// this hook stops the rest, however reached.
constexpr std::string_view kRefusedEvents[] = {"sys._getframe",
                                               "sys._getframemodulename",
                                               "sys._current_frames",
                                               "sys._current_exceptions",
                                               "sys.settrace",
                                               "sys.setprofile",
                                               "sys.addaudithook",
                                               "sys.monitoring",
                                               "gc.get_objects",
                                               "gc.get_referrers",
                                               "gc.get_referents",
                                               "object.__getattr__",
                                               "object.__setattr__",
                                               "object.__delattr__",
                                               "code.__new__",
                                               "function.__new__",
                                               "ctypes.dlopen",
                                               "ctypes.dlsym",
                                               "ctypes.cdata",
                                               "ctypes.addressof",
                                               "ctypes.string_at",
                                               "ctypes.wstring_at",
                                               "ctypes.memmove",
                                               "ctypes.memset",
                                               "marshal.load",
                                               "marshal.loads",
                                               "os.system",
                                               "os.exec",
                                               "os.fork",
                                               "os.forkpty",
                                               "os.posix_spawn",
                                               "os.spawn",
                                               "os.kill",
                                               "os.killpg",
                                               "subprocess.Popen",
                                               "socket.__new__",
                                               "pty.spawn",
                                               "os.putenv",
                                               "os.chdir",
                                               "os.add_dll_directory"};
// Attributes of the audited object.__getattr__ event the runner's own traceback of an answer's
// exception reads (the answer cannot: the static checks refuse these names and every way to a
// traceback).
constexpr std::string_view kTracebackAttributes[] = {"tb_frame", "f_code"};

using AddAuditHook = int (*)(int (*)(const char*, void*, void*), void*);
using TupleItem = void* (*)(void*, long);
using Utf8 = const char* (*)(void*);
TupleItem g_tuple_item = nullptr;
Utf8 g_utf8 = nullptr;

bool refused(std::string_view event) {
  for (std::string_view r : kRefusedEvents) {
    // "os.exec" covers os.execv and its kin; a prefix only ever ends at a '.' or '/' boundary
    // of the refused name itself.
    if (event.substr(0, r.size()) == r) return true;
  }
  return false;
}

// The attribute named by object.__getattr__'s (obj, name) arguments, or empty.
std::string_view attribute_of(void* args) {
  void* name = g_tuple_item != nullptr ? g_tuple_item(args, 1) : nullptr;
  const char* text = name != nullptr && g_utf8 != nullptr ? g_utf8(name) : nullptr;
  return text != nullptr ? std::string_view(text) : std::string_view();
}

// Ends the process on a refused event, saying which (the judge reads the exit code).
int on_audit_event(const char* event, void* args, void*) {
  const std::string_view name(event);
  if (!refused(name)) return 0;
  if (name == "object.__getattr__") {
    const std::string_view attribute = attribute_of(args);
    for (std::string_view allowed : kTracebackAttributes) {
      if (attribute == allowed) return 0;
    }
  }
  const std::string line =
      "kevin-runner: the answer reached into the interpreter (" + std::string(name) + ")\n";
  (void)!::write(2, line.data(), line.size());
  ::_exit(kevin::runner::kIntrospectionExit);
}

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

// Maps the candidate object (while the loader's allowlist is in force) without initialising
// any module of it: importing it later finds it mapped and opens nothing. The handle is kept.
__attribute__((visibility("default"))) int kevin_runner_preload(const char* path, char* err,
                                                                size_t n) {
  if (::dlopen(path, RTLD_NOW | RTLD_LOCAL) != nullptr) return 0;
  return fail(
      kevin::unavailable(std::string("cannot load the answer's extensions: ") + ::dlerror()), err,
      n);
}

// Adds the audit hook (on_audit_event) to this interpreter, for good: Python offers no way to
// remove one. Call it through ctypes.PyDLL (the GIL held), right before the answer's code runs.
__attribute__((visibility("default"))) int kevin_runner_guard_interpreter(char* err, size_t n) {
  const auto add = reinterpret_cast<AddAuditHook>(::dlsym(RTLD_DEFAULT, "PySys_AddAuditHook"));
  g_tuple_item = reinterpret_cast<TupleItem>(::dlsym(RTLD_DEFAULT, "PyTuple_GetItem"));
  g_utf8 = reinterpret_cast<Utf8>(::dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8"));
  if (add == nullptr || g_tuple_item == nullptr || g_utf8 == nullptr)
    return fail(kevin::unavailable("this interpreter has no audit hooks (Python 3.8 or later)"),
                err, n);
  if (add(&on_audit_event, nullptr) != 0)
    return fail(kevin::unavailable("the interpreter refused the runner's audit hook"), err, n);
  return 0;
}

__attribute__((visibility("default"))) uint64_t kevin_runner_hash(const void* data, size_t bytes) {
  return kevin::runner::host_hash(data, bytes);
}

// Evicts `bytes` at `data` from every cache level (the CPU backend's flush before a timed call).
__attribute__((visibility("default"))) void kevin_runner_flush(const void* data, size_t bytes) {
  kevin::runner::host_evict(data, bytes);
}
}
