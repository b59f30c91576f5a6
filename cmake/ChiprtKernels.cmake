# chiprt_add_chip_object(<target> SOURCES <src>... [OUTPUT_DIRECTORY <dir>])
#
# Builds an orchestration function or a kernel into a shared object for the simulated chip. The
# object sees only the public headers and links the common room statically (so it needs nothing
# from the host process) and is loaded by the platform from memory, never from its path; the path
# is only where the container builder reads the bytes.
#
# The same file serves chiprt's own build (target chiprt_chip_object_support) and an installed
# package (find_package(chiprt) includes it; target chiprt::chip_object_support). The object goes
# to OUTPUT_DIRECTORY, else CHIPRT_CHIP_OBJECT_OUTPUT_DIR, else <project build dir>/chip_objects.
function(chiprt_add_chip_object target)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "chiprt_add_chip_object(${target}): SOURCES is required")
  endif()
  get_property(_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CXX" IN_LIST _languages)
    message(FATAL_ERROR "chiprt_add_chip_object(${target}): chip objects are C++; add CXX to "
                        "project(... LANGUAGES ...) or call enable_language(CXX) first")
  endif()
  if(TARGET chiprt_chip_object_support)
    set(_support chiprt_chip_object_support)
  elseif(TARGET chiprt::chip_object_support)
    set(_support chiprt::chip_object_support)
  else()
    message(FATAL_ERROR "chiprt_add_chip_object(${target}): no chiprt chip object support target; "
                        "call find_package(chiprt REQUIRED) first")
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set(_dir ${ARG_OUTPUT_DIRECTORY})
  elseif(CHIPRT_CHIP_OBJECT_OUTPUT_DIR)
    set(_dir ${CHIPRT_CHIP_OBJECT_OUTPUT_DIR})
  else()
    set(_dir ${PROJECT_BINARY_DIR}/chip_objects)
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  # Public headers only (the support target: include/ and the common room linked in).
  target_link_libraries(${target} PRIVATE ${_support})
  set_target_properties(${target} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET hidden
                        LIBRARY_OUTPUT_DIRECTORY ${_dir})
endfunction()
