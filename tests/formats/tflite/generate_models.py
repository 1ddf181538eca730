#!/usr/bin/env python3
"""Generates the TFLite test models of Loom's tflite plugin and their reference outputs.

Each model is written as a flatbuffer with Python code that flatc generates from the plugin's
own schema subset (plugins/formats/tflite/schema/tflite_subset.fbs), so the files also check
that the subset keeps the official field ids: the TFLite interpreter (PyPI tflite-runtime,
the reference implementation) must accept them. For every model the script writes

  <name>.tflite        the model (a few KB)
  <name>.input.bin     a fixed input (raw little-endian, the model's input type and shape)
  <name>.output.bin    what the TFLite interpreter computes for it

Models (all seeds fixed, so the files are reproducible):
  float_cnn    PAD CONV_2D DEPTHWISE_CONV_2D ADD CONCATENATION MUL MAX_POOL_2D AVERAGE_POOL_2D
               HARD_SWISH RESHAPE FULLY_CONNECTED SOFTMAX, fused RELU/RELU6, float32
  int8_cnn     the same network quantized to int8: per-channel conv weights, float input
               through QUANTIZE, int8 output
  uint8_cnn    the same network quantized to uint8 (per-tensor weights), uint8 input/output
  float_attention  BATCH_MATMUL (adj_y) SOFTMAX MEAN TANH TRANSPOSE GATHER STRIDED_SLICE
               SQUEEZE CONCATENATION SUB DIV LOGISTIC, float32
  float_image_ops  CONV_2D RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR LEAKY_RELU MEAN(keep_dims)
               MUL(broadcast) MAX_POOL_2D PADV2 MEAN, float32
  float_misc   DEQUANTIZE (int8 constant) MAXIMUM MINIMUM RELU_N1_TO_1 ADD(fused RELU6) EXP
               RELU6 SUB RELU FULLY_CONNECTED(keep_num_dims, rank-3 input) SOFTMAX(beta 0.5)

Usage: generate_models.py --out DIR [--flatc flatc] [--check DIR]
  --check DIR  regenerate into --out and compare the interpreter outputs with those in DIR
               (exit 1 on a difference); the models test runs this in a venv with
               tflite-runtime (see tests/formats/tflite/CMakeLists.txt).
"""
import argparse
import importlib
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "..", "..", "plugins", "formats", "tflite", "schema",
                      "tflite_subset.fbs")

# BuiltinOperator codes (official schema.fbs numbering).
OP = dict(ADD=0, AVERAGE_POOL_2D=1, CONCATENATION=2, CONV_2D=3, DEPTHWISE_CONV_2D=4,
          DEQUANTIZE=6, FULLY_CONNECTED=9, LOGISTIC=14, MAX_POOL_2D=17, MUL=18, RELU=19,
          RELU6=21, RESHAPE=22, RESIZE_BILINEAR=23, SOFTMAX=25, TANH=28, PAD=34, GATHER=36,
          TRANSPOSE=39, MEAN=40, SUB=41, DIV=42, SQUEEZE=43, STRIDED_SLICE=45, EXP=47,
          MAXIMUM=55, MINIMUM=57, PADV2=60, RELU_N1_TO_1=20,
          RESIZE_NEAREST_NEIGHBOR=97, LEAKY_RELU=98, QUANTIZE=114, HARD_SWISH=117,
          BATCH_MATMUL=126)
TYPE = {np.float32: 0, np.float16: 1, np.int32: 2, np.uint8: 3, np.int64: 4, np.bool_: 6,
        np.int16: 7, np.int8: 9}

# Further models live in one module per operator family (tests/formats/tflite/models_*.py),
# each with a function build(G, S) -> {name: (model bytes, [inputs], expected or None)}: G is
# this module (Graph, option helpers, quantization helpers), S the schema; `expected` is a list
# of outputs computed without the interpreter (custom operators it lacks), None to run it.
# Each module seeds its own generator, so adding models never changes the others' files.
FAMILY_MODULES = ["models_math", "models_layout", "models_conv", "models_custom",
                  "models_sparse"]
ACT = dict(NONE=0, RELU=1, RELU6=3)


def load_schema(flatc):
    """Generates the Python reader/builder for the schema subset and imports it."""
    out = tempfile.mkdtemp(prefix="tflite-schema-")
    subprocess.run([flatc, "--python", "-o", out, SCHEMA], check=True)
    sys.path.insert(0, out)

    class Schema:
        """S.Tensor -> the generated module loom.tflite_schema.Tensor."""
        def __getattr__(self, name):
            return importlib.import_module("loom.tflite_schema." + name)
    return Schema()


