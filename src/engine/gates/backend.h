// backend.h — the two execution backends a candidate can target.
#pragma once

#include <optional>
#include <string_view>

namespace kevin::engine {

enum class Backend { kCuda, kCpu };

// What a build makes: a candidate of kevin's C ABI (kevin_forward), or a PyTorch extension
// module from a KernelBench answer's load_inline sources, loaded by the Python runner
// (docs/kernelbench.md). The gates hold the two to the same rules where they can, and say
// where they differ.
enum class Profile { kKevinAbi, kTorchExtension };

// "cuda" / "cpu".
const char* backend_name(Backend backend);
std::optional<Backend> backend_from_name(std::string_view name);

}  // namespace kevin::engine
