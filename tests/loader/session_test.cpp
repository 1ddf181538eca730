// Sessions end to end through the public C API, with the fake format and the two fake devices
// (fakehost: host memory, Relu+Neg; fakeremote: device memory, Neg only). No real plugin needed.
#include <loom/loom.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string plugin = std::string(FAKE_DIR) + "/fake_good/fake_good.so";
    const char* paths[] = {plugin.c_str()};
    loom_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.num_plugin_paths = 1;
    o.plugin_paths = paths;
    o.log_level = LOOM_LOG_ERROR;
    ASSERT_EQ(loom_runtime_create(&o, &rt_), nullptr);
    std::filesystem::create_directories(TEST_TMP_DIR);
  }
  void TearDown() override {
    loom_session_destroy(session_);
    loom_model_free(model_);
    loom_runtime_destroy(rt_);
  }

  // Files are named after the test: ctest runs the tests of this binary in parallel.
  std::string write_model(const std::string& name, const std::string& text) {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string path = std::string(TEST_TMP_DIR) + "/" + test + "-" + name;
    std::ofstream(path) << text;
    return path;
  }

  // Returns the error message, or "" on success.
  std::string open(const std::string& ops, const char* devices, bool no_fallback = false,
                   const char* placements = nullptr, const char* cost_model = nullptr) {
    loom_status_t* s = loom_model_load(rt_, write_model("m.fake", "FAKEMODEL " + ops).c_str(), &model_);
    if (s) return take(s);
    loom_session_options_t so{};
    so.struct_size = sizeof so;
    so.devices = devices;
    so.no_fallback = no_fallback;
    so.placements = placements;
    so.cost_model = cost_model;
    return take(loom_session_create(rt_, model_, &so, &session_));
  }

  std::string run(std::vector<float> x, std::vector<float>& y, const char* name = "x",
                  loom_dtype_t dtype = LOOM_DTYPE_FLOAT32) {
    loom_host_tensor_t in{};
    in.struct_size = sizeof in;
    in.dtype = dtype;
    in.rank = 1;
    in.dims[0] = static_cast<int64_t>(x.size());
    in.data = x.data();
    in.byte_size = x.size() * 4;
    const char* names[] = {name};
    loom_host_tensor_t out{};
    std::string err = take(loom_session_run(session_, 1, names, &in, 1, &out));
    if (!err.empty()) return err;
    EXPECT_EQ(out.dtype, LOOM_DTYPE_FLOAT32);
    EXPECT_EQ(out.rank, 1);
    y.assign(static_cast<float*>(out.data), static_cast<float*>(out.data) + out.dims[0]);
    loom_host_tensor_release(&out);
    return "";
  }

  static std::string take(loom_status_t* s) {
    if (!s) return "";
    std::string m = loom_status_message(s);
    loom_status_free(s);
    return m.empty() ? "(empty error)" : m;
  }

  std::string explain() {
    char* text = nullptr;
    EXPECT_EQ(loom_session_explain(session_, &text), nullptr);
    std::string t = text ? text : "";
    loom_string_free(text);
    return t;
  }

  loom_runtime_t* rt_ = nullptr;
  loom_model_t* model_ = nullptr;
  loom_session_t* session_ = nullptr;
};

TEST_F(SessionTest, RunsOnOneDevice) {
  ASSERT_EQ(open("Relu Neg", "fakehost"), "");
  EXPECT_EQ(loom_model_num_nodes(model_), 2u);
  EXPECT_STREQ(loom_model_format(model_), "fake");
  std::vector<float> y;
  ASSERT_EQ(run({-1, 2, -3}, y), "");
  EXPECT_EQ(y, (std::vector<float>{0, -2, 0}));
  // A different length compiles a new plan and still gives the right answer.
  ASSERT_EQ(run({4, -5}, y), "");
  EXPECT_EQ(y, (std::vector<float>{-4, 0}));
}

