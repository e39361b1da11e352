#!/usr/bin/env bash
# The tah plug-in's device kernels before and after a change, on one GPU, in one call: builds an
# older plugins/tah (BASE_TAH, e.g. `git archive <commit> plugins/tah | tar x -C .base` then
# .base/plugins/tah, carried to the device machine) and this checkout's, each directly with the
# plug-in's flags (nvcc --fmad=false, g++ -ffp-contract=off; no CMake), and test_tah_device, then:
#   1. test_tah_device on head: device bytes = host bytes (every operation, dtype and shape, and
#      garbage payloads), then 256 MiB bf16 encode / decode timed beside a device-to-device copy;
#   2. the same timings on base, and on head again (the order's effect), and head's
#      select=message where it has one;
#   3. unless KB=0: kernel_bench (build-gpu, CMake) for base and head in turn, twice, 256 MiB,
#      bf16 and fp32, every operation (encode, decode, decodeAccumulate, decodeReduceEncode).
# usage: OUT=dir perf/scripts/tah_ab.sh BASE_TAH
# Results: $OUT/tah_ab.txt (the story) and one log per step.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
base=$(cd "${1:?usage: tah_ab.sh BASE_TAH}" && pwd)
out=${OUT:-$PWD/tah-ab}
mkdir -p "$out"
sum=$out/tah_ab.txt
: >"$sum"
note() { echo "$*" | tee -a "$sum"; }
t0=$(date +%s)
cu=$(dirname "$(dirname "$(command -v nvcc)")")
arch=${CUDA_ARCH:-90}
plug() {  # plug SRC_DIR OUT_SO
  local o=$2
  (cd "$1" &&
    nvcc -O3 -arch=sm_$arch --fmad=false -std=c++17 -Xcompiler -fPIC -DTAH_WITH_DEVICE=1 \
      -I "$root/include" -I . -c tah_device.cu -o "$o.dev.o" &&
    g++ -O2 -ffp-contract=off -fPIC -std=c++17 -DTAH_WITH_DEVICE=1 -I "$root/include" -I . \
      -c tah_host.cc -o "$o.host.o" &&
    g++ -shared -o "$o" "$o.host.o" "$o.dev.o" -L"$cu/lib64" -lcudart_static -ldl -lrt -lpthread)
}
plug "$base" "$out/libtah_base.so" >"$out/build_base.log" 2>&1 &
plug "$root/plugins/tah" "$out/libtah_head.so" >"$out/build_head.log" 2>&1 &
g++ -O2 -std=c++17 -I "$root/include" -I "$root/plugins/tah" -I "$cu/include" \
  "$root/tests/gpu/plugins/test_tah_device.cc" -o "$out/test_tah_device" -L"$cu/lib64" -lcudart \
  -ldl >"$out/build_test.log" 2>&1 &
wait
for f in libtah_base.so libtah_head.so test_tah_device; do
  [ -f "$out/$f" ] || { note "build of $f failed:"; tail -20 "$out"/build_*.log; exit 1; }
done
note "builds: $(($(date +%s) - t0)) s"
status=0
"$out/test_tah_device" "$out/libtah_head.so" >"$out/td_head.log" 2>&1 || status=1
note "test_tah_device head: $(grep -c identical "$out/td_head.log") identical lines, rc $status"
grep -v "identical" "$out/td_head.log" | head -20 | tee -a "$sum"
"$out/test_tah_device" "$out/libtah_base.so" --perf-only >"$out/td_base.log" 2>&1
note "base:"; grep "^perf" "$out/td_base.log" | tee -a "$sum"
"$out/test_tah_device" "$out/libtah_head.so" --perf-only >"$out/td_head2.log" 2>&1
note "head again:"; grep "^perf" "$out/td_head2.log" | tee -a "$sum"
if [ "${KB:-1}" != 0 ]; then
  cmake -S "$root" -B "$root/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCOCCL_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$arch >"$out/cmake.log" 2>&1 &&
    ninja -C "$root/build-gpu" kernel_bench >"$out/build_kb.log" 2>&1 || note "kernel_bench build failed"
  kb=$(find "$root/build-gpu" -name kernel_bench -type f | head -1)
  for round in 1 2; do
    for v in base head; do
      note "kernel_bench $v round $round"
      COCCL_CODEC_PLUGIN=$out/libtah_$v.so "$kb" --sizes 256 --dtypes bf16,fp32 \
        --codecs tah:row=4096 --iters 5 --warmup 2 2>&1 | tee -a "$sum"
    done
  done
fi
note "done: $(($(date +%s) - t0)) s"
exit $status
