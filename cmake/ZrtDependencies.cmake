# Finds every dependency of zerort. A required dependency that is missing stops the
# configure step with a message that names the Debian package, the cluster module, and
# the option that turns the feature off.

function(zrt_missing what debian cluster option)
  set(msg "zerort: ${what} not found.\n"
          "  Debian/Ubuntu: scripts/install-deps (package ${debian})\n"
          "  Cluster: ${cluster}\n")
  if(option)
    list(APPEND msg "  Or configure with -D${option}=OFF to build without it.\n")
  endif()
  message(FATAL_ERROR ${msg})
endfunction()

# --- MPI (C, C++, and Fortran when the Fortran module is built) ---------------------
set(_zrt_mpi_components C CXX)
if(ZRT_ENABLE_FORTRAN)
  include(CheckLanguage)
  check_language(Fortran)
  if(CMAKE_Fortran_COMPILER)
    enable_language(Fortran)
    list(APPEND _zrt_mpi_components Fortran)
  else()
    zrt_missing("a Fortran compiler" gfortran "module load gcc" ZRT_ENABLE_FORTRAN)
  endif()
endif()
find_package(MPI COMPONENTS ${_zrt_mpi_components})
if(NOT MPI_FOUND)
  zrt_missing("MPI (${_zrt_mpi_components})" libopenmpi-dev "module load openmpi" "")
endif()

# --- hwloc ----------------------------------------------------------------------------
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC IMPORTED_TARGET hwloc>=2.0)
if(NOT HWLOC_FOUND)
  zrt_missing("hwloc >= 2.0" libhwloc-dev "module load hwloc (or spack load hwloc)" "")
endif()
add_library(zrt::hwloc ALIAS PkgConfig::HWLOC)

# --- nlohmann-json, CLI11, xxHash, fmt -----------------------------------------------
find_package(fmt 8)
if(NOT fmt_FOUND)
  zrt_missing("fmt >= 8" libfmt-dev "spack load fmt" "")
endif()
find_package(nlohmann_json 3.9)
if(NOT nlohmann_json_FOUND)
  zrt_missing("nlohmann-json >= 3.9" nlohmann-json3-dev "spack load nlohmann-json" "")
endif()
find_package(CLI11 2.0)
if(NOT CLI11_FOUND)
  zrt_missing("CLI11 >= 2.0" libcli11-dev "spack load cli11" "")
endif()
find_path(XXHASH_INCLUDE_DIR xxhash.h)
find_library(XXHASH_LIBRARY xxhash)
if(NOT XXHASH_INCLUDE_DIR OR NOT XXHASH_LIBRARY)
  zrt_missing("xxHash" libxxhash-dev "spack load xxhash" "")
endif()
add_library(zrt::xxhash UNKNOWN IMPORTED)
set_target_properties(zrt::xxhash PROPERTIES
  IMPORTED_LOCATION ${XXHASH_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES ${XXHASH_INCLUDE_DIR})

# --- UCX (ucp) ------------------------------------------------------------------------
set(ZRT_HAVE_UCX 0)
if(ZRT_ENABLE_UCX)
  find_package(ucx CONFIG)
  if(NOT ucx_FOUND OR NOT TARGET ucx::ucp)
    zrt_missing("UCX (ucp)" libucx-dev "module load ucx" ZRT_ENABLE_UCX)
  endif()
  set(ZRT_HAVE_UCX 1)
endif()

# --- parallel HDF5 --------------------------------------------------------------------
set(ZRT_HAVE_HDF5 0)
if(ZRT_ENABLE_HDF5)
  set(HDF5_PREFER_PARALLEL TRUE)
  find_package(HDF5 COMPONENTS C)
  if(NOT HDF5_FOUND)
    zrt_missing("HDF5" libhdf5-openmpi-dev "module load hdf5/parallel (or spack load hdf5+mpi)"
      ZRT_ENABLE_HDF5)
  endif()
  if(NOT HDF5_IS_PARALLEL)
    zrt_missing("a parallel (MPI) build of HDF5; found a serial one at ${HDF5_INCLUDE_DIRS}"
      libhdf5-openmpi-dev "module load hdf5/parallel (or spack load hdf5+mpi)" ZRT_ENABLE_HDF5)
  endif()
  set(ZRT_HAVE_HDF5 1)
endif()

# --- BLAS (OpenBLAS) ------------------------------------------------------------------
set(BLA_VENDOR OpenBLAS)
find_package(BLAS)
if(NOT BLAS_FOUND)
  zrt_missing("OpenBLAS" libopenblas-dev "module load openblas" "")
endif()

# --- Kokkos and KokkosKernels ---------------------------------------------------------
set(ZRT_HAVE_KOKKOS 0)
if(ZRT_ENABLE_KOKKOS)
  include(ZrtKokkos)
  set(ZRT_HAVE_KOKKOS 1)
endif()

# --- CUDA and NCCL (optional: built whenever found) -----------------------------------
set(ZRT_HAVE_CUDA 0)
set(ZRT_HAVE_NCCL 0)
if(ZRT_ENABLE_CUDA)
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(ZRT_HAVE_CUDA 1)
  else()
    message(STATUS "zerort: CUDA toolkit not found; building the host-only paths")
  endif()
endif()
# The CUDA kernels (the engine's optimizer on the GPU, the nccl backend's deterministic
# sum) need nvcc; without it the GPU engine reports that it has no kernels.
set(ZRT_HAVE_CUDA_COMPILER 0)
if(ZRT_HAVE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Turing to Hopper, as SASS, plus PTX of the newest for what comes after.
      set(CMAKE_CUDA_ARCHITECTURES 75-real 80-real 90)
    endif()
    enable_language(CUDA)
    set(ZRT_HAVE_CUDA_COMPILER 1)
  else()
    message(STATUS "zerort: CUDA toolkit without nvcc; the CUDA kernels are not built")
  endif()
endif()
if(ZRT_HAVE_CUDA AND ZRT_ENABLE_NCCL)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME
    PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME
    PATH_SUFFIXES lib lib64)
  # The backend's deterministic reduction is a CUDA kernel: NCCL without nvcc is not built.
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY AND NOT ZRT_HAVE_CUDA_COMPILER)
    message(STATUS "zerort: NCCL found but no CUDA compiler; the nccl backend is not built")
  elseif(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    add_library(zrt::nccl UNKNOWN IMPORTED)
    set_target_properties(zrt::nccl PROPERTIES
      IMPORTED_LOCATION ${NCCL_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
    set(ZRT_HAVE_NCCL 1)
  else()
    message(STATUS "zerort: NCCL not found next to CUDA; the nccl backend is not built")
  endif()
endif()

# --- test and benchmark frameworks ----------------------------------------------------
if(ZRT_BUILD_TESTS)
  find_package(GTest)
  if(NOT GTest_FOUND)
    zrt_missing("GoogleTest" libgtest-dev "spack load googletest" ZRT_BUILD_TESTS)
  endif()
endif()
if(ZRT_BUILD_BENCHMARKS)
  find_package(benchmark)
  if(NOT benchmark_FOUND)
    zrt_missing("Google Benchmark" libbenchmark-dev "spack load benchmark" ZRT_BUILD_BENCHMARKS)
  endif()
  # jemalloc is a baseline of zrt-bench pool; without it the pool is compared with glibc only.
  pkg_check_modules(JEMALLOC IMPORTED_TARGET jemalloc)
  if(NOT JEMALLOC_FOUND)
    message(STATUS "zerort: jemalloc not found (libjemalloc-dev): zrt-bench pool compares "
                   "with glibc malloc only")
  endif()
endif()
