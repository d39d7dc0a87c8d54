// fuzz_elf.cpp — fuzz target: the ELF readers (shared and relocatable objects) and the whole
// object gate on arbitrary bytes (built objects are untrusted), both backends, kevin's ABI
// and the torch-extension profile.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/gates/elf.h"
#include "engine/gates/symbol_gate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kevin::engine::Backend;
  const std::string_view image(reinterpret_cast<const char*>(data), size);
  (void)kevin::engine::read_elf_symbols(image);
  (void)kevin::engine::read_elf_object(image);
  (void)kevin::engine::read_elf_relocatable_symbols(image);
  (void)kevin::engine::check_object(image, Backend::kCpu, 0);
  (void)kevin::engine::check_object(image, Backend::kCuda, 4096);
  (void)kevin::engine::check_object(image, Backend::kCpu, 0,
                                    kevin::engine::Profile::kTorchExtension);
  (void)kevin::engine::check_object(image, Backend::kCuda, 4096,
                                    kevin::engine::Profile::kTorchExtension);
  return 0;
}
