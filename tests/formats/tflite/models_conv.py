"""Test models of the convolution / pooling / resize / matrix-product family (issue #27).

build(G, S) -> {name: (model bytes, [inputs], None)}: the TFLite reference interpreter computes
every expected output. Quantized models take their activation ranges from the float version of
the same graph run through the interpreter, so the quantization parameters are realistic.

  float_transpose_conv   CONV_2D then TRANSPOSE_CONV SAME (stride 2, bias, fused RELU, odd output
                         size), VALID (stride 2, no bias), VALID with an output larger than the
                         kernels reach (bias only there)
  int8_transpose_conv    the same with int8 activations, per-channel int8 weights, int32 bias
  float_depthwise_multiplier  DEPTHWISE_CONV_2D depth_multiplier 2 with dilation 2, and one
                         input channel with multiplier 4, stride 2, VALID
  int8_conv_pool         int8 DEPTHWISE_CONV_2D with multiplier 2 and dilation 2 (per-channel),
                         MAX_POOL_2D with fused RELU, AVERAGE_POOL_2D SAME with fused RELU6; one
                         input channel with multiplier 4
  float_resize_flags     RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR, every valid flag combination,
                         odd sizes up and down
  int8_resize            the same operators on int8 and uint8 inputs
  float_matmul_pool      FULLY_CONNECTED without bias (keep_num_dims), BATCH_MATMUL broadcasting
                         the batch dimensions, L2_POOL_2D SAME and VALID (fused RELU6)
  int8_fc                FULLY_CONNECTED int8: per-channel weights with bias and RELU6, per-tensor
                         weights without bias with keep_num_dims
  uint8_fc               FULLY_CONNECTED uint8 with bias and RELU
  float_hybrid_fc        FULLY_CONNECTED float input, int8 weights (hybrid), keep_num_dims with bias
                         and RELU, and without bias; one all-zero input row
  int8_batch_matmul      BATCH_MATMUL int8, broadcast batch dimension, adj_y
  float_lstm             UNIDIRECTIONAL_SEQUENCE_LSTM: batch-major with peepholes and time-major
                         plain (ONNX LSTM), time-major CIFG with cell clip, projection and
                         projection clip, and layer normalization with RELU (unrolled)
  float_bidirectional_lstm  BIDIRECTIONAL_SEQUENCE_LSTM time-major with merged outputs, and
                         batch-major with separate outputs (peepholes and projections, backward
                         CIFG; cell and projection clip)
  float_rnn              UNIDIRECTIONAL_SEQUENCE_RNN: TANH batch- and time-major (ONNX RNN),
                         time-major RELU6 (unrolled)
The recurrent models list their state tensors (is_variable) as graph inputs, so a test can give
the initial state; TFLite's interpreter accepts that and the expected outputs use the values.
float_recurrent_zero_state has them as plain variable tensors (how converters ship them), which
start at zero.
"""
import numpy as np

SEED = 20261128


