// kernel_bench: bandwidth of the CUDA codec kernels (src/kernels/device_codec.h) next to a
// device-to-device cudaMemcpy measured in the same run.
//
//   kernel_bench [--sizes 256,1024] [--dtypes bf16,fp32] [--codecs fp8_ash_ds,int8]
//                [--iters 20] [--warmup 5] [--zeros F] [--json FILE] [--quick]
//
// --sizes: input tensor sizes in MiB. For each size, dtype and codec it times (CUDA events,
// warm-up, then the median of --iters runs): encode, decode, decodeAccumulate (p = 2, 4, 8),
// decodeReduceEncode (p = 4, 8; owner input raw, decoded output written), and for fp8_ash_ds the
// unfused encode / decode. Bandwidth counts the bytes each kernel must read and write once:
//   memcpy          2 * in                   (in = the typed tensor, out its payload)
//   encode          in + payload             decode         payload + in
//   decodeAcc(p)    p * payload + 2 * 4n     (fp32 accumulator read and written)
//   DRE(p)          (p-1) * payload + in + payload + in   (owner's raw input, decoded output)
//   unfused         the fused op's bytes (so the column compares time on the same work)
// "%copy" is that bandwidth over the memcpy's. Inputs are random normals, with no zeros unless
// --zeros F sets a fraction F (0..1) of them to +0, as after a ReLU (int4's rotate=auto counts
// a block's exact zeros). The codec column is the spec as given.
//
// Codecs without a CodecDesc (plug-ins, e.g. `--codecs int4` with COCCL_CODEC_PLUGIN=int4) run
// through their plug-in ABI device launchers (coccl::Codec::deviceEncode / deviceDecode /
// deviceDecodeAccumulate / deviceDecodeReduceEncode on the default stream, workspace
// deviceWorkspaceBytes), with the payload size encodedBytes(n, dtype); a codec with neither is
// skipped with a message.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "codecs/codec.h"
#include "kernel_bench_fill.h"
#include "kernels/device_codec.h"
#include "unfused_codec.h"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "kernel_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

struct Options {
  std::vector<size_t> sizesMiB = {256, 1024};
  std::vector<std::string> dtypes = {"bf16", "fp32"};
  std::vector<std::string> codecs = {"fp8_ash_ds", "int8"};
  int iters = 20;
  int warmup = 5;
  double zeros = 0.0;
  std::string json;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t c = s.find(',', at);
    out.push_back(s.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) break;
    at = c + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kernel_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--sizes") {
      o.sizesMiB.clear();
      for (const std::string& s : split(next())) o.sizesMiB.push_back(std::stoul(s));
    } else if (a == "--dtypes") {
      o.dtypes = split(next());
    } else if (a == "--codecs") {
      o.codecs = split(next());
    } else if (a == "--iters") {
      o.iters = std::max(1, std::stoi(next()));
    } else if (a == "--warmup") {
      o.warmup = std::max(0, std::stoi(next()));
    } else if (a == "--zeros") {
      o.zeros = std::min(1.0, std::max(0.0, std::stod(next())));
    } else if (a == "--json") {
      o.json = next();
    } else if (a == "--quick") {
      o.sizesMiB = {256};
      o.iters = 5;
      o.warmup = 2;
    } else {
      std::fprintf(stderr,
                   "usage: kernel_bench [--sizes MiB,..] [--dtypes bf16,fp32,fp16] "
                   "[--codecs spec,..] [--iters N] [--warmup N] [--zeros F] [--json FILE] "
                   "[--quick]\n");
      std::exit(a == "--help" || a == "-h" ? 0 : 2);
    }
  }
  return o;
}

cocclDataType_t dtypeOf(const std::string& s) {
  if (s == "bf16") return cocclBfloat16;
  if (s == "fp16") return cocclFloat16;
  if (s == "fp32") return cocclFloat32;
  std::fprintf(stderr, "kernel_bench: unknown dtype %s\n", s.c_str());
  std::exit(2);
}

