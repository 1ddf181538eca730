#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernel.hpp"
#include "types.hpp"

namespace loom::cpu {

void fail_unsupported_dtype(const std::string& what, loom_dtype_t dtype) {
  sdk::fail(LOOM_ERROR_UNSUPPORTED,
            what + ": element type " + sdk::dtype_name(dtype) + " is not supported");
}

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry registry;
  return registry;
}

std::shared_ptr<RunBudget>& current_run_budget() {
  thread_local std::shared_ptr<RunBudget> budget;
  return budget;
}

RunBudgetScope::RunBudgetScope(const loom_run_control_t* control) {
  if (current_run_budget() || !control) return;
  auto budget = std::make_shared<RunBudget>();
  budget->control = sdk::RunControl(control);
  current_run_budget() = std::move(budget);
  set_ = true;
}

RunBudgetScope::~RunBudgetScope() {
  if (set_) current_run_budget().reset();
}

void check_scratch_bytes(uint64_t bytes, const std::string& what) {
  if (const std::shared_ptr<RunBudget>& budget = current_run_budget())
    budget->control.check_tensor_bytes(bytes, what);
}

namespace {

// Counts `bytes` against the thread's run budget before they are allocated; the returned
// budget (null outside a run) is released by the allocation's deleter.
std::shared_ptr<RunBudget> charge(uint64_t bytes, loom_dtype_t dtype,
                                  std::span<const int64_t> dims) {
  std::shared_ptr<RunBudget> budget = current_run_budget();
  if (!budget) return nullptr;
  auto what = [&] {
    const std::string type = sdk::dtype_name(dtype);
    const bool vowel = type.find_first_of("aeio") == 0;  // an int64, a uint8, a float32
    return (vowel ? "an " : "a ") + type + " tensor of shape " + sdk::shape_text(dims);
  };
  // The message is made only when a limit is passed: this runs for every tensor of the run.
  const loom_run_control_t& limits = *budget->control.raw();
  if (limits.max_tensor_bytes && bytes > limits.max_tensor_bytes)
    budget->control.check_tensor_bytes(bytes, what());
  uint64_t live = budget->live.fetch_add(bytes) + bytes;
  if (budget->control.max_run_bytes() && live > budget->control.max_run_bytes()) {
    budget->live.fetch_sub(bytes);
    budget->control.check_run_bytes(live, what());
  }
  return budget;
}

// Blocks of recently freed small tensors, per thread, reused by the next tensors of their size
// class. A small model called once per audio chunk (the VAD of tests/bench/dynamic_shapes.py:
// 26 nodes, ~50 us a run) makes and frees a few dozen tensors of 2-64 KiB every run; glibc
// serves those sizes from its bins, not its per-thread cache, and its malloc, free and the
// consolidation they trigger were 15% of the run's cycles. Classes are powers of two from
// 128 bytes to 128 KiB, at most 8 blocks each: at most 2 MiB held per thread, freed when the
// thread ends. A block may be freed on another thread than the one that made it (outputs the
// core releases): it then joins that thread's cache, or goes back to the system. Off under
// AddressSanitizer, which must see each tensor's memory freed to find a use after it.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRecycleBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRecycleBlocks = false;
#else
constexpr bool kRecycleBlocks = true;
#endif
#else
constexpr bool kRecycleBlocks = true;
#endif

class BlockCache {
 public:
  static constexpr size_t kMinShift = 7, kMaxShift = 17, kPerClass = 8;
  BlockCache() { alive() = true; }
  ~BlockCache() {
    alive() = false;
    for (std::vector<void*>& blocks : free_)
      for (void* p : blocks) std::free(p);
  }
  // False once the thread's cache is destroyed (thread exit): a tensor freed after that goes
  // back to the system. Trivially destructible, so readable at any point of thread exit.
  static bool& alive() {
    thread_local bool flag = false;
    return flag;
  }
  static BlockCache& of_this_thread() {
    thread_local BlockCache cache;
    return cache;
  }
  // The size class of a block of `bytes` (kMaxShift + 1: none, not recycled) and its size.
  static size_t class_of(size_t bytes) {
    if (bytes > (size_t{1} << kMaxShift)) return kMaxShift + 1;
    return std::max<size_t>(kMinShift, std::bit_width(std::max<size_t>(bytes, 1) - 1));
  }
  void* take(size_t cls) {
    std::vector<void*>& blocks = free_[cls - kMinShift];
    if (blocks.empty()) return nullptr;
    void* p = blocks.back();
    blocks.pop_back();
    return p;
  }
  bool give(size_t cls, void* p) {
    std::vector<void*>& blocks = free_[cls - kMinShift];
    if (blocks.size() >= kPerClass) return false;
    blocks.push_back(p);
    return true;
  }

 private:
  std::array<std::vector<void*>, kMaxShift - kMinShift + 1> free_;
};

void* allocate_block(size_t bytes, size_t& cls) {
  const size_t padded = (bytes + 63) / 64 * 64 + 64;
  cls = kRecycleBlocks ? BlockCache::class_of(padded) : BlockCache::kMaxShift + 1;
  if (cls > BlockCache::kMaxShift) return std::aligned_alloc(64, padded);
  if (void* p = BlockCache::of_this_thread().take(cls)) return p;
  return std::aligned_alloc(64, size_t{1} << cls);
}

void free_block(void* p, size_t cls) {
  if (cls <= BlockCache::kMaxShift && BlockCache::alive() &&
      BlockCache::of_this_thread().give(cls, p))
    return;
  std::free(p);
}

}  // namespace

Tensor make_tensor(loom_dtype_t dtype, std::span<const int64_t> dims) {
  if (dims.size() > LOOM_MAX_RANK)
    fail(LOOM_ERROR_UNSUPPORTED, "tensor rank " + std::to_string(dims.size()) +
                                     " exceeds the maximum of " + std::to_string(LOOM_MAX_RANK));
  for (int64_t d : dims)
    if (d < 0) fail(LOOM_ERROR_INVALID_ARGUMENT, "negative dimension in a tensor shape");
  size_t elem = sdk::dtype_size(dtype);
  if (elem == 0)
    fail(LOOM_ERROR_UNSUPPORTED,
         std::string("cannot allocate a tensor of type ") + sdk::dtype_name(dtype));
  // Checked: shapes computed from a run's data can wrap int64 (docs/limits.md). The padding
  // below must not overflow either.
  size_t count = static_cast<size_t>(sdk::element_count(dims));
  size_t bytes = sdk::byte_size(dtype, dims);
  if (bytes > SIZE_MAX - 128)
    fail(LOOM_ERROR_OUT_OF_MEMORY,
         "a tensor of shape " + sdk::shape_text(dims) + " is too large to allocate");
  std::shared_ptr<RunBudget> budget = charge(bytes, dtype, dims);
  Tensor t;
  t.view.dtype = dtype;
  t.view.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) t.view.dims[i] = dims[i];
  auto release = [budget, bytes] {
    if (budget) budget->live.fetch_sub(bytes);
  };
  if (dtype == LOOM_DTYPE_STRING) {
    loom_string_t* views = nullptr;
    try {
      t.strings = std::make_shared<std::vector<std::string>>(count);
      views = new loom_string_t[count ? count : 1]();
    } catch (...) {
      release();
      throw;
    }
    t.owner = std::shared_ptr<void>(views, [release](void* p) {
      delete[] static_cast<loom_string_t*>(p);
      release();
    });
    t.view.data = views;
    t.view.byte_size = bytes;
    return t;
  }
  // 64-byte alignment so vectorised loops and SIMD libraries get aligned rows.
  size_t cls = 0;
  void* p = allocate_block(bytes, cls);
  if (!p) {
    release();
    fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory allocating " + sdk::bytes_text(bytes));
  }
  std::memset(p, 0, bytes);
  t.owner = std::shared_ptr<void>(p, [release, cls](void* q) {
    free_block(q, cls);
    release();
  });
  t.view.data = p;
  t.view.byte_size = bytes;
  return t;
}

}  // namespace loom::cpu