class Graph:
    """A one-subgraph TFLite model under construction."""

    def __init__(self):
        self.tensors = []  # dicts: name shape dtype data quant
        self.ops = []      # dicts: code inputs outputs options(kind, fn)
        self.inputs, self.outputs = [], []

    def tensor(self, name, shape, dtype, data=None, quant=None, sparsity=None):
        """sparsity: (traversal_order, block_map, levels, values) from sparsify(); `data` is
        then ignored and the buffer holds the sparse values."""
        self.tensors.append(dict(name=name, shape=list(shape), dtype=dtype, data=data,
                                 quant=quant, sparsity=sparsity))
        return len(self.tensors) - 1

    def const(self, name, array, quant=None):
        array = np.ascontiguousarray(array)
        return self.tensor(name, array.shape, array.dtype.type, array, quant)

    def op(self, code, inputs, outputs, options=None, custom_options=None):
        """code: a BuiltinOperator number, or a string naming a custom operator (CUSTOM, 32)
        whose custom_options are raw bytes."""
        self.ops.append(dict(code=code, inputs=inputs, outputs=outputs, options=options,
                             custom_options=custom_options))

    def serialize(self, S):
        import flatbuffers
        b = flatbuffers.Builder(4096)

        def int_vector(start, values, width=4, prepend=None):
            start(b, len(values))
            for v in reversed(values):
                (prepend or b.PrependInt32)(int(v))
            return b.EndVector()

        # Buffers: 0 is the empty sentinel.
        buffer_offsets = [None]
        tensor_buffer = []
        for t in self.tensors:
            data = t["sparsity"][3] if t.get("sparsity") else t["data"]
            if data is None:
                tensor_buffer.append(0)
                continue
            raw = data.astype(data.dtype.newbyteorder("<")).tobytes()
            b.StartVector(1, len(raw), 16)
            b.head = b.head - len(raw)
            b.Bytes[b.head:b.head + len(raw)] = raw
            data = b.EndVector()
            buffer_offsets.append(data)
            tensor_buffer.append(len(buffer_offsets) - 1)
        buffers = []
        for data in buffer_offsets:
            S.Buffer.BufferStart(b)
            if data is not None:
                S.Buffer.BufferAddData(b, data)
            buffers.append(S.Buffer.BufferEnd(b))

        tensors = []
        for i, t in enumerate(self.tensors):
            name = b.CreateString(t["name"])
            shape = int_vector(S.Tensor.TensorStartShapeVector, t["shape"])
            quant = None
            if t["quant"] is not None:
                scales, zero_points, axis = t["quant"]
                S.QuantizationParameters.QuantizationParametersStartScaleVector(b, len(scales))
                for s in reversed(scales):
                    b.PrependFloat32(float(s))
                scale_vec = b.EndVector()
                S.QuantizationParameters.QuantizationParametersStartZeroPointVector(
                    b, len(zero_points))
                for z in reversed(zero_points):
                    b.PrependInt64(int(z))
                zp_vec = b.EndVector()
                S.QuantizationParameters.QuantizationParametersStart(b)
                S.QuantizationParameters.QuantizationParametersAddScale(b, scale_vec)
                S.QuantizationParameters.QuantizationParametersAddZeroPoint(b, zp_vec)
                S.QuantizationParameters.QuantizationParametersAddQuantizedDimension(b, axis)
                quant = S.QuantizationParameters.QuantizationParametersEnd(b)
            sparsity = self.sparsity_table(b, S, t["sparsity"]) if t.get("sparsity") else None
            S.Tensor.TensorStart(b)
            S.Tensor.TensorAddShape(b, shape)
            if sparsity is not None:
                S.Tensor.TensorAddSparsity(b, sparsity)
            S.Tensor.TensorAddType(b, TYPE[t["dtype"]])
            S.Tensor.TensorAddBuffer(b, tensor_buffer[i])
            S.Tensor.TensorAddName(b, name)
            if quant is not None:
                S.Tensor.TensorAddQuantization(b, quant)
            tensors.append(S.Tensor.TensorEnd(b))

        # Builtin codes first (sorted), then custom operators by name.
        codes = sorted({op["code"] for op in self.ops}, key=lambda c: (isinstance(c, str), c))
        code_offsets = []
        for code in codes:
            custom = b.CreateString(code) if isinstance(code, str) else None
            number = 32 if isinstance(code, str) else code  # CUSTOM
            S.OperatorCode.OperatorCodeStart(b)
            S.OperatorCode.OperatorCodeAddDeprecatedBuiltinCode(b, min(number, 127))
            if custom is not None:
                S.OperatorCode.OperatorCodeAddCustomCode(b, custom)
            S.OperatorCode.OperatorCodeAddBuiltinCode(b, number)
            S.OperatorCode.OperatorCodeAddVersion(b, 1)
            code_offsets.append(S.OperatorCode.OperatorCodeEnd(b))

        ops = []
        for op in self.ops:
            inputs = int_vector(S.Operator.OperatorStartInputsVector, op["inputs"])
            outputs = int_vector(S.Operator.OperatorStartOutputsVector, op["outputs"])
            options = custom_options = None
            if op["custom_options"] is not None:
                custom_options = b.CreateByteVector(bytes(op["custom_options"]))
            if op["options"] is not None:
                kind, fn = op["options"]
                options = (getattr(S.BuiltinOptions.BuiltinOptions, kind), fn(b, S))
            S.Operator.OperatorStart(b)
            S.Operator.OperatorAddOpcodeIndex(b, codes.index(op["code"]))
            S.Operator.OperatorAddInputs(b, inputs)
            S.Operator.OperatorAddOutputs(b, outputs)
            if options is not None:
                S.Operator.OperatorAddBuiltinOptionsType(b, options[0])
                S.Operator.OperatorAddBuiltinOptions(b, options[1])
            if custom_options is not None:
                S.Operator.OperatorAddCustomOptions(b, custom_options)
            ops.append(S.Operator.OperatorEnd(b))

        def offset_vector(start, items):
            start(b, len(items))
            for item in reversed(items):
                b.PrependUOffsetTRelative(item)
            return b.EndVector()

        tensor_vec = offset_vector(S.SubGraph.SubGraphStartTensorsVector, tensors)
        op_vec = offset_vector(S.SubGraph.SubGraphStartOperatorsVector, ops)
        in_vec = int_vector(S.SubGraph.SubGraphStartInputsVector, self.inputs)
        out_vec = int_vector(S.SubGraph.SubGraphStartOutputsVector, self.outputs)
        name = b.CreateString("main")
        S.SubGraph.SubGraphStart(b)
        S.SubGraph.SubGraphAddTensors(b, tensor_vec)
        S.SubGraph.SubGraphAddInputs(b, in_vec)
        S.SubGraph.SubGraphAddOutputs(b, out_vec)
        S.SubGraph.SubGraphAddOperators(b, op_vec)
        S.SubGraph.SubGraphAddName(b, name)
        subgraph = S.SubGraph.SubGraphEnd(b)

        subgraph_vec = offset_vector(S.Model.ModelStartSubgraphsVector, [subgraph])
        code_vec = offset_vector(S.Model.ModelStartOperatorCodesVector, code_offsets)
        buffer_vec = offset_vector(S.Model.ModelStartBuffersVector, buffers)
        description = b.CreateString("Loom tflite plugin test model")
        S.Model.ModelStart(b)
        S.Model.ModelAddVersion(b, 3)
        S.Model.ModelAddOperatorCodes(b, code_vec)
        S.Model.ModelAddSubgraphs(b, subgraph_vec)
        S.Model.ModelAddDescription(b, description)
        S.Model.ModelAddBuffers(b, buffer_vec)
        b.Finish(S.Model.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


    @staticmethod
    def sparsity_table(b, S, sparsity):
        order, block_map, levels, _ = sparsity

        def ints(start, values):
            start(b, len(values))
            for v in reversed(values):
                b.PrependInt32(int(v))
            return b.EndVector()

        metadata = []
        for level in levels:
            vectors = []
            if level[0] == "csr":
                for values in (level[1], level[2]):
                    vec = ints(S.Int32Vector.Int32VectorStartValuesVector, values)
                    S.Int32Vector.Int32VectorStart(b)
                    S.Int32Vector.Int32VectorAddValues(b, vec)
                    vectors.append(S.Int32Vector.Int32VectorEnd(b))
            M = S.DimensionMetadata
            M.DimensionMetadataStart(b)
            if level[0] == "dense":
                M.DimensionMetadataAddFormat(b, 0)
                M.DimensionMetadataAddDenseSize(b, level[1])
            else:
                M.DimensionMetadataAddFormat(b, 1)
                M.DimensionMetadataAddArraySegmentsType(b, 1)  # Int32Vector
                M.DimensionMetadataAddArraySegments(b, vectors[0])
                M.DimensionMetadataAddArrayIndicesType(b, 1)
                M.DimensionMetadataAddArrayIndices(b, vectors[1])
            metadata.append(M.DimensionMetadataEnd(b))
        order_vec = ints(S.SparsityParameters.SparsityParametersStartTraversalOrderVector, order)
        map_vec = ints(S.SparsityParameters.SparsityParametersStartBlockMapVector, block_map)
        S.SparsityParameters.SparsityParametersStartDimMetadataVector(b, len(metadata))
        for m in reversed(metadata):
            b.PrependUOffsetTRelative(m)
        meta_vec = b.EndVector()
        S.SparsityParameters.SparsityParametersStart(b)
        S.SparsityParameters.SparsityParametersAddTraversalOrder(b, order_vec)
        S.SparsityParameters.SparsityParametersAddBlockMap(b, map_vec)
        S.SparsityParameters.SparsityParametersAddDimMetadata(b, meta_vec)
        return S.SparsityParameters.SparsityParametersEnd(b)


def sparsify(dense, formats, block=None):
    """TFLite's sparse encoding of `dense`: formats[i] is "dense" or "csr" for the i-th
    dimension of the traversal (original dimensions in order, then the block dimension);
    block = (dimension, size) blocks one dimension (e.g. (1, 4): 1x4 blocks of a matrix).
    A block (or, unblocked, an element) is stored when any of its values is non-zero.
    Returns (traversal_order, block_map, levels, values) for Graph.tensor(sparsity=...)."""
    shape = list(dense.shape)
    if block is not None:
        d, size = block
        shape[d] //= size
        expanded = dense.reshape(dense.shape[:d] + (shape[d], size) + dense.shape[d + 1:])
        expanded = np.moveaxis(expanded, d + 1, -1)  # block dimension last
        shape.append(size)
        block_map = [d]
    else:
        expanded, block_map = dense, []
    order = list(range(len(shape)))
    levels = []
    nodes = [()]  # index tuples of the stored nodes at the current level
    for level, fmt in enumerate(formats):
        children, segments, indices = [], [0], []
        for node in nodes:
            for i in range(shape[level]):
                child = node + (i,)
                if fmt == "dense" or np.any(expanded[child] != 0):
                    children.append(child)
                    indices.append(i)
            segments.append(len(children))
        levels.append(("dense", shape[level]) if fmt == "dense" else ("csr", segments, indices))
        nodes = children
    values = np.array([expanded[node] for node in nodes], dtype=dense.dtype)
    return order, block_map, levels, values


# ---- option tables ----------------------------------------------------------------------

def conv_options(stride, padding, act, dilation=1):
    def fn(b, S):
        S.Conv2DOptions.Conv2DOptionsStart(b)
        S.Conv2DOptions.Conv2DOptionsAddPadding(b, padding)
        S.Conv2DOptions.Conv2DOptionsAddStrideW(b, stride)
        S.Conv2DOptions.Conv2DOptionsAddStrideH(b, stride)
        S.Conv2DOptions.Conv2DOptionsAddFusedActivationFunction(b, act)
        S.Conv2DOptions.Conv2DOptionsAddDilationWFactor(b, dilation)
        S.Conv2DOptions.Conv2DOptionsAddDilationHFactor(b, dilation)
        return S.Conv2DOptions.Conv2DOptionsEnd(b)
    return ("Conv2DOptions", fn)


def depthwise_options(stride, padding, act):
    def fn(b, S):
        M = S.DepthwiseConv2DOptions
        M.DepthwiseConv2DOptionsStart(b)
        M.DepthwiseConv2DOptionsAddPadding(b, padding)
        M.DepthwiseConv2DOptionsAddStrideW(b, stride)
        M.DepthwiseConv2DOptionsAddStrideH(b, stride)
        M.DepthwiseConv2DOptionsAddDepthMultiplier(b, 1)
        M.DepthwiseConv2DOptionsAddFusedActivationFunction(b, act)
        return M.DepthwiseConv2DOptionsEnd(b)
    return ("DepthwiseConv2DOptions", fn)


def pool_options(size, stride, padding):
    def fn(b, S):
        M = S.Pool2DOptions
        M.Pool2DOptionsStart(b)
        M.Pool2DOptionsAddPadding(b, padding)
        M.Pool2DOptionsAddStrideW(b, stride)
        M.Pool2DOptionsAddStrideH(b, stride)
        M.Pool2DOptionsAddFilterWidth(b, size)
        M.Pool2DOptionsAddFilterHeight(b, size)
        return M.Pool2DOptionsEnd(b)
    return ("Pool2DOptions", fn)


def simple_options(kind, **fields):
    """An options table whose fields are scalars: fields map schema field name -> value."""
    def fn(b, S):
        M = getattr(S, kind)
        getattr(M, kind + "Start")(b)
        for field, value in fields.items():
            camel = "".join(part.capitalize() for part in field.split("_"))
            getattr(M, kind + "Add" + camel)(b, value)
        return getattr(M, kind + "End")(b)
    return (kind, fn)


SAME, VALID = 0, 1


# ---- the CNN, in float and quantized -------------------------------------------------------

def cnn_params(rng):
    f = lambda *shape, s=0.4: (rng.standard_normal(shape) * s).astype(np.float32)
    return dict(conv1_w=f(8, 3, 3, 3), conv1_b=f(8, s=0.1), dw_w=f(1, 3, 3, 8), dw_b=f(8, s=0.1),
                pw_w=f(8, 1, 1, 8), pw_b=f(8, s=0.1), scale=(0.5 + rng.random(16)).astype(np.float32),
                fc_w=f(10, 64, s=0.06), fc_b=f(10, s=0.1))


# The CNN's activations in order: (name, shape). Quantization ties: tensors TFLite requires to
# share one scale/zero point (concat inputs/output, pools, reshape, pad).
CNN_TIES = [["padded", "input_q"], ["dw", "sum", "concat"], ["scaled", "pooled", "avg"],
            ["hswish", "flat"]]


def quant_params(lo, hi, dtype):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    qmin, qmax = (-128, 127) if dtype == np.int8 else (0, 255)
    scale = max(hi - lo, 1e-6) / (qmax - qmin)
    zp = int(np.clip(round(qmin - lo / scale), qmin, qmax))
    return ([scale], [zp], 0)


def quantize_array(x, scales, zps, axis, dtype):
    info = np.iinfo(dtype)
    shape = [1] * x.ndim
    if len(scales) > 1:
        shape[axis] = len(scales)
    s = np.array(scales, np.float64).reshape(shape)
    z = np.array(zps, np.float64).reshape(shape)
    return np.clip(np.round(x / s) + z, info.min, info.max).astype(dtype)


def weight_quant(w, dtype, axis=None):
    """Symmetric int8 weights (per channel along axis, or per tensor); uint8 asymmetric."""
    if dtype == np.int8:
        if axis is None:
            scales = [max(float(np.abs(w).max()), 1e-6) / 127]
        else:
            moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
            scales = [max(float(np.abs(r).max()), 1e-6) / 127 for r in moved]
        zps = [0] * len(scales)
        q = (scales, zps, axis or 0)
    else:
        q = quant_params(float(w.min()), float(w.max()), np.uint8)
    return quantize_array(w, q[0], q[1], q[2], dtype), q


def build_cnn(p, mode, ranges=None):
    """mode: float | int8 | uint8. ranges: {tensor name: (min, max)} from the float model."""
    g = Graph()
    quantized = mode != "float"
    qt = {"int8": np.int8, "uint8": np.uint8}.get(mode)
    act_dtype = qt if quantized else np.float32

    def q(name):
        if not quantized:
            return None
        group = next((tie for tie in CNN_TIES if name in tie), [name])
        lo = min(ranges[n][0] for n in group if n in ranges)
        hi = max(ranges[n][1] for n in group if n in ranges)
        return quant_params(lo, hi, qt)

    def act(name, shape):
        return g.tensor(name, shape, act_dtype, quant=q(name))

    if mode == "int8":
        x_float = g.tensor("input", [1, 8, 8, 3], np.float32)
        x = act("input_q", [1, 8, 8, 3])
        g.op(OP["QUANTIZE"], [x_float], [x])
        g.inputs = [x_float]
    else:
        x = g.tensor("input", [1, 8, 8, 3], act_dtype, quant=q("input_q"))
        g.inputs = [x]

    def weights(name, w, axis):
        if not quantized:
            return g.const(name, w)
        data, params = weight_quant(w, qt, axis if mode == "int8" else None)
        return g.const(name, data, params)

    def bias(name, b, in_name, w_tensor):
        if not quantized:
            return g.const(name, b)
        in_scale = q(in_name)[0][0]
        w_scales = np.array(g.tensors[w_tensor]["quant"][0], np.float64)
        scales = in_scale * w_scales * np.ones(len(b))
        data = np.round(b / scales).astype(np.int32)
        return g.const(name, data, (list(scales), [0] * len(b), 0))

    paddings = g.const("paddings", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    padded = act("padded", [1, 10, 10, 3])
    g.op(OP["PAD"], [x, paddings], [padded])

    w1 = weights("conv1/w", p["conv1_w"], 0)
    b1 = bias("conv1/b", p["conv1_b"], "padded", w1)
    conv1 = act("conv1", [1, 8, 8, 8])
    g.op(OP["CONV_2D"], [padded, w1, b1], [conv1], conv_options(1, VALID, ACT["RELU"]))

    wd = weights("dw/w", p["dw_w"], 3)
    bd = bias("dw/b", p["dw_b"], "conv1", wd)
    dw = act("dw", [1, 4, 4, 8])
    g.op(OP["DEPTHWISE_CONV_2D"], [conv1, wd, bd], [dw], depthwise_options(2, SAME, ACT["RELU6"]))

    wp = weights("pw/w", p["pw_w"], 0)
    bp = bias("pw/b", p["pw_b"], "dw", wp)
    pw = act("pw", [1, 4, 4, 8])
    g.op(OP["CONV_2D"], [dw, wp, bp], [pw], conv_options(1, SAME, ACT["NONE"]))

    total = act("sum", [1, 4, 4, 8])
    g.op(OP["ADD"], [dw, pw], [total], simple_options("AddOptions"))
    concat = act("concat", [1, 4, 4, 16])
    g.op(OP["CONCATENATION"], [dw, total], [concat], simple_options("ConcatenationOptions", axis=3))

    if quantized:
        sdata, sparams = weight_quant(p["scale"], qt)
        scale = g.const("channel_scale", sdata, sparams)
    else:
        scale = g.const("channel_scale", p["scale"])
    scaled = act("scaled", [1, 4, 4, 16])
    g.op(OP["MUL"], [concat, scale], [scaled], simple_options("MulOptions"))

    pooled = act("pooled", [1, 2, 2, 16])
    g.op(OP["MAX_POOL_2D"], [scaled], [pooled], pool_options(2, 2, VALID))
    avg = act("avg", [1, 2, 2, 16])
    g.op(OP["AVERAGE_POOL_2D"], [pooled], [avg], pool_options(2, 1, SAME))
    hswish = act("hswish", [1, 2, 2, 16])
    g.op(OP["HARD_SWISH"], [avg], [hswish])
    shape = g.const("flat_shape", np.array([1, 64], np.int32))
    flat = act("flat", [1, 64])
    g.op(OP["RESHAPE"], [hswish, shape], [flat])

    wf = weights("fc/w", p["fc_w"], None)
    bf = bias("fc/b", p["fc_b"], "flat", wf)
    logits = act("logits", [1, 10])
    g.op(OP["FULLY_CONNECTED"], [flat, wf, bf], [logits], simple_options("FullyConnectedOptions"))
    probs_quant = None
    if quantized:  # TFLite's fixed softmax output quantization
        probs_quant = ([1 / 256], [-128 if qt == np.int8 else 0], 0)
    probs = g.tensor("probs", [1, 10], act_dtype, quant=probs_quant)
    g.op(OP["SOFTMAX"], [logits], [probs], simple_options("SoftmaxOptions", beta=1.0))
    g.outputs = [probs]
    # Calibration needs every activation of the float model.
    return g


# ---- the attention-like float model ---------------------------------------------------------

def build_attention(rng):
    g = Graph()
    x = g.tensor("tokens", [1, 4, 8], np.float32)
    g.inputs = [x]
    f = lambda *shape: (rng.standard_normal(shape) * 0.4).astype(np.float32)
    wq, wk = g.const("wq", f(1, 8, 8)), g.const("wk", f(1, 8, 8))
    q, k = g.tensor("q", [1, 4, 8], np.float32), g.tensor("k", [1, 4, 8], np.float32)
    g.op(OP["BATCH_MATMUL"], [x, wq], [q], simple_options("BatchMatMulOptions"))
    g.op(OP["BATCH_MATMUL"], [x, wk], [k], simple_options("BatchMatMulOptions"))
    scores = g.tensor("scores", [1, 4, 4], np.float32)
    g.op(OP["BATCH_MATMUL"], [q, k], [scores], simple_options("BatchMatMulOptions", adj_y=True))
    scaled = g.tensor("scaled", [1, 4, 4], np.float32)
    g.op(OP["MUL"], [scores, g.const("inv_sqrt_d", np.array(0.35, np.float32))], [scaled],
         simple_options("MulOptions"))
    attn = g.tensor("attn", [1, 4, 4], np.float32)
    g.op(OP["SOFTMAX"], [scaled], [attn], simple_options("SoftmaxOptions", beta=1.0))
    ctx = g.tensor("ctx", [1, 4, 8], np.float32)
    g.op(OP["BATCH_MATMUL"], [attn, x], [ctx], simple_options("BatchMatMulOptions"))
    res = g.tensor("residual", [1, 4, 8], np.float32)
    g.op(OP["ADD"], [ctx, x], [res], simple_options("AddOptions"))
    th = g.tensor("tanh", [1, 4, 8], np.float32)
    g.op(OP["TANH"], [res], [th])
    mean = g.tensor("mean", [1, 8], np.float32)
    g.op(OP["MEAN"], [th, g.const("mean_axes", np.array([1], np.int32))], [mean],
         simple_options("ReducerOptions", keep_dims=False))
    tr = g.tensor("transposed", [1, 8, 4], np.float32)
    g.op(OP["TRANSPOSE"], [res, g.const("perm", np.array([0, 2, 1], np.int32))], [tr])
    ga = g.tensor("gathered", [1, 2, 4], np.float32)
    g.op(OP["GATHER"], [tr, g.const("indices", np.array([3, 1], np.int32))], [ga],
         simple_options("GatherOptions", axis=1))
    sl = g.tensor("sliced", [1, 2, 2], np.float32)
    g.op(OP["STRIDED_SLICE"], [ga, g.const("begin", np.array([0, 0, 1], np.int32)),
                               g.const("end", np.array([1, 2, 4], np.int32)),
                               g.const("strides", np.array([1, 1, 2], np.int32))], [sl],
         simple_options("StridedSliceOptions", end_mask=4))
    sq = g.tensor("squeezed", [2, 2], np.float32)
    g.op(OP["SQUEEZE"], [sl], [sq], None)
    r = g.tensor("row", [1, 4], np.float32)
    g.op(OP["RESHAPE"], [sq, g.const("row_shape", np.array([1, 4], np.int32))], [r])
    cat = g.tensor("features", [1, 12], np.float32)
    g.op(OP["CONCATENATION"], [mean, r], [cat], simple_options("ConcatenationOptions", axis=1))
    sub = g.tensor("centered", [1, 12], np.float32)
    g.op(OP["SUB"], [cat, g.const("center", f(12))], [sub], simple_options("SubOptions"))
    div = g.tensor("normalized", [1, 12], np.float32)
    g.op(OP["DIV"], [sub, g.const("spread", (1.5 + rng.random(12)).astype(np.float32))], [div],
         simple_options("DivOptions"))
    out = g.tensor("gate", [1, 12], np.float32)
    g.op(OP["LOGISTIC"], [div], [out])
    g.outputs = [out]
    return g


# ---- image operators (float) ------------------------------------------------------------------

def build_image_ops(rng):
    g = Graph()
    x = g.tensor("image", [1, 6, 6, 4], np.float32)
    g.inputs = [x]
    f = lambda *shape, s=0.5: (rng.standard_normal(shape) * s).astype(np.float32)
    c = g.tensor("mixed", [1, 6, 6, 4], np.float32)
    g.op(OP["CONV_2D"], [x, g.const("mix/w", f(4, 1, 1, 4)), g.const("mix/b", f(4, s=0.1))], [c],
         conv_options(1, SAME, ACT["NONE"]))
    up = g.tensor("bilinear", [1, 9, 12, 4], np.float32)
    g.op(OP["RESIZE_BILINEAR"], [c, g.const("bilinear_size", np.array([9, 12], np.int32))], [up],
         simple_options("ResizeBilinearOptions", half_pixel_centers=True))
    near = g.tensor("nearest", [1, 9, 12, 4], np.float32)
    g.op(OP["RESIZE_NEAREST_NEIGHBOR"], [c, g.const("nearest_size", np.array([9, 12], np.int32))],
         [near], simple_options("ResizeNearestNeighborOptions"))
    leaky = g.tensor("leaky", [1, 9, 12, 4], np.float32)
    g.op(OP["LEAKY_RELU"], [up], [leaky], simple_options("LeakyReluOptions", alpha=0.2))
    mean = g.tensor("channel_mean", [1, 1, 1, 4], np.float32)
    g.op(OP["MEAN"], [leaky, g.const("hw_axes", np.array([1, 2], np.int32))], [mean],
         simple_options("ReducerOptions", keep_dims=True))
    gated = g.tensor("gated", [1, 9, 12, 4], np.float32)
    g.op(OP["MUL"], [near, mean], [gated], simple_options("MulOptions"))
    padded = g.tensor("padded", [1, 9, 15, 4], np.float32)
    g.op(OP["PADV2"], [gated, g.const("pads", np.array([[0, 0], [0, 0], [1, 2], [0, 0]], np.int32)),
                       g.const("pad_value", np.array(-0.5, np.float32))], [padded])
    pooled = g.tensor("pooled", [1, 3, 5, 4], np.float32)
    g.op(OP["MAX_POOL_2D"], [padded], [pooled], pool_options(3, 3, VALID))
    out = g.tensor("summary", [1, 4], np.float32)
    g.op(OP["MEAN"], [pooled, g.const("pool_axes", np.array([1, 2], np.int32))], [out],
         simple_options("ReducerOptions", keep_dims=False))
    g.outputs = [out]
    return g


# ---- activations, DEQUANTIZE, FULLY_CONNECTED keep_num_dims (float) ------------------------

def build_misc(rng):
    g = Graph()
    x = g.tensor("x", [1, 3, 4], np.float32)
    g.inputs = [x]
    f = lambda *shape, s=0.5: (rng.standard_normal(shape) * s).astype(np.float32)
    t = lambda name, shape: g.tensor(name, shape, np.float32)
    wq = g.const("floor_q", rng.integers(-60, 60, 4).astype(np.int8), ([0.01], [3], 0))
    floor = t("floor", [4])
    g.op(OP["DEQUANTIZE"], [wq], [floor])
    hi = t("max", [1, 3, 4])
    g.op(OP["MAXIMUM"], [x, floor], [hi])
    lo = t("min", [1, 3, 4])
    g.op(OP["MINIMUM"], [x, g.const("ceiling", f(3, 4))], [lo])
    unit = t("unit", [1, 3, 4])
    g.op(OP["RELU_N1_TO_1"], [lo], [unit])
    fused = t("fused", [1, 3, 4])
    g.op(OP["ADD"], [hi, unit], [fused], simple_options("AddOptions", fused_activation_function=ACT["RELU6"]))
    e = t("exp", [1, 3, 4])
    g.op(OP["EXP"], [unit], [e])
    r6 = t("relu6", [1, 3, 4])
    g.op(OP["RELU6"], [e], [r6])
    d = t("diff", [1, 3, 4])
    g.op(OP["SUB"], [fused, r6], [d], simple_options("SubOptions"))
    r = t("relu", [1, 3, 4])
    g.op(OP["RELU"], [d], [r])
    fc = t("dense", [1, 3, 5])
    g.op(OP["FULLY_CONNECTED"], [r, g.const("dense/w", f(5, 4)), g.const("dense/b", f(5, s=0.1))],
         [fc], simple_options("FullyConnectedOptions", keep_num_dims=True))
    out = t("probs", [1, 3, 5])
    g.op(OP["SOFTMAX"], [fc], [out], simple_options("SoftmaxOptions", beta=0.5))
    g.outputs = [out]
    return g


# ---- running ------------------------------------------------------------------------------

def interpreter(model_bytes, preserve=False):
    from tflite_runtime.interpreter import Interpreter, OpResolverType
    # The reference kernels (no XNNPACK): the same answers on every machine.
    it = Interpreter(model_content=model_bytes, experimental_preserve_all_tensors=preserve,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    return it


def run(model_bytes, x):
    """The interpreter's outputs for input x (an array, or a list of arrays in input order)."""
    it = interpreter(model_bytes)
    xs = x if isinstance(x, list) else [x]
    for detail, value in zip(it.get_input_details(), xs):
        it.set_tensor(detail["index"], value)
    it.invoke()
    ys = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    return ys if isinstance(x, list) else ys[0]


def calibrate(model_bytes, inputs, make_interpreter=None):
    """min/max of every tensor of the float model over the calibration inputs.
    make_interpreter(model_bytes) gives an allocated interpreter that preserves every tensor
    (default: tflite-runtime's reference kernels; the benchmark passes LiteRT's)."""
    ranges = {}
    for x in inputs:
        it = (make_interpreter or (lambda m: interpreter(m, preserve=True)))(model_bytes)
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        for detail in it.get_tensor_details():
            try:
                value = it.get_tensor(detail["index"])
            except ValueError:
                continue
            if value.dtype != np.float32 or value.size == 0:
                continue
            name = detail["name"]
            lo, hi = float(value.min()), float(value.max())
            old = ranges.get(name, (lo, hi))
            ranges[name] = (min(old[0], lo), max(old[1], hi))
    ranges["input_q"] = ranges["input"]
    return ranges


def generate(S, out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20241121)
    params = cnn_params(rng)
    float_cnn = build_cnn(params, "float").serialize(S)
    calibration = [rng.uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32) for _ in range(16)]
    ranges = calibrate(float_cnn, calibration)
    x = rng.uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32)
    models = {
        "float_cnn": (float_cnn, x),
        "int8_cnn": (build_cnn(params, "int8", ranges).serialize(S), x),
        "uint8_cnn": (build_cnn(params, "uint8", ranges).serialize(S),
                      quantize_array(x, *quant_params(*ranges["input"], np.uint8), np.uint8)),
        "float_attention": (build_attention(rng).serialize(S),
                            rng.standard_normal((1, 4, 8)).astype(np.float32)),
        "float_image_ops": (build_image_ops(rng).serialize(S),
                            rng.standard_normal((1, 6, 6, 4)).astype(np.float32)),
    }
    models["float_misc"] = (build_misc(rng).serialize(S),
                            rng.standard_normal((1, 3, 4)).astype(np.float32))
    expected = {}
    for module_name in FAMILY_MODULES:
        if not os.path.exists(os.path.join(HERE, module_name + ".py")):
            continue
        sys.path.insert(0, HERE)
        module = importlib.import_module(module_name)
        for name, (model, inputs, outputs) in module.build(sys.modules[__name__], S).items():
            assert name not in models, name
            models[name] = (model, list(inputs))
            if outputs is not None:
                expected[name] = list(outputs)
    results = {}
    for name, (model, x) in models.items():
        y = expected[name] if name in expected else run(model, x)
        xs, ys = (x, y) if isinstance(x, list) else ([x], [y])
        with open(os.path.join(out, name + ".tflite"), "wb") as fh:
            fh.write(model)
        # Several inputs/outputs: their raw bytes one after the other, in the model's order.
        with open(os.path.join(out, name + ".input.bin"), "wb") as fh:
            for value in xs:
                fh.write(np.ascontiguousarray(value).tobytes())
        with open(os.path.join(out, name + ".output.bin"), "wb") as fh:
            for value in ys:
                fh.write(np.ascontiguousarray(value).tobytes())
        results[name] = ys
        print(f"{name}: {len(model)} bytes, inputs "
              + ", ".join(f"{v.dtype}{list(v.shape)}" for v in xs) + ", outputs "
              + ", ".join(f"{v.dtype}{list(v.shape)}" for v in ys))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--flatc", default="flatc")
    parser.add_argument("--check", help="directory of committed outputs to compare with")
    args = parser.parse_args()
    S = load_schema(args.flatc)
    outputs = generate(S, args.out)
    if args.check:
        failed = False
        for name, ys in outputs.items():
            committed = open(os.path.join(args.check, name + ".output.bin"), "rb").read()
            offset, differs = 0, False
            for y in ys:
                size = y.size * y.dtype.itemsize
                old = np.frombuffer(committed[offset:offset + size], dtype=y.dtype)
                offset += size
                # Float reference kernels may round differently across builds/CPUs; quantized
                # results may move by one step; other integers and booleans must be equal.
                if y.dtype in (np.float32, np.float16):
                    tolerance = dict(rtol=1e-5, atol=1e-6)
                elif y.dtype in (np.int8, np.uint8, np.int16):
                    tolerance = dict(rtol=0, atol=1)
                else:
                    tolerance = dict(rtol=0, atol=0)
                if old.size != y.size or not np.allclose(old.astype(np.float64),
                                                         y.reshape(-1).astype(np.float64),
                                                         **tolerance):
                    differs = True
            if differs or offset != len(committed):
                print(f"{name}: the regenerated model's output differs from the committed one")
                failed = True
            with open(os.path.join(args.check, name + ".tflite"), "rb") as fh:
                if fh.read() != open(os.path.join(args.out, name + ".tflite"), "rb").read():
                    print(f"{name}: the regenerated model differs from the committed file")
                    failed = True
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
