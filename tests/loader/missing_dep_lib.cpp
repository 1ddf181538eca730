// A library the "missing dependency" plugin links against; the test hides it at run time.
extern "C" __attribute__((visibility("default"))) int loom_fake_dependency(void) { return 7; }
