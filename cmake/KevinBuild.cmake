# Project-wide compile settings: warnings are errors in project code (not in third-party
# headers, which are included as SYSTEM), optional sanitizers, and the test helper.

set(KEVIN_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Wcast-align -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion
    -Wdouble-promotion -Wformat=2)
# On by default and in CI; the GPU session script turns it off only to finish a run when a
# newer compiler reports a new warning (it prints the warning first).
option(KEVIN_WERROR "Treat warnings in project code as errors" ON)
# .cu files: the same set through nvcc to the host compiler, less -Wpedantic and
# -Wold-style-cast, which fire inside the code nvcc generates from CUDA's own headers; nvcc's
# own warnings (device code) count as errors too. One -Xcompiler= token: CMake de-duplicates
# repeated bare `-Xcompiler` flags.
set(KEVIN_CUDA_HOST_WARNINGS -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
    -Woverloaded-virtual -Wconversion -Wsign-conversion -Wdouble-promotion -Wformat=2)
if(KEVIN_WERROR)
  list(APPEND KEVIN_WARNINGS -Werror)
  list(APPEND KEVIN_CUDA_HOST_WARNINGS -Werror)
endif()
list(JOIN KEVIN_CUDA_HOST_WARNINGS "," kevin_cuda_host_warnings)
set(KEVIN_CUDA_WARNINGS "-Xcompiler=${kevin_cuda_host_warnings}")
if(KEVIN_WERROR)
  list(APPEND KEVIN_CUDA_WARNINGS --Werror=all-warnings)
endif()

if(KEVIN_SANITIZE STREQUAL "thread")
  # -Wno-tsan: Boost.Asio (the server) uses std::atomic_thread_fence, which ThreadSanitizer
  # does not model and g++ warns about; the server's own state is behind mutexes.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=thread> $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-Wno-tsan>)
  add_link_options(-fsanitize=thread)
elseif(KEVIN_SANITIZE STREQUAL "address" OR KEVIN_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-sanitize-recover=all>)
  add_link_options(-fsanitize=address,undefined)
endif()

# The tests of the modules that run threads (the environment's device pool, rollout, the
# queue's workers, the server, the policies' clients, logging, the judge alone): labelled
# `tsan`, the set `make tsan` builds and runs under ThreadSanitizer. The trainer's threads
# (local policy, collectives) need libtorch, which is not instrumented, and are not in it.
set(KEVIN_TSAN_TESTS core_test env_test rollout_test queue_test server_test policy_test judge_fake_runner_test)

# kevin_target_defaults(target): the warning set and include root for project code.
function(kevin_target_defaults target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${KEVIN_WARNINGS}>
                                           $<$<COMPILE_LANGUAGE:CUDA>:${KEVIN_CUDA_WARNINGS}>)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
endfunction()

# kevin_module(name SOURCES ... DEPS ...): one library per src/<name> folder.
function(kevin_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(kevin_${name} STATIC ${ARG_SOURCES})
  kevin_target_defaults(kevin_${name})
  target_link_libraries(kevin_${name} PUBLIC ${ARG_DEPS})
endfunction()

# kevin_test(name SOURCES ... DEPS ... LABELS ...): a GoogleTest binary; each test case becomes
# one CTest test carrying LABELS; GTEST_SKIP is reported by CTest as "skipped", not hidden
# (GoogleTest.cmake sets SKIP_REGULAR_EXPRESSION on discovered tests itself).
function(kevin_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(name IN_LIST KEVIN_TSAN_TESTS)
    list(APPEND ARG_LABELS tsan)
  endif()
  # gtest_discover_tests flattens PROPERTIES (escapes are lost): a list "unit;gpu" became the
  # label `unit` and a property named `gpu`, and `ctest -L gpu` found nothing. One label
  # "unit,gpu" instead: ctest's -L/-LE are regular expressions searched in each label.
  string(REPLACE ";" "," labels "${ARG_LABELS}")
  add_executable(${name} ${ARG_SOURCES})
  kevin_target_defaults(${name})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} kevin_test_support GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE KEVIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                             KEVIN_BUILD_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60  # a cold start of a libtorch binary can take longer than the default 5 s
    PROPERTIES LABELS "${labels}" TIMEOUT ${ARG_TIMEOUT})
endfunction()
