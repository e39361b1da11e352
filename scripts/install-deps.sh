#!/usr/bin/env bash
# Installs the Debian packages coccl builds against (skips what is already there).
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libucx-dev libhwloc-dev googletest libgtest-dev
      libbenchmark-dev libcli11-dev nlohmann-json3-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
