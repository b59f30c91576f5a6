#!/usr/bin/env bash
# Installs chiprt's build and test dependencies from Debian 12 packages when any is missing.
# Safe to run repeatedly: it does nothing when everything is present. With arguments it installs
# those packages instead (scripts/install-peers.sh uses that).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libxxhash-dev
  chromium  # report.html in a headless browser (tests/browser)
  # The Python module: pybind11 for Debian's /usr/bin/python3, its numpy and pytest (python/).
  pybind11-dev python3-dev python3-numpy python3-pytest
)
if [ $# -gt 0 ]; then
  packages=("$@")
fi

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "chiprt: installing missing packages: ${missing[*]}"
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
