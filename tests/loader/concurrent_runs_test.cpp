// Concurrent runs of one session on real plugins (loom_session_options_t::max_concurrent_runs):
// the bundled digits model (Conv, Gemm, Softmax, ArgMax; a symbolic batch, so plans by shape)
// run from 4 threads at once on every device set built here must give, bit for bit, what a
// one-thread session gives for the same inputs: each replica runs with one thread too
// (threads 4 split over 4 runs), so the kernels reduce in the same order.
#include <gtest/gtest.h>
#include <loom/loom.h>

#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Outputs {
  std::vector<uint8_t> probabilities, digit;
  bool operator==(const Outputs&) const = default;
};

class ConcurrentRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* paths[] = {REAL_PLUGIN_DIR};
    loom_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.num_plugin_paths = 1;
    o.plugin_paths = paths;
    o.log_level = LOOM_LOG_ERROR;
    ASSERT_EQ(loom_runtime_create(&o, &rt_), nullptr);
    loom_status_t* status = loom_model_load(rt_, DIGITS_MODEL, &model_);
    ASSERT_EQ(status, nullptr) << loom_status_message(status);
  }
  void TearDown() override {
    loom_model_free(model_);
    loom_runtime_destroy(rt_);
  }

  // "cpu" and "<family>,cpu" for every other available device.
  std::vector<std::string> device_sets() {
    std::set<std::string> families;
    loom_runtime_list_devices(
        rt_,
        [](void* user, const char* family, const loom_device_info_t* info) {
          if (info->available) static_cast<std::set<std::string>*>(user)->insert(family);
        },
        &families);
    std::vector<std::string> sets;
    if (!families.count("cpu")) return sets;
    sets.push_back("cpu");
    for (const std::string& f : families)
      if (f != "cpu") sets.push_back(f + ",cpu");
    return sets;
  }

  loom_session_t* create(const std::string& devices, int32_t threads, int32_t concurrent) {
    loom_session_options_t so{};
    so.struct_size = sizeof so;
    so.devices = devices.c_str();
    so.threads = threads;
    so.max_concurrent_runs = concurrent;
    loom_session_t* s = nullptr;
    loom_status_t* status = loom_session_create(rt_, model_, &so, &s);
    EXPECT_EQ(status, nullptr) << devices << ": " << (status ? loom_status_message(status) : "");
    loom_status_free(status);
    return s;
  }

  static std::string run(loom_session_t* s, const std::vector<float>& image, Outputs& out) {
    loom_host_tensor_t in{};
    in.struct_size = sizeof in;
    in.dtype = LOOM_DTYPE_FLOAT32;
    in.rank = 4;
    in.dims[0] = static_cast<int64_t>(image.size() / 64);
    in.dims[1] = 1;
    in.dims[2] = 8;
    in.dims[3] = 8;
    in.data = const_cast<float*>(image.data());
    in.byte_size = image.size() * sizeof(float);
    const char* names[] = {"image"};
    loom_host_tensor_t outs[2] = {};
    if (loom_status_t* status = loom_session_run(s, 1, names, &in, 2, outs)) {
      std::string m = loom_status_message(status);
      loom_status_free(status);
      return m;
    }
    auto bytes = [](const loom_host_tensor_t& t) {
      const auto* p = static_cast<const uint8_t*>(t.data);
      return std::vector<uint8_t>(p, p + t.byte_size);
    };
    out.probabilities = bytes(outs[0]);
    out.digit = bytes(outs[1]);
    loom_host_tensor_release(&outs[0]);
    loom_host_tensor_release(&outs[1]);
    return "";
  }

  loom_runtime_t* rt_ = nullptr;
  loom_model_t* model_ = nullptr;
};

TEST_F(ConcurrentRuns, MatchOneThreadOnEveryDeviceSet) {
  // Batches of 1 to 5 images: several input shapes, so several plans, in flight at once.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pixel(0.f, 16.f);
  std::vector<std::vector<float>> inputs;
  for (int i = 0; i < 8; ++i) {
    std::vector<float> image(static_cast<size_t>(64 * (1 + i % 5)));
    for (float& p : image) p = pixel(rng);
    inputs.push_back(std::move(image));
  }
  const std::vector<std::string> sets = device_sets();
  ASSERT_FALSE(sets.empty()) << "no cpu device in " << REAL_PLUGIN_DIR;
  for (const std::string& devices : sets) {
    SCOPED_TRACE(devices);
    loom_session_t* reference = create(devices, 1, 1);
    ASSERT_NE(reference, nullptr);
    std::vector<Outputs> expected(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      ASSERT_EQ(run(reference, inputs[i], expected[i]), "");
    loom_session_destroy(reference);

    loom_session_t* shared = create(devices, 4, 4);
    ASSERT_NE(shared, nullptr);
    std::vector<std::string> errors(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (size_t r = 0; r < 12 && errors[t].empty(); ++r) {
          const size_t i = (t * 3 + r) % inputs.size();
          Outputs got;
          errors[t] = run(shared, inputs[i], got);
          if (errors[t].empty() && !(got == expected[i]))
            errors[t] = "thread " + std::to_string(t) + ", input " + std::to_string(i) +
                        ": outputs differ from the one-thread session's";
        }
      });
    for (auto& th : threads) th.join();
    for (const std::string& e : errors) EXPECT_EQ(e, "");
    loom_session_destroy(shared);
  }
}

// Long concurrent use must not grow memory: 2,000 runs from 4 threads after a warm-up leave the
// resident set where the warm-up left it (a leak of one input, 256 bytes a run, would add 500 KiB;
// a leaked plan far more).
TEST_F(ConcurrentRuns, TwoThousandRunsLeaveMemoryFlat) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // ASan's quarantine and TSan's shadow and history grow the resident set by design.
  GTEST_SKIP() << "the resident set means nothing under a sanitizer";
#endif
  auto resident_kib = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1L;
  };
  loom_session_t* shared = create("cpu", 4, 4);
  ASSERT_NE(shared, nullptr);
  std::vector<float> image(64 * 2, 1.5f);
  auto hammer = [&](size_t runs_each) {
    std::vector<std::thread> threads;
    std::vector<std::string> errors(4);
    for (size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        Outputs out;
        for (size_t r = 0; r < runs_each && errors[t].empty(); ++r)
          errors[t] = run(shared, image, out);
      });
    for (auto& th : threads) th.join();
    for (const std::string& e : errors) EXPECT_EQ(e, "");
  };
  hammer(100);  // replicas compiled, allocator pools warm
  const long before = resident_kib();
  hammer(500);
  const long after = resident_kib();
  ASSERT_GT(before, 0);
  EXPECT_LT(after - before, 2048) << "resident KiB before " << before << ", after " << after;
  loom_session_destroy(shared);
}

}  // namespace
