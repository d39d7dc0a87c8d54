// backend.h — the two execution backends a candidate can target.
#pragma once

#include <optional>
#include <string_view>

namespace kevin::engine {

enum class Backend { kCuda, kCpu };

// "cuda" / "cpu".
const char* backend_name(Backend backend);
std::optional<Backend> backend_from_name(std::string_view name);

}  // namespace kevin::engine
