// make_tensor: every tensor starts zeroed and aligned, also when its block is one a freed tensor
// left in the thread's cache (kernel_registry.cpp, BlockCache); freeing on another thread; the
// run budget counts each tensor while it lives.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "kernel.hpp"

namespace loom::cpu {
namespace {

bool all_zero(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.view.data);
  for (size_t i = 0; i < t.view.byte_size; ++i)
    if (p[i]) return false;
  return true;
}

TEST(MakeTensor, RecycledBlocksAreZeroedAndAligned) {
  // Sizes across the recycled classes (128 B to 128 KiB), their edges, and beyond them.
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{500},
                    int64_t{4096}, int64_t{32752}, int64_t{32768}, int64_t{40000}}) {
    SCOPED_TRACE(n);
    for (int round = 0; round < 3; ++round) {
      std::vector<Tensor> live;
      for (int k = 0; k < 12; ++k) {  // more than a class holds
        Tensor t = make_tensor(LOOM_DTYPE_FLOAT32, std::vector<int64_t>{n});
        ASSERT_EQ(t.view.byte_size, static_cast<size_t>(n) * 4);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t.view.data) % 64, 0u);
        EXPECT_TRUE(all_zero(t));
        std::memset(t.view.data, 0xAB, t.view.byte_size);  // dirty it for the next round
        live.push_back(std::move(t));
      }
    }
  }
}

TEST(MakeTensor, FreedOnAnotherThread) {
  std::vector<Tensor> made;
  for (int k = 0; k < 20; ++k) {
    made.push_back(make_tensor(LOOM_DTYPE_UINT8, std::vector<int64_t>{1000 + k}));
    std::memset(made.back().view.data, 0xFF, made.back().view.byte_size);
  }
  std::thread other([&] {
    made.clear();  // joins that thread's cache, freed when it ends
    Tensor t = make_tensor(LOOM_DTYPE_UINT8, std::vector<int64_t>{1010});
    EXPECT_TRUE(all_zero(t));
  });
  other.join();
  Tensor t = make_tensor(LOOM_DTYPE_UINT8, std::vector<int64_t>{1010});
  EXPECT_TRUE(all_zero(t));
}

TEST(MakeTensor, RunBudgetCountsLiveTensors) {
  loom_run_control_t control{};
  control.struct_size = sizeof control;
  control.max_run_bytes = 10000;
  RunBudgetScope scope(&control);
  {
    Tensor a = make_tensor(LOOM_DTYPE_FLOAT32, std::vector<int64_t>{2000});  // 8000 bytes
    EXPECT_EQ(current_run_budget()->live.load(), 8000u);
    EXPECT_THROW(make_tensor(LOOM_DTYPE_FLOAT32, std::vector<int64_t>{1000}), Error);
  }
  EXPECT_EQ(current_run_budget()->live.load(), 0u);
  // Freed, the bytes count no more: the same tensor again fits, from the recycled block.
  Tensor b = make_tensor(LOOM_DTYPE_FLOAT32, std::vector<int64_t>{2000});
  EXPECT_TRUE(all_zero(b));
}

}  // namespace
}  // namespace loom::cpu
