# Finds Kokkos and KokkosKernels and exposes them as zrt::kokkos and zrt::kokkoskernels,
# whichever flavour is installed:
#  - Kokkos 4 (clusters, Spack): targets Kokkos::kokkos and Kokkos::kokkoskernels.
#  - Debian's Trilinos build (libtrilinos-kokkos-dev, Kokkos 3.4): Kokkos::kokkos points
#    its include directory at a non-existent /usr/lib/include, the headers live in
#    /usr/include/trilinos, and KokkosKernels is the plain target trilinos_kokkoskernels.

#  - ZRT_KOKKOS_CUDA=ON (preset gpu-kokkos): a Kokkos 4 with its CUDA backend, found outside
#    the system's folders (a module, Spack, Kokkos_ROOT); where there is none, the one
#    scripts/build-kokkos-cuda builds once from ZRT_KOKKOS_SOURCE (its default: the 4.6.01
#    release in ../shared/third_party). KokkosKernels is then not needed: the layers' gemms
#    go to cuBLAS (nn/gemm.cpp).
option(ZRT_KOKKOS_CUDA "Build the Kokkos applications for CUDA (Kokkos with its CUDA backend)" OFF)
set(ZRT_KOKKOS_SOURCE "" CACHE STRING
  "Kokkos 4.6.01 tarball or folder that scripts/build-kokkos-cuda builds when ZRT_KOKKOS_CUDA finds no Kokkos with CUDA")

if(ZRT_KOKKOS_CUDA)
  # Not Debian's Trilinos Kokkos (Serial only), which the system path would find first.
  find_package(Kokkos 4 CONFIG QUIET NO_CMAKE_SYSTEM_PATH NO_SYSTEM_ENVIRONMENT_PATH)
  if(NOT Kokkos_FOUND)
    set(_zrt_args --print-prefix)
    if(ZRT_KOKKOS_SOURCE)
      list(APPEND _zrt_args --source ${ZRT_KOKKOS_SOURCE})
    endif()
    if(CMAKE_CUDA_ARCHITECTURES MATCHES "^([0-9]+)")
      list(APPEND _zrt_args --arch ${CMAKE_MATCH_1})
    endif()
    message(STATUS "zerort: no Kokkos with CUDA found; scripts/build-kokkos-cuda builds one "
      "(once; a few minutes)")
    execute_process(COMMAND ${CMAKE_CURRENT_LIST_DIR}/../scripts/build-kokkos-cuda ${_zrt_args}
      OUTPUT_VARIABLE _zrt_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _zrt_rc)
    if(NOT _zrt_rc EQUAL 0)
      message(FATAL_ERROR "zerort: ZRT_KOKKOS_CUDA: no Kokkos with CUDA was found and "
        "scripts/build-kokkos-cuda failed (exit ${_zrt_rc}; its messages are above). Load one "
        "(module load kokkos, spack load kokkos+cuda), give its prefix as Kokkos_ROOT, or the "
        "Kokkos 4.6.01 release as ZRT_KOKKOS_SOURCE.")
    endif()
    find_package(Kokkos 4 CONFIG REQUIRED NO_DEFAULT_PATH PATHS ${_zrt_prefix})
  endif()
  if(NOT "CUDA" IN_LIST Kokkos_DEVICES)
    message(FATAL_ERROR "zerort: ZRT_KOKKOS_CUDA: the Kokkos found in ${Kokkos_DIR} has no "
      "CUDA backend (its devices: ${Kokkos_DEVICES})")
  endif()
  message(STATUS "zerort: Kokkos ${Kokkos_VERSION} with CUDA (${Kokkos_DIR}); the layers' "
    "gemms on cuBLAS")
else()
  find_package(Kokkos CONFIG QUIET)
  if(NOT Kokkos_FOUND)
    zrt_missing("Kokkos" libtrilinos-kokkos-dev "module load kokkos (or spack load kokkos)"
      ZRT_ENABLE_KOKKOS)
  endif()
  if("CUDA" IN_LIST Kokkos_DEVICES)
    message(FATAL_ERROR "zerort: the Kokkos found in ${Kokkos_DIR} has the CUDA backend: "
      "configure with -DZRT_KOKKOS_CUDA=ON (preset gpu-kokkos)")
  endif()
  find_package(KokkosKernels CONFIG QUIET)
  if(NOT KokkosKernels_FOUND)
    zrt_missing("KokkosKernels" libtrilinos-kokkos-kernels-dev
      "module load kokkos-kernels (or spack load kokkos-kernels)" ZRT_ENABLE_KOKKOS)
  endif()