// Median time in ms of fn() over `iters` runs after `warmup` runs.
double timeMs(const std::function<void()>& fn, int warmup, int iters) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  for (int i = 0; i < warmup; ++i) fn();
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<float> t;
  for (int i = 0; i < iters; ++i) {
    check(cudaEventRecord(a), "cudaEventRecord");
    fn();
    check(cudaEventRecord(b), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    t.push_back(ms);
  }
  check(cudaGetLastError(), "kernels");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Row {
  std::string op, codec, dtype;
  size_t mib;
  int p;
  double ms, gbs, pctCopy;
};

void* devAlloc(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  int clockKHz = 0, memClockKHz = 0;
  cudaDeviceGetAttribute(&clockKHz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&memClockKHz, cudaDevAttrMemoryClockRate, dev);
  std::printf("# kernel_bench: %s, sm_%d%d, %d SMs, L2 %d MiB, SM clock %d MHz, mem clock %d MHz\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize >> 20,
              clockKHz / 1000, memClockKHz / 1000);
  std::printf("# median of %d runs after %d warm-up runs; GB/s = bytes read + written / time; "
              "inputs %.0f%% zeros\n",
              o.iters, o.warmup, 100.0 * o.zeros);

  std::vector<Row> rows;
  auto add = [&](const std::string& op, const std::string& codec, const std::string& dt, size_t mib,
                 int p, double ms, double bytes, double copyGbs) {
    Row r{op, codec, dt, mib, p, ms, bytes / (ms * 1e-3) / 1e9, 0.0};
    r.pctCopy = copyGbs > 0 ? 100.0 * r.gbs / copyGbs : 100.0;
    rows.push_back(r);
    std::printf("%-22s %-12s %-5s %6zu MiB p=%-2d %9.3f ms %8.1f GB/s %6.1f%% of copy\n",
                op.c_str(), codec.c_str(), dt.c_str(), mib, p, ms, r.gbs, r.pctCopy);
    std::fflush(stdout);
  };

  for (size_t mib : o.sizesMiB) {
    for (const std::string& dts : o.dtypes) {
      const cocclDataType_t dt = dtypeOf(dts);
      const size_t esize = dt == cocclFloat32 ? 4 : 2;
      const size_t inBytes = mib << 20;
      const size_t n = inBytes / esize;
      void* in = devAlloc(inBytes);
      void* out = devAlloc(inBytes);
      kernel_bench::fillRandom(in, n, dt == cocclFloat32 ? 0 : (dt == cocclBfloat16 ? 1 : 2), 1,
                               o.zeros);
      check(cudaDeviceSynchronize(), "fill");
      const double copyMs = timeMs(
          [&] { check(cudaMemcpyAsync(out, in, inBytes, cudaMemcpyDeviceToDevice), "memcpy"); },
          o.warmup, o.iters);
      const double copyGbs = 2.0 * inBytes / (copyMs * 1e-3) / 1e9;
      add("memcpy", "-", dts, mib, 1, copyMs, 2.0 * inBytes, copyGbs);

      for (const std::string& spec : o.codecs) {
        const coccl::CodecPtr codec = coccl::makeCodec(spec);
        const coccl::CodecDesc d = codec->deviceDesc();
        const bool viaAbi = d.kind == coccl::CodecKind::None;  // a plug-in's device launchers
        if (viaAbi && !codec->hasDeviceOps()) {
          std::printf("# %s: no device operations, skipped\n", codec->spec().c_str());
          continue;
        }
        const std::string& name = spec;  // as given: "int4" and "int4:rotate=1" stay apart
        const size_t pb = viaAbi ? codec->encodedBytes(n, dt) : coccl::kernels::payloadBytes(d, dt, n);
        void* payload = devAlloc(pb);
        size_t wsBytes = 0;
        if (viaAbi)
          for (int p : {1, 2, 4, 8}) wsBytes = std::max(wsBytes, codec->deviceWorkspaceBytes(n, dt, p));
        void* ws = wsBytes ? devAlloc(wsBytes) : nullptr;
        auto encode = [&](const void* src, void* dst) {
          if (viaAbi) codec->deviceEncode(src, dt, n, dst, ws, nullptr);
          else coccl::kernels::encode(d, src, dt, n, dst, nullptr);
        };
        double ms = timeMs([&] { encode(in, payload); }, o.warmup, o.iters);
        add("encode", name, dts, mib, 1, ms, double(inBytes + pb), copyGbs);
        ms = timeMs(
            [&] {
              if (viaAbi) codec->deviceDecode(payload, n, dt, out, ws, nullptr);
              else coccl::kernels::decode(d, payload, n, dt, out, nullptr);
            },
            o.warmup, o.iters);
        add("decode", name, dts, mib, 1, ms, double(inBytes + pb), copyGbs);

        // p payloads of p different inputs (encoded from shifted random data)
        const int kMaxP = 8;
        std::vector<void*> pays(kMaxP);
        for (int r = 0; r < kMaxP; ++r) {
          pays[r] = devAlloc(pb);
          kernel_bench::fillRandom(out, n, dt == cocclFloat32 ? 0 : (dt == cocclBfloat16 ? 1 : 2),
                                   100 + r, o.zeros);
          encode(out, pays[r]);
        }
        float* acc = static_cast<float*>(devAlloc(n * 4));
        kernel_bench::fillRandom(acc, n, 0, 7);
        check(cudaDeviceSynchronize(), "setup");
        for (int p : {2, 4, 8}) {
          std::vector<const void*> ins(pays.begin(), pays.begin() + p);
          ms = timeMs(
              [&] {
                if (viaAbi) codec->deviceDecodeAccumulate(ins.data(), p, n, dt, acc, ws, nullptr);
                else coccl::kernels::decodeAccumulate(d, ins.data(), p, n, dt, acc, nullptr);
              },
              o.warmup, o.iters);
          add("decodeAccumulate", name, dts, mib, p, ms, double(p * pb + 8 * n), copyGbs);
        }
        for (int p : {4, 8}) {
          std::vector<const void*> ins(pays.begin(), pays.begin() + p);
          ins[0] = nullptr;  // the owner (rank 0) contributes its raw input
          ms = timeMs(
              [&] {
                const float scale = 1.0f / static_cast<float>(p);
                if (viaAbi)
                  codec->deviceDecodeReduceEncode(ins.data(), p, 0, in, dt, n, scale, payload, out,
                                                  ws, nullptr);
                else
                  coccl::kernels::decodeReduceEncode(d, ins.data(), p, 0, in, dt, n, scale, payload,
                                                     out, nullptr);
              },
              o.warmup, o.iters);
          add("decodeReduceEncode", name, dts, mib, p, ms, double((p - 1) * pb + 2 * inBytes + pb),
              copyGbs);
        }
        if (d.kind == coccl::CodecKind::Fp8AshDs) {
          void* scratch = devAlloc(coccl::kernels::unfusedScratchBytes(d, n));
          ms = timeMs(
              [&] { coccl::kernels::encodeUnfused(d, in, dt, n, payload, scratch, nullptr); },
              o.warmup, o.iters);
          add("encode (unfused)", name, dts, mib, 1, ms, double(inBytes + pb), copyGbs);
          ms = timeMs(
              [&] { coccl::kernels::decodeUnfused(d, payload, n, dt, out, scratch, nullptr); },
              o.warmup, o.iters);
          add("decode (unfused)", name, dts, mib, 1, ms, double(inBytes + pb), copyGbs);
          check(cudaFree(scratch), "cudaFree");
        }
        for (void* p : pays) check(cudaFree(p), "cudaFree");
        check(cudaFree(acc), "cudaFree");
        check(cudaFree(payload), "cudaFree");
        if (ws) check(cudaFree(ws), "cudaFree");
      }
      check(cudaFree(in), "cudaFree");
      check(cudaFree(out), "cudaFree");
    }
  }

  // the table
  std::printf("\n%-22s %-16s %-5s %8s %3s %10s %9s %7s\n", "op", "codec", "dtype", "MiB", "p",
              "median_ms", "GB/s", "%copy");
  for (const Row& r : rows)
    std::printf("%-22s %-16s %-5s %8zu %3d %10.3f %9.1f %6.1f%%\n", r.op.c_str(), r.codec.c_str(),
                r.dtype.c_str(), r.mib, r.p, r.ms, r.gbs, r.pctCopy);
  if (!o.json.empty()) {
    FILE* f = std::fopen(o.json.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "kernel_bench: cannot write %s\n", o.json.c_str());
      return 1;
    }
    std::fprintf(f,
                 "{\"device\": \"%s\", \"sms\": %d, \"iters\": %d, \"zeros\": %.4f, "
                 "\"results\": [\n",
                 prop.name, prop.multiProcessorCount, o.iters, o.zeros);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::fprintf(f,
                   "  {\"op\": \"%s\", \"codec\": \"%s\", \"dtype\": \"%s\", \"mib\": %zu, "
                   "\"p\": %d, \"median_ms\": %.6f, \"gbs\": %.3f, \"pct_copy\": %.2f}%s\n",
                   r.op.c_str(), r.codec.c_str(), r.dtype.c_str(), r.mib, r.p, r.ms, r.gbs,
                   r.pctCopy, i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
