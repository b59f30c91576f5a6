# cmake -DSOURCE_DIR=<repo> -DCOMPILE_COMMANDS=<build>/compile_commands.json -P check_include_wall.cmake
#
# Fails when a translation unit under tools/, examples/ or bench/ is compiled with the rooms' src/
# directory on its include path, or when a source or header there includes a room header
# ("host/...", "common/...", ...) or reaches into src/: those directories use only include/chiprt/
# and their own headers.
cmake_minimum_required(VERSION 3.25)

set(_public_dirs tools examples bench)
set(_problems)

file(READ "${COMPILE_COMMANDS}" _json)
string(JSON _count LENGTH "${_json}")
set(_checked 0)
if(_count GREATER 0)
  math(EXPR _last "${_count} - 1")
  foreach(_i RANGE ${_last})
    string(JSON _file GET "${_json}" ${_i} file)
    file(RELATIVE_PATH _rel "${SOURCE_DIR}" "${_file}")
    string(REGEX MATCH "^([^/]+)/" _top "${_rel}")
    if(NOT CMAKE_MATCH_1 IN_LIST _public_dirs)
      continue()
    endif()
    string(JSON _command ERROR_VARIABLE _no_command GET "${_json}" ${_i} command)
    if(_no_command)
      string(JSON _command GET "${_json}" ${_i} arguments)
    endif()
    math(EXPR _checked "${_checked} + 1")
    if(_command MATCHES "(-I|-isystem ?|-iquote ?)${SOURCE_DIR}/src([ /\"]|$)")
      list(APPEND _problems "${_rel} is compiled with ${SOURCE_DIR}/src on its include path")
    endif()
  endforeach()
endif()
if(_checked EQUAL 0)
  list(APPEND _problems "${COMPILE_COMMANDS} lists no translation unit under tools/, examples/ "
                        "or bench/ (configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON)")
endif()

foreach(_dir IN LISTS _public_dirs)
  file(GLOB_RECURSE _sources "${SOURCE_DIR}/${_dir}/*.cpp" "${SOURCE_DIR}/${_dir}/*.h")
  foreach(_source IN LISTS _sources)
    file(STRINGS "${_source}" _includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    foreach(_line IN LISTS _includes)
      if(_line MATCHES "[\"<]((host|common|platform|scheduler|aicore|orchestrator)/|[^\">]*src/|\\.\\./)")
        file(RELATIVE_PATH _rel "${SOURCE_DIR}" "${_source}")
        list(APPEND _problems "${_rel}: ${_line} (use include/chiprt/ only)")
      endif()
    endforeach()
  endforeach()
endforeach()

if(_problems)
  list(JOIN _problems "\n  " _text)
  message(FATAL_ERROR "the public include wall is broken:\n  ${_text}")
endif()
message(STATUS "public include wall: ${_checked} translation units under tools/, examples/, bench/ "
               "compile with include/ only")
