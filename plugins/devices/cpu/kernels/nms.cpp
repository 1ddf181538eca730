// NonMaxSuppression (10, 11): greedy per-(batch, class) selection of boxes by descending
// score (ties: lower box index first), dropping every box whose IoU with an already selected
// box exceeds iou_threshold, keeping at most max_output_boxes_per_class boxes with
// score > score_threshold. Boxes are [y1, x1, y2, x2] with any diagonal corner pair
// (center_point_box = 0) or [x_center, y_center, width, height] (center_point_box = 1).
// Output: int64 [num_selected, 3] rows of (batch_index, class_index, box_index).
#include <algorithm>
#include <numeric>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

struct Box {
  float y_min, x_min, y_max, x_max;
  float area() const { return (y_max - y_min) * (x_max - x_min); }
};

Box to_corners(const float* b, bool center_point) {
  if (center_point) {
    const float xc = b[0], yc = b[1], w = b[2] / 2.f, h = b[3] / 2.f;
    return {yc - h, xc - w, yc + h, xc + w};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

float iou(const Box& a, const Box& b) {
  const float ih = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  const float iw = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  if (ih <= 0.f || iw <= 0.f) return 0.f;
  const float inter = ih * iw;
  const float uni = a.area() + b.area() - inter;
  return uni > 0.f ? inter / uni : 0.f;
}

void nms_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& boxes_t = ctx.required_input(0);
  const loom_tensor_t& scores_t = ctx.required_input(1);
  if (boxes_t.rank != 3 || boxes_t.dims[2] != 4)
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": boxes must have shape [num_batches, spatial_dimension, 4]");
  if (scores_t.rank != 3 || scores_t.dims[0] != boxes_t.dims[0] ||
      scores_t.dims[2] != boxes_t.dims[1])
    fail(LOOM_ERROR_INVALID_MODEL, where +
                                       ": scores must have shape [num_batches, num_classes, "
                                       "spatial_dimension] matching boxes");
  const int64_t center = ctx.attrs().get_int("center_point_box", 0);
  if (center != 0 && center != 1)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": center_point_box must be 0 or 1");
  int64_t max_out = 0;
  if (const loom_tensor_t* t = ctx.input(2); t && misc::count_of(*t) > 0)
    max_out = misc::read_scalar_int(*t, where + " max_output_boxes_per_class");
  float iou_threshold = 0.f;
  if (const loom_tensor_t* t = ctx.input(3); t && misc::count_of(*t) > 0)
    iou_threshold = static_cast<float>(misc::read_scalar_float(*t, where + " iou_threshold"));
  if (iou_threshold < 0.f || iou_threshold > 1.f)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": iou_threshold must be within [0, 1]");
  const loom_tensor_t* st = ctx.input(4);
  const bool has_score_threshold = st && misc::count_of(*st) > 0;
  const float score_threshold =
      has_score_threshold
          ? static_cast<float>(misc::read_scalar_float(*st, where + " score_threshold"))
          : 0.f;

  const int64_t batches = boxes_t.dims[0], boxes_n = boxes_t.dims[1], classes = scores_t.dims[1];
  const std::vector<float> boxes = misc::read_as<float>(boxes_t, where + " boxes");
  const std::vector<float> scores = misc::read_as<float>(scores_t, where + " scores");
  std::vector<int64_t> selected_rows;
  std::vector<Box> corners(static_cast<size_t>(boxes_n));
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < boxes_n; ++i)
      corners[i] = to_corners(&boxes[(b * boxes_n + i) * 4], center == 1);
    for (int64_t c = 0; c < classes; ++c) {
      if (max_out <= 0) continue;
      const float* s = &scores[(b * classes + c) * boxes_n];
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < boxes_n; ++i)
        if (!has_score_threshold || s[i] > score_threshold) candidates.push_back(i);
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int64_t a, int64_t bb) { return s[a] > s[bb]; });
      std::vector<int64_t> kept;
      for (int64_t cand : candidates) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        bool suppressed = false;
        for (int64_t k : kept)
          if (iou(corners[cand], corners[k]) > iou_threshold) {
            suppressed = true;
            break;
          }
        if (!suppressed) kept.push_back(cand);
      }
      for (int64_t k : kept) selected_rows.insert(selected_rows.end(), {b, c, k});
    }
  }
  const int64_t dims[2] = {static_cast<int64_t>(selected_rows.size() / 3), 3};
  loom_tensor_t& y = ctx.allocate_output(0, LOOM_DTYPE_INT64, dims);
  std::copy(selected_rows.begin(), selected_rows.end(), sdk::data_of<int64_t>(y));
}

}  // namespace

LOOM_CPU_KERNEL("NonMaxSuppression", 10, nms_kernel, nullptr);
LOOM_CPU_KERNEL("NonMaxSuppression", 11, nms_kernel, nullptr);

}  // namespace loom::cpu
