// Plugin paths and plugins that are hostile or careless: files that are not regular files,
// symlink loops, world-writable locations, relative LOOM_PLUGIN_PATH entries, and plugins that
// exit or crash while they load. Each must end in one clear line naming the path, never a hang.
#include <gtest/gtest.h>
#include <loom/loom.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string fake(const std::string& name) {
  return std::string(FAKE_DIR) + "/" + name + "/" + name + ".so";
}

// A fresh directory per test: ctest runs the tests of this binary in parallel.
std::string test_dir() {
  std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::path dir = fs::path(TEST_TMP_DIR) / ("hostile-" + test);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

struct Loaded {
  loom_runtime_t* rt = nullptr;
  std::vector<loom_plugin_record_t> records;
  std::vector<std::string> log;  // warnings and errors the loader logged
  ~Loaded() { loom_runtime_destroy(rt); }

  const loom_plugin_record_t* find(const std::string& path) const {
    for (const auto& r : records)
      if (r.path == path) return &r;
    return nullptr;
  }
  bool logged(const std::string& fragment) const {
    for (const std::string& line : log)
      if (line.find(fragment) != std::string::npos) return true;
    return false;
  }
  std::string all_log() const {
    std::string s;
    for (const std::string& line : log) s += line + "\n";
    return s;
  }
};

void create(Loaded& out, const std::vector<std::string>& paths, bool use_env = false) {
  std::vector<const char*> ptrs;
  for (const std::string& p : paths) ptrs.push_back(p.c_str());
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.num_plugin_paths = ptrs.size();
  o.plugin_paths = ptrs.data();
  o.use_env_path = use_env;
  o.log_level = LOOM_LOG_WARNING;
  o.log_user = &out.log;
  o.log_fn = [](void* user, loom_log_level_t, const char*, const char* message) {
    static_cast<std::vector<std::string>*>(user)->push_back(message);
  };
  ASSERT_EQ(loom_runtime_create(&o, &out.rt), nullptr);
  for (size_t i = 0; i < loom_runtime_num_plugins(out.rt); ++i) {
    loom_plugin_record_t r{};
    r.struct_size = sizeof r;
    ASSERT_EQ(loom_runtime_plugin(out.rt, i, &r), nullptr);
    out.records.push_back(r);
  }
}

// The record of `path` was skipped with an error holding `fragment`, on one line.
void expect_error(const Loaded& l, const std::string& path, const std::string& fragment) {
  const loom_plugin_record_t* r = l.find(path);
  ASSERT_NE(r, nullptr) << "no record for " << path;
  EXPECT_FALSE(r->loaded);
  std::string error = r->error;
  EXPECT_NE(error.find(fragment), std::string::npos) << "error was: " << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  EXPECT_TRUE(l.logged(path)) << "the log must name the path:\n" << l.all_log();
}

}  // namespace

TEST(HostilePlugin, FifoGivenAsPluginIsRefusedWithoutBlocking) {
  std::string fifo = test_dir() + "/x.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  Loaded l;
  create(l, {fifo, fake("fake_good")});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  expect_error(l, fifo, "a FIFO (named pipe), not a regular file");
  ASSERT_NE(l.find(fake("fake_good")), nullptr);
  EXPECT_TRUE(l.find(fake("fake_good"))->loaded) << "the other plugins still load";
}

TEST(HostilePlugin, FifoInPluginDirectoryIsReportedNotOpened) {
  std::string dir = test_dir();
  ASSERT_EQ(::mkfifo((dir + "/a.so").c_str(), 0600), 0);
  fs::copy_file(fake("fake_good"), dir + "/b.so");
  Loaded l;
  create(l, {dir});
  expect_error(l, dir + "/a.so", "a FIFO (named pipe)");
  ASSERT_NE(l.find(dir + "/b.so"), nullptr);
  EXPECT_TRUE(l.find(dir + "/b.so")->loaded);
}

TEST(HostilePlugin, DevicesAndSocketsAreRefusedNamingWhatTheyAre) {
  std::string dir = test_dir();
  std::string sock_path = dir + "/s.so";
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  // Bound by a relative name: a build tree's absolute path may exceed sun_path's 108 bytes.
  fs::path cwd = fs::current_path();
  fs::current_path(dir);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", "s.so");
  const int bound = ::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  fs::current_path(cwd);
  ASSERT_EQ(bound, 0) << std::strerror(errno);
  Loaded l;
  create(l, {"/dev/null", sock_path});
  ::close(sock);
  expect_error(l, "/dev/null", "a character device, not a regular file");
  expect_error(l, sock_path, "a socket, not a regular file");
}

