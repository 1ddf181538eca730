/* Built by out_of_tree_test.py with `cc pkgconfig_app.c $(pkg-config --cflags --libs loom)`
 * against the installed tree: prints libloom's version and how many plugins it found. */
#include <loom/loom.h>
#include <stdio.h>

int main(void) {
  loom_runtime_options_t options = {0};
  loom_runtime_t* runtime = NULL;
  loom_status_t* status;
  options.struct_size = sizeof options;
  options.use_default_paths = true;
  options.log_level = LOOM_LOG_ERROR;
  status = loom_runtime_create(&options, &runtime);
  if (status) {
    fprintf(stderr, "pkgconfig_app: %s\n", loom_status_message(status));
    loom_status_free(status);
    return 1;
  }
  printf("loom %s, %zu plugins\n", loom_version(), loom_runtime_num_plugins(runtime));
  loom_runtime_destroy(runtime);
  return 0;
}
