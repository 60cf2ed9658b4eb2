# libzerort imported from another build tree of the same sources (ZRT_LIBRARY_FROM), as the
# target `zerort` the applications link. The build tree must be built first (make build);
# its generated version.h is the one used, so that the API version checked at zrt_init is
# the library's.
set(_zrt_from ${ZRT_LIBRARY_FROM})
set(_zrt_lib ${_zrt_from}/libzerort.so.${ZRT_API_VERSION_MAJOR})
if(NOT EXISTS ${_zrt_lib} OR NOT EXISTS ${_zrt_from}/runtime/include/zerort/version.h)
  message(FATAL_ERROR "zerort: ZRT_LIBRARY_FROM=${_zrt_from} has no built libzerort "
    "(${_zrt_lib}) and version.h: build that tree first (make build)")
endif()
# The version.h beside the sources' headers is the imported tree's.
list(REMOVE_ITEM ZRT_PUBLIC_INCLUDE_DIRS ${CMAKE_CURRENT_BINARY_DIR}/runtime/include)
list(APPEND ZRT_PUBLIC_INCLUDE_DIRS ${_zrt_from}/runtime/include)
add_library(zerort SHARED IMPORTED GLOBAL)
set_target_properties(zerort PROPERTIES
  IMPORTED_LOCATION ${_zrt_lib}
  IMPORTED_SONAME libzerort.so.${ZRT_API_VERSION_MAJOR}
  INTERFACE_INCLUDE_DIRECTORIES "${ZRT_PUBLIC_INCLUDE_DIRS}"
  INTERFACE_COMPILE_DEFINITIONS "OMPI_SKIP_MPICXX=1;MPICH_SKIP_MPICXX=1"
  INTERFACE_LINK_LIBRARIES MPI::MPI_C)
add_library(zerort::zerort ALIAS zerort)
message(STATUS "zerort: the applications link ${_zrt_lib} (ZRT_LIBRARY_FROM); the library "
  "and its tests are not built here")
