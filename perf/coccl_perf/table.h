// Output of the sweep: nccl-tests' table (header, rank lines, rows, footer) with coccl's extra
// columns, and the same rows as JSON. Only rank 0 owns a Table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "runtime.h"

namespace cocclperf {

struct DeviceLine {
  int rank;
  int pid;
  std::string host;
  int device = -1;  // CUDA device (--mem device), -1 host memory
};

// What rank 0 knows about the run, for headers and JSON metadata.
struct RunInfo {
  int nranks = 1;
  Launch launch;
  int nThreads = 1;
  std::string codecCanonical;  // cocclCodecName of the explicit codec, or "none" / "policy"
  std::vector<DeviceLine> devices;
};

struct PlaceStats {
  double timeUs = 0;
  double algBw = 0;
  double busBw = 0;
  int64_t wrong = -1;  // -1: not checked
  double relL2 = 0;
  double maxAbs = 0;
  int ident = -1;  // -1: not applicable / not checked
};

struct Row {
  size_t bytes = 0;
  size_t count = 0;
  std::string type;
  std::string op;
  int root = -1;
  PlaceStats oop, ip;
  std::string codec;      // as cocclCommGetLastCollStats named it (rank 0, out-of-place)
  std::string algorithm;  // idem
  std::string algorithmNone;  // algorithm of the call with codec none (ratio's denominator)
  double ratio = 0;       // NaN when nothing went on the wire
  uint64_t wireBytes = 0, wireBytesNone = 0, logicalBytes = 0;  // summed over ranks
  bool checked = false;
  // --phases: us a call in each cocclPhase_t, rounds a call (one block's), blocks a call;
  // the mean of the ranks
  std::vector<double> phases;
};

// JSON metadata shared by the sweep and the real-data mode.
nlohmann::json runMetadata(const Options& o, const RunInfo& info);
// Writes j to path; false (with a message on stderr) on failure.
bool writeJsonFile(const std::string& path, const nlohmann::json& j);
// nccl-tests' number format: the widest of %.2f, %.1f, %.0f, %.1e that fits `width`.
std::string fmtNum(double v, int width);
// Relative L2 error as printed (%.2e, "nan", "inf").
std::string fmtRel(double v, int width);

class Table {
 public:
  Table(const Options& o, const RunInfo& info);
  void header();
  void row(const Row& r);
  void footer();
  bool writeJson();  // when --json was given
  int64_t totalWrong() const { return wrong_; }
  int identFailures() const { return identFail_; }

 private:
  const Options& o_;
  const RunInfo& info_;
  nlohmann::json json_;
  double bwSum_ = 0;
  int bwCount_ = 0;
  int64_t wrong_ = 0;
  int identFail_ = 0;
};

}  // namespace cocclperf
