# chiprt_add_chip_object(<target> SOURCES <src>... [KERNELS <symbol>...] [OUTPUT_DIRECTORY <dir>])
#
# Builds an orchestration function and/or kernels into a shared object for the simulated chip. The
# object sees only the public headers and links the common room statically (so it needs nothing
# from the host process) and is loaded by the platform from memory, never from its path; the path
# is only where the container builder reads the bytes.
#
# One object may hold several kernels: give it every source, each kernel an `extern "C"` function
# with default visibility under a symbol of its own, and register the object once per func_id with
# that kernel's symbol (CallableBuilder::kernel_object, chiprt_builder_kernel_object_named, Python's
# CallableBuilder.kernel_object(symbol=...); docs/kernels.md). KERNELS lists those symbols: the
# target property CHIPRT_KERNELS records them, and after linking the build checks with the
# toolchain's nm that the object exports each one, failing with the missing symbol named (instead
# of the callable's registration failing later). Without KERNELS nothing is checked; an object
# exporting `kernel_entry` (one kernel, the default symbol) needs no KERNELS.
#
# The same file serves chiprt's own build (target chiprt_chip_object_support) and an installed
# package (find_package(chiprt) includes it; target chiprt::chip_object_support). The object goes
# to OUTPUT_DIRECTORY, else CHIPRT_CHIP_OBJECT_OUTPUT_DIR, else <project build dir>/chip_objects.

# Script mode (the KERNELS check, run after linking): cmake -DCHIPRT_CHECK_OBJECT=<object>
# -DCHIPRT_CHECK_KERNELS=<symbol,...> -DCHIPRT_CHECK_NM=<nm> -P ChiprtKernels.cmake
if(CMAKE_SCRIPT_MODE_FILE AND DEFINED CHIPRT_CHECK_OBJECT)
  execute_process(COMMAND ${CHIPRT_CHECK_NM} -D --defined-only ${CHIPRT_CHECK_OBJECT}
                  OUTPUT_VARIABLE _exported RESULT_VARIABLE _nm_result ERROR_VARIABLE _nm_error)
  if(NOT _nm_result EQUAL 0)
    message(FATAL_ERROR "chiprt_add_chip_object: ${CHIPRT_CHECK_NM} could not list the symbols "
                        "of ${CHIPRT_CHECK_OBJECT}: ${_nm_error}")
  endif()
  string(REPLACE "," ";" _symbols "${CHIPRT_CHECK_KERNELS}")
  foreach(_symbol IN LISTS _symbols)
    # nm -D lines: "<address> <type> <name>"; T (text), W (weak) and i (indirect) are functions.
    if(NOT _exported MATCHES "[ \t][TWi][ \t]+${_symbol}(\n|$)")
      # Removed, so that the next build links it again and checks again.
      file(REMOVE ${CHIPRT_CHECK_OBJECT})
      message(FATAL_ERROR "chiprt_add_chip_object: ${CHIPRT_CHECK_OBJECT} does not export the "
                          "kernel symbol '${_symbol}' listed in KERNELS; define it as extern \"C\" "
                          "__attribute__((visibility(\"default\"))) void ${_symbol}(int64_t* args)")
    endif()
  endforeach()
  return()
endif()

function(chiprt_add_chip_object target)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;KERNELS" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "chiprt_add_chip_object(${target}): SOURCES is required")
  endif()
  foreach(_symbol IN LISTS ARG_KERNELS)
    if(NOT _symbol MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
      message(FATAL_ERROR "chiprt_add_chip_object(${target}): KERNELS: '${_symbol}' is not a C "
                          "identifier (the name of an extern \"C\" function)")
    endif()
  endforeach()
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
                        LIBRARY_OUTPUT_DIRECTORY ${_dir} CHIPRT_KERNELS "${ARG_KERNELS}")
  if(ARG_KERNELS AND CMAKE_NM)
    string(REPLACE ";" "," _kernels "${ARG_KERNELS}")
    add_custom_command(TARGET ${target} POST_BUILD
                       COMMAND ${CMAKE_COMMAND} -DCHIPRT_CHECK_OBJECT=$<TARGET_FILE:${target}>
                               -DCHIPRT_CHECK_KERNELS=${_kernels} -DCHIPRT_CHECK_NM=${CMAKE_NM}
                               -P ${CMAKE_CURRENT_FUNCTION_LIST_FILE}
                       VERBATIM)
  endif()
endfunction()
