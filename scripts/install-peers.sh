#!/usr/bin/env bash
# Installs the peer runtimes that `chiprt bench` compares chiprt against, from Debian 12 packages:
# OpenMP (GCC's libgomp comes with g++; libomp-dev adds LLVM's), oneTBB and StarPU. They are
# optional: chiprt builds and passes its tests without them. Reconfigure the build afterwards so
# CMake finds them (tools/perf/CMakeLists.txt). Safe to run repeatedly: it does nothing when
# everything is present.
set -euo pipefail

packages=(g++ pkg-config libomp-dev libtbb-dev libstarpu-dev)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "chiprt: installing missing peer packages: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "chiprt: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "chiprt: peers installed; reconfigure (cmake) so that chiprt bench finds them"
