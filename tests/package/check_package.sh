#!/usr/bin/env bash
# The installed package, checked as a user would use it (ctest chiprt_package):
#   - `cmake --install BUILD --prefix P` into a fresh prefix; the file list: public headers only,
#     libchiprt.so with its versioned SONAME, the static rooms, the CMake and pkg-config files, the
#     CLI, the examples' chip objects, the Python module (when built);
#   - every installed header compiles alone (C++20; chiprt_c.h also as C11 -pedantic);
#   - examples/standalone (the program README.md shows) configured with find_package against the
#     prefix, built with -Wall -Wextra -Werror and run to PASS;
#   - the out-of-tree consumer project (tests/package/consumer) configured with
#     find_package(chiprt REQUIRED) (no C++ standard of its own, pkg-config disabled), built and
#     run (shared, static and C), checked against its reference;
#   - the exported targets require C++20 and name the include directory once;
#   - programs built with pkg-config alone and a plain g++/gcc (chiprt, chiprt-c), and chip
#     objects built the same way (chiprt's chip_object_cflags / chip_object_libs);
#   - the installed CLI (and `python3 -m chiprt` when the build has the module) from the prefix
#     run an example to PASS, with no build-tree path in their environment;
#   - one version (include/chiprt/version.h) reported by the CLI, pkg-config, the CMake package,
#     the shared library's file name and Python; the license and copyright files installed;
#   - the prefix moved to another directory: the CLI, pkg-config and the module still work;
#   - `cpack -G DEB`: chiprt_<version>_<arch>.deb, extracted into a scratch root: its files, its
#     version, Depends, copyright file, and its CLI run from there.
#   tests/package/check_package.sh BUILD_DIR SOURCE_DIR [PYTHON]
set -euo pipefail

