/* AllReduce with COCCL_COMM_ID: no id exchange. Rank 0 starts the bootstrap root at host:port
 * inside init; every rank passes an all-zero id.
 *
 *   export COCCL_COMM_ID=127.0.0.1:29555
 *   for r in 0 1 2 3; do RANK=$r WORLD_SIZE=4 ./allreduce_comm_id & done; wait
 *
 * bf16 input through the policy codec int8 (cocclConfig_t.codec): the result is checked
 * against the exact sum within int8's error. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common.h"

static uint16_t toBf16(float f) { /* round to nearest even */
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static float fromBf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int main(int argc, char** argv) {
  int rank, nranks;
  rankFromArgs(argc, argv, 1, &rank, &nranks);
  if (!getenv("COCCL_COMM_ID")) {
    fprintf(stderr, "set COCCL_COMM_ID=host:port (the same on every rank)\n");
    return 2;
  }
  cocclUniqueId id;
  memset(&id, 0, sizeof(id));
  cocclConfig_t cfg = COCCL_CONFIG_INITIALIZER;
  cfg.codec = "int8";         /* compress SUM/AVG of fp32/fp16/bf16 ... */
  cfg.compressMinBytes = 0;   /* ... of every size (default: 64 KiB and up) */
  cocclComm_t comm;
  CHECK(cocclCommInitRankConfig(&comm, nranks, id, rank, &cfg), NULL);

  enum { kCount = 100003 };
  static uint16_t x[kCount];
  double err2 = 0, ref2 = 0;
  for (int i = 0; i < kCount; ++i) x[i] = toBf16(sinf(0.001f * (float)i * (float)(rank + 1)));
  CHECK(cocclAllReduce(x, x, kCount, cocclBfloat16, cocclSum, comm, NULL), comm);
  for (int i = 0; i < kCount; ++i) {
    double want = 0;
    for (int q = 0; q < nranks; ++q) want += fromBf16(toBf16(sinf(0.001f * (float)i * (float)(q + 1))));
    const double d = fromBf16(x[i]) - want;
    err2 += d * d;
    ref2 += want * want;
  }
  cocclCollStats_t st;
  CHECK(cocclCommGetLastCollStats(comm, &st), comm);
  const double rel = sqrt(err2 / (ref2 > 0 ? ref2 : 1));
  if (!(rel < 0.02) || strncmp(st.codec, "int8", 4) != 0) {
    fprintf(stderr, "rank %d: relative L2 %g with codec %s\n", rank, rel, st.codec);
    return 1;
  }
  CHECK(cocclCommFinalize(comm), comm);
  CHECK(cocclCommDestroy(comm), NULL);
  printf("rank %d of %d: allreduce_comm_id OK (codec %s, %zu of %zu bytes on the wire, "
         "relative L2 %.2e)\n", rank, nranks, st.codec, st.wireBytesSent, st.logicalBytes, rel);
  return 0;
}
