// fuzz_engine_json.cpp — fuzz target: the JSON the engine reads from disk or from another
// process: a seed set's meta.json (load_reference, layout and size checks included), a cached
// baseline, the KernelBench checker's output (with the units built from it) and the torch
// toolchain probe's.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/json.h"
#include "engine/build/kernelbench.h"
#include "engine/run/reference.h"
#include "scratch_file.h"

namespace {

// The scratch folder, holding the four data files of one 256-byte set each: a meta.json of
// one correctness and one timing set, with one input and one output of at most 256 bytes,
// loads in full.
const std::filesystem::path& reference_folder() {
  static const std::filesystem::path folder = [] {
    const std::string set(kevin::engine::kTensorAlignment, '\0');
    for (const char* name : {"expected.bin", "timing_inputs.bin", "timing_expected.bin"}) {
      (void)kevin::fuzz::write_scratch_file(name, set);
    }
    return kevin::fuzz::write_scratch_file("inputs.bin", set).parent_path();
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::filesystem::path& folder = reference_folder();
  (void)kevin::fuzz::write_scratch_file("meta.json", text);
  if (auto ref = kevin::engine::load_reference(folder); ref.is_ok())
    (void)kevin::engine::reference_meta_json(*ref);
  auto doc = kevin::parse_json(text);
  if (!doc.is_ok()) return 0;
  if (auto stats = kevin::engine::timing_stats_from_json(*doc); stats.is_ok())
    (void)kevin::engine::to_json(*stats);
  if (auto check = kevin::engine::answer_check_from_json(*doc); check.is_ok()) {
    for (const auto& ext : check->extensions) {
      const kevin::engine::ExtensionUnits units = kevin::engine::extension_units(ext);
      (void)kevin::engine::with_light_torch_header(units.host, kevin::engine::UnitKind::kHost);
      (void)kevin::engine::with_light_torch_header(units.device, kevin::engine::UnitKind::kDevice);
    }
  }
  (void)kevin::engine::torch_toolchain_from_json(*doc);
  return 0;
}
