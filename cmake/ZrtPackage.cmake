# The installed package: find_package(zerort) (zerortConfig.cmake, its version file and
# the exported targets, the Fortran ones apart so that a C or C++ consumer needs no
# Fortran, and libzerort_nn's apart where it is built), pkg-config files, and what the apps
# need at run time under share/zerort.
include(CMakePackageConfigHelpers)

set(ZRT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/zerort)
install(EXPORT zerortTargets NAMESPACE zerort:: DESTINATION ${ZRT_CMAKE_DIR})
# zerort::nn (zerort/model.h): Kokkos stays inside the shared library, so its users need
# nothing beyond zerort::zerort.
if(TARGET zerort_nn)
  install(EXPORT zerortNNTargets NAMESPACE zerort:: DESTINATION ${ZRT_CMAKE_DIR})
endif()
if(TARGET zerort_fortran)
  install(EXPORT zerortFortranTargets NAMESPACE zerort:: DESTINATION ${ZRT_CMAKE_DIR})
endif()
configure_package_config_file(cmake/package/zerortConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/package/zerortConfig.cmake INSTALL_DESTINATION ${ZRT_CMAKE_DIR})
# The library accepts programs built against the same major API version only.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/package/zerortConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/package/zerortConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/package/zerortConfigVersion.cmake DESTINATION ${ZRT_CMAKE_DIR})

# pkg-config: the MPI flags zerort was built with go into Cflags/Libs, since the headers
# include <mpi.h> and the Fortran module is built against mpi_f08.
function(zrt_pc_flags lang)
  set(cflags "")
  foreach(dir IN LISTS MPI_${lang}_INCLUDE_DIRS MPI_${lang}_INCLUDE_PATH)
    list(APPEND cflags "-I${dir}")
  endforeach()
  list(APPEND cflags ${MPI_${lang}_COMPILE_OPTIONS})
  list(REMOVE_DUPLICATES cflags)
  string(REPLACE ";" " " cflags "${cflags}")
  set(libs ${MPI_${lang}_LINK_FLAGS} ${MPI_${lang}_LIBRARIES})
  string(REPLACE ";" " " libs "${libs}")
  set(ZRT_PC_MPI_${lang}_CFLAGS "${cflags}" PARENT_SCOPE)
  set(ZRT_PC_MPI_${lang}_LIBS "${libs}" PARENT_SCOPE)
endfunction()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(ZRT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(ZRT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(ZRT_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(ZRT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
zrt_pc_flags(C)
set(ZRT_PC_PREFIX "@ZRT_PC_PREFIX@")  # filled in at install time
# prefix= is the install prefix chosen at install time (cmake --install --prefix P), so
# the file is written by an install script rather than at configure time.
set(ZRT_PC_IN ${CMAKE_CURRENT_BINARY_DIR}/package/zerort.pc.in)
configure_file(cmake/package/zerort.pc.in ${ZRT_PC_IN} @ONLY)
if(TARGET zerort_fortran)
  zrt_pc_flags(Fortran)
  configure_file(cmake/package/zerort-fortran.pc.in
    ${CMAKE_CURRENT_BINARY_DIR}/package/zerort-fortran.pc.in @ONLY)
endif()
if(TARGET zerort_nn)
  configure_file(cmake/package/zerort-nn.pc.in
    ${CMAKE_CURRENT_BINARY_DIR}/package/zerort-nn.pc.in @ONLY)
endif()
# Written straight into the prefix (with DESTDIR, as file(INSTALL) would) and listed in the
# install manifest: `cmake --install` may run from any folder, a read-only one included, and
# writes nothing outside the prefix.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(ZRT_PC_DEST "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
else()
  set(ZRT_PC_DEST "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
install(CODE "
  foreach(pc zerort zerort-fortran zerort-nn)
    set(in \"${CMAKE_CURRENT_BINARY_DIR}/package/\${pc}.pc.in\")
    if(EXISTS \"\${in}\")
      file(READ \"\${in}\" text)
      string(REPLACE \"@ZRT_PC_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" text \"\${text}\")
      set(out \"${ZRT_PC_DEST}/\${pc}.pc\")
      if(NOT \"\$ENV{DESTDIR}\" STREQUAL \"\")
        set(out \"\$ENV{DESTDIR}\${out}\")
      endif()
      message(STATUS \"Installing: \${out}\")
      file(WRITE \"\${out}\" \"\${text}\")
      list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${out}\")
    endif()
  endforeach()")

# What the installed apps use at run time: the data preparation (it finds zrt-tokenize in
# the prefix's bin/), the rule for where the data goes that it shares with the Slurm
# templates (data-root), and the templates.
install(PROGRAMS apps/data/prepare DESTINATION ${CMAKE_INSTALL_DATADIR}/zerort/data)
install(FILES apps/data/data-root DESTINATION ${CMAKE_INSTALL_DATADIR}/zerort/data)
install(FILES apps/data/reference_encode.js DESTINATION ${CMAKE_INSTALL_DATADIR}/zerort/data)
install(FILES slurm/README.md slurm/zrt-job DESTINATION ${CMAKE_INSTALL_DATADIR}/zerort/slurm)
install(PROGRAMS slurm/gpt2.sbatch slurm/bert.sbatch DESTINATION ${CMAKE_INSTALL_DATADIR}/zerort/slurm)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
