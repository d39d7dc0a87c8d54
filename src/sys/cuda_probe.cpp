// cuda_probe.cpp — CUDA device probe through the driver library, loaded at run time.
#include "sys/cuda_probe.h"

#include <dlfcn.h>

namespace kevin::sys {

int cuda_device_count(std::string* why) {
  static int cached = -1;
  static std::string cached_why;
  if (cached < 0) {
    cached = 0;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      cached_why = "libcuda.so.1 not loadable (no NVIDIA driver)";
    } else {
      using InitFn = int (*)(unsigned);
      using CountFn = int (*)(int*);
      auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
      auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
      int n = 0;
      if (init == nullptr || count == nullptr) {
        cached_why = "libcuda.so.1 lacks cuInit/cuDeviceGetCount";
      } else if (int rc = init(0); rc != 0) {
        cached_why = "cuInit failed with error " + std::to_string(rc);
      } else if (count(&n) != 0 || n == 0) {
        cached_why = "the driver reports no CUDA device";
      } else {
        cached = n;
      }
      // The library stays loaded: tests that follow may use CUDA in this process.
    }
  }
  if (why != nullptr) *why = cached_why;
  return cached;
}

std::string cuda_device_name(int ordinal) {
  if (ordinal < 0 || ordinal >= cuda_device_count()) return "";
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib == nullptr) return "";
  using GetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  auto get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto name = reinterpret_cast<NameFn>(dlsym(lib, "cuDeviceGetName"));
  int device = 0;
  char buffer[256] = {};
  if (get == nullptr || name == nullptr || get(&device, ordinal) != 0 ||
      name(buffer, static_cast<int>(sizeof buffer) - 1, device) != 0) {
    return "";
  }
  return buffer;
}

std::string child_visible_device(int ordinal, const char* visible) {
  if (visible == nullptr || *visible == '\0') return std::to_string(ordinal);
  const std::string list = visible;
  size_t begin = 0;
  for (int i = 0; begin <= list.size(); ++i) {
    size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    if (i == ordinal) {
      std::string entry = list.substr(begin, end - begin);
      const size_t first = entry.find_first_not_of(" \t");
      const size_t last = entry.find_last_not_of(" \t");
      return first == std::string::npos ? std::to_string(ordinal)
                                        : entry.substr(first, last - first + 1);
    }
    begin = end + 1;
  }
  return std::to_string(ordinal);
}

}  // namespace kevin::sys
