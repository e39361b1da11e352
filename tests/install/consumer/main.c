/* One host rank all-reduces 1000 floats through the installed library. */
#include <coccl.h>
#include <stdio.h>

int main(void) {
  int version = 0;
  if (cocclGetVersion(&version) != cocclSuccess || version != COCCL_VERSION_CODE) return 1;
  cocclUniqueId id;
  cocclComm_t comm;
  if (cocclGetUniqueId(&id) != cocclSuccess) return 2;
  if (cocclCommInitRank(&comm, 1, id, 0) != cocclSuccess) return 3;
  float x[1000];
  for (int i = 0; i < 1000; ++i) x[i] = (float)i;
  if (cocclAllReduce(x, x, 1000, cocclFloat32, cocclSum, comm, NULL) != cocclSuccess) return 4;
  if (x[999] != 999.0f) return 5;
  cocclCommDestroy(comm);
  printf("consumer OK (coccl %d)\n", version);
  return 0;
}
