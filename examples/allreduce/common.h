/* Shared by the examples: abort with coccl's own message on any error, the rank's place from
 * the command line or torchrun-style variables (RANK, WORLD_SIZE), and the unique id through a
 * file. */
#ifndef COCCL_EXAMPLE_COMMON_H_
#define COCCL_EXAMPLE_COMMON_H_

#include <coccl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* The unique id through a file: rank 0 writes it to a temporary name, then renames it (the
 * others never read half a file); the others wait for the file, up to 60 s. */
static inline void writeId(const char* path, const cocclUniqueId* id) {
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
  FILE* f = fopen(tmp, "wb");
  if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
    fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    exit(1);
  }
}

static inline void readId(const char* path, cocclUniqueId* id) {
  for (int tries = 0; tries < 6000; ++tries) { /* 60 s */
    FILE* f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, sizeof(*id), 1, f);
      fclose(f);
      if (got == 1) return;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "no unique id in %s after 60 s\n", path);
  exit(1);
}

#endif
