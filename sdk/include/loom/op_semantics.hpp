// ONNX attribute semantics that every device and the core's shape inference resolve the same
// way, written once: axes (negative counts from the end) and the padding of windowed ops (Conv,
// ConvTranspose's forward twin, the pools) with auto_pad. Header-only, on top of plugin.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <loom/plugin.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::sdk {

// ---- axes -----------------------------------------------------------------------------------

// `axis` in [0, rank), or nullopt when it lies outside [-rank, rank).
constexpr std::optional<int64_t> try_normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

// `axis` in [0, rank); fails with LOOM_ERROR_INVALID_MODEL, "<where>: axis 5 is out of range for
// rank 3", otherwise.
inline int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view where) {
  std::optional<int64_t> a = try_normalize_axis(axis, rank);
  if (!a)
    fail(LOOM_ERROR_INVALID_MODEL, std::string(where) + ": axis " + std::to_string(axis) +
                                       " is out of range for rank " + std::to_string(rank));
  return *a;
}

// Every axis normalized; an axis named twice (e.g. 1 and -2 of rank 3) fails like a bad one.
inline std::vector<int64_t> normalize_axes(std::span<const int64_t> axes, int64_t rank,
                                           std::string_view where) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t axis : axes) {
    int64_t a = normalize_axis(axis, rank, where);
    if (std::find(out.begin(), out.end(), a) != out.end())
      fail(LOOM_ERROR_INVALID_MODEL,
           std::string(where) + ": axis " + std::to_string(axis) + " is given twice");
    out.push_back(a);
  }
  return out;
}

// ---- windows: auto_pad ----------------------------------------------------------------------

enum class AutoPad { kNotSet, kValid, kSameUpper, kSameLower };

// "NOTSET" (or ""), "VALID", "SAME_UPPER", "SAME_LOWER"; nullopt for anything else.
constexpr std::optional<AutoPad> parse_auto_pad(std::string_view text) {
  if (text.empty() || text == "NOTSET") return AutoPad::kNotSet;
  if (text == "VALID") return AutoPad::kValid;
  if (text == "SAME_UPPER") return AutoPad::kSameUpper;
  if (text == "SAME_LOWER") return AutoPad::kSameLower;
  return std::nullopt;
}

// A node's auto_pad attribute; fails with LOOM_ERROR_INVALID_MODEL naming `where` for an
// unknown value.
inline AutoPad auto_pad_of(const Attributes& attrs, std::string_view where) {
  const std::string text = attrs.get_string("auto_pad", "NOTSET");
  std::optional<AutoPad> mode = parse_auto_pad(text);
  if (!mode)
    fail(LOOM_ERROR_INVALID_MODEL, std::string(where) + ": unknown auto_pad '" + text +
                                       "' (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)");
  return *mode;
}

// The padding of one spatial axis.
struct AxisPads {
  int64_t begin = 0;
  int64_t end = 0;
};

// The pads of one spatial axis of extent `in` that a window of `kernel` (with `stride` and
// `dilation`) covers in `out` steps: the explicit pads for NOTSET, none for VALID, and for SAME_*
// the total a full coverage needs, split with the odd one at the end (UPPER) or at the
// beginning (LOWER).
constexpr AxisPads resolve_pads(AutoPad mode, int64_t in, int64_t out, int64_t kernel,
                                int64_t stride, int64_t dilation, AxisPads explicit_pads) {
  switch (mode) {
    case AutoPad::kNotSet:
      return explicit_pads;
    case AutoPad::kValid:
      return {};
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: {
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - in);
      const int64_t small = total / 2;
      return mode == AutoPad::kSameUpper ? AxisPads{small, total - small}
                                         : AxisPads{total - small, small};
    }
  }
  return explicit_pads;
}

// The begin and end pads of every spatial axis of a windowed node (pads: n begins, then n ends,
// as ONNX writes them), from its auto_pad and pads attributes and the extents the core inferred.
// `in`, `out`, `kernel`, `strides` and `dilations` have one entry per spatial axis.
struct WindowPads {
  std::vector<int64_t> begin, end;
};
inline WindowPads window_pads(const Attributes& attrs, std::span<const int64_t> in,
                              std::span<const int64_t> out, std::span<const int64_t> kernel,
                              std::span<const int64_t> strides, std::span<const int64_t> dilations,
                              std::string_view where) {
  const size_t n = in.size();
  const AutoPad mode = auto_pad_of(attrs, where);
  std::vector<int64_t> pads(2 * n, 0);
  if (std::optional<std::span<const int64_t>> p = attrs.get_ints("pads"); p && p->size() == 2 * n)
    pads.assign(p->begin(), p->end());
  WindowPads result{std::vector<int64_t>(n), std::vector<int64_t>(n)};
  for (size_t i = 0; i < n; ++i) {
    AxisPads a = resolve_pads(mode, in[i], out[i], kernel[i], strides[i], dilations[i],
                              {pads[i], pads[n + i]});
    result.begin[i] = a.begin;
    result.end[i] = a.end;
  }
  return result;
}

}  // namespace loom::sdk
