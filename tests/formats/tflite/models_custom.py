"""Test models with TFLite custom operators: MediaPipe's Convolution2DTransposeBias,
MaxPoolingWithArgmax2D and MaxUnpooling2D, computed in Loom by the op-kernel plugin
plugins/kernels/tflite-mobile (domain tflite.custom).

build(G, S) -> {name: (model bytes, [inputs], [expected outputs])}: the TFLite interpreter has no
kernels for these operators, so the expected outputs are computed here with numpy, following
MediaPipe's implementations (mediapipe/util/tflite/operations/*.cc): options are the raw C
structs TfLiteTransposeConvParams (padding, stride_w, stride_h) and TfLitePoolParams (padding,
stride_w, stride_h, filter_w, filter_h, activation, computed padding), TfLitePadding SAME = 1,
VALID = 2; the argmax output is float32, window position y * filter_w + x plus 0.1.

  float_custom_mobile   CONV_2D (3x3 SAME) -> Convolution2DTransposeBias (3x3 SAME, stride 2)
                        -> MaxPoolingWithArgmax2D (2x2 SAME, stride 2) -> MaxUnpooling2D;
                        outputs the unpooled tensor and the argmax indices
  float_custom_valid    two inputs: MaxPoolingWithArgmax2D 3x3 VALID stride 2 with fused RELU6
                        (batch 2), and Convolution2DTransposeBias VALID with strides w 3, h 2
                        (batch 2); three outputs
"""
import struct

import numpy as np

SEED = 20261129
SAME, VALID = 0, 1                # schema Padding (CONV_2D options)
TF_SAME, TF_VALID = 1, 2          # TfLitePadding (the custom operators' C structs)


def tconv_struct(padding, stride_w, stride_h):
    return struct.pack("<3i", padding, stride_w, stride_h)


def pool_struct(padding, stride_w, stride_h, filter_w, filter_h, activation):
    # The computed-padding tail (4 int32) is filled by MediaPipe at prepare time; zeros here.
    return struct.pack("<10i", padding, stride_w, stride_h, filter_w, filter_h, activation,
                       0, 0, 0, 0)


def conv2d_same(x, w, bias):
    """CONV_2D stride 1 SAME, NHWC input, [O, KH, KW, I] weights."""
    n, h, wd, _ = x.shape
    o, kh, kw, _ = w.shape
    pt, pl = (kh - 1) // 2, (kw - 1) // 2
    xp = np.zeros((n, h + kh - 1, wd + kw - 1, x.shape[3]), np.float64)
    xp[:, pt:pt + h, pl:pl + wd, :] = x
    y = np.zeros((n, h, wd, o), np.float64)
    for ky in range(kh):
        for kx in range(kw):
            y += np.einsum("nhwi,oi->nhwo", xp[:, ky:ky + h, kx:kx + wd, :], w[:, ky, kx, :])
    return (y + bias).astype(np.float32)


def transpose_conv_bias(x, w, bias, padding, sw, sh):
    n, h, wd, _ = x.shape
    o, kh, kw, _ = w.shape
    ph = max(0, kh - (h - 1) % sh - 1) if padding == TF_SAME else 0
    pw = max(0, kw - (wd - 1) % sw - 1) if padding == TF_SAME else 0
    oh, ow = sh * (h - 1) + kh - ph, sw * (wd - 1) + kw - pw
    y = np.zeros((n, oh, ow, o), np.float64) + bias
    for iy in range(h):
        for ix in range(wd):
            for ky in range(kh):
                for kx in range(kw):
                    oy, ox = iy * sh - ph // 2 + ky, ix * sw - pw // 2 + kx
                    if 0 <= oy < oh and 0 <= ox < ow:
                        y[:, oy, ox, :] += x[:, iy, ix, :] @ w[:, ky, kx, :].T
    return y.astype(np.float32)


