// The committed ncnn models (written by generate_models.py, outputs computed by ncnn itself)
// loaded with Loom and run on the cpu device, and on onednn,cpu: the answers must match ncnn's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <loom_apps/npy.hpp>
#include <sstream>

#include "ncnn_test_support.hpp"

namespace loom::ncnnfmt::testing {
namespace {

// fp32 on both sides; differences come from summation order and transcendental functions.
constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-4;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct ModelCase {
  const char* name;
  const char* param_suffix;
};

class NcnnModelTest : public ::testing::TestWithParam<ModelCase> {
 protected:
  std::string path(const std::string& suffix) const {
    return (models_dir() / (std::string(GetParam().name) + suffix)).string();
  }
  // Stored in Loom's layout: ncnn's batch-free blob with a leading batch of 1.
  loom::apps::HostTensor input() const { return loom::apps::read_npy(path(".input.npy")); }
  loom::apps::HostTensor expected() const { return loom::apps::read_npy(path(".output.npy")); }
};

TEST_P(NcnnModelTest, CpuMatchesNcnn) {
  loom::apps::HostTensor y = run_model(path(GetParam().param_suffix), input(), "cpu");
  loom::apps::HostTensor want = expected();
  ASSERT_EQ(y.dims, want.dims) << y.shape_string() << " vs " << want.shape_string();
  EXPECT_LE(tolerance_ratio(y, want, kAtol, kRtol), 1.0);
}

TEST_P(NcnnModelTest, OnednnMatchesCpu) {
  if (!have_onednn()) GTEST_SKIP() << "the onednn plugin is not built";
  loom::apps::HostTensor cpu = run_model(path(GetParam().param_suffix), input(), "cpu");
  loom::apps::HostTensor onednn = run_model(path(GetParam().param_suffix), input(), "onednn,cpu");
  EXPECT_EQ(onednn.dims, cpu.dims);
  EXPECT_LE(tolerance_ratio(onednn, cpu, kAtol, kRtol), 1.0);
}

// ncnn params rarely give the input size: without it the input is [1,-1,-1,-1] and the
// extents come from the data.
TEST(NcnnInputShape, InputWithoutSizesTakesTheDataShape) {
  std::filesystem::path dir = models_dir();
  std::string param = read_text(dir / "small_cnn.param");
  const std::string sized = "0 1 data 0=16 1=16 2=3";
  size_t at = param.find(sized);
  ASSERT_NE(at, std::string::npos);
  param.replace(at, sized.size(), "0 1 data");
  TempDir tmp;
  write_file(tmp / "model.param", param);
  std::filesystem::copy_file(dir / "small_cnn.bin", tmp / "model.bin");
  loom::apps::HostTensor x = loom::apps::read_npy((dir / "small_cnn.input.npy").string());
  loom::apps::HostTensor y = run_model((tmp / "model.param").string(), x, "cpu");
  loom::apps::HostTensor want = loom::apps::read_npy((dir / "small_cnn.output.npy").string());
  EXPECT_EQ(y.dims, want.dims);
  EXPECT_LE(tolerance_ratio(y, want, kAtol, kRtol), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Models, NcnnModelTest,
                         ::testing::Values(ModelCase{"small_cnn", ".param"},
                                           ModelCase{"small_cnn_binary", ".param.bin"},
                                           ModelCase{"memory_data_broadcast", ".param"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace loom::ncnnfmt::testing