// Pinned to fakeremote, the Neg nodes run there and every boundary is a real copy.
TEST_F(SessionTest, SplitsAcrossDevicesAndCopiesBetweenThem) {
  ASSERT_EQ(open("Relu Neg Neg Relu Neg", "fakeremote,fakehost", false, "Neg=fakeremote"), "");
  std::vector<float> y;
  ASSERT_EQ(run({-1, 2, -3, 4}, y), "");
  EXPECT_EQ(y, (std::vector<float>{0, -2, 0, -4}));
  std::string plan = explain();
  EXPECT_NE(plan.find("subgraph 0 on fakehost: 1 nodes (Relu x1)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("subgraph 1 on fakeremote: 2 nodes (Neg x2)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("subgraph 3 on fakeremote"), std::string::npos) << plan;
  EXPECT_NE(plan.find("from fakehost (copy, 16 bytes)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("x [4] from the application (zero-copy)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("from fakeremote (copy, 16 bytes)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("fallback: Relu node 'n0' runs on fakehost (fakeremote: fake device has no Relu)"),
            std::string::npos) << plan;
}

// Without pins the cost model sees two-node islands on a copy-only device that save nothing:
// they join the host device, and --explain says why.
TEST_F(SessionTest, CheapIslandsJoinTheirNeighbours) {
  ASSERT_EQ(open("Relu Neg Neg Relu Neg", "fakeremote,fakehost"), "");
  std::vector<float> y;
  ASSERT_EQ(run({-1, 2, -3, 4}, y), "");
  EXPECT_EQ(y, (std::vector<float>{0, -2, 0, -4}));
  std::string plan = explain();
  EXPECT_NE(plan.find("subgraph 0 on fakehost: 5 nodes"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("subgraph 1"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Neg node 'n1' runs on fakehost instead of fakeremote: its island of 2 nodes"),
            std::string::npos) << plan;
  // Making transfers and launches free keeps them on the preferred device.
  loom_session_destroy(session_);
  session_ = nullptr;
  loom_model_free(model_);
  model_ = nullptr;
  ASSERT_EQ(open("Relu Neg Neg Relu Neg", "fakeremote,fakehost", false, nullptr,
                 "fakeremote.transfer_latency_us=0;fakeremote.launch_us=0"), "");
  plan = explain();
  EXPECT_NE(plan.find("subgraph 1 on fakeremote: 2 nodes (Neg x2)"), std::string::npos) << plan;
}

TEST_F(SessionTest, PlacementsAndCostOverridesAreChecked) {
  std::string err = open("Relu Neg", "fakehost", false, "Neg=gpu");
  EXPECT_NE(err.find("placement 'Neg=gpu' names device 'gpu', which is not among the session's devices (fakehost)"),
            std::string::npos) << err;
  loom_model_free(model_);
  model_ = nullptr;
  // The fake models' input is x [N]: a refusal on the declared shapes may be one the run's
  // shapes lift, so each run's plan asks again and the run fails with the same message.
  ASSERT_EQ(open("Relu Neg", "fakeremote,fakehost", false, "n0=fakeremote"), "");
  std::vector<float> y;
  err = run({1, 2}, y);
  EXPECT_NE(err.find("Relu node 'n0' (pinned to fakeremote, which does not take it: fake device has no Relu)"),
            std::string::npos) << err;
  EXPECT_NE(explain().find("on the declared shapes: 1 nodes are supported by none"),
            std::string::npos) << explain();
  loom_session_destroy(session_);
  session_ = nullptr;
  loom_model_free(model_);
  model_ = nullptr;
  err = open("Relu Neg", "fakehost", false, nullptr, "fakehost.speed=1");
  EXPECT_NE(err.find("unknown key 'speed'"), std::string::npos) << err;
  loom_model_free(model_);
  model_ = nullptr;
  err = open("Relu Neg", "fakehost", false, "Ne?=fakehost;nomatch*=fakehost");
  EXPECT_EQ(err, "");
}

TEST_F(SessionTest, PlanAsGraphviz) {
  ASSERT_EQ(open("Relu Neg Neg", "fakeremote,fakehost", false, "Neg=fakeremote"), "");
  std::vector<float> y;
  ASSERT_EQ(run({-1, 2}, y), "");
  char* dot = nullptr;
  ASSERT_EQ(loom_session_plan_dot(session_, &dot), nullptr);
  std::string text = dot;
  loom_string_free(dot);
  EXPECT_EQ(text.rfind("digraph loom_plan {", 0), 0u) << text;
  EXPECT_NE(text.find("subgraph cluster_0 {"), std::string::npos) << text;
  EXPECT_NE(text.find("label=\"subgraph 1: fakeremote (2 nodes"), std::string::npos) << text;
  EXPECT_NE(text.find("n0 -> n1 [style=bold, color=red, label=\"8 B\"]"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(take(loom_session_plan_dot(nullptr, &dot)).find("NULL argument"), std::string::npos);
}

TEST_F(SessionTest, NoFallbackListsEveryUnsupportedNode) {
  // Asked again with the run's shapes ([N] on the declared ones), the refusal stands.
  ASSERT_EQ(open("Relu Neg Relu", "fakeremote", true), "");
  std::vector<float> y;
  std::string err = run({1, 2}, y);
  EXPECT_NE(err.find("2 nodes are supported by none of the devices (fallback to cpu is off)"), std::string::npos) << err;
  EXPECT_NE(err.find("Relu node 'n0' (fakeremote: fake device has no Relu)"), std::string::npos) << err;
  EXPECT_NE(err.find("Relu node 'n2'"), std::string::npos) << err;
}

TEST_F(SessionTest, UnknownDeviceNamesTheInstalledOnes) {
  std::string err = open("Relu", "nope");
  EXPECT_NE(err.find("device 'nope' is not installed (installed devices: fakehost, fakeremote)"), std::string::npos) << err;
  // The Debian package to install, and no far-fetched guess.
  EXPECT_NE(err.find("install its plugin package (loom-device-nope) or pass --plugin"), std::string::npos) << err;
  EXPECT_EQ(err.find("did you mean"), std::string::npos) << err;
  loom_model_free(model_);
  model_ = nullptr;
  err = open("Relu", "fakehots");
  EXPECT_NE(err.find("did you mean 'fakehost'?"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

TEST_F(SessionTest, UnknownOpsAreAllReportedWithDomainAndVersion) {
  std::string err = open("Relu Frobnicate Neg Twiddle", "fakehost");
  EXPECT_NE(err.find("Frobnicate (domain ai.onnx, opset 13)"), std::string::npos) << err;
  EXPECT_NE(err.find("Twiddle (domain ai.onnx, opset 13)"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);
}

TEST_F(SessionTest, BadInputsGiveClearErrors) {
  ASSERT_EQ(open("Neg", "fakehost"), "");
  std::vector<float> y;
  EXPECT_NE(run({1}, y, "nope").find("the model has no input 'nope' (its inputs: x)"), std::string::npos);
  EXPECT_NE(run({1}, y, "x", LOOM_DTYPE_INT32).find("input 'x' is int32 but the model expects float32"), std::string::npos);
  loom_host_tensor_t out{};
  EXPECT_NE(take(loom_session_run(session_, 0, nullptr, nullptr, 1, &out)).find("input 'x' is required"), std::string::npos);
}

TEST_F(SessionTest, FilesInNoKnownFormatAreRefused) {
  std::string path = write_model("junk.bin", "\x01\x02 not a model");
  std::string err = take(loom_model_load(rt_, path.c_str(), &model_));
  EXPECT_NE(err.find("is not in a model format the installed plugins recognize (installed formats: fake)"), std::string::npos) << err;
  err = take(loom_model_load(rt_, (std::string(TEST_TMP_DIR) + "/missing.fake").c_str(), &model_));
  EXPECT_NE(err.find("cannot open model"), std::string::npos) << err;
}

TEST_F(SessionTest, ModelMetadataAndSignature) {
  ASSERT_EQ(open("Relu", "fakehost"), "");
  ASSERT_EQ(loom_model_num_inputs(model_), 1u);
  loom_io_info_t io{};
  ASSERT_EQ(loom_model_input(model_, 0, &io), nullptr);
  EXPECT_STREQ(io.name, "x");
  EXPECT_EQ(io.rank, 1);
  EXPECT_EQ(io.dims[0], -1);
  EXPECT_STREQ(io.dim_params[0], "N");
  ASSERT_EQ(loom_model_num_metadata(model_), 1u);
  const char *k, *v;
  loom_model_metadata(model_, 0, &k, &v);
  EXPECT_STREQ(k, "producer_name");
  EXPECT_STREQ(v, "fake");
}

// ---- loading from memory (loom_model_load_memory, plugin ABI 1.5) -------------------------

TEST_F(SessionTest, LoadsFromMemoryLikeFromAFile) {
  std::string bytes = "FAKEMODEL Relu Neg";
  ASSERT_EQ(take(loom_model_load_memory(rt_, bytes.data(), bytes.size(), nullptr, nullptr, &model_)), "");
  bytes.assign(bytes.size(), 'x');  // the core copied the bytes: the caller may reuse them
  EXPECT_STREQ(loom_model_format(model_), "fake");
  EXPECT_EQ(loom_model_num_nodes(model_), 2u);
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = "fakehost";
  ASSERT_EQ(take(loom_session_create(rt_, model_, &so, &session_)), "");
  std::vector<float> y;
  ASSERT_EQ(run({-1, 2}, y), "");
  EXPECT_EQ(y, (std::vector<float>{0, -2}));
}

TEST_F(SessionTest, LoadFromMemoryChecksItsArguments) {
  std::string bytes = "FAKEMODEL Relu";
  std::string err = take(loom_model_load_memory(rt_, bytes.data(), bytes.size(), "onnx", nullptr, &model_));
  EXPECT_NE(err.find("no format plugin named 'onnx' is loaded (installed formats: fake)"), std::string::npos) << err;
  err = take(loom_model_load_memory(rt_, bytes.data(), 0, nullptr, nullptr, &model_));
  EXPECT_NE(err.find("the model bytes are empty"), std::string::npos) << err;
  err = take(loom_model_load_memory(rt_, nullptr, 4, nullptr, nullptr, &model_));
  EXPECT_NE(err.find("NULL argument"), std::string::npos) << err;
  err = take(loom_model_load_memory(rt_, bytes.data(), bytes.size(), nullptr, "/nonexistent/dir", &model_));
  EXPECT_NE(err.find("base directory '/nonexistent/dir'"), std::string::npos) << err;
  std::string junk = "\x01\x02 not a model";
  err = take(loom_model_load_memory(rt_, junk.data(), junk.size(), nullptr, nullptr, &model_));
  EXPECT_NE(err.find("'<memory>' is not in a model format"), std::string::npos) << err;
  // Named explicitly, the format is used without probing.
  ASSERT_EQ(take(loom_model_load_memory(rt_, bytes.data(), bytes.size(), "fake", TEST_TMP_DIR, &model_)), "");
}

// A format plugin built for ABI 1.4 was promised a file it may open: it gets no bytes.
TEST(LoadFromMemory, RefusesFormatsOlderThanAbi15) {
  std::string plugin = std::string(FAKE_DIR) + "/fake_old_format/fake_old_format.so";
  const char* paths[] = {plugin.c_str()};
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.num_plugin_paths = 1;
  o.plugin_paths = paths;
  o.log_level = LOOM_LOG_ERROR;
  loom_runtime_t* rt = nullptr;
  ASSERT_EQ(loom_runtime_create(&o, &rt), nullptr);
  std::string bytes = "FAKEMODEL Relu";
  loom_model_t* model = nullptr;
  loom_status_t* s = loom_model_load_memory(rt, bytes.data(), bytes.size(), nullptr, nullptr, &model);
  ASSERT_NE(s, nullptr);
  std::string err = loom_status_message(s);
  EXPECT_EQ(loom_status_code(s), LOOM_ERROR_UNSUPPORTED);
  EXPECT_NE(err.find("built for a plugin ABI older than 1.5 and cannot load from memory"), std::string::npos) << err;
  loom_status_free(s);
  EXPECT_EQ(model, nullptr);
  loom_runtime_destroy(rt);
}

TEST(MaxThreads, IsTheSessionBound) {
  const int32_t cap = loom_max_threads();
  EXPECT_GE(cap, 64);
  EXPECT_LE(cap, std::max<int32_t>(64, 4 * static_cast<int32_t>(std::thread::hardware_concurrency())));
}

// ---- profiling (loom_session_profile_*) --------------------------------------------------

struct Events {
  std::vector<std::string> category, name, op_type, device, detail;
  std::vector<uint64_t> run, start, end;
  static void add(void* user, const loom_profile_event_t* e) {
    auto* ev = static_cast<Events*>(user);
    ev->category.push_back(e->category);
    ev->name.push_back(e->name);
    ev->op_type.push_back(e->op_type);
    ev->device.push_back(e->device);
    ev->detail.push_back(e->detail);
    ev->run.push_back(e->run);
    ev->start.push_back(e->start_ns);
    ev->end.push_back(e->end_ns);
  }
  size_t count(const std::string& cat) const {
    return static_cast<size_t>(std::count(category.begin(), category.end(), cat));
  }
};

TEST_F(SessionTest, ProfileNamesEveryNodeAndNestsInTheRun) {
  ASSERT_EQ(open("Relu Neg Relu", "fakehost"), "");
  std::vector<float> y;
  ASSERT_EQ(run({-1, 2}, y), "");  // not profiled
  ASSERT_EQ(take(loom_session_profile_start(session_, 0)), "");
  ASSERT_EQ(run({-1, 2}, y), "");
  ASSERT_EQ(run({3, -4, 5}, y), "");
  loom_session_profile_stop(session_);
  ASSERT_EQ(run({1}, y), "");  // not recorded
  Events ev;
  EXPECT_EQ(loom_session_profile_events(session_, &Events::add, &ev), 0u);
  EXPECT_EQ(ev.count("run"), 2u);
  ASSERT_EQ(ev.count("node"), 6u);  // three nodes, two runs
  std::set<std::string> nodes;
  for (size_t i = 0; i < ev.category.size(); ++i) {
    EXPECT_LE(ev.start[i], ev.end[i]);
    if (ev.category[i] != "node") continue;
    nodes.insert(ev.name[i]);
    EXPECT_EQ(ev.device[i], "fakehost");
    EXPECT_EQ(ev.detail[i], "fake loop");
    EXPECT_TRUE(ev.op_type[i] == "Relu" || ev.op_type[i] == "Neg") << ev.op_type[i];
    // Inside its run's interval.
    bool inside = false;
    for (size_t j = 0; j < ev.category.size(); ++j)
      if (ev.category[j] == "run" && ev.run[j] == ev.run[i])
        inside = ev.start[j] <= ev.start[i] && ev.end[i] <= ev.end[j];
    EXPECT_TRUE(inside) << ev.name[i];
  }
  EXPECT_EQ(nodes.size(), 3u);  // every node of the model by name

  char* trace = nullptr;
  ASSERT_EQ(take(loom_session_profile_trace(session_, &trace)), "");
  std::string t = trace;
  loom_string_free(trace);
  EXPECT_EQ(t.rfind("{\"displayTimeUnit\":\"ms\"", 0), 0u) << t.substr(0, 200);
  EXPECT_NE(t.find("\"ph\":\"X\""), std::string::npos);
  EXPECT_NE(t.find("\"process_name\""), std::string::npos);
  EXPECT_NE(t.find("\"op_type\":\"Neg\""), std::string::npos);
  char* summary = nullptr;
  ASSERT_EQ(take(loom_session_profile_summary(session_, &summary)), "");
  std::string sm = summary;
  loom_string_free(summary);
  EXPECT_NE(sm.find("profile: 2 run(s)"), std::string::npos) << sm;
  EXPECT_NE(sm.find("by op type"), std::string::npos) << sm;
  EXPECT_NE(sm.find("Relu"), std::string::npos) << sm;
}

// fakeremote reports no steps (a device built for ABI 1.4): its calls are timed whole, and the
// copies to and from it are transfers.
TEST_F(SessionTest, ProfileTimesDevicesWithoutStepsAndTransfers) {
  ASSERT_EQ(open("Relu Neg", "fakeremote,fakehost", false, "Neg=fakeremote"), "");
  ASSERT_EQ(take(loom_session_profile_start(session_, 0)), "");
  std::vector<float> y;
  ASSERT_EQ(run({-1, 2}, y), "");
  EXPECT_EQ(y, (std::vector<float>{0, -2}));
  Events ev;
  loom_session_profile_events(session_, &Events::add, &ev);
  EXPECT_EQ(ev.count("node"), 1u);      // Relu on fakehost
  EXPECT_GE(ev.count("transfer"), 2u);  // to fakeremote and back to the application
  bool remote_call = false;
  for (size_t i = 0; i < ev.category.size(); ++i)
    remote_call |= ev.category[i] == "subgraph" && ev.device[i] == "fakeremote";
  EXPECT_TRUE(remote_call);
  char* summary = nullptr;
  ASSERT_EQ(take(loom_session_profile_summary(session_, &summary)), "");
  std::string sm = summary;
  loom_string_free(summary);
  EXPECT_NE(sm.find("(subgraph, no steps reported)"), std::string::npos) << sm;
  EXPECT_NE(sm.find("(transfer)"), std::string::npos) << sm;
}

TEST_F(SessionTest, ProfileEventLimitCountsDropped) {
  ASSERT_EQ(open("Relu Neg Relu", "fakehost"), "");
  ASSERT_EQ(take(loom_session_profile_start(session_, 3)), "");
  std::vector<float> y;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(run({1, 2}, y), "");
  Events ev;
  const size_t dropped = loom_session_profile_events(session_, &Events::add, &ev);
  EXPECT_EQ(ev.category.size(), 3u);
  EXPECT_GT(dropped, 0u);
  // Restarting clears.
  ASSERT_EQ(take(loom_session_profile_start(session_, 0)), "");
  Events none;
  EXPECT_EQ(loom_session_profile_events(session_, &Events::add, &none), 0u);
  EXPECT_TRUE(none.category.empty());
}

TEST_F(SessionTest, ProfileOfAnUnprofiledSessionIsAClearError) {
  ASSERT_EQ(open("Relu", "fakehost"), "");
  char* text = nullptr;
  std::string err = take(loom_session_profile_trace(session_, &text));
  EXPECT_NE(err.find("never profiled"), std::string::npos) << err;
  Events ev;
  EXPECT_EQ(loom_session_profile_events(session_, &Events::add, &ev), 0u);
  EXPECT_TRUE(ev.category.empty());
}

// ---- concurrent runs (max_concurrent_runs) -------------------------------------------------

// Runs from several threads at once, on one session with max_concurrent_runs = `concurrent`,
// each checking its own answer; returns the first mismatch or error.
std::string run_from_threads(loom_session_t* session, int threads, int runs_each) {
  std::vector<std::string> errors(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < runs_each && errors[static_cast<size_t>(t)].empty(); ++r) {
        // Lengths differ between threads and runs: plans for several shapes at once.
        const size_t n = static_cast<size_t>(1 + (t + r) % 5);
        std::vector<float> x(n);
        for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(t * 100 + r) - static_cast<float>(i) * 7.f;
        loom_host_tensor_t in{};
        in.struct_size = sizeof in;
        in.dtype = LOOM_DTYPE_FLOAT32;
        in.rank = 1;
        in.dims[0] = static_cast<int64_t>(n);
        in.data = x.data();
        in.byte_size = n * 4;
        const char* names[] = {"x"};
        loom_host_tensor_t out{};
        loom_status_t* s = loom_session_run(session, 1, names, &in, 1, &out);
        if (s) {
          errors[static_cast<size_t>(t)] = loom_status_message(s);
          loom_status_free(s);
          return;
        }
        // Relu then Neg: -max(x, 0).
        const float* y = static_cast<const float*>(out.data);
        for (size_t i = 0; i < n; ++i)
          if (out.dims[0] != static_cast<int64_t>(n) || y[i] != -(x[i] > 0 ? x[i] : 0.f))
            errors[static_cast<size_t>(t)] = "thread " + std::to_string(t) + " run " + std::to_string(r) + ": wrong output";
        loom_host_tensor_release(&out);
      }
    });
  for (auto& th : pool) th.join();
  for (const std::string& e : errors)
    if (!e.empty()) return e;
  return "";
}

TEST_F(SessionTest, ConcurrentRunsGiveEachCallerItsOwnAnswer) {
  ASSERT_EQ(take(loom_model_load(rt_, write_model("m.fake", "FAKEMODEL Relu Neg").c_str(), &model_)), "");
  for (int32_t concurrent : {0, 1, 4}) {
    loom_session_options_t so{};
    so.struct_size = sizeof so;
    so.devices = "fakehost";
    so.threads = 4;
    so.max_concurrent_runs = concurrent;
    ASSERT_EQ(take(loom_session_create(rt_, model_, &so, &session_)), "");
    EXPECT_EQ(run_from_threads(session_, 4, 50), "") << "max_concurrent_runs " << concurrent;
    loom_session_destroy(session_);
    session_ = nullptr;
  }
}

// Replicas compile from the model the pool keeps: freeing the application's model after
// creation must not matter, and a profile covers the runs of every replica.
TEST_F(SessionTest, ConcurrentRunsOutliveTheModelAndShareTheProfile) {
  ASSERT_EQ(take(loom_model_load(rt_, write_model("m.fake", "FAKEMODEL Relu Neg").c_str(), &model_)), "");
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = "fakehost";
  so.max_concurrent_runs = 3;
  ASSERT_EQ(take(loom_session_create(rt_, model_, &so, &session_)), "");
  loom_model_free(model_);
  model_ = nullptr;
  ASSERT_EQ(take(loom_session_profile_start(session_, 0)), "");
  ASSERT_EQ(run_from_threads(session_, 3, 20), "");
  Events ev;
  loom_session_profile_events(session_, &Events::add, &ev);
  EXPECT_EQ(ev.count("run"), 60u);
  EXPECT_EQ(ev.count("node"), 120u);
}

TEST_F(SessionTest, ConcurrentRunBoundsAreChecked) {
  ASSERT_EQ(take(loom_model_load(rt_, write_model("m.fake", "FAKEMODEL Relu").c_str(), &model_)), "");
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = "fakehost";
  so.max_concurrent_runs = -2;
  std::string err = take(loom_session_create(rt_, model_, &so, &session_));
  EXPECT_NE(err.find("max_concurrent_runs = -2 is negative"), std::string::npos) << err;
  so.max_concurrent_runs = loom_max_threads() + 1;
  err = take(loom_session_create(rt_, model_, &so, &session_));
  EXPECT_NE(err.find("is out of range"), std::string::npos) << err;
  EXPECT_EQ(session_, nullptr);
}

}  // namespace
