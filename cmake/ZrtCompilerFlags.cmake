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
