#!/usr/bin/env bash
# Configures and builds coccl into ${BUILD_DIR:-build} (warnings are errors; CUDA sources build
# when nvcc is found, COCCL_ENABLE_CUDA=AUTO).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCOCCL_ENABLE_CUDA=${COCCL_ENABLE_CUDA:-AUTO} "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
