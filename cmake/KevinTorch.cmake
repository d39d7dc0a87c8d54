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

# PyTorch's pip wheels export copies of libstdc++ functions (std::filesystem among them,
# pytorch/pytorch#133437). When libtorch precedes libstdc++ on the link line, the linker takes
# those definitions and drops libstdc++ from the executable's NEEDED list (seen on the GPU
# machine); our header-inlined code then calls another library version's out-of-line code
# and crashes in std::filesystem and stream calls. Naming libstdc++ ahead of everything in
# every executable's link flags (a raw flag string: no reordering or de-duplication) makes it
# the first place symbols are looked up. cxx_runtime_test checks the result.
if(KEVIN_HAVE_TORCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  string(APPEND CMAKE_EXE_LINKER_FLAGS " -Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state")
endif()
