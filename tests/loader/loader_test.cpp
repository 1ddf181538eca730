// The plugin loader against fake plugins: every way a plugin can be wrong is skipped with one
// clear line, the others still load, and nothing crashes.
#include <gtest/gtest.h>
#include <loom/loom.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string fake(const std::string& name) {
  return std::string(FAKE_DIR) + "/" + name + "/" + name + ".so";
}

struct Loaded {
  loom_runtime_t* rt = nullptr;
  std::vector<loom_plugin_record_t> records;
  ~Loaded() { loom_runtime_destroy(rt); }
};

// Loads exactly the given plugin paths (no environment, no default directories).
void load_only(Loaded& out, const std::vector<std::string>& paths) {
  std::vector<const char*> ptrs;
  for (const std::string& p : paths) ptrs.push_back(p.c_str());
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.num_plugin_paths = ptrs.size();
  o.plugin_paths = ptrs.data();
  o.log_level = LOOM_LOG_ERROR;
  o.log_fn = [](void*, loom_log_level_t, const char*, const char*) {};  // keep test output clean
  ASSERT_EQ(loom_runtime_create(&o, &out.rt), nullptr);
  for (size_t i = 0; i < loom_runtime_num_plugins(out.rt); ++i) {
    loom_plugin_record_t r{};
    r.struct_size = sizeof r;
    ASSERT_EQ(loom_runtime_plugin(out.rt, i, &r), nullptr);
    out.records.push_back(r);
  }
}

const loom_plugin_record_t* find_path(const Loaded& l, const std::string& path) {
  for (const auto& r : l.records)
    if (r.path == path) return &r;
  return nullptr;
}

// This Loom's plugin ABI version as the loader's messages write it, e.g. "1.1".
const std::string kOurAbi =
    std::to_string(LOOM_ABI_VERSION_MAJOR) + "." + std::to_string(LOOM_ABI_VERSION_MINOR);

void expect_skipped(const std::string& path, const std::string& fragment) {
  Loaded l;
  load_only(l, {fake("fake_good"), path});
  const loom_plugin_record_t* good = find_path(l, fake("fake_good"));
  ASSERT_NE(good, nullptr);
  EXPECT_TRUE(good->loaded) << "the good plugin must still load";
  const loom_plugin_record_t* r = find_path(l, path);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->loaded);
  EXPECT_TRUE(r->explicit_request);
  std::string error = r->error;
  EXPECT_NE(error.find(fragment), std::string::npos) << "error was: " << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
}

}  // namespace

TEST(Loader, GoodPluginLoadsAndReportsWhatItRegistered) {
  Loaded l;
  load_only(l, {fake("fake_good")});
  ASSERT_EQ(l.records.size(), 1u);
  EXPECT_TRUE(l.records[0].loaded);
  EXPECT_STREQ(l.records[0].name, "fake");
  EXPECT_STREQ(l.records[0].version, "1.2.3");
  EXPECT_EQ(l.records[0].abi_version, LOOM_ABI_VERSION);
  EXPECT_STREQ(l.records[0].registered, "format fake; device fakehost; device fakeremote");
  EXPECT_STREQ(l.records[0].error, "");
}

TEST(Loader, WrongMajorIsRefusedNamingBothVersions) {
  expect_skipped(fake("fake_wrong_major"),
                 "built for plugin ABI 2.0, but this Loom speaks " + kOurAbi);
}

TEST(Loader, NewerMinorIsRefusedNamingBothVersions) {
  expect_skipped(fake("fake_newer_minor"), "needs plugin ABI 1." +
                                               std::to_string(LOOM_ABI_VERSION_MINOR + 1) +
                                               ", newer than this Loom's " + kOurAbi);
}

TEST(Loader, MissingEntrySymbol) {
  expect_skipped(fake("fake_no_entry"), "not a Loom plugin: it does not export loom_plugin_entry");
}

TEST(Loader, InitFailureCarriesThePluginsMessage) {
  expect_skipped(fake("fake_init_fail"), "initialisation failed: the fake plugin refuses to start");
}

TEST(Loader, DuplicateDeviceNameIsSkipped) {
  expect_skipped(fake("fake_duplicate"),
                 "device 'fakehost' is already registered by plugin 'fake'");
}

TEST(Loader, MissingDependencyNamesTheLibrary) {
  expect_skipped(fake("fake_missing_dep"), "libloom_fake_dep.so");
  Loaded l;
  load_only(l, {fake("fake_missing_dep")});
  EXPECT_NE(std::string(l.records[0].error).find("a library it needs is missing"),
            std::string::npos)
      << l.records[0].error;
}

TEST(Loader, TextFileAndTruncatedPluginAreNotSharedLibraries) {
  fs::create_directories(TEST_TMP_DIR);
  std::string bogus = std::string(TEST_TMP_DIR) + "/bogus.so";
  std::ofstream(bogus) << "this is not a shared library\n";
  expect_skipped(bogus, "not a shared library (no ELF header)");

  std::string truncated = std::string(TEST_TMP_DIR) + "/truncated.so";
  std::ifstream in(fake("fake_good"), std::ios::binary);
  std::vector<char> bytes(4096);
  in.read(bytes.data(), bytes.size());
  std::ofstream(truncated, std::ios::binary).write(bytes.data(), in.gcount());
  Loaded l;
  load_only(l, {truncated});
  ASSERT_EQ(l.records.size(), 1u);
  EXPECT_FALSE(l.records[0].loaded);
  EXPECT_NE(std::string(l.records[0].error).find("truncated shared library"), std::string::npos)
      << l.records[0].error;
}

TEST(Loader, MissingExplicitPathIsRecorded) {
  Loaded l;
  load_only(l, {std::string(TEST_TMP_DIR) + "/does-not-exist.so"});
  ASSERT_EQ(l.records.size(), 1u);
  EXPECT_FALSE(l.records[0].loaded);
  EXPECT_TRUE(l.records[0].explicit_request);
  EXPECT_STREQ(l.records[0].error, "no such file or directory");
}

TEST(Loader, DirectoryLoadsEverySharedObjectInIt) {
  Loaded l;
  load_only(l, {std::string(FAKE_DIR) + "/fake_good"});
  ASSERT_EQ(l.records.size(), 1u);
  EXPECT_TRUE(l.records[0].loaded);
}

TEST(Loader, SameFileTwiceLoadsOnce) {
  Loaded l;
  load_only(l, {fake("fake_good"), fake("fake_good")});
  EXPECT_EQ(l.records.size(), 1u);
}

TEST(Loader, EnvironmentPathIsHonoured) {
  std::string dir = std::string(FAKE_DIR) + "/fake_good";
  setenv("LOOM_PLUGIN_PATH", dir.c_str(), 1);
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.use_env_path = true;
  loom_runtime_t* rt = nullptr;
  ASSERT_EQ(loom_runtime_create(&o, &rt), nullptr);
  unsetenv("LOOM_PLUGIN_PATH");
  ASSERT_EQ(loom_runtime_num_plugins(rt), 1u);
  loom_plugin_record_t r{};
  r.struct_size = sizeof r;
  ASSERT_EQ(loom_runtime_plugin(rt, 0, &r), nullptr);
  EXPECT_TRUE(r.loaded);
  EXPECT_FALSE(r.explicit_request);
  loom_runtime_destroy(rt);
}
