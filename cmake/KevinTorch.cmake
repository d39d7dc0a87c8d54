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

# Two C++ runtimes in one process crash (seen on the GPU machine: its default compiler,
# /opt/gcc, links libstdc++ statically, while libtorch loads the system's libstdc++.so; every
# binary linking libtorch segfaulted in std::ostringstream). Naming the shared libstdc++ ahead
# of every library makes the executable use the one libtorch uses; relinking a test that
# way on the GPU machine made it pass. "SHELL:" keeps CMake from de-duplicating the flags.
if(KEVIN_HAVE_TORCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(KEVIN_TORCH_LINK_OPTIONS "SHELL:-Wl,--no-as-needed -lstdc++ -Wl,--as-needed")
endif()
