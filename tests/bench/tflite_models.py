"""Builders of the generated TFLite benchmark models of tests/bench/tflite_vs_litert.py (issue #27).

The models are written with the Graph, option and quantization helpers of
tests/formats/tflite/generate_models.py (imported as G; the flatbuffers come from the plugin's
own schema subset, S). Random weights from fixed seeds; nothing here is committed as a model.

  blazeface_like  128x128x3 float input; BlazeFace's front detector: CONV_2D 5x5 stride 2 (24
                  channels, RELU), 11 + 5 BlazeBlocks (DEPTHWISE_CONV_2D 5x5, CONV_2D 1x1, ADD of
                  the shortcut with a fused RELU; the stride-2 blocks' shortcut is MAX_POOL_2D 2x2
                  and, when the channels grow, a PAD of the channel axis), two heads of 1x1
                  CONV_2D at 16x16 (88 channels) and 8x8 (96 channels), RESHAPE and
                  CONCATENATION into regressors [1,896,16] and classificators [1,896,1]
  landmark_like   192x192x3 float input; MobileNet-style face-mesh body: CONV_2D 3x3 stride 2,
                  then per stage a stride-2 block (DEPTHWISE_CONV_2D 3x3 stride 2, CONV_2D 1x1,
                  shortcut MAX_POOL_2D + channel PAD) and residual blocks (DEPTHWISE_CONV_2D 3x3,
                  CONV_2D 1x1, ADD), each followed by PRELU with a per-channel alpha [1,1,C];
                  down to 3x3x128, RESHAPE [1,1152], FULLY_CONNECTED to 1404 landmark values

Each exists as "float" and "int8": the int8 model takes the same float input through QUANTIZE,
has per-channel symmetric int8 conv weights, int32 biases (scale input x weight), per-tensor
int8 PRELU alphas and int8 outputs; activation ranges come from running the float model on
CALIBRATION_SAMPLES fixed-seed images with the reference kernels. Tensors TFLite requires to
share one scale (RESHAPE, PAD, MAX_POOL_2D in and out, CONCATENATION's inputs and output) are
tied and calibrated on the union of their ranges.
"""

import numpy as np

SEEDS = {"blazeface_like": 2701, "landmark_like": 2702}
INPUT_SHAPES = {"blazeface_like": (1, 128, 128, 3), "landmark_like": (1, 192, 192, 3)}
CALIBRATION_SAMPLES = 4
INPUT_SEED = 2710  # the benchmark's input image of each model
PRELU = 54


