// cxx_runtime_test.cpp — a binary linking libtorch looks C++ runtime functions up in libstdc++
// first, not in the copies PyTorch's wheels export (cmake/KevinTorch.cmake says why; mixing
// them crashed every test that touched files on the GPU machine).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace kevin::train {
namespace {

// The file of the first definition of `symbol` in the process's global lookup order.
std::string first_definer(const char* symbol) {
  void* address = dlsym(RTLD_DEFAULT, symbol);
  if (address == nullptr) return "";
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

TEST(CxxRuntime, FilesystemComesFromLibstdcxx) {
  // Used here so the runtime is linked whatever the rest of the binary needs.
  EXPECT_FALSE(std::filesystem::temp_directory_path().empty());
  for (
      const char* symbol :
      {"_ZNSt10filesystem19temp_directory_pathB5cxx11Ev",  // std::filesystem::temp_directory_path()
       "_ZNSt10filesystem7__cxx114path14_M_split_cmptsEv"}) {  // path::_M_split_cmpts()
    const std::string file = first_definer(symbol);
    ASSERT_FALSE(file.empty()) << symbol << " is not defined anywhere";
    EXPECT_NE(file.find("libstdc++"), std::string::npos) << symbol << " is first found in " << file;
  }
}

}  // namespace
}  // namespace kevin::train
