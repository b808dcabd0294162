/* volk's implementation, compiled into this module only: the Vulkan function
   pointers live here, so nothing in kcache links libvulkan. */
#include <volk.c>