def build(G, S):
    OP = dict(G.OP, L2_POOL_2D=12, TRANSPOSE_CONV=67)
    rng = np.random.default_rng(SEED)
    f = lambda *shape, s=0.5: (rng.standard_normal(shape) * s).astype(np.float32)
    SAME, VALID = G.SAME, G.VALID

    def tconv_options(stride, padding, act):
        return G.simple_options("TransposeConvOptions", padding=padding, stride_w=stride,
                                stride_h=stride, fused_activation_function=act)

    def dw_options(stride, padding, mult, dilation=1, act=0):
        return G.simple_options("DepthwiseConv2DOptions", padding=padding, stride_w=stride,
                                stride_h=stride, depth_multiplier=mult,
                                fused_activation_function=act, dilation_w_factor=dilation,
                                dilation_h_factor=dilation)

    def pool_options(size, stride, padding, act=0):
        return G.simple_options("Pool2DOptions", padding=padding, stride_w=stride,
                                stride_h=stride, filter_width=size, filter_height=size,
                                fused_activation_function=act)

    def ranges_of(model_bytes, xs):
        """min/max of every float tensor over the inputs xs (a list of input lists)."""
        ranges = {}
        for x in xs:
            it = G.interpreter(model_bytes, preserve=True)
            for detail, value in zip(it.get_input_details(), x):
                it.set_tensor(detail["index"], value)
            it.invoke()
            for d in it.get_tensor_details():
                try:
                    v = it.get_tensor(d["index"])
                except ValueError:
                    continue
                if v.dtype != np.float32 or v.size == 0:
                    continue
                lo, hi = float(v.min()), float(v.max())
                old = ranges.get(d["name"], (lo, hi))
                ranges[d["name"]] = (min(old[0], lo), max(old[1], hi))
        return ranges

    class Q:
        """Tensor factory of one graph: float, or quantized (int8/uint8) with given ranges."""

        def __init__(self, g, dtype=None, ranges=None):
            self.g, self.dtype, self.ranges = g, dtype, ranges

        def act(self, name, shape, dtype=None):
            dtype = dtype or self.dtype
            if dtype is None:
                return self.g.tensor(name, shape, np.float32)
            return self.g.tensor(name, shape, dtype, quant=G.quant_params(*self.ranges[name], dtype))

        def weights(self, name, w, axis=None):
            if self.dtype is None:
                return self.g.const(name, w)
            data, params = G.weight_quant(w, self.dtype, axis)
            return self.g.const(name, data, params)

        def bias(self, name, b, x, w):
            if self.dtype is None:
                return self.g.const(name, b)
            in_scale = self.g.tensors[x]["quant"][0][0]
            w_scales = np.array(self.g.tensors[w]["quant"][0], np.float64)
            scales = in_scale * w_scales * np.ones(len(b))
            return self.g.const(name, np.round(b / scales).astype(np.int32),
                                (list(scales), [0] * len(b), 0))

    def quantized_pair(name, build_graph, shapes, qdtype=np.int8):
        """A float graph's calibration ranges -> the quantized graph and its quantized input."""
        float_model = build_graph(None, None).serialize(S)
        calib = [[rng.uniform(-1, 1, s).astype(np.float32) for s in shapes] for _ in range(8)]
        ranges = ranges_of(float_model, calib)
        x = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
        g = build_graph(qdtype, ranges)
        xq = [G.quantize_array(v, *g.tensors[i]["quant"], qdtype)
              for v, i in zip(x, g.inputs)]
        return g.serialize(S), xq

    models = {}

    # ---- TRANSPOSE_CONV ------------------------------------------------------------------
    tc = dict(conv_w=f(4, 3, 3, 3), conv_b=f(4, s=0.1), same_w=f(6, 3, 3, 4),
              same_b=f(6, s=0.2), valid_w=f(2, 3, 3, 4), wide_w=f(3, 2, 2, 4), wide_b=f(3, s=0.3))

    def transpose_conv_graph(qdtype, ranges):
        g = G.Graph()
        q = Q(g, qdtype, ranges)
        x = q.act("image", [1, 5, 5, 3])
        g.inputs = [x]
        w = q.weights("conv/w", tc["conv_w"], 0)
        feat = q.act("features", [1, 5, 5, 4])
        g.op(OP["CONV_2D"], [x, w, q.bias("conv/b", tc["conv_b"], x, w)], [feat],
             G.conv_options(1, SAME, G.ACT["RELU"]))
        ws = q.weights("up_same/w", tc["same_w"], 0)
        up = q.act("up_same", [1, 9, 10, 6])
        g.op(OP["TRANSPOSE_CONV"], [g.const("up_same/shape", np.array([1, 9, 10, 6], np.int32)),
                                    ws, feat, q.bias("up_same/b", tc["same_b"], feat, ws)], [up],
             tconv_options(2, SAME, G.ACT["RELU"]))
        wv = q.weights("up_valid/w", tc["valid_w"], 0)
        upv = q.act("up_valid", [1, 11, 11, 2])
        g.op(OP["TRANSPOSE_CONV"], [g.const("up_valid/shape", np.array([1, 11, 11, 2], np.int32)),
                                    wv, feat], [upv], tconv_options(2, VALID, G.ACT["NONE"]))
        # An output larger than the kernels reach: one extra row (below the stride) and three
        # extra columns (not), which hold only the bias.
        ww = q.weights("up_wide/w", tc["wide_w"], 0)
        upw = q.act("up_wide", [1, 11, 13, 3])
        g.op(OP["TRANSPOSE_CONV"], [g.const("up_wide/shape", np.array([1, 11, 13, 3], np.int32)),
                                    ww, feat, q.bias("up_wide/b", tc["wide_b"], feat, ww)], [upw],
             tconv_options(2, VALID, G.ACT["NONE"]))
        g.outputs = [up, upv, upw]
        return g

    models["float_transpose_conv"] = (transpose_conv_graph(None, None).serialize(S),
                                      [rng.uniform(-1, 1, (1, 5, 5, 3)).astype(np.float32)], None)
    m, xq = quantized_pair("int8_transpose_conv", transpose_conv_graph, [(1, 5, 5, 3)])
    models["int8_transpose_conv"] = (m, xq, None)

    # ---- DEPTHWISE_CONV_2D with a depth multiplier ---------------------------------------
    g = G.Graph()
    x = g.tensor("image", [1, 7, 7, 3], np.float32)
    mono = g.tensor("mono", [1, 6, 6, 1], np.float32)
    g.inputs = [x, mono]
    y1 = g.tensor("dilated", [1, 7, 7, 6], np.float32)
    g.op(OP["DEPTHWISE_CONV_2D"], [x, g.const("dilated/w", f(1, 3, 3, 6)),
                                   g.const("dilated/b", f(6, s=0.1))], [y1],
         dw_options(1, SAME, 2, dilation=2, act=G.ACT["RELU6"]))
    y2 = g.tensor("mono_out", [1, 2, 2, 4], np.float32)
    g.op(OP["DEPTHWISE_CONV_2D"], [mono, g.const("mono/w", f(1, 3, 3, 4))], [y2],
         dw_options(2, VALID, 4))
    g.outputs = [y1, y2]
    models["float_depthwise_multiplier"] = (
        g.serialize(S), [rng.standard_normal((1, 7, 7, 3)).astype(np.float32),
                         rng.standard_normal((1, 6, 6, 1)).astype(np.float32)], None)

    dq = dict(w=f(1, 3, 3, 6), b=f(6, s=0.1), mono_w=f(1, 3, 3, 4), mono_b=f(4, s=0.1))

    def conv_pool_graph(qdtype, ranges):
        g = G.Graph()
        q = Q(g, qdtype, ranges)
        x = q.act("image", [1, 8, 8, 3])
        g.inputs = [x]
        w = q.weights("dw/w", dq["w"], 3)
        dw = q.act("dw", [1, 8, 8, 6])
        g.op(OP["DEPTHWISE_CONV_2D"], [x, w, q.bias("dw/b", dq["b"], x, w)], [dw],
             dw_options(1, SAME, 2, dilation=2))
        mx = g.tensor("max", [1, 4, 4, 6], np.float32 if qdtype is None else qdtype,
                      quant=None if qdtype is None else g.tensors[dw]["quant"])
        g.op(OP["MAX_POOL_2D"], [dw], [mx], pool_options(2, 2, VALID, G.ACT["RELU"]))
        # TFLite's 8-bit pools require the output quantization of the input (their kernels
        # average/compare the raw values), so the pools share the convolution's.
        avg = g.tensor("avg", [1, 2, 2, 6], np.float32 if qdtype is None else qdtype,
                       quant=None if qdtype is None else g.tensors[dw]["quant"])
        g.op(OP["AVERAGE_POOL_2D"], [mx], [avg], pool_options(3, 2, SAME, G.ACT["RELU6"]))
        # One input channel with depth multiplier 4 (per-channel weights along dimension 3).
        mono = q.act("mono", [1, 6, 6, 1])
        g.inputs.append(mono)
        wm = q.weights("mono/w", dq["mono_w"], 3)
        ym = q.act("mono_out", [1, 2, 2, 4])
        g.op(OP["DEPTHWISE_CONV_2D"], [mono, wm, q.bias("mono/b", dq["mono_b"], mono, wm)], [ym],
             dw_options(2, VALID, 4))
        g.outputs = [dw, avg, ym]
        return g

    m, xq = quantized_pair("int8_conv_pool", conv_pool_graph, [(1, 8, 8, 3), (1, 6, 6, 1)])
    models["int8_conv_pool"] = (m, xq, None)

    # ---- RESIZE --------------------------------------------------------------------------
    flag_sets = [dict(), dict(align_corners=True), dict(half_pixel_centers=True)]
    sizes = [(8, 11), (3, 4), (5, 13)]

    def resize_ops(g, x, dtype, prefix, quant=None):
        outs = []
        for kind, code, opts in (("bilinear", OP["RESIZE_BILINEAR"], "ResizeBilinearOptions"),
                                 ("nearest", OP["RESIZE_NEAREST_NEIGHBOR"],
                                  "ResizeNearestNeighborOptions")):
            for flags in flag_sets:
                for h, w in sizes:
                    tag = "_".join([prefix, kind] + sorted(flags) + [f"{h}x{w}"])
                    shape = list(g.tensors[x]["shape"])
                    y = g.tensor(tag, [shape[0], h, w, shape[3]], dtype, quant=quant)
                    g.op(code, [x, g.const(tag + "/size", np.array([h, w], np.int32))], [y],
                         G.simple_options(opts, **flags))
                    outs.append(y)
        return outs

    g = G.Graph()
    x = g.tensor("image", [1, 5, 7, 2], np.float32)
    g.inputs = [x]
    g.outputs = resize_ops(g, x, np.float32, "f")
    models["float_resize_flags"] = (g.serialize(S),
                                    [rng.standard_normal((1, 5, 7, 2)).astype(np.float32)], None)

    g = G.Graph()
    q8 = G.quant_params(-2.0, 2.5, np.int8)
    qu8 = G.quant_params(-1.5, 3.0, np.uint8)
    x8 = g.tensor("image_i8", [1, 5, 7, 2], np.int8, quant=q8)
    xu8 = g.tensor("image_u8", [1, 5, 7, 2], np.uint8, quant=qu8)
    g.inputs = [x8, xu8]
    g.outputs = resize_ops(g, x8, np.int8, "i8", q8) + resize_ops(g, xu8, np.uint8, "u8", qu8)
    models["int8_resize"] = (
        g.serialize(S), [rng.integers(-128, 128, (1, 5, 7, 2)).astype(np.int8),
                         rng.integers(0, 256, (1, 5, 7, 2)).astype(np.uint8)], None)

    # ---- FULLY_CONNECTED, BATCH_MATMUL, L2_POOL_2D (float) -------------------------------
    g = G.Graph()
    seq = g.tensor("seq", [2, 3, 8], np.float32)
    a = g.tensor("a", [2, 1, 3, 4], np.float32)
    img = g.tensor("img", [1, 5, 6, 3], np.float32)
    g.inputs = [seq, a, img]
    fc = g.tensor("dense_nobias", [2, 3, 5], np.float32)
    g.op(OP["FULLY_CONNECTED"], [seq, g.const("dense/w", f(5, 8)), -1], [fc],
         G.simple_options("FullyConnectedOptions", keep_num_dims=True,
                          fused_activation_function=G.ACT["RELU"]))
    fc2 = g.tensor("dense_flat", [6, 4], np.float32)
    g.op(OP["FULLY_CONNECTED"], [seq, g.const("flat/w", f(4, 8)), g.const("flat/b", f(4))],
         [fc2], G.simple_options("FullyConnectedOptions"))
    bm = g.tensor("bmm", [2, 2, 3, 5], np.float32)
    g.op(OP["BATCH_MATMUL"], [a, g.const("bmm/b", f(2, 5, 4))], [bm],
         G.simple_options("BatchMatMulOptions", adj_y=True))
    l2s = g.tensor("l2_same", [1, 3, 3, 3], np.float32)
    g.op(OP["L2_POOL_2D"], [img, ], [l2s], pool_options(3, 2, SAME))
    l2v = g.tensor("l2_valid", [1, 2, 2, 3], np.float32)
    g.op(OP["L2_POOL_2D"], [img], [l2v], pool_options(2, 2, VALID, G.ACT["RELU6"]))
    g.outputs = [fc, fc2, bm, l2s, l2v]
    models["float_matmul_pool"] = (
        g.serialize(S), [rng.standard_normal((2, 3, 8)).astype(np.float32),
                         rng.standard_normal((2, 1, 3, 4)).astype(np.float32),
                         (rng.standard_normal((1, 5, 6, 3)) * 2).astype(np.float32)], None)

    # ---- quantized FULLY_CONNECTED -------------------------------------------------------
    fq = dict(w1=f(5, 8), b1=f(5, s=0.2), w2=f(4, 8), w3=f(3, 8), b3=f(3, s=0.2))

    def fc_graph(qdtype, ranges):
        g = G.Graph()
        q = Q(g, qdtype, ranges)
        x = q.act("seq", [2, 3, 8])
        g.inputs = [x]
        # Per-channel weights without keep_num_dims: TFLite 2.14's reference kernel computes
        # only the first row of a per-channel FULLY_CONNECTED with keep_num_dims and a rank-3
        # input (the other rows are left unwritten), so that combination has no reference.
        w1 = q.weights("fc1/w", fq["w1"], 0)
        y1 = q.act("fc1", [6, 5])
        g.op(OP["FULLY_CONNECTED"], [x, w1, q.bias("fc1/b", fq["b1"], x, w1)], [y1],
             G.simple_options("FullyConnectedOptions", fused_activation_function=G.ACT["RELU6"]))
        w2 = q.weights("fc2/w", fq["w2"])
        y2 = q.act("fc2", [2, 3, 4])
        g.op(OP["FULLY_CONNECTED"], [x, w2, -1], [y2],
             G.simple_options("FullyConnectedOptions", keep_num_dims=True))
        g.outputs = [y1, y2]
        return g

    m, xq = quantized_pair("int8_fc", fc_graph, [(2, 3, 8)])
    models["int8_fc"] = (m, xq, None)

    def fc_u8_graph(qdtype, ranges):
        g = G.Graph()
        q = Q(g, qdtype, ranges)
        x = q.act("seq", [3, 8])
        g.inputs = [x]
        w = q.weights("fc/w", fq["w3"])
        y = q.act("fc", [3, 3])
        g.op(OP["FULLY_CONNECTED"], [x, w, q.bias("fc/b", fq["b3"], x, w)], [y],
             G.simple_options("FullyConnectedOptions", fused_activation_function=G.ACT["RELU"]))
        g.outputs = [y]
        return g

    m, xq = quantized_pair("uint8_fc", fc_u8_graph, [(3, 8)], np.uint8)
    models["uint8_fc"] = (m, xq, None)

    # Hybrid: float input, int8 per-tensor weights (TFLite quantizes each input row at run time).
    g = G.Graph()
    x = g.tensor("seq", [2, 3, 8], np.float32)
    g.inputs = [x]
    wd, wq = G.weight_quant(f(5, 8), np.int8)
    y1 = g.tensor("hybrid_bias_relu", [2, 3, 5], np.float32)
    g.op(OP["FULLY_CONNECTED"], [x, g.const("hybrid1/w", wd, wq), g.const("hybrid1/b", f(5))],
         [y1], G.simple_options("FullyConnectedOptions", keep_num_dims=True,
                                fused_activation_function=G.ACT["RELU"]))
    wd2, wq2 = G.weight_quant(f(3, 8), np.int8)
    y2 = g.tensor("hybrid_nobias", [6, 3], np.float32)
    g.op(OP["FULLY_CONNECTED"], [x, g.const("hybrid2/w", wd2, wq2), -1], [y2],
         G.simple_options("FullyConnectedOptions"))
    g.outputs = [y1, y2]
    xh = rng.standard_normal((2, 3, 8)).astype(np.float32)
    xh[1, 1] = 0  # an all-zero row: TFLite's quantization special case
    models["float_hybrid_fc"] = (g.serialize(S), [xh], None)

    def bmm_graph(qdtype, ranges):
        g = G.Graph()
        q = Q(g, qdtype, ranges)
        a = q.act("a", [2, 3, 4])
        b = q.act("b", [1, 5, 4])
        g.inputs = [a, b]
        y = q.act("product", [2, 3, 5])
        g.op(OP["BATCH_MATMUL"], [a, b], [y], G.simple_options("BatchMatMulOptions", adj_y=True))
        g.outputs = [y]
        return g

    m, xq = quantized_pair("int8_batch_matmul", bmm_graph, [(2, 3, 4), (1, 5, 4)])
    models["int8_batch_matmul"] = (m, xq, None)
    models.update(recurrent_models(G, S, rng, f))
    return models


