// The codec registry (registry.h) and makeCodec / codecNames (codecs/codec.h).
#include "codecs/abi/registry.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "codecs/abi/abi_codec.h"
#include "codecs/abi/builtin.h"
#include "codecs/abi/loader.h"
#include "codecs/spec.h"
#include "core/dtype.h"
#include "core/error.h"

namespace coccl {
namespace {

struct Registered {
  CodecEntry entry;
  std::shared_ptr<void> library;  // dlopen handle (null for built-ins)
};

struct Registry {
  std::mutex mu;
  std::vector<Registered> codecs;
  Registry() {
    for (const cocclCodecPlugin_v1_t* d : codec_detail::builtinDescriptors())
      codecs.push_back({{d, "built-in"}, nullptr});
  }
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: codecs may outlive static destructors
  return *r;
}

bool nameOk(const char* n) {
  if (!n) return false;
  const size_t len = std::strlen(n);
  if (len < 1 || len > 31) return false;
  for (size_t i = 0; i < len; ++i) {
    const char c = n[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

std::string validateDescriptor(const cocclCodecPlugin_v1_t* d) {
  if (!d) return "the descriptor is null";
  if (d->structSize != sizeof(cocclCodecPlugin_v1_t))
    return format("structSize is %u bytes, ABI v1 has %zu (built against another coccl_codec.h?)",
                  d->structSize, sizeof(cocclCodecPlugin_v1_t));
  if (d->abiVersion != COCCL_CODEC_ABI_V1)
    return format("abiVersion is %u in symbol %s; this coccl knows ABI version %u", d->abiVersion,
                  COCCL_CODEC_PLUGIN_SYMBOL_V1, COCCL_CODEC_ABI_LATEST);
  if (!nameOk(d->name)) return "name must be 1..31 characters of [a-z0-9_]";
  const uint32_t allTypes = (1u << cocclNumTypes) - 1, allOps = (1u << cocclNumOps) - 1;
  if (d->dtypeMask == 0 || (d->dtypeMask & ~allTypes))
    return format("dtypeMask 0x%x: must name at least one cocclDataType_t and no other bit",
                  d->dtypeMask);
  if (d->opMask & ~allOps) return format("opMask 0x%x has bits of no cocclRedOp_t", d->opMask);
  if (!(d->capabilities & COCCL_CODEC_CAP_DETERMINISTIC))
    return "COCCL_CODEC_CAP_DETERMINISTIC is not set (every rank must decode the same bytes)";
  const uint32_t known = COCCL_CODEC_CAP_LOSSLESS | COCCL_CODEC_CAP_NONFINITE |
                         COCCL_CODEC_CAP_DEVICE | COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE |
                         COCCL_CODEC_CAP_DETERMINISTIC | COCCL_CODEC_CAP_OWN_SUM_ORDER;
  if (d->capabilities & ~known) return format("unknown capability bits 0x%x", d->capabilities & ~known);
  if ((d->capabilities & COCCL_CODEC_CAP_OWN_SUM_ORDER) &&
      !(d->capabilities & COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE))
    return "COCCL_CODEC_CAP_OWN_SUM_ORDER needs COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE (the order is "
           "the codec's own decodeReduceEncode's)";
  if (!d->create || !d->destroy || !d->canonicalSpec || !d->blockElems || !d->encodedBytes ||
      !d->errorBound)
    return "create, destroy, canonicalSpec, blockElems, encodedBytes and errorBound are required";
  if (!d->host.encode || !d->host.decode || !d->host.decodeAccumulate)
    return "host.encode, host.decode and host.decodeAccumulate are required";
  const bool dre = (d->capabilities & COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE) != 0;
  if (dre != (d->host.decodeReduceEncode != nullptr))
    return "host.decodeReduceEncode must be set exactly when COCCL_CODEC_CAP_DECODE_REDUCE_ENCODE is";
  const cocclCodecDeviceOps_v1_t& v = d->device;
  const int devOps = !!v.encode + !!v.decode + !!v.decodeAccumulate + !!v.decodeReduceEncode;
  if (d->capabilities & COCCL_CODEC_CAP_DEVICE) {
    if (devOps != 4) return "COCCL_CODEC_CAP_DEVICE needs all four device operations";
  } else if (devOps != 0) {
    return "device operations are set but COCCL_CODEC_CAP_DEVICE is not";
  }
  return "";
}

void registerCodec(const cocclCodecPlugin_v1_t* desc, const std::string& source) {
  registerCodecLibrary(desc, source, nullptr);
}

void registerCodecLibrary(const cocclCodecPlugin_v1_t* desc, const std::string& source,
                          std::shared_ptr<void> library) {
  const std::string bad = validateDescriptor(desc);
  COCCL_CHECK_ARG(bad.empty(), "codec plug-in %s: %s", source.c_str(), bad.c_str());
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const Registered& x : r.codecs)
    COCCL_CHECK_ARG(std::strcmp(x.entry.desc->name, desc->name) != 0,
                    "codec plug-in %s: codec name '%s' is registered already (by %s)",
                    source.c_str(), desc->name, x.entry.source.c_str());
  r.codecs.push_back({{desc, source}, std::move(library)});
}

std::vector<CodecEntry> registeredCodecs() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<CodecEntry> v;
  for (const Registered& x : r.codecs) v.push_back(x.entry);
  return v;
}

std::string registeredCodecsSignature() {
  std::vector<std::string> parts;
  for (const CodecEntry& e : registeredCodecs())
    parts.push_back(std::string(e.desc->name) + "@" + std::to_string(e.desc->formatVersion));
  std::sort(parts.begin(), parts.end());
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ",") + p;
  return s;
}

CodecPtr makeCodec(const std::string& spec) {
  const std::string loadFailure = loadEnvCodecPlugins();
  COCCL_CHECK_ARG(loadFailure.empty(), "%s", loadFailure.c_str());
  codec_detail::ParsedSpec parsed = codec_detail::parseSpec(spec);
  const cocclCodecPlugin_v1_t* desc = nullptr;
  std::shared_ptr<void> library;
  std::string source;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (const Registered& x : r.codecs)
      if (parsed.name == x.entry.desc->name) {
        desc = x.entry.desc;
        library = x.library;
        source = x.entry.source;
      }
  }
  if (!desc)
    COCCL_THROW(cocclInvalidArgument, "codec spec '%s': unknown codec '%s' (known: %s)",
                codec_detail::quoted(spec).c_str(), codec_detail::quoted(parsed.name).c_str(),
                codecNames().c_str());
  std::string params;
  for (const auto& kv : parsed.params) params += (params.empty() ? "" : ",") + kv.first + "=" + kv.second;
  void* instance = nullptr;
  char err[512] = {0};
  const int rc = desc->create(params.c_str(), &instance, err, sizeof(err));
  if (rc != COCCL_CODEC_OK) {
    err[sizeof(err) - 1] = '\0';
    if (library)  // a plug-in's own words, prefixed; the built-ins' messages name the spec
      COCCL_THROW(cocclInvalidArgument, "codec spec '%s' (plug-in %s): %s",
                  codec_detail::quoted(spec).c_str(), source.c_str(),
                  err[0] ? err : "the plug-in's create() failed without a message");
    COCCL_THROW(cocclInvalidArgument, "%s", err);
  }
  return std::make_shared<AbiCodec>(desc, instance, library,
                                    codec_detail::builtinCodec(desc, instance));
}

std::string countRefusal(const Codec& c, size_t count, cocclDataType_t dt) {
  return format("codec %s refuses a count of %zu %s elements: the codec takes whole blocks of %zu "
                "elements only (its encodedBytes is 0 for this count)",
                c.spec().c_str(), count, dtypeName(dt), c.blockElems());
}

std::string codecNames() {
  std::string s;
  for (const CodecEntry& e : registeredCodecs()) s += (s.empty() ? "" : ", ") + std::string(e.desc->name);
  return s;
}

}  // namespace coccl
