// version.h — the project version, set from CMake's project(VERSION).
#pragma once

namespace kevin {
// "0.1.0" style version string of this build.
const char* version_string();
}  // namespace kevin
