#include <cstdlib>
#include <cstring>

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
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (!p) {
    release();
    fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory allocating " + sdk::bytes_text(bytes));
  }
  std::memset(p, 0, bytes);
  t.owner = std::shared_ptr<void>(p, [release](void* q) {
    std::free(q);
    release();
  });
  t.view.data = p;
  t.view.byte_size = bytes;
  return t;
}

}  // namespace loom::cpu
