// Resize over the last two axes of x[outer, H, W] (nearest or bilinear).
// ctm (coordinate transformation): 0 half_pixel, 1 pytorch_half_pixel, 2 align_corners,
// 3 asymmetric, 4 tf_half_pixel_for_nn.
// nearest_mode: 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil.

inline float resize_source(int ctm, int out, float scale, int out_len, int in_len) {
  float x = (float)out;
  switch (ctm) {
    case 1: return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case 2: return out_len == 1 ? 0.0f : x * (float)(in_len - 1) / (float)(out_len - 1);
    case 3: return x / scale;
    case 4: return (x + 0.5f) / scale;
    default: return (x + 0.5f) / scale - 0.5f;
  }
}

inline int resize_nearest_index(int mode, float x, int len) {
  float r;
  switch (mode) {
    case 1: r = floor(x + 0.5f); break;
    case 2: r = floor(x); break;
    case 3: r = ceil(x); break;
    default: r = (x - floor(x) == 0.5f) ? floor(x) : round(x); break;
  }
  return clamp((int)r, 0, len - 1);
}

__kernel void resize2d(__global const real_t* x, int xo, __global real_t* y, int yo, int n, int H,
                       int W, int OH, int OW, float scale_h, float scale_w, int ctm, int linear,
                       int nearest_mode) {
  int i = get_global_id(0);
  if (i >= n) return;
  int ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
  __global const real_t* xp = x + xo + plane * H * W;
  float sy = resize_source(ctm, oh, scale_h, OH, H);
  float sx = resize_source(ctm, ow, scale_w, OW, W);
  if (!linear) {
    STORE(y, yo + i,
          LOAD(xp, resize_nearest_index(nearest_mode, sy, H) * W +
                       resize_nearest_index(nearest_mode, sx, W)));
    return;
  }
  // Edge-clamped neighbours: outside coordinates take the border values.
  float fy = floor(sy), fx = floor(sx);
  float ry = sy - fy, rx = sx - fx;
  int y0 = clamp((int)fy, 0, H - 1), y1 = clamp((int)fy + 1, 0, H - 1);
  int x0 = clamp((int)fx, 0, W - 1), x1 = clamp((int)fx + 1, 0, W - 1);
  float top = LOAD(xp, y0 * W + x0) * (1.0f - rx) + LOAD(xp, y0 * W + x1) * rx;
  float bottom = LOAD(xp, y1 * W + x0) * (1.0f - rx) + LOAD(xp, y1 * W + x1) * rx;
  STORE(y, yo + i, top * (1.0f - ry) + bottom * ry);
}
