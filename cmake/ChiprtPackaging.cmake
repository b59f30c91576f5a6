# `cpack -G DEB` in a build directory: chiprt_<version>_amd64.deb holding what `cmake --install`
# installs, under /usr (so the Python module lands in Debian's /usr/lib/python3/dist-packages and
# `import chiprt` works for /usr/bin/python3 without PYTHONPATH). tests/package/check_package.sh
# builds it, extracts it into a scratch root and checks its file list and dependencies.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME chiprt)
set(CPACK_PACKAGE_VENDOR chiprt)
set(CPACK_PACKAGE_CONTACT "chiprt maintainers <chiprt@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Task-graph runtime for an Ascend-style chip, with a simulated chip of host threads")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # chiprt_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
# What the library, the CLI and the module load at run time; a consumer building against the
# package needs nothing more (the static rooms and chip objects link xxHash's run-time library).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1, libxxhash0")
if(CHIPRT_BUILD_PYTHON)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", python3 (>= 3.11), python3 (<< 3.12), python3-numpy")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "g++, cmake, pkg-config")  # chiprt_add_chip_object, build_chip_object
include(CPack)
