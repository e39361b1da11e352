/* Shared by the examples: abort with coccl's own message on any error, and the rank's place
 * from the command line or torchrun-style variables (RANK, WORLD_SIZE). */
#ifndef COCCL_EXAMPLE_COMMON_H_
#define COCCL_EXAMPLE_COMMON_H_

#include <coccl.h>
#include <stdio.h>
#include <stdlib.h>

/* Every coccl call returns a cocclResult_t: check it, and print cocclGetLastError for the
 * reason (the communicator's own message, or the thread's for calls without one). */
#define CHECK(call, comm)                                                                  \
  do {                                                                                     \
    cocclResult_t r_ = (call);                                                             \
    if (r_ != cocclSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,             \
              cocclGetErrorString(r_), cocclGetLastError(comm));                            \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

/* argv[first] argv[first + 1] = rank nranks, else $RANK $WORLD_SIZE. */
static inline void rankFromArgs(int argc, char** argv, int first, int* rank, int* nranks) {
  const char* r = argc > first + 1 ? argv[first] : getenv("RANK");
  const char* n = argc > first + 1 ? argv[first + 1] : getenv("WORLD_SIZE");
  if (!r || !n) {
    fprintf(stderr, "usage: %s ... RANK NRANKS (or set RANK and WORLD_SIZE)\n", argv[0]);
    exit(2);
  }
  *rank = atoi(r);
  *nranks = atoi(n);
  if (*nranks < 1 || *rank < 0 || *rank >= *nranks) {
    fprintf(stderr, "bad rank %d of %d\n", *rank, *nranks);
    exit(2);
  }
}

#endif
