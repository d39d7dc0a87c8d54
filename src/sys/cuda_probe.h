// cuda_probe.h — is there a usable CUDA device? Asks the driver library (libcuda.so.1)
// through dlopen, so it works, and answers 0, on machines without CUDA.
#pragma once

#include <string>

namespace kevin::sys {

// Number of CUDA devices the driver reports; 0 with `why` set when there is no driver or no
// device. The answer is computed once per process.
int cuda_device_count(std::string* why = nullptr);

// The driver's name for device `ordinal` ("NVIDIA H200"); "" when there is no such device.
std::string cuda_device_name(int ordinal);

// What a child process's CUDA_VISIBLE_DEVICES must say so that it sees exactly this process's
// device `ordinal`: the ordinal-th entry of `visible` (this process's CUDA_VISIBLE_DEVICES,
// nullptr or "" when unset), or the ordinal itself when there is no such list.
std::string child_visible_device(int ordinal, const char* visible);

}  // namespace kevin::sys