def max_pool_argmax(x, padding, sw, sh, fw, fh, activation):
    n, h, wd, c = x.shape
    if padding == TF_SAME:
        oh, ow = -(-h // sh), -(-wd // sw)
    else:
        oh, ow = (h - fh + sh) // sh, (wd - fw + sw) // sw
    pt = max(0, ((oh - 1) * sh + fh - h) // 2)
    pl = max(0, ((ow - 1) * sw + fw - wd) // 2)
    values = np.zeros((n, oh, ow, c), np.float32)
    indices = np.zeros((n, oh, ow, c), np.float32)
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for ch in range(c):
                    best, pos = -np.inf, 0
                    for fy in range(fh):
                        for fx in range(fw):
                            y, xx = oy * sh - pt + fy, ox * sw - pl + fx
                            if 0 <= y < h and 0 <= xx < wd and x[b, y, xx, ch] > best:
                                best, pos = x[b, y, xx, ch], fy * fw + fx
                    if activation == 3:
                        best = min(max(best, 0.0), 6.0)
                    values[b, oy, ox, ch] = best
                    indices[b, oy, ox, ch] = np.float32(pos) + np.float32(0.1)
    return values, indices


def max_unpooling(x, indices, sw, sh, fw, fh):
    n, h, wd, c = x.shape
    oh, ow = h * fh, wd * fw
    pt = max(0, ((h - 1) * sh + fh - oh) // 2)
    pl = max(0, ((wd - 1) * sw + fw - ow) // 2)
    y = np.zeros((n, oh, ow, c), np.float32)
    for b in range(n):
        for iy in range(h):
            for ix in range(wd):
                for ch in range(c):
                    i = int(indices[b, iy, ix, ch])
                    y[b, iy * sh - pt + i // fw, ix * sw - pl + i % fw, ch] = x[b, iy, ix, ch]
    return y


def build(G, S):
    rng = np.random.default_rng(SEED)
    f = lambda *shape, s=0.5: (rng.standard_normal(shape) * s).astype(np.float32)
    models = {}

    # ---- float_custom_mobile ----
    g = G.Graph()
    x = g.tensor("input", [1, 6, 6, 3], np.float32)
    conv_w, conv_b = f(4, 3, 3, 3), f(4)
    t_w, t_b = f(5, 3, 3, 4), f(5)
    conv = g.tensor("conv", [1, 6, 6, 4], np.float32)
    g.op(G.OP["CONV_2D"], [x, g.const("conv_w", conv_w), g.const("conv_b", conv_b)], [conv],
         G.conv_options(1, SAME, G.ACT["NONE"]))
    up = g.tensor("upsampled", [1, 12, 12, 5], np.float32)
    g.op("Convolution2DTransposeBias", [conv, g.const("tconv_w", t_w), g.const("tconv_b", t_b)],
         [up], custom_options=tconv_struct(TF_SAME, 2, 2))
    pooled = g.tensor("pooled", [1, 6, 6, 5], np.float32)
    argmax = g.tensor("argmax", [1, 6, 6, 5], np.float32)
    g.op("MaxPoolingWithArgmax2D", [up], [pooled, argmax],
         custom_options=pool_struct(TF_SAME, 2, 2, 2, 2, 0))
    unpooled = g.tensor("unpooled", [1, 12, 12, 5], np.float32)
    g.op("MaxUnpooling2D", [pooled, argmax], [unpooled],
         custom_options=pool_struct(TF_SAME, 2, 2, 2, 2, 0))
    g.inputs, g.outputs = [x], [unpooled, argmax]
    xin = f(1, 6, 6, 3, s=1.0)
    r_up = transpose_conv_bias(conv2d_same(xin, conv_w, conv_b), t_w, t_b, TF_SAME, 2, 2)
    r_pool, r_arg = max_pool_argmax(r_up, TF_SAME, 2, 2, 2, 2, 0)
    r_unpool = max_unpooling(r_pool, r_arg, 2, 2, 2, 2)
    models["float_custom_mobile"] = (g.serialize(S), [xin], [r_unpool, r_arg])

    # ---- float_custom_valid ----
    g = G.Graph()
    a = g.tensor("image", [2, 7, 9, 2], np.float32)
    bx = g.tensor("features", [2, 3, 4, 2], np.float32)
    pv = g.tensor("pool_values", [2, 3, 4, 2], np.float32)
    pi = g.tensor("pool_indices", [2, 3, 4, 2], np.float32)
    g.op("MaxPoolingWithArgmax2D", [a], [pv, pi],
         custom_options=pool_struct(TF_VALID, 2, 2, 3, 3, 3))
    v_w, v_b = f(3, 2, 3, 2), f(3)
    ty = g.tensor("tconv", [2, 6, 12, 3], np.float32)
    g.op("Convolution2DTransposeBias", [bx, g.const("w", v_w), g.const("b", v_b)], [ty],
         custom_options=tconv_struct(TF_VALID, 3, 2))
    g.inputs, g.outputs = [a, bx], [pv, pi, ty]
    ain, bin_ = f(2, 7, 9, 2, s=4.0), f(2, 3, 4, 2, s=1.0)
    r_pv, r_pi = max_pool_argmax(ain, TF_VALID, 2, 2, 3, 3, 3)
    r_ty = transpose_conv_bias(bin_, v_w, v_b, TF_VALID, 3, 2)
    models["float_custom_valid"] = (g.serialize(S), [ain, bin_], [r_pv, r_pi, r_ty])
    return models
