# libtorch is optional: Debian's libtorch-dev (1.13, CPU) on development machines; on a GPU
# machine pass -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)').
set(KEVIN_HAVE_TORCH OFF)
if(NOT KEVIN_TORCH STREQUAL "OFF")
  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(KEVIN_HAVE_TORCH ON)
    message(STATUS "libtorch ${Torch_VERSION} found: ${TORCH_LIBRARIES}")
  elseif(KEVIN_TORCH STREQUAL "ON")
    message(FATAL_ERROR "KEVIN_TORCH=ON but libtorch was not found (set CMAKE_PREFIX_PATH)")
  endif()
endif()
