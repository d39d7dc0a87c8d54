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
# pytorch/pytorch#133437). With a linker that drops libraries not needed at their place on the
# line (--as-needed, Ubuntu's default), the libstdc++ that g++ appends after libtorch resolves
# nothing new and is left out of NEEDED; our header-inlined code then calls another library
# version's out-of-line code and crashes in std::filesystem and stream calls (every test
# touching files, on the GPU machine). So every executable names the shared libstdc++.so.6 by
# its full path, first, with --no-as-needed: it is then the first place symbols are looked up.
# cxx_runtime_test checks the result (docs/trainer.md, "The C++ runtime and PyTorch's pip libtorch").
if(KEVIN_HAVE_TORCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                  OUTPUT_VARIABLE KEVIN_LIBSTDCXX_SO OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(IS_ABSOLUTE "${KEVIN_LIBSTDCXX_SO}" AND EXISTS "${KEVIN_LIBSTDCXX_SO}")
    string(APPEND CMAKE_EXE_LINKER_FLAGS " -Wl,--push-state,--no-as-needed ${KEVIN_LIBSTDCXX_SO} -Wl,--pop-state")
    message(STATUS "libtorch: executables link ${KEVIN_LIBSTDCXX_SO} first")
  else()
    message(WARNING "libtorch: the compiler does not know libstdc++.so.6; binaries may mix PyTorch's copies of the C++ runtime with ours")
  endif()
endif()
