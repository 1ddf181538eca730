// The onednn device's matrix-vector kernels (plugins/devices/onednn/matvec.hpp), each vector
// width this CPU runs, against a double-precision product: row counts around the 4-row
// unrolling, column counts around the 16-column blocks, with and without bias, both weight
// orders.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "matvec.hpp"

namespace loom::onednn {
namespace {

TEST(OnednnMatVecKernel, EveryWidthMatchesADoubleProduct) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (MatvecKernel kernel : {MatvecKernel::kAvx512, MatvecKernel::kAvx2, MatvecKernel::kGeneric}) {
    if (!matvec_kernel_runs_here(kernel)) continue;
    for (int64_t k : {1, 2, 3, 4, 5, 17, 1280}) {
      for (int64_t n : {1, 15, 16, 17, 1000}) {
        for (bool transposed : {false, true}) {
          SCOPED_TRACE("kernel " + std::to_string(static_cast<int>(kernel)) + " k " +
                       std::to_string(k) + " n " + std::to_string(n) +
                       (transposed ? " transposed" : ""));
          std::vector<float> x(k), b(k * n), bias(n);
          for (float& v : x) v = dist(rng);
          for (float& v : b) v = dist(rng);
          for (float& v : bias) v = dist(rng);
          ASSERT_EQ(matvec_packed_size(k, n), (n + 15) / 16 * 16 * k);
          std::vector<float> packed(matvec_packed_size(k, n), NAN);
          pack_matvec_weights(b.data(), k, n, transposed, packed.data());
          std::vector<float> y(n, NAN), y_no_bias(n, NAN);
          matvec(x.data(), packed.data(), bias.data(), 0.5f, y.data(), k, n, kernel);
          matvec(x.data(), packed.data(), nullptr, 1.f, y_no_bias.data(), k, n, kernel);
          for (int64_t c = 0; c < n; ++c) {
            double acc = 0;
            for (int64_t r = 0; r < k; ++r)
              acc += double(x[r]) * (transposed ? b[c * k + r] : b[r * n + c]);
            double tolerance = 1e-5 * std::sqrt(double(k)) + 1e-6;
            EXPECT_NEAR(y[c], 0.5 * acc + bias[c], tolerance) << "column " << c;
            EXPECT_NEAR(y_no_bias[c], acc, tolerance) << "column " << c;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace loom::onednn
