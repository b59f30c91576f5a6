# chiprt_add_chip_object(<target> SOURCES <src>...)
#
# Builds an orchestration function or a kernel into a shared object for the simulated chip. The
# object sees only the public headers and links the common room statically (so it needs nothing
# from the host process) and is loaded by the platform from memory, never from its path; the path
# is only where the container builder reads the bytes.
function(chiprt_add_chip_object target)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "chiprt_add_chip_object(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  # Public headers only (chiprt_chip_object_support: include/ and chiprt_common linked in).
  target_link_libraries(${target} PRIVATE chiprt_chip_object_support)
  set_target_properties(${target} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET hidden
                        LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/chip_objects)
endfunction()
