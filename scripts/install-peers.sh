#!/usr/bin/env bash
# Installs the peer runtimes that `chiprt bench` compares chiprt against, from Debian 12 packages:
# OpenMP (GCC's libgomp comes with g++; clang + libomp-dev add LLVM's libomp, whose column runs in
# a separate clang-built executable), oneTBB and StarPU. They are optional: chiprt builds and
# passes its tests without them. Reconfigure the build afterwards so
# CMake finds them (tools/perf/CMakeLists.txt). Safe to run repeatedly (scripts/install-deps.sh
# does the installing and skips what is present).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh g++ pkg-config clang libomp-dev libtbb-dev libstarpu-dev
echo "chiprt: peers present; reconfigure (cmake) if they were just installed so chiprt bench finds them"
