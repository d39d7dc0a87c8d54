// fuzz_gate.cpp — fuzz target: both source gates and their lexer on arbitrary bytes, both
// backends: the text gate, and the translation-unit gate as if the bytes were preprocessor
// output (with the fixed deny-list and with include roots), for kevin's ABI and the
// torch-extension profile of KernelBench answers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gates/gate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kevin::engine::Backend;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> kRoots = {"/usr/include", "/usr/lib/gcc",
                                                  "/usr/local/cuda/bin/../targets"};
  (void)kevin::engine::strip_comments_and_strings(text);
  for (const Backend backend : {Backend::kCuda, Backend::kCpu}) {
    (void)kevin::engine::check_source(text, backend);
    (void)kevin::engine::check_source(text, backend, kevin::engine::Profile::kTorchExtension);
    (void)kevin::engine::check_translation_unit(text, backend);
    (void)kevin::engine::check_translation_unit(text, backend, kRoots);
    (void)kevin::engine::check_translation_unit(text, backend, kRoots,
                                                kevin::engine::Profile::kTorchExtension);
  }
  (void)kevin::engine::include_search_dirs(text);
  return 0;
}
