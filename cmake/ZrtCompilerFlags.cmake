# Language standards and warnings shared by every target of the project.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_C_STANDARD 99)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
# Only symbols marked ZRT_API leave the shared library.
set(CMAKE_CXX_VISIBILITY_PRESET hidden)
set(CMAKE_C_VISIBILITY_PRESET hidden)
set(CMAKE_VISIBILITY_INLINES_HIDDEN ON)

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

add_compile_options(
  "$<$<COMPILE_LANGUAGE:C,CXX>:-Wall;-Wextra>"
  "$<$<COMPILE_LANGUAGE:Fortran>:-Wall>")

if(ZRT_SANITIZE)
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined;-fno-omit-frame-pointer;-fno-sanitize-recover=undefined>")
  add_link_options(-fsanitize=address,undefined)
  add_compile_definitions(ZRT_SANITIZE=1)
endif()

# make tsan: the unit tests and the threaded paths (progress thread, watchdog) under
# ThreadSanitizer. MPI, UCX and hwloc are not instrumented: what they do is invisible to
# it, and the races it reports are zerort's own.
if(ZRT_SANITIZE_THREAD)
  if(ZRT_SANITIZE)
    message(FATAL_ERROR "ZRT_SANITIZE and ZRT_SANITIZE_THREAD cannot be combined")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=thread;-fno-omit-frame-pointer>")
  add_link_options(-fsanitize=thread)
  add_compile_definitions(ZRT_SANITIZE_THREAD=1)
endif()

# make fuzz: coverage-guided libFuzzer targets (clang only). The code under test is
# instrumented with fuzzer-no-link; only the fuzz executables link libFuzzer's main.
if(ZRT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ZRT_FUZZ needs clang (libFuzzer); use `make fuzz` or the fuzz preset")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# MPI's C API only: Open MPI's and MPICH's removed C++ bindings would otherwise be pulled
# into every C++ file that includes mpi.h.
add_compile_definitions(OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)

# Precompiled headers. fmt, nlohmann-json, CLI11, GoogleTest and Kokkos are header-heavy:
# parsing alone took 9.7 s of apps/tools/bench/bench_pool.cpp's 26.7 s on a 2-core machine, and
# was paid again by every file. A target given here parses them once. Only for targets of several C++ files
# (the header is compiled once per target); C, Fortran and CUDA files are left alone.
option(ZRT_PRECOMPILE_HEADERS "precompile the large third-party headers per target" ON)
# zrt_precompile_headers(target [MPI] [JSON] [CLI] [GTEST] [KOKKOS]): fmt and a few standard
# headers always, the others where the target uses them.
function(zrt_precompile_headers target)
  # In a Kokkos CUDA build, Kokkos' launcher hands a target's files to nvcc_wrapper, which
  # cannot read GCC's precompiled headers.
  if(NOT ZRT_PRECOMPILE_HEADERS OR ZRT_KOKKOS_CUDA)
    return()
  endif()
  cmake_parse_arguments(P "MPI;JSON;CLI;GTEST;KOKKOS" "" "" ${ARGN})
  set(headers <algorithm> <functional> <map> <memory> <string> <vector> <fmt/format.h>)
  if(P_MPI)
    list(APPEND headers <mpi.h>)
  endif()
  if(P_JSON)
    list(APPEND headers <nlohmann/json.hpp>)
  endif()
  if(P_CLI)
    list(APPEND headers <CLI/CLI.hpp>)
  endif()
  if(P_GTEST)
    list(APPEND headers <gtest/gtest.h>)
  endif()
  if(P_KOKKOS)
    list(APPEND headers <Kokkos_Core.hpp>)
  endif()
  set(cxx_only "")
  foreach(h IN LISTS headers)
    list(APPEND cxx_only "$<$<COMPILE_LANGUAGE:CXX>:${h}>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${cxx_only})
endfunction()

# zrt_unity_build(target): the target's C++ files compiled a few to a translation unit, so
# the headers and templates they share are compiled once per batch. For the larger
# executables whose files only use the public API or GoogleTest (zrt-bench, the test
# programs); each file keeps its own line information.
option(ZRT_UNITY_BUILD "compile the large executables' files in batches" ON)
function(zrt_unity_build target)
  if(ZRT_UNITY_BUILD AND NOT ZRT_KOKKOS_CUDA)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
