// The unit tests' main. A library call that starts a pipeline worker runs
// /proc/self/exe __pipeline-worker (worker/pipeline_worker.hpp), which in a
// test binary is this program: were doctest to take those arguments, every
// test would run again inside the worker, start workers of its own, and so
// on without end. A test binary is no worker: it says so and exits, and the
// library reports the worker as dead, as it would any crashed worker.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "__pipeline-worker") == 0) {
    std::fputs("a unit test binary is not a pipeline worker: pass the kcache binary as the worker\n", stderr);
    return 70;
  }
  return doctest::Context(argc, argv).run();
}
