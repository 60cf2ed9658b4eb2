# Compiles each public header alone, as a C99 translation unit with -pedantic -Werror:
# a C user must be able to include any of them first.
foreach(h IN LISTS HEADERS)
  get_filename_component(name ${h} NAME)
  set(src "${CMAKE_CURRENT_BINARY_DIR}/check_${name}.c")
  file(WRITE ${src} "#include <zerort/${name}>\nint main(void) { return 0; }\n")
  set(incs)
  foreach(i IN LISTS INCLUDES)
    list(APPEND incs -I${i})
  endforeach()
  execute_process(
    COMMAND ${CC} -std=c99 -pedantic -Werror -Wall -Wextra -fsyntax-only ${incs} ${src}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "zerort/${name} is not clean C99:\n${out}${err}")
  endif()
  message(STATUS "zerort/${name}: clean C99")
endforeach()
