// A plugin built against the frozen v1.0 header (abi_v1_0/loom/plugin.h) loads in the current
// runtime and its registrations are accepted. Running its op is abi_v1_0_run_test.py.
#include <gtest/gtest.h>
#include <loom/loom.h>

#include <string>

namespace {

struct Runtime {
  loom_runtime_t* handle = nullptr;
  ~Runtime() { loom_runtime_destroy(handle); }
};

TEST(AbiV1_0, PluginBuiltAgainstTheV1_0HeaderLoads) {
  const char* paths[] = {LOOM_ABI_V1_0_PLUGIN};
  loom_runtime_options_t options{};
  options.struct_size = sizeof options;
  options.num_plugin_paths = 1;
  options.plugin_paths = paths;
  options.use_env_path = false;
  options.use_default_paths = false;
  options.log_level = LOOM_LOG_ERROR;
  Runtime rt;
  loom_status_t* status = loom_runtime_create(&options, &rt.handle);
  ASSERT_EQ(status, nullptr) << loom_status_message(status);

  ASSERT_EQ(loom_runtime_num_plugins(rt.handle), 1u);
  loom_plugin_record_t rec{};
  rec.struct_size = sizeof rec;
  ASSERT_EQ(loom_runtime_plugin(rt.handle, 0, &rec), nullptr);
  EXPECT_TRUE(rec.loaded) << rec.error;
  EXPECT_STREQ(rec.error, "");
  EXPECT_STREQ(rec.name, "abi_v1_0");
  EXPECT_EQ(rec.abi_version, LOOM_MAKE_ABI_VERSION(1, 0));
  // The runtime may speak a newer minor of major 1, never another major.
  EXPECT_EQ(LOOM_ABI_MAJOR(LOOM_ABI_VERSION), 1u);
  EXPECT_GE(LOOM_ABI_MINOR(LOOM_ABI_VERSION), 0u);
  EXPECT_NE(std::string(rec.registered).find("1 op schemas"), std::string::npos) << rec.registered;
  EXPECT_NE(std::string(rec.registered).find("1 kernels"), std::string::npos) << rec.registered;
}

}  // namespace
