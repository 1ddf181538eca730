// Helpers shared by the cpu device's dense-math kernels (Gemm, MatMul, Conv, pooling,
// normalisation): the type a storage type is computed in, views of tensors in that type, and
// small shape checks with one-line errors.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../kernel.hpp"
#include "../types.hpp"

namespace loom::cpu::nn {

// float16/bfloat16 are computed in float; double stays double; integers stay themselves.
template <typename T>
using compute_t = std::conditional_t<is_half_like_v<T>, float, T>;

// The elements of an input tensor in the compute type: borrowed when the storage type already
// is the compute type, converted into an owned buffer otherwise.
template <typename T>
class ComputeInput {
 public:
  using C = compute_t<T>;
  explicit ComputeInput(const loom_tensor_t& t)
      : size_(static_cast<size_t>(sdk::element_count(t))) {
    const T* src = sdk::data_of<const T>(t);
    if constexpr (std::is_same_v<T, C>) {
      ptr_ = src;
    } else {
      owned_.resize(size_);
      for (size_t i = 0; i < size_; ++i) owned_[i] = convert<C>(src[i]);
      ptr_ = owned_.data();
    }
  }
  const C* data() const { return ptr_; }
  size_t size() const { return size_; }
  C operator[](size_t i) const { return ptr_[i]; }

 private:
  size_t size_;
  const C* ptr_ = nullptr;
  std::vector<C> owned_;
};

// A writable compute-type view of an allocated output; commit() stores it in the output's
// own type (a no-op when they are the same).
template <typename T>
class ComputeOutput {
 public:
  using C = compute_t<T>;
  explicit ComputeOutput(loom_tensor_t& t)
      : tensor_(t), size_(static_cast<size_t>(sdk::element_count(t))) {
    if constexpr (std::is_same_v<T, C>) {
      ptr_ = sdk::data_of<T>(t);
    } else {
      owned_.assign(size_, C(0));
      ptr_ = owned_.data();
    }
  }
  C* data() { return ptr_; }
  size_t size() const { return size_; }
  void commit() {
    if constexpr (!std::is_same_v<T, C>) {
      T* dst = sdk::data_of<T>(tensor_);
      for (size_t i = 0; i < size_; ++i) dst[i] = convert<T>(owned_[i]);
    }
  }

 private:
  loom_tensor_t& tensor_;
  size_t size_;
  C* ptr_ = nullptr;
  std::vector<C> owned_;
};

inline std::vector<int64_t> dims_of(const loom_tensor_t& t) {
  return std::vector<int64_t>(t.dims, t.dims + t.rank);
}

inline std::string shape_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}
inline std::string shape_string(const loom_tensor_t& t) {
  return shape_string(sdk::shape_of(t));
}

// Throws unless every input in `indices` that is present has the dtype of input 0.
inline void require_same_dtype(const KernelContext& ctx, std::initializer_list<size_t> indices) {
  const loom_dtype_t want = ctx.required_input(0).dtype;
  for (size_t i : indices) {
    const loom_tensor_t* t = ctx.input(i);
    if (t && t->dtype != want)
      fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": input " + std::to_string(i) + " is " +
                                         sdk::dtype_name(t->dtype) + " but input 0 is " +
                                         sdk::dtype_name(want));
  }
}

// Throws unless the tensor has exactly `rank` dimensions.
inline void require_rank(const KernelContext& ctx, const loom_tensor_t& t, int32_t rank,
                         const char* what) {
  if (t.rank != rank)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": " + what + " must have rank " +
                                          std::to_string(rank) + ", got shape " + shape_string(t));
}

// The elements of a floating-point tensor of any float dtype, as doubles (small parameter
// tensors: scales, biases, statistics).
inline std::vector<double> float_values(const KernelContext& ctx, const loom_tensor_t& t) {
  return dispatch<kFloats>(t.dtype, ctx, [&]<typename T>() {
    const T* p = sdk::data_of<const T>(t);
    std::vector<double> v(static_cast<size_t>(sdk::element_count(t)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = convert<double>(p[i]);
    return v;
  });
}

// Splits [0, n) over the context's threads; convenience for item-sized work units.
template <typename Fn>
void parallel_range(const KernelContext& ctx, size_t n, size_t grain, Fn&& fn) {
  if (n == 0) return;
  if (n <= grain || ctx.threads() <= 1) {
    fn(size_t{0}, n);
    return;
  }
  ctx.parallel_for(n, grain, [&](size_t b, size_t e) { fn(b, e); });
}

}  // namespace loom::cpu::nn
