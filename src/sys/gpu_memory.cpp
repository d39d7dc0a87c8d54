// gpu_memory.cpp — the few NVML calls kevin needs (resolved once at first use) and /proc reads.
#include "sys/gpu_memory.h"

#include <dlfcn.h>
#include <time.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/mutex.h"

namespace kevin::sys {
namespace {

// nvmlProcessInfo_t of NVML 11+ (the _v3 process query).
struct NvmlProcess {
  unsigned int pid;
  unsigned long long used_bytes;
  unsigned int gpu_instance;
  unsigned int compute_instance;
};

class Nvml {
 public:
  static Nvml* get() {
    static Nvml* instance = [] {
      auto* n = new Nvml();  // lives for the process: NVML is never shut down
      if (!n->load()) {
        delete n;
        return static_cast<Nvml*>(nullptr);
      }
      return n;
    }();
    return instance;
  }

  // (pid, bytes) of every compute process on every device.
  std::vector<NvmlProcess> processes() {
    MutexLock lock(mu_);
    std::vector<NvmlProcess> all;
    unsigned int devices = 0;
    if (count_(&devices) != 0) return all;
    for (unsigned int d = 0; d < devices; ++d) {
      void* handle = nullptr;
      if (handle_(d, &handle) != 0) continue;
      std::vector<NvmlProcess> list(64);
      auto n = static_cast<unsigned int>(list.size());
      if (query_(handle, &n, list.data()) != 0) continue;
      all.insert(all.end(), list.begin(), list.begin() + n);
    }
    return all;
  }

 private:
  using InitFn = int (*)();
  using CountFn = int (*)(unsigned int*);
  using HandleFn = int (*)(unsigned int, void**);
  using QueryFn = int (*)(void*, unsigned int*, NvmlProcess*);

  bool load() {
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    auto init = reinterpret_cast<InitFn>(::dlsym(lib, "nvmlInit_v2"));
    count_ = reinterpret_cast<CountFn>(::dlsym(lib, "nvmlDeviceGetCount_v2"));
    handle_ = reinterpret_cast<HandleFn>(::dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    query_ = reinterpret_cast<QueryFn>(::dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    return init != nullptr && count_ != nullptr && handle_ != nullptr && query_ != nullptr &&
           init() == 0;
  }

  Mutex mu_;  // one query at a time through the library
  CountFn count_ = nullptr;
  HandleFn handle_ = nullptr;
  QueryFn query_ = nullptr;
};

}  // namespace

std::optional<uint64_t> gpu_memory_of(const std::vector<pid_t>& pids) {
  Nvml* nvml = Nvml::get();
  if (nvml == nullptr) return std::nullopt;
  bool listed = false;
  uint64_t bytes = 0;
  for (const NvmlProcess& p : nvml->processes()) {
    for (pid_t pid : pids) {
      if (static_cast<pid_t>(p.pid) != pid) continue;
      listed = true;
      bytes += p.used_bytes;
    }
  }
  return listed ? std::optional<uint64_t>(bytes) : std::nullopt;
}

std::vector<pid_t> child_processes(pid_t pid) {
  // /proc/PID/task/TID/children needs a kernel option many kernels lack: read every
  // process's parent instead (the field after the parenthesised command name, which may
  // itself contain spaces and parentheses).
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    long parent = 0;
    if (rest >> state >> parent && parent == pid)
      children.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return children;
}

std::optional<char> process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return std::nullopt;
  return stat[close + 2];
}

std::optional<uint64_t> cpu_time_ns(pid_t pid) {
  clockid_t clock;
  timespec t{};
  if (::clock_getcpuclockid(pid, &clock) != 0 || ::clock_gettime(clock, &t) != 0)
    return std::nullopt;
  return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace kevin::sys
