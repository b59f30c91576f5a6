/* chiprt's version: the one place it is written.
 *
 * The build reads these three numbers (CMakeLists.txt) for the CMake package version, pkg-config,
 * the .deb, the shared library's VERSION and SONAME (libchiprt.so.<major>), the Python module's
 * __version__ and `chiprt --version`; the C API reports them (chiprt_version). Plain macros, so C
 * and C++ both include it, at compile time, with no library needed. Compatibility: see
 * CONTRIBUTING.md, "Versions and compatibility".
 */
#ifndef CHIPRT_VERSION_H
#define CHIPRT_VERSION_H

#define CHIPRT_VERSION_MAJOR 0
#define CHIPRT_VERSION_MINOR 1
#define CHIPRT_VERSION_PATCH 0

#define CHIPRT_VERSION_STRINGIFY_(x) #x
#define CHIPRT_VERSION_STRINGIFY(x) CHIPRT_VERSION_STRINGIFY_(x)
/* "MAJOR.MINOR.PATCH" */
#define CHIPRT_VERSION_STRING                                                      \
  CHIPRT_VERSION_STRINGIFY(CHIPRT_VERSION_MAJOR)                                   \
  "." CHIPRT_VERSION_STRINGIFY(CHIPRT_VERSION_MINOR) "." CHIPRT_VERSION_STRINGIFY( \
      CHIPRT_VERSION_PATCH)

#endif /* CHIPRT_VERSION_H */
