#!/usr/bin/env bash
# Installs the Debian packages coccl builds against (skips what is already there).
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libucx-dev libhwloc-dev googletest libgtest-dev
      libbenchmark-dev libcli11-dev nlohmann-json3-dev
      clang)  # clang: libFuzzer for scripts/fuzz.sh (the sanitizer builds use g++)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# libFuzzer's runtime (libclang_rt.fuzzer) is a package of its own on Debian 12 that clang
# only recommends (libclang-rt-dev); elsewhere it comes with clang.
have_fuzzer_rt() { compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; }
if [ ${#missing[@]} -gt 0 ] || ! have_fuzzer_rt; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  if ! have_fuzzer_rt && apt-cache show libclang-rt-dev >/dev/null 2>&1; then
    missing+=(libclang-rt-dev)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi
