#include "memory_planner.hpp"

#include <gtest/gtest.h>

#include <random>

using loom::core::BufferRequest;
using loom::core::plan_memory;

namespace {

// No two buffers alive at the same step may overlap in the arena.
void expect_valid(const std::vector<BufferRequest>& req, const loom::core::MemoryPlan& plan) {
  for (size_t a = 0; a < req.size(); ++a) {
    EXPECT_LE(plan.offsets[a] + req[a].size, plan.arena_size);
    EXPECT_EQ(plan.offsets[a] % 64, 0u);
    for (size_t b = a + 1; b < req.size(); ++b) {
      bool alive_together = req[a].first_use <= req[b].last_use && req[b].first_use <= req[a].last_use;
      bool disjoint = plan.offsets[a] + req[a].size <= plan.offsets[b] ||
                      plan.offsets[b] + req[b].size <= plan.offsets[a];
      if (alive_together) {
        EXPECT_TRUE(disjoint) << "buffers " << a << " and " << b << " overlap";
      }
    }
  }
}

}  // namespace

TEST(MemoryPlanner, ChainReusesMemory) {
  // A chain a->b->c->d: each buffer lives two steps, so two slots suffice.
  std::vector<BufferRequest> req = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  auto plan = plan_memory(req);
  expect_valid(req, plan);
  EXPECT_EQ(plan.arena_size, 2 * 1024u);  // 1000 rounded to 64-byte alignment, twice
}

TEST(MemoryPlanner, EverythingAliveNeedsTheSum) {
  std::vector<BufferRequest> req = {{64, 0, 9}, {128, 0, 9}, {256, 0, 9}};
  auto plan = plan_memory(req);
  expect_valid(req, plan);
  EXPECT_EQ(plan.arena_size, 448u);
}

TEST(MemoryPlanner, SmallBufferFillsAGap) {
  // Big buffers at both ends of the arena; a small one fits between them once a middle one dies.
  std::vector<BufferRequest> req = {{4096, 0, 10}, {1024, 0, 2}, {4096, 0, 10}, {512, 5, 6}};
  auto plan = plan_memory(req);
  expect_valid(req, plan);
  EXPECT_EQ(plan.arena_size, 4096u * 2 + 1024u);
}

TEST(MemoryPlanner, RandomPlansAreValidAndNoWorseThanTheSum) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<BufferRequest> req;
    size_t sum = 0;
    for (int i = 0; i < 40; ++i) {
      int first = static_cast<int>(rng() % 30);
      int last = first + static_cast<int>(rng() % 8);
      size_t size = 1 + rng() % 100000;
      req.push_back({size, first, last});
      sum += (size + 63) / 64 * 64;
    }
    auto plan = plan_memory(req);
    expect_valid(req, plan);
    EXPECT_LE(plan.arena_size, sum);
  }
}
