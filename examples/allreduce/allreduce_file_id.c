/* AllReduce on host buffers, the unique id passed through a file.
 *
 *   ./allreduce_file_id ID_FILE RANK NRANKS      (or RANK, WORLD_SIZE in the environment)
 *   rm -f /tmp/coccl.id; for r in 0 1 2 3; do ./allreduce_file_id /tmp/coccl.id $r 4 & done; wait
 *
 * Rank 0 creates the id (cocclGetUniqueId) and writes it to ID_FILE (a temporary name, then
 * rename: the others never read half a file); the others wait for the file (up to 60 s). A
 * file left by a run that died holds a stale id, which ranks other than 0 may read before rank
 * 0 replaces it (their init then fails, and rank 0 waits up to COCCL_TIMEOUT_MS for them):
 * remove it before a launch, as the line above does, or use a fresh name a run (writeId and
 * readId are in common.h, shared with the C++ example). Each
 * rank contributes x[i] = rank + i / count; the sum is checked against the exact value. */
#include "common.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s ID_FILE [RANK NRANKS]\n", argv[0]);
    return 2;
  }
  const char* idFile = argv[1];
  int rank, nranks;
  rankFromArgs(argc, argv, 2, &rank, &nranks);
  cocclUniqueId id;
  if (rank == 0) {
    CHECK(cocclGetUniqueId(&id), NULL);
    writeId(idFile, &id);
  } else {
    readId(idFile, &id);
  }
  cocclComm_t comm;
  CHECK(cocclCommInitRank(&comm, nranks, id, rank), NULL);

  enum { kCount = 1 << 16 };
  static float x[kCount];
  for (int i = 0; i < kCount; ++i) x[i] = (float)rank + (float)i / kCount;
  /* count in ELEMENTS; in place: sendbuff == recvbuff; host buffers take a NULL stream */
  CHECK(cocclAllReduce(x, x, kCount, cocclFloat32, cocclSum, comm, NULL), comm);
  for (int i = 0; i < kCount; ++i) {
    const float want = (float)(nranks * (nranks - 1) / 2) + (float)nranks * ((float)i / kCount);
    if (x[i] != want) {
      fprintf(stderr, "rank %d: x[%d] = %g, want %g\n", rank, i, x[i], want);
      return 1;
    }
  }
  CHECK(cocclCommFinalize(comm), comm);
  CHECK(cocclCommDestroy(comm), NULL);
  if (rank == 0) unlink(idFile);
  printf("rank %d of %d: allreduce_file_id OK\n", rank, nranks);
  return 0;
}
