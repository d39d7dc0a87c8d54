// types.h — in the compile driver's lite form of a device unit, this PyTorch header is
// kevin_torch_lite.h (docs/kernelbench.md, "Building").
#pragma once
#include <kevin_torch_lite.h>
