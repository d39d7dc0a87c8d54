// version.cpp — KEVIN_VERSION comes from the build system.
#include "core/version.h"

namespace kevin {
const char* version_string() { return KEVIN_VERSION; }
}  // namespace kevin
