# What `cmake --install` puts under the prefix P (docs/architecture.md, "The package"):
#   P/include/chiprt/*.h                 the public headers (only those: the rooms' stay in src/)
#   P/lib/libchiprt.so.<version>         every room and the C API, SONAME libchiprt.so.<major>
#   P/lib/libchiprt_<room>.a             the rooms as static libraries (chiprt::chiprt_static)
#   P/lib/cmake/chiprt/                  chiprtConfig.cmake, chiprtConfigVersion.cmake, the targets
#                                        and chiprt_add_chip_object (ChiprtKernels.cmake)
#   P/lib/pkgconfig/chiprt.pc            for builds without CMake (C++; chip objects: its variables)
#   P/lib/pkgconfig/chiprt-c.pc          the same for C programs of the C API
#   P/bin/chiprt                         the CLI; its examples' chip objects in P/lib/chiprt/chip_objects
#   P/lib/python3/dist-packages/chiprt/  the Python module (python/CMakeLists.txt)
#   P/share/doc/chiprt/                  LICENSE (Apache-2.0) and copyright (Debian's format)
# Included at the end of the top-level CMakeLists.txt, once every target exists.
include(CMakePackageConfigHelpers)

set(CHIPRT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/chiprt)
set(_chiprt_rooms chiprt_common chiprt_orchestrator chiprt_aicore chiprt_scheduler
                  chiprt_platform_sim chiprt_platform chiprt_diagnostics chiprt_host chiprt_node
                  chiprt_capi)

# chiprt::chiprt_static: the rooms a static consumer links (what chiprt::chiprt holds, unshared).
add_library(chiprt_static INTERFACE)
# The rooms are C++: a program linked by the C driver (a C project) needs libstdc++ named.
target_link_libraries(chiprt_static INTERFACE ${_chiprt_rooms}
                      $<$<NOT:$<LINK_LANGUAGE:CXX>>:stdc++>)
target_include_directories(chiprt_static INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(chiprt_static INTERFACE cxx_std_20)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/chiprt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS chiprt_shared chiprt_static chiprt_chip_object_support ${_chiprt_rooms}
        EXPORT chiprtTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT chiprtTargets NAMESPACE chiprt:: DESTINATION ${CHIPRT_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/chiprtConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/chiprtConfig.cmake
                              INSTALL_DESTINATION ${CHIPRT_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/chiprtConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/chiprtConfig.cmake ${PROJECT_BINARY_DIR}/chiprtConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/ChiprtKernels.cmake
        DESTINATION ${CHIPRT_INSTALL_CMAKEDIR})

# pkg-config: the shared library (static consumers use CMake's chiprt::chiprt_static). The prefix
# is found from the .pc file's own place, however deep the library directory is
# (lib/x86_64-linux-gnu under /usr).
file(RELATIVE_PATH CHIPRT_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" CHIPRT_PC_TO_PREFIX "${CHIPRT_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/chiprt.pc.in ${PROJECT_BINARY_DIR}/chiprt.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/chiprt-c.pc.in ${PROJECT_BINARY_DIR}/chiprt-c.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/chiprt.pc ${PROJECT_BINARY_DIR}/chiprt-c.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/cmake/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

if(TARGET chiprt_cli)
  install(TARGETS chiprt_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
