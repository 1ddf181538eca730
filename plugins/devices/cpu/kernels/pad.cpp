// Pad: modes constant, reflect, edge and wrap (opset 19). Pads come from an attribute before
// opset 11 and from an input afterwards; opset 18 adds the optional axes input. Negative pads
// crop. Each output index maps to an input index per axis (or to the constant value).
#include <algorithm>
#include <array>
#include <optional>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

PadMode pad_mode(const KernelContext& ctx) {
  std::string mode = ctx.attrs().get_string("mode", "constant");
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": unknown mode '" + mode + "'");
}

// Input index read for output index `i` on an axis of size n padded by `begin` in front, or -1
// for the constant value.
int64_t source_index(int64_t i, int64_t begin, int64_t n, PadMode mode) {
  int64_t s = i - begin;
  if (s >= 0 && s < n) return s;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return s < 0 ? 0 : n - 1;
    case PadMode::kWrap:
      return ((s % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t m = ((s % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

void pad_kernel(KernelContext& ctx) {
  const loom_tensor_t& in = ctx.required_input(0);
  const int64_t rank = in.rank;
  const PadMode mode = pad_mode(ctx);
  const size_t esize = element_size(ctx, in.dtype);

  std::vector<int64_t> pads;
  std::vector<int64_t> axes;
  std::array<unsigned char, 16> fill{};  // the constant element, zero by default
  if (ctx.opset() < 11) {
    auto p = ctx.attrs().get_ints("pads");
    if (!p) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute 'pads' is missing");
    pads.assign(p->begin(), p->end());
    const float value = ctx.attrs().get_float("value", 0.0f);
    dispatch<kNumeric | kBool>(in.dtype, ctx, [&]<typename T>() {
      T v = convert<T>(value);
      std::memcpy(fill.data(), &v, sizeof v);
    });
  } else {
    pads = read_int_values(ctx, ctx.required_input(1), "pads");
    if (const loom_tensor_t* c = ctx.input(2); c && sdk::element_count(*c) > 0) {
      if (c->dtype != in.dtype)
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": constant_value is " +
                                              sdk::dtype_name(c->dtype) + " but data is " +
                                              sdk::dtype_name(in.dtype));
      std::memcpy(fill.data(), c->data, esize);
    }
    if (ctx.opset() >= 18)
      if (const loom_tensor_t* a = ctx.input(3))
        axes = normalize_axes(ctx, read_int_values(ctx, *a, "axes"), rank);
  }
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": pads " + shape_string(pads) + " must have " +
                                          std::to_string(2 * axes.size()) + " entries");
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[axes[i]] = pads[i];
    end[axes[i]] = pads[i + axes.size()];
  }
  std::vector<int64_t> out_dims(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    const std::optional<int64_t> grown = sdk::checked_add(in.dims[d], begin[d]);
    const std::optional<int64_t> extent = grown ? sdk::checked_add(*grown, end[d]) : grown;
    if (!extent)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": pads " + shape_string(pads) +
                                            " make axis " + std::to_string(d) +
                                            " longer than int64 can count");
    out_dims[d] = *extent;
    if (out_dims[d] < 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": pads " + shape_string(pads) +
                                            " crop axis " + std::to_string(d) + " of size " +
                                            std::to_string(in.dims[d]) + " below zero");
    if (mode != PadMode::kConstant && in.dims[d] == 0 && out_dims[d] > 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": cannot pad the empty axis " +
                                            std::to_string(d) + " in a non-constant mode");
  }
  // The output first: its size is checked against the run's limits before the index maps (8
  // bytes per output coordinate) are built; an empty output needs none.
  OutputBuffer out(ctx, 0, in.dtype, out_dims);
  if (empty_output(out_dims)) return out.commit();
  std::vector<std::vector<int64_t>> maps(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    maps[d].resize(static_cast<size_t>(out_dims[d]));
    for (int64_t j = 0; j < out_dims[d]; ++j)
      maps[d][j] = source_index(j, begin[d], in.dims[d], mode);
  }
  copy_by_axis_maps(ctx, in.data, sdk::shape_of(in), out.data(), out_dims, maps, esize,
                    fill.data());
  out.commit();
}

}  // namespace

LOOM_CPU_KERNEL("Pad", 2, pad_kernel, nullptr);

}  // namespace loom::cpu
