// A dlclose() that keeps the object mapped, LD_PRELOADed into the processes
// of scripts/test's sanitizer tier only (tests/sanitizer/lsan.supp says
// why): LeakSanitizer then names the module of every frame of a leak, so a
// leak inside a driver the Vulkan loader has unloaded is suppressed by the
// driver's name instead of failing a test at random. Objects stay loaded
// until the process exits, which is when the leak check runs.
#include <stddef.h>

int dlclose(void* handle) {
  (void)handle;
  return 0;
}