endif()

# Trilinos' config sets Kokkos_INCLUDE_DIRS correctly even when the target is wrong. Only
# Kokkos 3 (Trilinos) is repaired: a Kokkos 4's target is right, and a search here would
# find Debian's Trilinos headers beside it.
set(ZRT_KOKKOS_REPAIR OFF)
if(Kokkos_VERSION VERSION_LESS 4.0)
  set(ZRT_KOKKOS_REPAIR ON)
  find_path(ZRT_KOKKOS_INCLUDE_DIR Kokkos_Core.hpp
    HINTS ${Kokkos_INCLUDE_DIRS} PATH_SUFFIXES trilinos NO_CACHE)
  if(NOT ZRT_KOKKOS_INCLUDE_DIR)
    zrt_missing("Kokkos_Core.hpp" libtrilinos-kokkos-dev "module load kokkos" ZRT_ENABLE_KOKKOS)
  endif()
endif()

# Keep only include directories that exist, then add the real one.
function(zrt_fix_includes target)
  get_target_property(_aliased ${target} ALIASED_TARGET)
  if(_aliased)
    set(target ${_aliased})
  endif()
  get_target_property(_incs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(_kept)
  foreach(_d IN LISTS _incs)
    if(_d MATCHES "^\\$<" OR EXISTS "${_d}")
      list(APPEND _kept "${_d}")
    endif()
  endforeach()
  list(APPEND _kept ${ZRT_KOKKOS_INCLUDE_DIR})
  list(REMOVE_DUPLICATES _kept)
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
endfunction()

if(NOT TARGET Kokkos::kokkos)
  message(FATAL_ERROR "zerort: the Kokkos package was found but defines no Kokkos::kokkos target")
endif()
if(ZRT_KOKKOS_REPAIR)
  zrt_fix_includes(Kokkos::kokkos)
endif()
add_library(zrt_kokkos INTERFACE)
target_link_libraries(zrt_kokkos INTERFACE Kokkos::kokkos)
if(ZRT_KOKKOS_CUDA)
  # fmt 9 under nvcc (13.0): its compile-time format-string checks are refused ("call to
  # consteval function ... did not produce a valid constant expression"), and it turns
  # FMT_CONSTEXPR off for __NVCC__ while format.h's C++20 functions stay constexpr, which
  # GCC then rejects. In the files nvcc compiles, fmt checks formats when formatting, and
  # constexpr is on throughout.
  target_compile_definitions(zrt_kokkos INTERFACE FMT_CONSTEVAL= FMT_USE_CONSTEXPR=1)
endif()
add_library(zrt::kokkos ALIAS zrt_kokkos)

add_library(zrt_kokkoskernels INTERFACE)
if(ZRT_KOKKOS_CUDA)
  # What the layers use KokkosKernels for on the host, cuBLAS does on CUDA.
  find_package(CUDAToolkit REQUIRED)
  target_link_libraries(zrt_kokkoskernels INTERFACE CUDA::cublas Kokkos::kokkos)
elseif(TARGET Kokkos::kokkoskernels)
  target_link_libraries(zrt_kokkoskernels INTERFACE Kokkos::kokkoskernels)
elseif(TARGET trilinos_kokkoskernels)
  target_link_libraries(zrt_kokkoskernels INTERFACE trilinos_kokkoskernels Kokkos::kokkos)
  target_include_directories(zrt_kokkoskernels INTERFACE ${ZRT_KOKKOS_INCLUDE_DIR})
else()
  message(FATAL_ERROR "zerort: KokkosKernels was found but defines neither "
    "Kokkos::kokkoskernels nor trilinos_kokkoskernels")
endif()
add_library(zrt::kokkoskernels ALIAS zrt_kokkoskernels)

set(ZRT_KOKKOS_VERSION ${Kokkos_VERSION})
