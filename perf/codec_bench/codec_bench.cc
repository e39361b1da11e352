// Host codec throughput: encode, decode, decodeAccumulate and the two-shot owner step
// (decodeReduceEncode of the owner's raw input and 3 payloads, p = 4, decoded output written) of
// the lossy codecs per block size and input type, against memcpy of the same bytes. Rates are
// bytes of INPUT (count * element size) per second, for every operation (one rank's share for
// the owner step).
//
// Default run (about a minute on 2 cores): block 128 at 1 and 16 MiB, the other block sizes at
// 1 MiB, bf16 and fp32 input. Flags (before the usual --benchmark_* flags):
//   --sizes=1,4,16,64,256      input sizes in MiB
//   --blocks=32,64,128,256,512 block sizes (given explicitly: every block at every size)
//   --codecs=int8,fp8_ash_ds   codec names (any spec without ":block=")
//   --dtypes=bf16,fp32         input types (bf16, fp16, fp32)
// Full sweep: codec_bench --sizes=1,4,16,64,256 --blocks=32,64,128,256,512
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "codecs/codec.h"
#include "core/dtype.h"
#include "kernels/float_convert.h"

namespace {

using coccl::CodecPtr;

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

size_t elemSize(cocclDataType_t dt) { return coccl::dtypeSize(dt); }

cocclDataType_t parseType(const std::string& s) {
  if (s == "fp32") return cocclFloat32;
  if (s == "fp16") return cocclFloat16;
  if (s == "bf16") return cocclBfloat16;
  std::fprintf(stderr, "codec_bench: unknown dtype '%s'\n", s.c_str());
  std::exit(2);
}

// Laplace-distributed input of `bytes` bytes in dt, generated once per (bytes, dt).
const std::vector<uint8_t>& input(size_t bytes, cocclDataType_t dt) {
  static std::map<std::pair<size_t, int>, std::vector<uint8_t>> cache;
  auto key = std::make_pair(bytes, static_cast<int>(dt));
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::vector<uint8_t> buf(bytes);
  uint64_t s = 0x9e3779b97f4a7c15ull ^ bytes;
  const size_t n = bytes / elemSize(dt);
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    double u = (static_cast<double>(s >> 11) + 0.5) * 0x1p-53;
    float v = static_cast<float>((s & 1 ? 1.0 : -1.0) * -std::log(u));
    if (dt == cocclFloat32) {
      std::memcpy(&buf[4 * i], &v, 4);
    } else {
      uint16_t h =
          dt == cocclBfloat16 ? coccl::kmath::floatToBf16(v) : coccl::kmath::floatToFp16(v);
      std::memcpy(&buf[2 * i], &h, 2);
    }
  }
  return cache.emplace(key, std::move(buf)).first->second;
}

enum class Op { Encode, Decode, DecodeAccumulate, DecodeReduceEncode };
const char* opName(Op op) {
  return op == Op::Encode             ? "encode"
         : op == Op::Decode           ? "decode"
         : op == Op::DecodeAccumulate ? "decodeAcc"
                                      : "decodeReduceEncode4";
}
constexpr int kOwnerStepRanks = 4;

void runCodec(benchmark::State& state, CodecPtr codec, Op op, cocclDataType_t dt, size_t bytes) {
  const size_t n = bytes / elemSize(dt);
  const std::vector<uint8_t>& in = input(bytes, dt);
  std::vector<uint8_t> payload(codec->encodedBytes(n, dt));
  codec->encode(in.data(), dt, n, payload.data());
  std::vector<uint8_t> out(op == Op::Decode || op == Op::DecodeReduceEncode ? bytes : 0);
  std::vector<float> acc(op == Op::DecodeAccumulate || op == Op::DecodeReduceEncode ? n : 0, 0.0f);
  // the owner step: rank 0's raw input, the same payload from ranks 1..3 (the sum's order and
  // its work do not depend on the payloads differing)
  std::vector<uint8_t> sum(payload.size());
  const void* ins[kOwnerStepRanks] = {nullptr, payload.data(), payload.data(), payload.data()};
  for (auto _ : state) {
    switch (op) {
      case Op::Encode:
        codec->encode(in.data(), dt, n, payload.data());
        benchmark::DoNotOptimize(payload.data());
        break;
      case Op::Decode:
        codec->decode(payload.data(), n, dt, out.data());
        benchmark::DoNotOptimize(out.data());
        break;
      case Op::DecodeAccumulate:
        codec->decodeAccumulate(payload.data(), n, dt, acc.data());
        benchmark::DoNotOptimize(acc.data());
        break;
      case Op::DecodeReduceEncode:
        codec->decodeReduceEncode(ins, kOwnerStepRanks, 0, in.data(), dt, n, 1.0f, sum.data(),
                                  acc.data(), out.data());
        benchmark::DoNotOptimize(sum.data());
        break;
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.counters["ratio"] = static_cast<double>(bytes) / static_cast<double>(payload.size());
}

void runMemcpy(benchmark::State& state, size_t bytes) {
  std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

// Takes --name=value out of argv.
std::string takeFlag(int* argc, char** argv, const std::string& name, const std::string& def,
                     bool* given = nullptr) {
  std::string value = def;
  std::string prefix = "--" + name + "=";
  int w = 1;
  for (int r = 1; r < *argc; ++r) {
    if (std::strncmp(argv[r], prefix.c_str(), prefix.size()) == 0) {
      value = argv[r] + prefix.size();
      if (given) *given = true;
    } else {
      argv[w++] = argv[r];
    }
  }
  *argc = w;
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  bool blocksGiven = false;
  std::vector<std::string> sizes = splitList(takeFlag(&argc, argv, "sizes", "1,16"));
  std::vector<std::string> blocks =
      splitList(takeFlag(&argc, argv, "blocks", "32,64,128,256,512", &blocksGiven));
  std::vector<std::string> codecs = splitList(takeFlag(&argc, argv, "codecs", "int8,fp8_ash_ds"));
  std::vector<std::string> dtypes = splitList(takeFlag(&argc, argv, "dtypes", "bf16,fp32"));

  for (size_t si = 0; si < sizes.size(); ++si) {
    const size_t bytes = static_cast<size_t>(std::stod(sizes[si]) * 1048576.0);
    const std::string sz = sizes[si] + "MiB";
    benchmark::RegisterBenchmark(("memcpy/" + sz).c_str(), runMemcpy, bytes)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    for (const std::string& b : blocks) {
      if (!blocksGiven && b != "128" && si != 0) continue;  // default: other blocks at 1 size
      for (const std::string& name : codecs) {
        CodecPtr codec;
        try {
          codec = coccl::makeCodec(name + (name.find(':') == std::string::npos ? ":" : ",") +
                                   "block=" + b);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "codec_bench: %s\n", e.what());
          return 2;
        }
        for (const std::string& dts : dtypes) {
          cocclDataType_t dt = parseType(dts);
          for (Op op : {Op::Encode, Op::Decode, Op::DecodeAccumulate, Op::DecodeReduceEncode}) {
            std::string label = name + "/G" + b + "/" + dts + "/" + opName(op) + "/" + sz;
            benchmark::RegisterBenchmark(label.c_str(), runCodec, codec, op, dt, bytes)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
          }
        }
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
