#version 450
// Resize of the two innermost dims of a [planes, H, W] tensor: nearest or bilinear, with the
// ONNX coordinate transformations (host picks the numbers, see src/ops/resize.cpp).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint PLANES = 1;
layout(constant_id = 2) const uint H = 1;
layout(constant_id = 3) const uint W = 1;
layout(constant_id = 4) const uint OH = 1;
layout(constant_id = 5) const uint OW = 1;
layout(constant_id = 6) const float SCALE_H = 1.0;
layout(constant_id = 7) const float SCALE_W = 1.0;
layout(constant_id = 8) const uint LINEAR = 0;
layout(constant_id = 9) const uint COORD = 0;    // 0 half_pixel, 1 asymmetric, 2 align_corners,
                                                 // 3 pytorch_half_pixel, 4 tf_half_pixel_for_nearest
layout(constant_id = 10) const uint NEAREST = 0; // 0 round_prefer_floor, 1 round_prefer_ceil,
                                                 // 2 floor, 3 ceil
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };

// As the ONNX reference: the "resized length" of align_corners and pytorch_half_pixel is
// in_len * scale, which is not the integer output length when scales are given.
float source(uint o, uint in_len, float scale) {
  float f = float(o);
  float resized = float(in_len) * scale;
  switch (COORD) {
    case 1u: return f / scale;
    case 2u: return resized == 1.0 ? 0.0 : f * float(in_len - 1u) / (resized - 1.0);
    case 3u: return resized > 1.0 ? (f + 0.5) / scale - 0.5 : 0.0;
    case 4u: return (f + 0.5) / scale;
  }
  return (f + 0.5) / scale - 0.5;
}

int nearest(float s, uint len) {
  float r;
  switch (NEAREST) {
    case 1u: r = (fract(s) == 0.5) ? ceil(s) : floor(s + 0.5); break;
    case 2u: r = floor(s); break;
    case 3u: r = ceil(s); break;
    default: r = (fract(s) == 0.5) ? floor(s) : floor(s + 0.5); break;
  }
  return clamp(int(r), 0, int(len) - 1);
}

void main() {
  uint i = global_index();
  if (i >= PLANES * OH * OW) return;
  uint ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
  uint base = pc.off[0] + plane * H * W;
  float sh = source(oh, H, SCALE_H), sw = source(ow, W, SCALE_W);
  float v;
  if (LINEAR == 0u) {
    v = float(x[base + uint(nearest(sh, H)) * W + uint(nearest(sw, W))]);
  } else {
    float fh = floor(sh), fw = floor(sw);
    float th = sh - fh, tw = sw - fw;
    int h0 = clamp(int(fh), 0, int(H) - 1), h1 = clamp(int(fh) + 1, 0, int(H) - 1);
    int w0 = clamp(int(fw), 0, int(W) - 1), w1 = clamp(int(fw) + 1, 0, int(W) - 1);
    float a = mix(float(x[base + uint(h0) * W + uint(w0)]), float(x[base + uint(h0) * W + uint(w1)]), tw);
    float b = mix(float(x[base + uint(h1) * W + uint(w0)]), float(x[base + uint(h1) * W + uint(w1)]), tw);
    v = mix(a, b, th);
  }
  y[pc.off[1] + i] = STORE_T(v);
}
