# The documentation: the API reference generated from the public headers (target `docs`:
# Doxygen, HTML and man3 pages, as hwloc ships its own), the tools' man1 pages, and the
# manual (README.md, docs/*.md) with the examples, installed under share/doc/zerort.

# The folders of the public headers: each layer's include/zerort/ (ZRT_LAYERS, the top
# CMakeLists.txt), the one list the API reference reads.
set(ZRT_PUBLIC_HEADER_DIRS)
foreach(layer ${ZRT_LAYERS})
  list(APPEND ZRT_PUBLIC_HEADER_DIRS ${PROJECT_SOURCE_DIR}/${layer}/include/zerort)
endforeach()
# libzerort_nn's C API (zerort/model.h), where it is built.
if(TARGET zerort_nn)
  list(APPEND ZRT_PUBLIC_HEADER_DIRS ${PROJECT_SOURCE_DIR}/nn/include/zerort)
endif()

# Doxygen's INPUT and STRIP_FROM_PATH: the folders above, space-separated and quoted.
set(ZRT_DOXYGEN_INPUT "")
set(ZRT_DOXYGEN_STRIP "")
foreach(dir IN LISTS ZRT_PUBLIC_HEADER_DIRS)
  get_filename_component(parent ${dir} DIRECTORY)
  string(APPEND ZRT_DOXYGEN_INPUT " \"${dir}\"")
  string(APPEND ZRT_DOXYGEN_STRIP " \"${parent}\"")
endforeach()
set(ZRT_DOXYGEN_OUTPUT ${PROJECT_BINARY_DIR}/docs/api)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${PROJECT_BINARY_DIR}/docs/Doxyfile @ONLY)

find_program(ZRT_DOXYGEN doxygen)
if(ZRT_DOXYGEN)
  set(public_headers "")
  foreach(dir IN LISTS ZRT_PUBLIC_HEADER_DIRS)
    file(GLOB found CONFIGURE_DEPENDS ${dir}/*.h ${dir}/*.hpp)
    list(APPEND public_headers ${found})
  endforeach()
  add_custom_command(OUTPUT ${ZRT_DOXYGEN_OUTPUT}/html/index.html
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${ZRT_DOXYGEN_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ZRT_DOXYGEN_OUTPUT}
    COMMAND ${ZRT_DOXYGEN} ${PROJECT_BINARY_DIR}/docs/Doxyfile
    DEPENDS ${public_headers} ${PROJECT_SOURCE_DIR}/docs/Doxyfile.in
    COMMENT "API reference: ${ZRT_DOXYGEN_OUTPUT}/html/index.html and man3 pages"
    VERBATIM)
  add_custom_target(docs DEPENDS ${ZRT_DOXYGEN_OUTPUT}/html/index.html)
else()
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E echo
            "docs: doxygen not found; scripts/install-deps installs it (apt package doxygen)"
    COMMAND ${CMAKE_COMMAND} -E false)
endif()

# Installed: the API reference where `make docs` made it (nothing otherwise), the tools'
# man1 pages, and the manual with the example programs.
install(DIRECTORY ${ZRT_DOXYGEN_OUTPUT}/man/man3 DESTINATION ${CMAKE_INSTALL_MANDIR} OPTIONAL)
install(DIRECTORY ${ZRT_DOXYGEN_OUTPUT}/html DESTINATION ${CMAKE_INSTALL_DOCDIR}/api OPTIONAL)
install(DIRECTORY docs/man/man1 DESTINATION ${CMAKE_INSTALL_MANDIR} FILES_MATCHING PATTERN "*.1")
install(FILES README.md HACKING.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
  FILES_MATCHING PATTERN "*.md" PATTERN "man" EXCLUDE)
install(DIRECTORY apps/examples DESTINATION ${CMAKE_INSTALL_DOCDIR})
