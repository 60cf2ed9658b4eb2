# Finds Kokkos and KokkosKernels and exposes them as zrt::kokkos and zrt::kokkoskernels,
# whichever flavour is installed:
#  - Kokkos 4 (clusters, Spack): targets Kokkos::kokkos and Kokkos::kokkoskernels.
#  - Debian's Trilinos build (libtrilinos-kokkos-dev, Kokkos 3.4): Kokkos::kokkos points
#    its include directory at a non-existent /usr/lib/include, the headers live in
#    /usr/include/trilinos, and KokkosKernels is the plain target trilinos_kokkoskernels.

find_package(Kokkos CONFIG QUIET)
if(NOT Kokkos_FOUND)
  zrt_missing("Kokkos" libtrilinos-kokkos-dev "module load kokkos (or spack load kokkos)"
    ZRT_ENABLE_KOKKOS)
endif()
find_package(KokkosKernels CONFIG QUIET)
if(NOT KokkosKernels_FOUND)
  zrt_missing("KokkosKernels" libtrilinos-kokkos-kernels-dev
    "module load kokkos-kernels (or spack load kokkos-kernels)" ZRT_ENABLE_KOKKOS)
endif()

# Trilinos' config sets Kokkos_INCLUDE_DIRS correctly even when the target is wrong.
find_path(ZRT_KOKKOS_INCLUDE_DIR Kokkos_Core.hpp
  HINTS ${Kokkos_INCLUDE_DIRS} PATH_SUFFIXES trilinos NO_CACHE)
if(NOT ZRT_KOKKOS_INCLUDE_DIR)
  zrt_missing("Kokkos_Core.hpp" libtrilinos-kokkos-dev "module load kokkos" ZRT_ENABLE_KOKKOS)
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
zrt_fix_includes(Kokkos::kokkos)
add_library(zrt_kokkos INTERFACE)
target_link_libraries(zrt_kokkos INTERFACE Kokkos::kokkos)
add_library(zrt::kokkos ALIAS zrt_kokkos)

add_library(zrt_kokkoskernels INTERFACE)
if(TARGET Kokkos::kokkoskernels)
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
