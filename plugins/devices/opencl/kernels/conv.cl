// Convolution helpers (NCHW; 1-D convolutions are 2-D with H = 1). The general and grouped
// convolutions are im2col + gemm_tiled; depthwise convolutions run directly here.

// Unfolds one image x[C, H, W] into col[C*KH*KW, OH*OW] (zeros where the window hits padding).
// One work-item per (column-matrix row, output row): it writes OW consecutive values, so the
// index arithmetic is paid once per row rather than once per element.
__kernel void im2col(__global const real_t* x, int xo, __global real_t* col, int co, int n,
                     int H, int W, int KH, int KW, int OH, int OW, int sh, int sw, int ph,
                     int pw, int dh, int dw) {
  int i = get_global_id(0);
  if (i >= n) return;
  int oh = i % OH;
  int r = i / OH;
  int kw = r % KW;
  int kh = (r / KW) % KH;
  int c = r / (KW * KH);
  int ih = oh * sh - ph + kh * dh;
  __global real_t* out = col + co + (r * OH + oh) * OW;
  if (ih < 0 || ih >= H) {
    for (int ow = 0; ow < OW; ++ow) STORE(out, ow, 0.0f);
    return;
  }
  __global const real_t* in = x + xo + (c * H + ih) * W;
  int iw = kw * dw - pw;
  for (int ow = 0; ow < OW; ++ow, iw += sw) STORE(out, ow, (iw >= 0 && iw < W) ? LOAD(in, iw) : 0.0f);
}

// Depthwise (groups == input channels): output channel oc reads input channel oc / mult.
// One work-item per output element of the whole batch.
__kernel void conv_depthwise(__global const real_t* x, int xo, __global const real_t* w, int wo,
                             __global const real_t* bias, int bo, int has_bias,
                             __global real_t* y, int yo, int n, int C, int H, int W, int OC,
                             int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw,
                             int dh, int dw, float act_min, float act_max) {
  int i = get_global_id(0);
  if (i >= n) return;
  int ow = i % OW;
  int oh = (i / OW) % OH;
  int oc = (i / (OW * OH)) % OC;
  int b = i / (OW * OH * OC);
  int c = oc / (OC / C);
  __global const real_t* xp = x + xo + (b * C + c) * H * W;
  __global const real_t* wp = w + wo + oc * KH * KW;
  float acc = has_bias ? LOAD(bias, bo + oc) : 0.0f;
  int ih0 = oh * sh - ph, iw0 = ow * sw - pw;
  for (int kh = 0; kh < KH; ++kh) {
    int ih = ih0 + kh * dh;
    if (ih < 0 || ih >= H) continue;
    for (int kw = 0; kw < KW; ++kw) {
      int iw = iw0 + kw * dw;
      if (iw < 0 || iw >= W) continue;
      acc = mad(LOAD(xp, ih * W + iw), LOAD(wp, kh * KW + kw), acc);
    }
  }
  STORE(y, yo + i, fmin(fmax(acc, act_min), act_max));
}
