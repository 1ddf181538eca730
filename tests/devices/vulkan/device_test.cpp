// Device-level behaviour: listing, options, the on-disk pipeline cache, fusion results and
// error reporting. Kernel correctness is in the per-family tests.
#include <loom/loom.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "vulkan_test_support.hpp"

// LeakSanitizer (asan preset): allocations the Vulkan loader and lavapipe's LLVM JIT keep until
// process exit are the driver's, not ours. Only driver libraries are listed, so a leak in Loom
// or the vulkan plugin is still reported. Unused outside sanitizer builds.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libvulkan_lvp.so\nleak:libLLVM\nleak:libvulkan.so\n";
}

namespace loom::device_testing {

namespace {
struct Listing {
  bool found = false;
  bool available = false;
  std::string reason, description;
};

Listing list_vulkan() {
  Listing l;
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  std::string dir = plugin_dir();
  const char* paths[] = {dir.c_str()};
  o.num_plugin_paths = 1;
  o.plugin_paths = paths;
  o.log_level = LOOM_LOG_ERROR;
  loom_runtime_t* rt = nullptr;
  if (loom_status_t* s = loom_runtime_create(&o, &rt)) {
    l.reason = loom_status_message(s);
    loom_status_free(s);
    return l;
  }
  loom_runtime_list_devices(
      rt,
      [](void* user, const char* family, const loom_device_info_t* info) {
        auto* out = static_cast<Listing*>(user);
        if (std::string(family) != "vulkan" || std::string(info->name) != "vulkan:0") return;
        out->found = true;
        out->available = info->available;
        out->reason = info->unavailable_reason;
        out->description = info->description;
      },
      &l);
  loom_runtime_destroy(rt);
  if (!l.found && l.reason.empty()) l.reason = "the vulkan plugin did not load";
  return l;
}
}  // namespace

std::string vulkan_unavailable_reason() {
  static std::once_flag once;
  static std::string reason;
  std::call_once(once, [] {
    Listing l = list_vulkan();
    reason = l.found && l.available ? "" : (l.reason.empty() ? "unavailable" : l.reason);
  });
  return reason;
}

namespace {

TEST(VulkanDevice, ListsItsInstancesWithCapabilities) {
  Listing l = list_vulkan();
  ASSERT_TRUE(l.found) << l.reason;
  if (!l.available) {
    // Unavailable is reported, with a reason, never a crash.
    EXPECT_FALSE(l.reason.empty());
    GTEST_SKIP() << "vulkan:0 unavailable: " << l.reason;
  }
  for (const char* part : {"subgroup", "fp16 storage", "int8 storage", "device-local", "Vulkan 1."})
    EXPECT_NE(l.description.find(part), std::string::npos) << part << " in " << l.description;
}

ModelBuilder small_conv_model() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 3, 9, 9});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {4, 3, 3, 3}, 3));
  m.node("Conv", {"x", "w"}, {"c"}).ints("pads", {1, 1, 1, 1});
  m.node("Relu", {"c"}, {"y"});
  m.output("y");
  return m;
}

TEST(VulkanDevice, UnknownOptionIsAClearError) {
  LOOM_SKIP_WITHOUT_VULKAN();
  auto path = small_conv_model().save();
  try {
    run_model(path, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 9, 9}, 1)}},
              on_vulkan("colour=blue"));
    ADD_FAILURE() << "an unknown option was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option 'colour'"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// A cache directory of the test's own: other test processes share ctest's XDG_CACHE_HOME and
// write pipeline caches there at the same time.
std::filesystem::path private_cache_home(const char* test) {
  std::filesystem::path home =
      std::filesystem::temp_directory_path() /
      ("loom-vulkan-" + std::string(test) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home);
  ::setenv("XDG_CACHE_HOME", home.c_str(), 1);
  return home;
}

TEST(VulkanDevice, SavesThePipelineCacheUnderXdgCacheHome) {
  LOOM_SKIP_WITHOUT_VULKAN();
  std::filesystem::path home = private_cache_home("saves");
  std::filesystem::path dir = home / "loom" / "vulkan";
  expect_matches_cpu(small_conv_model(),
                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 9, 9}, 1)}}, on_vulkan());
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".bin" && e.file_size() > 0) ++files;
  EXPECT_EQ(files, 1u);
  // A second start reads it back and still computes the same.
  expect_matches_cpu(small_conv_model(),
                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 9, 9}, 2)}}, on_vulkan());
  std::filesystem::remove_all(home);
}

