// The header-only C++ wrapper (loom/loom.hpp) over the fake plugins.
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

TEST(CppWrapper, RunsAModelAndThrowsOnErrors) {
  std::filesystem::create_directories(TEST_TMP_DIR);
  std::string path = std::string(TEST_TMP_DIR) + "/wrapper.fake";
  std::ofstream(path) << "FAKEMODEL Neg Relu";
  loom::Runtime rt({std::string(FAKE_DIR) + "/fake_good"}, false);
  loom::Model model(rt, path);
  EXPECT_EQ(model.num_inputs(), 1u);
  EXPECT_STREQ(model.output(0).name, "y");
  loom::Session session(rt, model, "fakehost");

  float x[] = {1, -2, 3};
  loom_host_tensor_t in{};
  in.struct_size = sizeof in;
  in.dtype = LOOM_DTYPE_FLOAT32;
  in.rank = 1;
  in.dims[0] = 3;
  in.data = x;
  in.byte_size = sizeof x;
  auto out = session.run({{"x", in}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(out[0].data<float>()[0], 0.0f);
  EXPECT_EQ(out[0].data<float>()[1], 2.0f);
  EXPECT_EQ(out[0].data<float>()[2], 0.0f);
  EXPECT_NE(session.explain().find("subgraph 0 on fakehost: 2 nodes"), std::string::npos);
  EXPECT_NE(session.plan_dot().find("subgraph cluster_0"), std::string::npos);

  loom_session_options_t options{};
  options.struct_size = sizeof options;
  options.devices = "fakeremote,fakehost";
  options.placements = "Neg=fakeremote";
  loom::Session pinned(rt, model, options);
  EXPECT_NE(pinned.explain().find("subgraph 0 on fakeremote: 1 nodes (Neg x1)"), std::string::npos)
      << pinned.explain();

  try {
    loom::Session bad(rt, model, "missing-device");
    FAIL() << "expected an error";
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_NOT_FOUND);
  }
}
