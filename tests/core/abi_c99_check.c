/* Compiled as strict C99 by the build: the plugin ABI header must stay plain C. */
#include <loom/plugin.h>

/* A C plugin can fill every table. */
size_t loom_abi_c99_check_sizes(void) {
  loom_device_api_t device;
  loom_format_t format;
  loom_kernel_t kernel;
  device.struct_size = sizeof device;
  format.struct_size = sizeof format;
  kernel.struct_size = sizeof kernel;
  return device.struct_size + format.struct_size + kernel.struct_size;
}