TEST(VulkanDevice, CorruptPipelineCacheIsIgnored) {
  LOOM_SKIP_WITHOUT_VULKAN();
  std::filesystem::path home = private_cache_home("corrupt");
  std::filesystem::path dir = home / "loom" / "vulkan";
  expect_matches_cpu(small_conv_model(),
                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 9, 9}, 1)}}, on_vulkan());
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::filesystem::resize_file(e.path(), 10);
  }
  expect_matches_cpu(small_conv_model(),
                     {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 9, 9}, 4)}}, on_vulkan());
  std::filesystem::remove_all(home);
}

TEST(VulkanDevice, GatherIndexOutOfRangeIsReportedNotWrong) {
  LOOM_SKIP_WITHOUT_VULKAN();
  ModelBuilder m;
  m.input("i", LOOM_DTYPE_INT64, {3});
  m.initializer("table", random_tensor(LOOM_DTYPE_FLOAT32, {5, 4}, 1));
  m.node("Gather", {"table", "i"}, {"y"});
  m.output("y");
  auto path = m.save();
  try {
    run_model(path, {{"i", int64_tensor({3}, {0, 7, 1})}}, on_vulkan());
    ADD_FAILURE() << "an out-of-range index was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// Runs one session several times; returns the first output of each run.
std::vector<Tensor> run_session_repeatedly(const std::filesystem::path& model,
                                           const std::vector<Tensor>& xs, const char* devices) {
  loom_runtime_options_t ro{};
  ro.struct_size = sizeof ro;
  std::string dir = plugin_dir();
  const char* paths[] = {dir.c_str()};
  ro.num_plugin_paths = 1;
  ro.plugin_paths = paths;
  ro.log_level = LOOM_LOG_ERROR;
  loom_runtime_t* rt = nullptr;
  loom_model_t* m = nullptr;
  loom_session_t* s = nullptr;
  std::vector<Tensor> results;
  auto ok = [](loom_status_t* st) {
    std::string msg = st ? loom_status_message(st) : "";
    loom_status_free(st);
    EXPECT_EQ(msg, "");
    return msg.empty();
  };
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = devices;
  so.no_fallback = true;
  so.device_options = "";
  if (ok(loom_runtime_create(&ro, &rt)) && ok(loom_model_load(rt, model.c_str(), &m)) &&
      ok(loom_session_create(rt, m, &so, &s))) {
    for (const Tensor& x : xs) {
      const char* names[] = {"x"};
      loom_host_tensor_t in = x.view();
      loom_host_tensor_t out{};
      out.struct_size = sizeof out;
      if (!ok(loom_session_run(s, 1, names, &in, 1, &out))) break;
      Tensor t;
      t.dtype = out.dtype;
      t.shape.assign(out.dims, out.dims + out.rank);
      t.bytes.assign(static_cast<uint8_t*>(out.data),
                     static_cast<uint8_t*>(out.data) + out.byte_size);
      loom_host_tensor_release(&out);
      results.push_back(std::move(t));
    }
  }
  if (s) loom_session_destroy(s);
  if (m) loom_model_free(m);
  if (rt) loom_runtime_destroy(rt);
  return results;
}

TEST(VulkanDevice, RecordedCommandBufferSeesEachRunsInputs) {
  LOOM_SKIP_WITHOUT_VULKAN();
  // The command buffer is recorded once per compiled subgraph and resubmitted: each run of one
  // session must compute on its own inputs.
  auto path = small_conv_model().save();
  std::vector<Tensor> xs;
  for (uint32_t seed = 1; seed <= 3; ++seed)
    xs.push_back(random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 9, 9}, seed));
  auto on_gpu = run_session_repeatedly(path, xs, "vulkan");
  auto on_cpu = run_session_repeatedly(path, xs, "cpu");
  std::filesystem::remove(path);
  ASSERT_EQ(on_gpu.size(), xs.size());
  ASSERT_EQ(on_cpu.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_EQ(compare(on_gpu[i], on_cpu[i]), "") << "run " << i;
}

}  // namespace
}  // namespace loom::device_testing
