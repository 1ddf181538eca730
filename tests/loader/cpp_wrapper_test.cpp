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

  try {
    loom::Session bad(rt, model, "missing-device");
    FAIL() << "expected an error";
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_NOT_FOUND);
  }
}
