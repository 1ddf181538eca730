// A shared library that is not a Loom plugin: it exports no loom_plugin_entry.
extern "C" __attribute__((visibility("default"))) int not_a_loom_plugin(void) { return 42; }
