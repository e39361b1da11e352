// AbiCodec: the Codec interface (codecs/codec.h) over a plug-in ABI descriptor and one of its
// instances (include/coccl_codec.h). makeCodec returns these for every codec, built-in or
// loaded; a built-in's instance also hands over its C++ implementation (`builtin`), whose
// deviceDesc() selects the fused collective kernels of the CUDA IPC executor.
//
// Host operations get their workspace from a per-thread buffer that grows to the largest size
// asked (no allocation once warm). A nonzero return of a plug-in function becomes
// Error(cocclInvalidArgument for COCCL_CODEC_E_INVALID, else cocclInternalError) naming the
// codec and the operation (and, for built-ins, their own message).
#pragma once

#include <memory>
#include <string>

#include "coccl_codec.h"
#include "codecs/codec.h"

namespace coccl {

class AbiCodec final : public Codec {
 public:
  // Takes ownership of `instance` (desc->destroy in the destructor). `keepAlive` holds the
  // plug-in's library open while the codec lives (null for built-ins).
  AbiCodec(const cocclCodecPlugin_v1_t* desc, void* instance, std::shared_ptr<void> keepAlive,
           CodecPtr builtin);
  ~AbiCodec() override;
  AbiCodec(const AbiCodec&) = delete;
  AbiCodec& operator=(const AbiCodec&) = delete;

  const char* name() const override { return desc_->name; }
  const std::string& spec() const override { return spec_; }
  uint32_t id() const override { return id_; }
  uint32_t formatVersion() const override { return desc_->formatVersion; }
  bool supportsType(cocclDataType_t dt) const override;
  bool supportsOp(cocclRedOp_t op) const override;
  bool lossless() const override { return (desc_->capabilities & COCCL_CODEC_CAP_LOSSLESS) != 0; }
  size_t blockElems() const override { return block_; }
  size_t encodedBytes(size_t count, cocclDataType_t dt) const override;
  void encode(const void* in, cocclDataType_t dt, size_t count, void* out) const override;
  void decode(const void* in, size_t count, cocclDataType_t dt, void* out) const override;
  void decodeAccumulate(const void* in, size_t count, cocclDataType_t dt,
                        float* acc) const override;
  void decodeAccumulateMany(const void* const* ins, int n, size_t count, cocclDataType_t dt,
                            float* acc) const override;
  void decodeReduceEncode(const void* const* ins, int p, int self, const void* selfIn,
                          cocclDataType_t dt, size_t count, float scale, void* out,
                          float* scratch, void* decoded) const override;
  double elementErrorBound(double blockRms, double blockAbsMax) const override;
  CodecDesc deviceDesc() const override { return builtin_ ? builtin_->deviceDesc() : CodecDesc{}; }
  uint32_t capabilities() const override { return desc_->capabilities; }

  size_t deviceWorkspaceBytes(size_t count, cocclDataType_t dt, int p) const override;
  void deviceEncode(const void* in, cocclDataType_t dt, size_t count, void* out, void* ws,
                    cudaStream_t stream) const override;
  void deviceDecode(const void* in, size_t count, cocclDataType_t dt, void* out, void* ws,
                    cudaStream_t stream) const override;
  void deviceDecodeAccumulate(const void* const* ins, int n, size_t count, cocclDataType_t dt,
                              float* acc, void* ws, cudaStream_t stream) const override;
  void deviceDecodeReduceEncode(const void* const* ins, int p, int self, const void* selfIn,
                                cocclDataType_t dt, size_t count, float scale, void* out,
                                void* decoded, void* ws, cudaStream_t stream) const override;

  const cocclCodecPlugin_v1_t* descriptor() const { return desc_; }
  // The built-in C++ codec behind this one (null for loaded plug-ins).
  const Codec* builtin() const { return builtin_.get(); }

 private:
  void* hostWorkspace(size_t count, cocclDataType_t dt, int p) const;
  void check(int rc, const char* op) const;
  void requireDevice(const char* op) const;

  const cocclCodecPlugin_v1_t* desc_;
  void* inst_;
  std::shared_ptr<void> keepAlive_;
  CodecPtr builtin_;
  std::string spec_;
  uint32_t id_;
  size_t block_;
};

// The message a built-in descriptor function left on this thread when it returned nonzero
// (its Error's text); AbiCodec appends it to its own.
std::string& codecAbiThreadMessage();

}  // namespace coccl