class VariableTensors:
    """The schema S, except that the tensors whose indices are in `variables` are written with
    is_variable = true (Graph.serialize does not know the field)."""

    def __init__(self, S, variables):
        self.S, self.variables, self.count = S, set(variables), 0

    def __getattr__(self, name):
        if name != "Tensor":
            return getattr(self.S, name)
        outer, module = self, self.S.Tensor

        class Tensor:
            def __getattr__(self, attr):
                return getattr(module, attr)

            @staticmethod
            def TensorStart(b):
                module.TensorStart(b)

            @staticmethod
            def TensorEnd(b):
                if outer.count in outer.variables:
                    module.TensorAddIsVariable(b, True)
                outer.count += 1
                return module.TensorEnd(b)
        return Tensor()


def recurrent_models(G, S, rng, f):
    OP = dict(G.OP, UNIDIRECTIONAL_SEQUENCE_RNN=35, UNIDIRECTIONAL_SEQUENCE_LSTM=44,
              BIDIRECTIONAL_SEQUENCE_LSTM=52)
    models = {}
    g = G.Graph()
    B, T, I, H = 2, 4, 3, 5

    def lstm(prefix, x, shape_out, time_major, peephole, cifg, clip, proj, layer_norm, act):
        n_out = proj or H
        ins = [x]
        for gate in "ifco":  # input-to-gate weights
            ins.append(-1 if (cifg and gate == "i") else g.const(f"{prefix}/w_{gate}", f(H, I)))
        for gate in "ifco":
            ins.append(-1 if (cifg and gate == "i") else g.const(f"{prefix}/r_{gate}", f(H, n_out)))
        for gate in "ifo":  # peepholes
            ins.append(g.const(f"{prefix}/p_{gate}", f(H)) if peephole and not (cifg and gate == "i")
                       else -1)
        for gate in "ifco":
            ins.append(-1 if (cifg and gate == "i") else g.const(f"{prefix}/b_{gate}", f(H, s=0.2)))
        if proj:
            ins += [g.const(f"{prefix}/proj_w", f(proj, H)), g.const(f"{prefix}/proj_b", f(proj, s=0.1))]
        else:
            ins += [-1, -1]
        h0 = g.tensor(f"{prefix}/h0", [B, n_out], np.float32)
        c0 = g.tensor(f"{prefix}/c0", [B, H], np.float32)
        ins += [h0, c0]
        if layer_norm:
            for gate in "ifco":
                ins.append(-1 if (cifg and gate == "i")
                           else g.const(f"{prefix}/ln_{gate}", (1 + f(H, s=0.2)).astype(np.float32)))
        y = g.tensor(prefix, shape_out, np.float32)
        g.op(OP["UNIDIRECTIONAL_SEQUENCE_LSTM"], ins, [y],
             G.simple_options("UnidirectionalSequenceLSTMOptions", fused_activation_function=act,
                              cell_clip=clip, proj_clip=0.3 if proj else 0.0, time_major=time_major))
        return y, [h0, c0], [(B, n_out), (B, H)]

    xb = g.tensor("x_batch", [B, T, I], np.float32)
    xt = g.tensor("x_time", [T, B, I], np.float32)
    y1, s1, d1 = lstm("lstm_peephole", xb, [B, T, H], False, True, False, 0.0, 0, False, 4)
    y2, s2, d2 = lstm("lstm_cifg_clip_proj", xt, [T, B, 3], True, True, True, 0.4, 3, False, 4)
    y3, s3, d3 = lstm("lstm_layer_norm", xb, [B, T, H], False, False, False, 0.0, 0, True, 1)
    y4, s4, d4 = lstm("lstm_time_major", xt, [T, B, H], True, False, False, 0.0, 0, False, 4)
    g.inputs = [xb, xt] + s1 + s2 + s3 + s4
    g.outputs = [y1, y2, y3, y4]
    states = s1 + s2 + s3 + s4
    xs = [f(B, T, I, s=1.0), f(T, B, I, s=1.0)] + [f(*d, s=0.3) for d in d1 + d2 + d3 + d4]
    models["float_lstm"] = (g.serialize(VariableTensors(S, states)), xs, None)

    # BIDIRECTIONAL_SEQUENCE_LSTM: 48 inputs (forward 1-17, backward 18-34, states 35-38,
    # no auxiliary input 39-47).
    def direction(prefix, peephole, cifg, proj):
        n_out = proj or H
        ins = []
        for gate in "ifco":
            ins.append(-1 if (cifg and gate == "i") else g.const(f"{prefix}/w_{gate}", f(H, I)))
        for gate in "ifco":
            ins.append(-1 if (cifg and gate == "i") else g.const(f"{prefix}/r_{gate}", f(H, n_out)))
        for gate in "ifo":
            ins.append(g.const(f"{prefix}/p_{gate}", f(H)) if peephole and not (cifg and gate == "i")
                       else -1)
        for gate in "ifco":
            ins.append(-1 if (cifg and gate == "i") else g.const(f"{prefix}/b_{gate}", f(H, s=0.2)))
        ins += ([g.const(f"{prefix}/proj_w", f(proj, H)), g.const(f"{prefix}/proj_b", f(proj, s=0.1))]
                if proj else [-1, -1])
        states = [g.tensor(f"{prefix}/h0", [B, n_out], np.float32),
                  g.tensor(f"{prefix}/c0", [B, H], np.float32)]
        return ins, states, [(B, n_out), (B, H)]

    g = G.Graph()
    xt = g.tensor("x_time", [T, B, I], np.float32)
    xb = g.tensor("x_batch", [B, T, I], np.float32)
    fw, fs, fd = direction("merged_fw", False, False, 0)
    bw, bs, bd = direction("merged_bw", False, False, 0)
    merged = g.tensor("bilstm_merged", [T, B, 2 * H], np.float32)
    g.op(OP["BIDIRECTIONAL_SEQUENCE_LSTM"], [xt] + fw + bw + fs + bs + [-1] * 9, [merged],
         G.simple_options("BidirectionalSequenceLSTMOptions", fused_activation_function=4,
                          merge_outputs=True, time_major=True))
    fw2, fs2, fd2 = direction("split_fw", True, False, 3)
    bw2, bs2, bd2 = direction("split_bw", True, True, 3)
    out_fw = g.tensor("bilstm_fw", [B, T, 3], np.float32)
    out_bw = g.tensor("bilstm_bw", [B, T, 3], np.float32)
    g.op(OP["BIDIRECTIONAL_SEQUENCE_LSTM"], [xb] + fw2 + bw2 + fs2 + bs2 + [-1] * 9,
         [out_fw, out_bw],
         G.simple_options("BidirectionalSequenceLSTMOptions", fused_activation_function=4,
                          cell_clip=0.5, proj_clip=0.4, merge_outputs=False, time_major=False))
    states = fs + bs + fs2 + bs2
    g.inputs = [xt, xb] + states
    g.outputs = [merged, out_fw, out_bw]
    xs = [f(T, B, I, s=1.0), f(B, T, I, s=1.0)] + [f(*d, s=0.3) for d in fd + bd + fd2 + bd2]
    models["float_bidirectional_lstm"] = (g.serialize(VariableTensors(S, states)), xs, None)

    g = G.Graph()
    units = 4
    xb = g.tensor("x_batch", [B, T, I], np.float32)
    xt = g.tensor("x_time", [T, B, I], np.float32)
    outs, states = [], []
    for prefix, x, time_major, act in (("rnn_tanh", xb, False, 4), ("rnn_relu6", xt, True, 3),
                                       ("rnn_tanh_time_major", xt, True, 4)):
        h0 = g.tensor(prefix + "/h0", [B, units], np.float32)
        y = g.tensor(prefix, [T, B, units] if time_major else [B, T, units], np.float32)
        g.op(OP["UNIDIRECTIONAL_SEQUENCE_RNN"],
             [x, g.const(prefix + "/w", f(units, I)), g.const(prefix + "/r", f(units, units)),
              g.const(prefix + "/b", f(units, s=0.2)), h0], [y],
             G.simple_options("SequenceRNNOptions", time_major=time_major,
                              fused_activation_function=act))
        outs.append(y)
        states.append(h0)
    g.inputs = [xb, xt] + states
    g.outputs = outs
    xs = [f(B, T, I, s=1.0), f(T, B, I, s=1.0)] + [f(B, units, s=0.3) for _ in states]
    models["float_rnn"] = (g.serialize(VariableTensors(S, states)), xs, None)

    # As TFLite models usually ship: the states are variable tensors, not graph inputs, and
    # start at zero.
    g = G.Graph()
    xb = g.tensor("x_batch", [B, T, I], np.float32)
    y, states, _ = lstm("lstm_zero_state", xb, [B, T, H], False, True, False, 0.0, 0, False, 4)
    h0 = g.tensor("rnn_zero_state/h0", [B, units], np.float32)
    y_rnn = g.tensor("rnn_zero_state", [B, T, units], np.float32)
    g.op(OP["UNIDIRECTIONAL_SEQUENCE_RNN"],
         [xb, g.const("rnn_zero_state/w", f(units, I)), g.const("rnn_zero_state/r", f(units, units)),
          g.const("rnn_zero_state/b", f(units, s=0.2)), h0], [y_rnn],
         G.simple_options("SequenceRNNOptions", time_major=False, fused_activation_function=4))
    g.inputs, g.outputs = [xb], [y, y_rnn]
    models["float_recurrent_zero_state"] = (
        g.serialize(VariableTensors(S, states + [h0])), [f(B, T, I, s=1.0)], None)
    return models