build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)
python=${3:-/usr/bin/python3}  # "none": the build has no Python module
work=$(mktemp -d "${TMPDIR:-/tmp}/chiprt-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
step() { echo "--- $*"; }
# Whether a command's output has a line starting with PASS. The output is read whole: a
# `| grep -q` would close the pipe early and fail the writer (SIGPIPE) under pipefail.
passes() {
  local output
  output=$("$@" 2>&1) || { echo "$output" >&2; return 1; }
  grep -q '^PASS' <<<"$output" || { echo "$output" >&2; return 1; }
}

step "install into $prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log" >&2
  echo "FAIL: cmake --install failed" >&2
  exit 1
}
libdir=$(cd "$prefix" && find . -name 'libchiprt.so.*.*.*' -printf '%h\n' | head -1)
libdir=${libdir#./}
[ -n "$libdir" ] || { echo "FAIL: no libchiprt.so.<version> installed" >&2; exit 1; }

step "file list"
expected=(include/chiprt/chiprt.h include/chiprt/chiprt_c.h include/chiprt/worker.h
          "$libdir/libchiprt.so" "$libdir/libchiprt_common.a" "$libdir/libchiprt_host.a"
          "$libdir/cmake/chiprt/chiprtConfig.cmake" "$libdir/cmake/chiprt/chiprtConfigVersion.cmake"
          "$libdir/cmake/chiprt/chiprtTargets.cmake" "$libdir/cmake/chiprt/ChiprtKernels.cmake"
          "$libdir/pkgconfig/chiprt.pc" "$libdir/pkgconfig/chiprt-c.pc" bin/chiprt
          "$libdir/chiprt/chip_objects/vector_example_orchestration.so"
          "$libdir/chiprt/chip_objects/bgemm_matmul.so")
if [ "$python" != none ]; then
  expected+=(lib/python3/dist-packages/chiprt/__init__.py lib/python3/dist-packages/chiprt/__main__.py)
  ls "$prefix"/lib/python3/dist-packages/chiprt/_chiprt*.so >/dev/null 2>&1 ||
    fail "the Python extension chiprt/_chiprt*.so is not installed"
fi
for path in "${expected[@]}"; do
  [ -e "$prefix/$path" ] || fail "installed file $path is missing"
done
# Only the public headers: exactly include/chiprt/*.h of the source tree.
diff <(cd "$source_dir/include" && find . -type f | sort) <(cd "$prefix/include" && find . -type f | sort) ||
  fail "the installed headers differ from the public headers of include/ (above)"
soname=$(readelf -d "$prefix/$libdir/libchiprt.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libchiprt\.so\.[0-9]+$ ]] || fail "libchiprt.so has SONAME '$soname', want libchiprt.so.<major>"
[ -e "$prefix/$libdir/$soname" ] || fail "no $soname link beside libchiprt.so"
nm -D --defined-only "$prefix/$libdir/libchiprt.so" | grep ' T chiprt_worker_create$' >/dev/null ||
  fail "libchiprt.so does not export the C API (chiprt_worker_create)"
if grep -rqs "$build_dir" "$prefix/$libdir/cmake" "$prefix/$libdir/pkgconfig"; then
  fail "the installed package files name the build tree $build_dir"
fi

step "every installed header compiles alone"
for header in "$prefix"/include/chiprt/*.h; do
  name=chiprt/$(basename "$header")
  echo "#include <$name>" | g++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" -x c++ - ||
    fail "$name does not compile alone as C++20"
done
echo "#include <chiprt/chiprt_c.h>" |
  gcc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -I"$prefix/include" -x c - ||
  fail "chiprt/chiprt_c.h does not compile alone as C11 -pedantic"

step "the exported targets: C++20, each include directory once"
targets_file=$prefix/$libdir/cmake/chiprt/chiprtTargets.cmake
for target in chiprt chiprt_static chip_object_support; do
  properties=$(sed -n "/^set_target_properties(chiprt::$target PROPERTIES/,/^)/p" "$targets_file")
  grep -q 'INTERFACE_COMPILE_FEATURES "cxx_std_20"' <<<"$properties" ||
    fail "chiprt::$target does not require cxx_std_20: $properties"
  includes=$(sed -n 's/^ *INTERFACE_INCLUDE_DIRECTORIES "\(.*\)"$/\1/p' <<<"$properties")
  [ "$includes" = '${_IMPORT_PREFIX}/include' ] ||
    fail "chiprt::$target's include directories are '$includes', not the prefix's include/ once"
done

step "the consumer project (find_package, no C++ standard of its own, no pkg-config)"
consumer=$work/consumer
# Without pkg-config: the package needs neither it nor xxHash's development files.
if cmake -S "$source_dir/tests/package/consumer" -B "$consumer" -G Ninja \
     -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
     -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON >"$work/consumer.log" 2>&1 &&
   cmake --build "$consumer" >>"$work/consumer.log" 2>&1; then
  for program in consumer_shared consumer_static consumer_c; do
    "$consumer/$program" || fail "$program did not pass"
  done
  readelf -d "$consumer/consumer_shared" | grep "NEEDED.*\[$soname\]" >/dev/null ||
    fail "consumer_shared does not link $soname"
  if readelf -d "$consumer/consumer_static" | grep "NEEDED.*libchiprt" >/dev/null; then
    fail "consumer_static links libchiprt.so (chiprt::chiprt_static should be static)"
  fi
else
  cat "$work/consumer.log" >&2
  fail "the consumer project did not configure or build against the install"
fi

step "examples/standalone, the README's program, built and run against the install"
standalone=$work/standalone
standalone_start=$SECONDS
if cmake -S "$source_dir/examples/standalone" -B "$standalone" -G Ninja \
     -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" \
     >"$work/standalone.log" 2>&1 &&
   cmake --build "$standalone" >>"$work/standalone.log" 2>&1; then
  passes "$standalone/standalone" || fail "examples/standalone did not print PASS"
else
  cat "$work/standalone.log" >&2
  fail "examples/standalone did not configure or build against the install"
fi
echo "examples/standalone: configured, built and run in $((SECONDS - standalone_start)) s"

step "a program built with pkg-config alone"
cat >"$work/pkg.cpp" <<'CPP'
#include <chiprt/chiprt.h>
#include <cstdio>
int main() {
  chiprt::Worker worker;
  worker.init();
  chiprt::DeviceBuffer buffer = worker.malloc(64);
  worker.memset(buffer, 7, 64);
  unsigned char back[64] = {};
  worker.copy_from(back, buffer, 64);
  worker.close();
  std::printf("%s pkg-config program\n", back[63] == 7 ? "PASS" : "FAIL");
  return back[63] == 7 ? 0 : 1;
}
CPP
# A plain g++ (GCC 12 defaults to C++17): the .pc file says what the headers need.
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
if flags=$(pkg-config --cflags --libs chiprt) && g++ "$work/pkg.cpp" -o "$work/pkg" $flags; then
  LD_LIBRARY_PATH="$prefix/$libdir" "$work/pkg" || fail "the pkg-config program did not pass"
else
  fail "pkg-config --cflags --libs chiprt did not build a program with a plain g++"
fi
# A C program of the C API: chiprt-c (chiprt's C++20 flag would be an error for a C compiler).
if flags=$(pkg-config --cflags --libs chiprt-c) &&
   gcc -std=c11 -Wall -Wextra -Werror -pedantic "$source_dir/tests/package/consumer/main.c" \
     -o "$work/pkg_c" $flags -lm \
     -DSQUARE_OBJECT="\"$consumer/chip_objects/consumer_square.so\"" \
     -DAXPY_OBJECT="\"$consumer/chip_objects/consumer_axpy.so\"" \
     -DORCHESTRATION_OBJECT="\"$consumer/chip_objects/consumer_orchestration.so\""; then
  LD_LIBRARY_PATH="$prefix/$libdir" "$work/pkg_c" || fail "the chiprt-c program did not pass"
else
  fail "pkg-config --cflags --libs chiprt-c did not build the C consumer with gcc -std=c11"
fi

step "chip objects and their host program with a plain g++ and pkg-config alone"
plain=$work/plain
mkdir -p "$plain"
object_cflags=$(pkg-config --variable=chip_object_cflags chiprt)
object_libs=$(pkg-config --variable=chip_object_libs chiprt)
built=1
for object in square_kernel axpy_kernel orchestration; do
  g++ $object_cflags "$source_dir/tests/package/consumer/$object.cpp" -o "$plain/$object.so" \
    $object_libs || built=0
done
if [ "$built" = 1 ] &&
   g++ "$source_dir/tests/package/consumer/main.cpp" -o "$plain/consumer" \
     $(pkg-config --cflags --libs chiprt) -DSQUARE_OBJECT="\"$plain/square_kernel.so\"" \
     -DAXPY_OBJECT="\"$plain/axpy_kernel.so\"" \
     -DORCHESTRATION_OBJECT="\"$plain/orchestration.so\""; then
  LD_LIBRARY_PATH="$prefix/$libdir" "$plain/consumer" || fail "the plain g++ consumer did not pass"
else
  fail "the chip objects or the host program did not build with pkg-config's flags and a plain g++"
fi
unset PKG_CONFIG_PATH

step "the installed CLI and Python module, from the prefix alone"
cd "$work"
unset CHIPRT_CHIP_OBJECT_DIR
env -u PYTHONPATH "$prefix/bin/chiprt" run vector_example | tee "$work/cli.out"
grep -q '^PASS' "$work/cli.out" || fail "the installed chiprt CLI did not PASS vector_example"
if [ "$python" != none ]; then
  env PYTHONPATH="$prefix/lib/python3/dist-packages" "$python" -m chiprt run vector_example |
    tee "$work/py.out"
  grep -q '^PASS' "$work/py.out" || fail "python3 -m chiprt from the prefix did not PASS vector_example"
  env PYTHONPATH="$prefix/lib/python3/dist-packages" "$python" - "$prefix" <<'PY' || fail "chiprt.paths() of the installed module"
import os, sys, chiprt
prefix = os.path.realpath(sys.argv[1])
paths = chiprt.paths()
for key in ("include_dir", "lib_dir", "chip_object_dir", "common_library"):
    value = os.path.realpath(paths[key])
    assert value.startswith(prefix + os.sep), f"{key} = {value} is outside the prefix {prefix}"
    assert os.path.exists(value), f"{key} = {value} does not exist"
print("PASS installed chiprt.paths()")
PY
fi

step "one version everywhere (include/chiprt/version.h)"
version_of_header() { sed -n "s/^#define CHIPRT_VERSION_$1 \([0-9]*\)$/\1/p" "$source_dir/include/chiprt/version.h"; }
header_version="$(version_of_header MAJOR).$(version_of_header MINOR).$(version_of_header PATCH)"
cli_version=$("$prefix/bin/chiprt" --version) || fail "chiprt --version failed"
[ "$cli_version" = "chiprt $header_version" ] ||
  fail "chiprt --version says '$cli_version', not 'chiprt $header_version'"
pc_version=$(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --modversion chiprt)
[ "$pc_version" = "$header_version" ] || fail "pkg-config --modversion chiprt is $pc_version, not $header_version"
grep -q "set(PACKAGE_VERSION \"$header_version\")" "$prefix/$libdir/cmake/chiprt/chiprtConfigVersion.cmake" ||
  fail "chiprtConfigVersion.cmake does not say $header_version"
[ -e "$prefix/$libdir/libchiprt.so.$header_version" ] || fail "libchiprt.so.$header_version is not installed"
if [ "$python" != none ]; then
  py_version=$(env PYTHONPATH="$prefix/lib/python3/dist-packages" "$python" -c 'import chiprt; print(chiprt.__version__)')
  [ "$py_version" = "$header_version" ] || fail "chiprt.__version__ is $py_version, not $header_version"
fi
for doc in LICENSE copyright; do
  [ -s "$prefix/share/doc/chiprt/$doc" ] || fail "share/doc/chiprt/$doc is not installed"
done
echo "chiprt $header_version: CLI, pkg-config, CMake package, SONAME file and Python agree"

step "the prefix moved elsewhere still works (relocatable)"
moved=$work/moved
mv "$prefix" "$moved"
passes "$moved/bin/chiprt" run vector_example || fail "the CLI of a moved prefix did not PASS"
includedir=$(PKG_CONFIG_PATH="$moved/$libdir/pkgconfig" pkg-config --variable=includedir chiprt)
[ "$(realpath -m "$includedir")" = "$(realpath "$moved/include")" ] ||
  fail "pkg-config of a moved prefix gives includedir '$includedir', not $moved/include"
if [ "$python" != none ]; then
  passes env PYTHONPATH="$moved/lib/python3/dist-packages" "$python" -m chiprt run vector_example ||
    fail "python3 -m chiprt from a moved prefix did not PASS"
fi
mv "$moved" "$prefix"

step "the Debian package (cpack -G DEB)"
if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null; then
  cpack -G DEB -B "$work/deb" --config "$build_dir/CPackConfig.cmake" >"$work/cpack.log" 2>&1 || {
    cat "$work/cpack.log" >&2
    fail "cpack -G DEB failed"
  }
  version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build_dir/CPackConfig.cmake")
  deb=$work/deb/chiprt_${version}_$(dpkg --print-architecture).deb
  if [ -f "$deb" ]; then
    dpkg-deb -x "$deb" "$work/root"
    for path in usr/include/chiprt/chiprt_c.h usr/lib/libchiprt.so "usr/lib/$soname" usr/bin/chiprt \
                usr/lib/cmake/chiprt/chiprtConfig.cmake usr/lib/pkgconfig/chiprt.pc \
                usr/lib/chiprt/chip_objects/vector_example_orchestration.so \
                usr/share/doc/chiprt/copyright usr/share/doc/chiprt/LICENSE; do
      [ -e "$work/root/$path" ] || fail "$(basename "$deb") lacks /$path"
    done
    if [ "$python" != none ]; then
      ls "$work"/root/usr/lib/python3/dist-packages/chiprt/_chiprt*.so >/dev/null 2>&1 ||
        fail "$(basename "$deb") lacks the Python module in /usr/lib/python3/dist-packages"
    fi
    [ "$(dpkg-deb -f "$deb" Version)" = "$header_version" ] ||
      fail "$(basename "$deb") has version $(dpkg-deb -f "$deb" Version), not $header_version"
    grep -q '^License: Apache-2.0' "$work/root/usr/share/doc/chiprt/copyright" ||
      fail "$(basename "$deb")'s copyright file does not name the Apache-2.0 license"
    depends=$(dpkg-deb -f "$deb" Depends)
    for dependency in libxxhash0 libstdc++6; do
      [[ $depends == *"$dependency"* ]] || fail "$(basename "$deb") does not depend on $dependency: $depends"
    done
    # Relocated into the scratch root, the extracted CLI still runs (chip objects found beside it).
    passes "$work/root/usr/bin/chiprt" run vector_example ||
      fail "the CLI from $(basename "$deb") did not PASS vector_example"
    echo "$(basename "$deb"): $(dpkg-deb -c "$deb" | wc -l) entries; Depends: $depends"
  else
    ls "$work/deb" >&2 || true
    fail "cpack did not write chiprt_${version}_<arch>.deb"
  fi
else
  echo "(skipped: cpack or dpkg-deb is not installed)"
fi

if [ "$failures" -ne 0 ]; then
  echo "chiprt package: $failures check(s) failed" >&2
  exit 1
fi
echo "chiprt package: every check passed"