TEST(HostilePlugin, SymlinkLoopIsReportedAsALoop) {
  std::string dir = test_dir();
  fs::create_symlink(dir + "/b.so", dir + "/a.so");
  fs::create_symlink(dir + "/a.so", dir + "/b.so");
  Loaded explicit_file;
  create(explicit_file, {dir + "/a.so"});
  expect_error(explicit_file, dir + "/a.so", "symlink loop");
  EXPECT_EQ(std::string(explicit_file.find(dir + "/a.so")->error).find("no such file"),
            std::string::npos);
  Loaded in_dir;
  create(in_dir, {dir});
  expect_error(in_dir, dir + "/a.so", "symlink loop");
  expect_error(in_dir, dir + "/b.so", "symlink loop");
}

TEST(HostilePlugin, WorldWritableDirectoryAndFileAreWarnedAbout) {
  std::string dir = test_dir();
  fs::copy_file(fake("fake_good"), dir + "/good.so");
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  ASSERT_EQ(::chmod((dir + "/good.so").c_str(), 0666), 0);
  Loaded l;
  create(l, {dir});
  EXPECT_TRUE(l.logged("plugin directory " + dir + " is world-writable")) << l.all_log();
  EXPECT_TRUE(l.logged("plugin file " + dir + "/good.so is world-writable")) << l.all_log();
  const loom_plugin_record_t* r = l.find(dir + "/good.so");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->loaded) << "a warning, not a refusal: " << r->error;
  ::chmod(dir.c_str(), 0755);
}

TEST(HostilePlugin, PrivateDirectoryGivesNoWarning) {
  std::string dir = test_dir();
  fs::copy_file(fake("fake_good"), dir + "/good.so");
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir + "/good.so").c_str(), 0644), 0);
  Loaded l;
  create(l, {dir});
  EXPECT_TRUE(l.log.empty()) << l.all_log();
  ASSERT_EQ(l.records.size(), 1u);
  EXPECT_TRUE(l.records[0].loaded);
}

TEST(HostilePlugin, RelativePluginPathEntriesAreIgnored) {
  // The current directory holds a plugin: "." must not load it.
  fs::path cwd = fs::current_path();
  ASSERT_EQ(::chdir((std::string(FAKE_DIR) + "/fake_duplicate").c_str()), 0);
  std::string env = std::string(".:plugins:") + FAKE_DIR + "/fake_good";
  setenv("LOOM_PLUGIN_PATH", env.c_str(), 1);
  Loaded l;
  create(l, {}, true);
  unsetenv("LOOM_PLUGIN_PATH");
  fs::current_path(cwd);
  EXPECT_TRUE(l.logged("LOOM_PLUGIN_PATH entry '.' is relative and is ignored")) << l.all_log();
  EXPECT_TRUE(l.logged("LOOM_PLUGIN_PATH entry 'plugins' is relative and is ignored"))
      << l.all_log();
  ASSERT_EQ(l.records.size(), 1u) << "only the absolute entry is searched";
  EXPECT_STREQ(l.records[0].name, "fake");
  EXPECT_TRUE(l.records[0].loaded);
}

TEST(HostilePluginDeathTest, PluginThatCallsExitZeroIsNamedAndTheExitIsNonZero) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Loaded l;
        create(l, {fake("fake_exit")});
      },
      ::testing::ExitedWithCode(1),
      "loom: plugin .*/fake_exit\\.so called exit\\(0\\) while loading; the process exits with "
      "status 1 instead");
}

TEST(HostilePlugin, IsolatedProbeSkipsPluginsThatCrashOrExit) {
  setenv("LOOM_ISOLATE_PLUGIN_PROBE", "1", 1);
  Loaded l;
  create(l, {fake("fake_crash"), fake("fake_exit"), fake("fake_good")});
  unsetenv("LOOM_ISOLATE_PLUGIN_PROBE");
  expect_error(l, fake("fake_crash"),
               "plugin crashed while loading (SIGSEGV) in an isolated probe; skipped");
  expect_error(l, fake("fake_exit"), "plugin called exit() while loading in an isolated probe");
  ASSERT_NE(l.find(fake("fake_good")), nullptr);
  EXPECT_TRUE(l.find(fake("fake_good"))->loaded) << l.find(fake("fake_good"))->error;
}

// Costs the probe's 10 s timeout.
TEST(HostilePlugin, IsolatedProbeSkipsAPluginThatHangs) {
  setenv("LOOM_ISOLATE_PLUGIN_PROBE", "1", 1);
  const auto start = std::chrono::steady_clock::now();
  Loaded l;
  create(l, {fake("fake_hang"), fake("fake_good")});
  unsetenv("LOOM_ISOLATE_PLUGIN_PROBE");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  expect_error(l, fake("fake_hang"),
               "plugin did not finish loading within 10 s in an isolated probe (killed it); "
               "skipped");
  ASSERT_NE(l.find(fake("fake_good")), nullptr);
  EXPECT_TRUE(l.find(fake("fake_good"))->loaded);
}
