// The one table of COCCL_* environment variables: src/core/env_rows.inc, one row per variable
// (name, default, accepted values or range, documentation, the Env field it fills). Read once,
// on first use (thread-safe). README "Environment" is generated from the rows (coccl_env_doc;
// a test fails when it differs). A value that does not parse or is out of range warns (naming
// the variable, the value and what is accepted) and the default is used.
#pragma once

#include <cstdint>
#include <string>

namespace coccl {

// The defaults, from the rows: env_default::timeoutMs, env_default::algo, ...
namespace env_default {
#define COCCL_ENV_STR(field, name, def, ...) inline constexpr const char* field = def;
#define COCCL_ENV_INT(field, name, def, ...) inline constexpr int64_t field = def;
#include "core/env_rows.inc"
#undef COCCL_ENV_STR
#undef COCCL_ENV_INT
}  // namespace env_default

struct Env {
  std::string debug;           // COCCL_DEBUG
  std::string debugSubsys;     // COCCL_DEBUG_SUBSYS
  std::string debugFile;       // COCCL_DEBUG_FILE
  std::string commId;          // COCCL_COMM_ID (host:port)
  std::string socketIfname;    // COCCL_SOCKET_IFNAME
  int64_t timeoutMs;           // COCCL_TIMEOUT_MS
  std::string codec;           // COCCL_CODEC
  std::string codecAllReduce;  // COCCL_CODEC_ALLREDUCE
  std::string codecReduceScatter;  // COCCL_CODEC_REDUCESCATTER
  std::string codecAllGather;  // COCCL_CODEC_ALLGATHER
  std::string codecSendRecv;   // COCCL_CODEC_SENDRECV
  std::string codecPlugin;     // COCCL_CODEC_PLUGIN
  std::string policy;          // COCCL_POLICY (a policy file's path)
  int64_t compressMinBytes;    // COCCL_COMPRESS_MIN_BYTES
  int64_t chunkBytes;          // COCCL_CHUNK_BYTES
  std::string algo;            // COCCL_ALGO (auto | two-shot | direct | ring | one-shot)
  int64_t ringMinRanks;        // COCCL_RING_MIN_RANKS
  int64_t ranksPerNode;        // COCCL_RANKS_PER_NODE (0: from the hosts)
  int64_t twoLevelPipeline;    // COCCL_TWO_LEVEL_PIPELINE
  std::string ncclLibrary;     // COCCL_NCCL_LIBRARY
  int64_t shimNoNccl;          // COCCL_SHIM_NO_NCCL
  int64_t ncclCallCheck;       // COCCL_NCCL_CALL_CHECK
  int64_t stagedCallCheck;     // COCCL_STAGED_CALL_CHECK
  int64_t phaseTimes;          // COCCL_PHASE_TIMES
  int64_t deviceCodecRings;    // COCCL_DEVICE_CODEC_RINGS
  int64_t deviceStagingBytes;  // COCCL_DEVICE_STAGING_BYTES
  int64_t deviceBlocks;        // COCCL_DEVICE_BLOCKS (0: auto)
  std::string deviceTransport;  // COCCL_DEVICE_TRANSPORT (auto | cuda_ipc | nccl)
  std::string deviceExact;      // COCCL_DEVICE_EXACT (auto | coccl | nccl)
};

// One row of env_rows.inc. (Member pointers through aliases: nvcc's host code generation
// would otherwise parenthesise them, which gcc 13 warns about.)
using StrField = std::string Env::*;
using NumField = int64_t Env::*;
struct EnvRow {
  enum Kind { String, Int };
  const char* name;
  Kind kind;
  const char* defaultText;  // the default as a value ("" = unset); Int: decimal
  const char* choices;      // String: "" (any) or "a|b|c"
  int64_t defaultInt, minInt, maxInt;  // Int
  bool clampLow;            // Int: below min means min (else the default)
  const char* docDefault;   // README's default column ("" = defaultText)
  const char* doc;          // README's meaning column
  StrField str;             // String: the field it fills
  NumField num;             // Int: the field it fills
};

extern const EnvRow kEnvRows[];
extern const int kEnvRowCount;
// The row of `name`, nullptr when coccl reads no such variable.
const EnvRow* findEnvRow(const char* name);

// Parses `text` (set, non-empty) as `row` accepts it. True with the stored form in *str / *num
// (a choice as spelled in the row); false with what is accepted in *accepted ("auto, two-shot,
// direct or ring", "1..128", "an integer >= 4096") and, for an Int below its minimum with
// clampLow, *num = the minimum.
bool parseEnvValue(const EnvRow& row, const std::string& text, std::string* str, int64_t* num,
                   std::string* accepted);
// Whether `value` is one of a String row's choices (any value when it has none); *canonical
// receives the row's spelling. For config fields that take the same values as a variable.
bool envChoice(const EnvRow& row, const std::string& value, std::string* canonical);

// README's "Environment" table (Markdown, one line per row, header included).
// What a row accepts, as its warnings say it: "1..1000000000000", "an integer >= 0",
// "auto, two-shot, direct, ring or one-shot", or "text (checked where used)" (a free string).
std::string envAcceptedText(const EnvRow& row);
std::string envMarkdownTable();

// The process-wide values (read at first call).
const Env& env();
// Whether the variable of `row` was set (non-empty, valid or not) when env() read it, and the
// value in force as text ("" for an unset string; ints in decimal).
bool envIsSet(const EnvRow& row);
std::string envValueText(const EnvRow& row);

// Re-reads the environment. For tests only (not thread-safe against concurrent env() users).
void reloadEnvForTesting();

}  // namespace coccl