class Net:
    """One model under construction, float or int8, over generate_models' Graph. In the float
    pass it records which activations must share a quantization (ties); the int8 pass reads
    them with the calibrated ranges."""

    def __init__(self, G, rng, mode, ranges=None, ties=None):
        self.G, self.rng, self.mode = G, rng, mode
        self.g = G.Graph()
        self.ranges, self.parent = ranges, ties if ties is not None else {}
        self.count = 0
        self.quantized = mode == "int8"

    # ---- ties (union-find over tensor names) ----
    def _root(self, name):
        while self.parent.get(name, name) != name:
            name = self.parent[name]
        return name

    def tie(self, a, b):
        ra, rb = self._root(a), self._root(b)
        if ra != rb:
            self.parent[ra] = rb

    def q(self, name):
        if not self.quantized:
            return None
        root = self._root(name)
        group = [n for n in self.ranges if self._root(n) == root]
        lo = min(self.ranges[n][0] for n in group)
        hi = max(self.ranges[n][1] for n in group)
        return self.G.quant_params(lo, hi, np.int8)

    def name(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def act(self, name, shape):
        dtype = np.int8 if self.quantized else np.float32
        return self.g.tensor(name, shape, dtype, quant=self.q(name))

    def shape(self, t):
        return self.g.tensors[t]["shape"]

    def tname(self, t):
        return self.g.tensors[t]["name"]

    # ---- operators ----
    def input(self, shape):
        G, g = self.G, self.g
        x = g.tensor("input", shape, np.float32)
        g.inputs = [x]
        if not self.quantized:
            return x
        xq = self.act("input_q", shape)
        g.op(G.OP["QUANTIZE"], [x], [xq])
        return xq

    def _weights(self, name, w, axis):
        if not self.quantized:
            return self.g.const(name, w)
        data, params = self.G.weight_quant(w, np.int8, axis)
        return self.g.const(name, data, params)

    def _bias(self, name, b, x, w_tensor):
        if not self.quantized:
            return self.g.const(name, b)
        in_scale = self.g.tensors[x]["quant"][0][0]
        scales = in_scale * np.array(self.g.tensors[w_tensor]["quant"][0], np.float64) \
            * np.ones(len(b))
        return self.g.const(name, np.round(b / scales).astype(np.int32),
                            (list(scales), [0] * len(b), 0))

    def conv(self, x, cout, k, stride=1, act="NONE", padding=None):
        G, g = self.G, self.g
        n, h, w, cin = self.shape(x)
        padding = G.SAME if padding is None else padding
        fan_in = k * k * cin
        wt = (self.rng.standard_normal((cout, k, k, cin)) * np.sqrt(1.0 / fan_in)).astype(np.float32)
        bias = (self.rng.standard_normal(cout) * 0.05).astype(np.float32)
        name = self.name("conv")
        wi = self._weights(name + "/w", wt, 0)
        bi = self._bias(name + "/b", bias, x, wi)
        if padding == G.SAME:
            oh, ow = -(-h // stride), -(-w // stride)
        else:
            oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
        y = self.act(name, [n, oh, ow, cout])
        g.op(G.OP["CONV_2D"], [x, wi, bi], [y], G.conv_options(stride, padding, G.ACT[act]))
        return y

    def depthwise(self, x, k, stride=1, act="NONE"):
        G, g = self.G, self.g
        n, h, w, c = self.shape(x)
        wt = (self.rng.standard_normal((1, k, k, c)) * np.sqrt(2.0 / (k * k))).astype(np.float32)
        bias = (self.rng.standard_normal(c) * 0.05).astype(np.float32)
        name = self.name("dw")
        wi = self._weights(name + "/w", wt, 3)
        bi = self._bias(name + "/b", bias, x, wi)
        y = self.act(name, [n, -(-h // stride), -(-w // stride), c])
        g.op(G.OP["DEPTHWISE_CONV_2D"], [x, wi, bi], [y], G.depthwise_options(stride, G.SAME,
                                                                              G.ACT[act]))
        return y

    def add(self, a, b, act="NONE"):
        y = self.act(self.name("add"), self.shape(a))
        self.g.op(self.G.OP["ADD"], [a, b], [y],
                  self.G.simple_options("AddOptions", fused_activation_function=self.G.ACT[act]))
        return y

    def max_pool(self, x):
        n, h, w, c = self.shape(x)
        name = self.name("pool")
        self.tie(name, self.tname(x))
        y = self.act(name, [n, h // 2, w // 2, c])
        self.g.op(self.G.OP["MAX_POOL_2D"], [x], [y], self.G.pool_options(2, 2, self.G.VALID))
        return y

    def pad_channels(self, x, cout):
        n, h, w, c = self.shape(x)
        if cout == c:
            return x
        name = self.name("chpad")
        self.tie(name, self.tname(x))
        paddings = self.g.const(name + "/paddings",
                                np.array([[0, 0], [0, 0], [0, 0], [0, cout - c]], np.int32))
        y = self.act(name, [n, h, w, cout])
        self.g.op(self.G.OP["PAD"], [x, paddings], [y])
        return y

    def prelu(self, x):
        c = self.shape(x)[-1]
        alpha = (0.05 + 0.25 * self.rng.random((1, 1, c))).astype(np.float32)
        name = self.name("prelu")
        ai = self._weights(name + "/alpha", alpha, None)
        y = self.act(name, self.shape(x))
        self.g.op(PRELU, [x, ai], [y])
        return y

    def reshape(self, x, shape, name=None):
        name = name or self.name("reshape")
        self.tie(name, self.tname(x))
        s = self.g.const(name + "/shape", np.array(shape, np.int32))
        y = self.act(name, shape)
        self.g.op(self.G.OP["RESHAPE"], [x, s], [y])
        return y

    def concat(self, xs, axis, name):
        for x in xs:
            self.tie(self.tname(x), name)
        shape = list(self.shape(xs[0]))
        shape[axis] = sum(self.shape(x)[axis] for x in xs)
        y = self.act(name, shape)
        self.g.op(self.G.OP["CONCATENATION"], xs, [y],
                  self.G.simple_options("ConcatenationOptions", axis=axis))
        return y

    def fully_connected(self, x, units):
        G, g = self.G, self.g
        k = self.shape(x)[-1]
        wt = (self.rng.standard_normal((units, k)) * np.sqrt(1.0 / k)).astype(np.float32)
        bias = (self.rng.standard_normal(units) * 0.05).astype(np.float32)
        name = self.name("fc")
        wi = self._weights(name + "/w", wt, 0)
        bi = self._bias(name + "/b", bias, x, wi)
        y = self.act("landmarks", [self.shape(x)[0], units])
        g.op(G.OP["FULLY_CONNECTED"], [x, wi, bi], [y], G.simple_options("FullyConnectedOptions"))
        return y


# ---- BlazeFace-like -------------------------------------------------------------------------

def blaze_block(net, x, cout, stride):
    h = net.depthwise(x, 5, stride)
    h = net.conv(h, cout, 1)
    shortcut = net.max_pool(x) if stride == 2 else x
    shortcut = net.pad_channels(shortcut, cout)
    return net.add(h, shortcut, "RELU")


def build_blazeface(net):
    x = net.input(list(INPUT_SHAPES["blazeface_like"]))
    x = net.conv(x, 24, 5, 2, "RELU")
    for cout, stride in [(24, 1), (28, 1), (32, 2), (36, 1), (42, 1), (48, 2), (56, 1), (64, 1),
                         (72, 1), (80, 1), (88, 1)]:
        x = blaze_block(net, x, cout, stride)
    x16 = x  # 16x16x88
    for cout, stride in [(96, 2), (96, 1), (96, 1), (96, 1), (96, 1)]:
        x = blaze_block(net, x, cout, stride)
    x8 = x  # 8x8x96
    c16, c8 = net.conv(x16, 2, 1), net.conv(x8, 6, 1)
    r16, r8 = net.conv(x16, 32, 1), net.conv(x8, 96, 1)
    classes = [net.reshape(c16, [1, 512, 1]), net.reshape(c8, [1, 384, 1])]
    boxes = [net.reshape(r16, [1, 512, 16]), net.reshape(r8, [1, 384, 16])]
    regressors = net.concat(boxes, 1, "regressors")
    classificators = net.concat(classes, 1, "classificators")
    net.g.outputs = [regressors, classificators]


# ---- landmark-like --------------------------------------------------------------------------

def build_landmark(net):
    x = net.input(list(INPUT_SHAPES["landmark_like"]))
    x = net.prelu(net.conv(x, 16, 3, 2))  # 96x96x16
    for cout, blocks in [(32, 2), (64, 2), (128, 2), (128, 2), (128, 2)]:  # to 3x3x128
        for i in range(blocks):
            stride = 2 if i == 0 else 1
            h = net.conv(net.depthwise(x, 3, stride), cout, 1)
            shortcut = net.pad_channels(net.max_pool(x), cout) if stride == 2 else x
            x = net.prelu(net.add(h, shortcut))
    n, hh, ww, c = net.shape(x)
    flat = net.reshape(x, [1, hh * ww * c], "flat")
    net.g.outputs = [net.fully_connected(flat, 1404)]


BUILDERS = {"blazeface_like": build_blazeface, "landmark_like": build_landmark}


def litert_reference_interpreter(model_bytes):
    """LiteRT's reference kernels (ai_edge_litert, which the benchmark venv has, where
    generate_models' default needs tflite-runtime), every tensor preserved for calibration."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=model_bytes, experimental_preserve_all_tensors=True,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    return it


def build(G, S, name):
    """{"<name>_float": bytes, "<name>_int8": bytes} and the benchmark input (float32 NHWC)."""
    builder = BUILDERS[name]
    float_net = Net(G, np.random.default_rng(SEEDS[name]), "float")
    builder(float_net)
    float_bytes = float_net.g.serialize(S)
    shape = INPUT_SHAPES[name]
    rng = np.random.default_rng(SEEDS[name] + 1)
    calibration = [rng.uniform(-1, 1, shape).astype(np.float32)
                   for _ in range(CALIBRATION_SAMPLES)]
    ranges = G.calibrate(float_bytes, calibration, litert_reference_interpreter)
    # The same weights: the int8 pass draws the same numbers from a fresh generator.
    int8_net = Net(G, np.random.default_rng(SEEDS[name]), "int8", ranges, float_net.parent)
    builder(int8_net)
    x = np.random.default_rng(INPUT_SEED).uniform(-1, 1, shape).astype(np.float32)
    return {f"{name}_float": float_bytes, f"{name}_int8": int8_net.g.serialize(S)}, x
