"""Math, comparison, reduction and normalization models (tflite issue #27), for
generate_models.py: build(G, S) -> {name: (model bytes, [inputs], None)}.

  float_math            unary and binary math and ADD_N on a rank-4 tensor after a CONV_2D (its
                        nchw form), on rank-2 floats (signs of FLOOR_DIV/FLOOR_MOD) and on
                        int32 values
  float_compare_select  comparisons, logic, SELECT/SELECT_V2, reductions (SUM REDUCE_MAX/MIN/
                        PROD/ANY/ALL with and without keep_dims), ARG_MAX/ARG_MIN, CAST, ZEROS_LIKE
  float_norms           PRELU (per channel after a conv), L2_NORMALIZATION (a tiny row hits the
                        epsilon), LOG_SOFTMAX, GELU (both forms)
  mixed_math_builtin    CEIL ROUND (ties) CUMSUM (nchw axis, exclusive/reverse) ELU (float, int8)
                        LOCAL_RESPONSE_NORMALIZATION int8 SUM:
                        expected outputs from the interpreter's builtin kernels (see run_builtin)
  int8_math, uint8_math quantized forms, each operator reading the model's input directly so
                        every output is one requantization away from the reference
"""
import numpy as np

OPS = dict(FLOOR=8, L2_NORMALIZATION=11, LOCAL_RESPONSE_NORMALIZATION=13, LOG_SOFTMAX=50,
           CAST=53, PRELU=54, ARG_MAX=56, LESS=58, NEG=59, GREATER=61, GREATER_EQUAL=62,
           LESS_EQUAL=63, SELECT=64, SIN=66, EQUAL=71, NOT_EQUAL=72, LOG=73, SUM=74, SQRT=75,
           RSQRT=76, POW=78, ARG_MIN=79, REDUCE_PROD=81, REDUCE_MAX=82, LOGICAL_OR=84,
           LOGICAL_AND=86, LOGICAL_NOT=87, REDUCE_MIN=89, FLOOR_DIV=90, REDUCE_ANY=91,
           SQUARE=92, ZEROS_LIKE=93, FLOOR_MOD=95, SQUARED_DIFFERENCE=99, ABS=101, CEIL=104,
           ADD_N=106, COS=108, ELU=111, ROUND=116, SELECT_V2=123, CUMSUM=128, REDUCE_ALL=140,
           GELU=150, SIGN=158)


def build(G, S):
    OP = dict(G.OP, **OPS)
    rng = np.random.default_rng(27027)
    SAME = G.SAME
    f = lambda *shape, s=0.5: (rng.standard_normal(shape) * s).astype(np.float32)

    def conv(g, x, name, cin, cout):
        y = g.tensor(name, [1, 4, 4, cout], np.float32)
        g.op(OP["CONV_2D"], [x, g.const(name + "/w", f(cout, 1, 1, cin)),
                             g.const(name + "/b", f(cout, s=0.1))], [y],
             G.conv_options(1, SAME, G.ACT["NONE"]))
        return y

    def unary(g, code, x, name, shape, dtype=np.float32, options=None):
        y = g.tensor(name, shape, dtype)
        g.op(OP[code], [x], [y], options)
        return y

    def binary(g, code, a, b, name, shape, dtype=np.float32, options=None):
        y = g.tensor(name, shape, dtype)
        g.op(OP[code], [a, b], [y], options)
        return y

    reducer = lambda keep: G.simple_options("ReducerOptions", keep_dims=keep)
    axes = lambda g, name, values: g.const(name, np.array(values, np.int32))
    models = {}

    # ---- float_math ----------------------------------------------------------------------------
    g = G.Graph()
    x = g.tensor("image", [1, 4, 4, 3], np.float32)
    v = g.tensor("values", [3, 8], np.float32)
    n = g.tensor("ints", [2, 6], np.int32)
    g.inputs = [x, v, n]
    s4 = [1, 4, 4, 4]
    c = conv(g, x, "conv", 3, 4)
    a = unary(g, "ABS", c, "abs", s4)
    pos = binary(g, "ADD", a, g.const("half", np.array(0.5, np.float32)), "positive", s4,
                 options=G.simple_options("AddOptions"))
    terms = [unary(g, "SQRT", pos, "sqrt", s4), unary(g, "RSQRT", pos, "rsqrt", s4),
             unary(g, "LOG", pos, "log", s4),
             binary(g, "POW", pos, g.const("exponents", np.array([0.5, 2, 1.5, 3], np.float32)),
                    "pow", s4),
             unary(g, "NEG", c, "neg", s4), unary(g, "SIN", c, "sin", s4),
             unary(g, "COS", c, "cos", s4), unary(g, "SQUARE", c, "square", s4),
             binary(g, "SQUARED_DIFFERENCE", c, g.const("centers", f(4)), "sqdiff", s4)]
    scaled = binary(g, "MUL", c, g.const("three", np.array(3.0, np.float32)), "scaled", s4,
                    options=G.simple_options("MulOptions"))
    terms += [unary(g, "FLOOR", scaled, "floor", s4), unary(g, "SIGN", c, "sign", s4)]
    total = g.tensor("total", s4, np.float32)
    g.op(OP["ADD_N"], terms, [total])
    # Rank 2: signs of FLOOR_DIV / FLOOR_MOD with negative divisors.
    s2 = [3, 8]
    divisors = np.array([1.5, -1.5, 2.0, -2.0, 0.75, -0.75, 3.0, -3.0], np.float32)
    fdiv = binary(g, "FLOOR_DIV", v, g.const("divisors", divisors), "floor_div", s2)
    fmod = binary(g, "FLOOR_MOD", v, g.const("divisors2", divisors), "floor_mod", s2)
    sign = unary(g, "SIGN", v, "sign2", s2)
    sq2 = binary(g, "SQUARED_DIFFERENCE", v, fmod, "sqdiff2", s2)
    mix = g.tensor("mix", s2, np.float32)
    g.op(OP["ADD_N"], [fdiv, sign, sq2], [mix])
    # int32: FLOOR_DIV / FLOOR_MOD / ABS / NEG / SIGN / POW on the values.
    si = [2, 6]
    idiv = np.array([3, -3, 4, -4, 7, -2], np.int32)
    ifd = binary(g, "FLOOR_DIV", n, g.const("idiv", idiv), "int_floor_div", si, np.int32)
    ifm = binary(g, "FLOOR_MOD", n, g.const("idiv2", idiv), "int_floor_mod", si, np.int32)
    iab = unary(g, "ABS", ifd, "int_abs", si, np.int32)
    ineg = unary(g, "NEG", ifm, "int_neg", si, np.int32)
    isg = unary(g, "SIGN", n, "int_sign", si, np.int32)
    ipw = binary(g, "POW", iab, g.const("ipow", np.array(2, np.int32)), "int_pow", si, np.int32)
    isum = g.tensor("int_sum", si, np.int32)
    g.op(OP["ADD_N"], [ipw, ineg, isg], [isum])
    g.outputs = [total, mix, isum]
    values = rng.uniform(-4, 4, (3, 8)).astype(np.float32)
    values[0] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, 3.5]
    ints = rng.integers(-20, 20, (2, 6)).astype(np.int32)
    ints[0, :3] = [0, -9, 9]
    models["float_math"] = (g.serialize(S), [f(1, 4, 4, 3, s=1.0), values, ints], None)

    # ---- mixed_math_builtin: CEIL ROUND CUMSUM ELU (absent from the reference resolver),
    # LOCAL_RESPONSE_NORMALIZATION and int8 SUM, run with the builtin kernels
    g = G.Graph()
    x = g.tensor("image", [1, 4, 4, 3], np.float32)
    v = g.tensor("values", [3, 8], np.float32)
    n = g.tensor("ints", [2, 6], np.int32)
    q8 = G.quant_params(-3.0, 3.0, np.int8)
    xq = g.tensor("int8_values", [2, 8], np.int8, quant=q8)
    g.inputs = [x, v, n, xq]
    c = conv(g, x, "conv", 3, 4)
    scaled = binary(g, "MUL", c, g.const("three", np.array(3.0, np.float32)), "scaled", s4,
                    options=G.simple_options("MulOptions"))
    parts = [unary(g, "CEIL", scaled, "ceil", s4), unary(g, "ROUND", scaled, "round", s4),
             unary(g, "ELU", c, "elu", s4)]
    total = g.tensor("total", s4, np.float32)
    g.op(OP["ADD_N"], parts, [total])
    # CUMSUM along the channels of the nchw form (axis remapped), reversed and exclusive.
    cum = binary(g, "CUMSUM", total, g.const("cum_axis", np.array(-1, np.int32)), "cumsum", s4,
                 options=G.simple_options("CumsumOptions", exclusive=True, reverse=True))
    cum_h = binary(g, "CUMSUM", cum, g.const("cum_axis_h", np.array([1], np.int32)), "cumsum_h",
                   s4, options=G.simple_options("CumsumOptions"))
    rounded = unary(g, "ROUND", v, "round2", [3, 8])  # ties go to even
    icum = binary(g, "CUMSUM", n, g.const("icum_axis", np.array(1, np.int32)), "int_cumsum",
                  [2, 6], np.int32, options=G.simple_options("CumsumOptions", exclusive=True))
    elu8 = g.tensor("int8_elu", [2, 8], np.int8, quant=G.quant_params(-1.0, 3.0, np.int8))
    g.op(OP["ELU"], [xq], [elu8])
    # TFLite 2.14's reference kernels differ from TensorFlow here: LRN sums the window
    # [c - radius, c + radius) and int8 SUM returns wrong sums; the builtin kernels agree with
    # TensorFlow (window [c - radius, c + radius]), which Loom follows.
    lrn = unary(g, "LOCAL_RESPONSE_NORMALIZATION", c, "lrn", s4,
                options=G.simple_options("LocalResponseNormalizationOptions", radius=1, bias=1.5,
                                         alpha=0.3, beta=0.75))
    sum8 = g.tensor("int8_sum", [2], np.int8, quant=G.quant_params(-12.0, 12.0, np.int8))
    g.op(OP["SUM"], [xq, g.const("sum_axis", np.array([1], np.int32))], [sum8],
         G.simple_options("ReducerOptions", keep_dims=False))
    g.outputs = [cum_h, rounded, icum, elu8, lrn, sum8]
    values = rng.uniform(-4, 4, (3, 8)).astype(np.float32)
    values[0] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, 3.5]
    inputs = [f(1, 4, 4, 3, s=1.0), values, rng.integers(-20, 20, (2, 6)).astype(np.int32),
              G.quantize_array(rng.uniform(-3, 3, (2, 8)), *q8, np.int8)]
    model = g.serialize(S)
    models["mixed_math_builtin"] = (model, inputs, run_builtin(model, inputs))

    # ---- float_compare_select ---------------------------------------------------------------
    g = G.Graph()
    x = g.tensor("image", [1, 4, 4, 3], np.float32)
    m = g.tensor("matrix", [3, 5], np.int32)
    g.inputs = [x, m]
    c = conv(g, x, "conv", 3, 4)
    B = np.bool_
    lt = binary(g, "LESS", c, g.const("thresholds", f(4)), "less", s4, B)
    gt = binary(g, "GREATER", c, g.const("zero", np.array(0.0, np.float32)), "greater", s4, B)
    both = binary(g, "LOGICAL_AND", lt, gt, "and", s4, B)
    neither = unary(g, "LOGICAL_NOT", both, "not", s4, B)
    ge = binary(g, "GREATER_EQUAL", c, g.const("ge_t", np.array(0.2, np.float32)), "ge", s4, B)
    either = binary(g, "LOGICAL_OR", neither, ge, "or", s4, B)
    picked = g.tensor("picked", s4, np.float32)
    g.op(OP["SELECT_V2"], [either, c, g.const("fallback", f(1, 1, 4))], [picked])
    red_max = binary(g, "REDUCE_MAX", picked, axes(g, "hw", [1, 2]), "reduce_max", [1, 4],
                     options=reducer(False))
    red_sum = binary(g, "SUM", picked, axes(g, "c", [3]), "sum", [1, 4, 4, 1],
                     options=reducer(True))
    red_min = binary(g, "REDUCE_MIN", picked, axes(g, "h", [1]), "reduce_min", [1, 4, 4],
                     options=reducer(False))
    red_prod = binary(g, "REDUCE_PROD", red_min, axes(g, "w", [-1]), "reduce_prod", [1, 4],
                      options=reducer(False))
    any_ = binary(g, "REDUCE_ANY", lt, axes(g, "hw2", [1, 2]), "any", [1, 1, 1, 4], B,
                  options=reducer(True))
    all_ = binary(g, "REDUCE_ALL", either, axes(g, "wc", [2, 3]), "all", [1, 4], B,
                  options=reducer(False))
    amax = binary(g, "ARG_MAX", c, g.const("amax_axis", np.array([3], np.int32)), "argmax",
                  [1, 4, 4], np.int32, options=G.simple_options("ArgMaxOptions", output_type=2))
    amin = binary(g, "ARG_MIN", c, g.const("amin_axis", np.array(1, np.int32)), "argmin",
                  [1, 4, 4], np.int64, options=G.simple_options("ArgMinOptions", output_type=4))
    any_f = unary(g, "CAST", any_, "any_float", [1, 1, 1, 4])
    sum_i = unary(g, "CAST", red_sum, "sum_int", [1, 4, 4, 1], np.int32)
    zeros = unary(g, "ZEROS_LIKE", red_max, "zeros", [1, 4])
    scores = g.tensor("scores", [1, 4], np.float32)
    g.op(OP["ADD_N"], [red_max, red_prod, zeros], [scores])
    # rank 2, int32: the remaining comparisons and SELECT (v1) with a row condition.
    s2 = [3, 5]
    ref = g.const("reference", rng.integers(-3, 3, (5,)).astype(np.int32))
    le = binary(g, "LESS_EQUAL", m, ref, "le", s2, B)
    ne = binary(g, "NOT_EQUAL", m, ref, "ne", s2, B)
    eq = binary(g, "EQUAL", m, g.const("two", np.array(2, np.int32)), "eq", s2, B)
    le_or_eq = binary(g, "LOGICAL_OR", le, eq, "le_or_eq", s2, B)
    ne_and = binary(g, "LOGICAL_AND", ne, le_or_eq, "ne_and", s2, B)
    sel = g.tensor("selected", s2, np.int32)
    g.op(OP["SELECT"], [ne_and, m, g.const("other", rng.integers(-9, 9, s2).astype(np.int32))],
         [sel])
    rows = g.tensor("rows", s2, np.int32)
    g.op(OP["SELECT"], [g.const("row_mask", np.array([True, False, True])), sel,
                        g.const("minus", np.full(s2, -1, np.int32))], [rows])
    g.outputs = [scores, any_f, all_, amax, amin, sum_i, rows]
    models["float_compare_select"] = (
        g.serialize(S), [f(1, 4, 4, 3, s=1.0), rng.integers(-3, 3, (3, 5)).astype(np.int32)], None)

    # ---- float_norms ----------------------------------------------------------------------------
    g = G.Graph()
    x = g.tensor("image", [1, 4, 4, 3], np.float32)
    t = g.tensor("tokens", [2, 3, 6], np.float32)
    r = g.tensor("rows", [3, 6], np.float32)
    g.inputs = [x, t, r]
    c = conv(g, x, "conv", 3, 4)
    pr = binary(g, "PRELU", c, g.const("alpha", (rng.random((1, 1, 4)) * 0.5).astype(np.float32)),
                "prelu", s4)
    l2 = unary(g, "L2_NORMALIZATION", pr, "l2", s4, options=G.simple_options("L2NormOptions"))
    lsm4 = unary(g, "LOG_SOFTMAX", l2, "log_softmax4", s4)
    s3 = [2, 3, 6]
    ge = unary(g, "GELU", t, "gelu", s3, options=G.simple_options("GeluOptions"))
    ga = unary(g, "GELU", t, "gelu_tanh", s3,
               options=G.simple_options("GeluOptions", approximate=True))
    pr3 = binary(g, "PRELU", t, g.const("alpha3", f(6)), "prelu3", s3)
    acts = g.tensor("acts", s3, np.float32)
    g.op(OP["ADD_N"], [ge, ga, pr3], [acts])
    lsm = unary(g, "LOG_SOFTMAX", acts, "log_softmax", s3)
    l2r = unary(g, "L2_NORMALIZATION", r, "l2_rows", [3, 6],
                options=G.simple_options("L2NormOptions"))
    g.outputs = [lsm4, lsm, l2r]
    rows = f(3, 6, s=1.0)
    rows[1] = 1e-8 * np.arange(1, 7)  # norm below TFLite's epsilon
    rows[2] = 0
    models["float_norms"] = (g.serialize(S), [f(1, 4, 4, 3, s=1.0), f(2, 3, 6, s=1.5), rows],
                             None)

    # ---- int8_math / uint8_math -----------------------------------------------------------------
    for qt, name in ((np.int8, "int8_math"), (np.uint8, "uint8_math")):
        models[name] = quantized_model(G, S, OP, rng, qt)
    return models


# Operators whose TFLite 2.14 kernels take int8 but not uint8.
INT8_ONLY = {"RSQRT", "ABS", "SQUARED_DIFFERENCE", "REDUCE_PROD"}


def quantized_model(G, S, OP, rng, qt):
    """Each operator reads the quantized input x [1,4,4,6] (or the positive input p) directly."""
    g = G.Graph()
    shape = [1, 4, 4, 6]
    qp = lambda lo, hi: G.quant_params(lo, hi, qt)
    x = g.tensor("x", shape, qt, quant=qp(-2.0, 2.0))
    p = g.tensor("p", shape, qt, quant=qp(0.0, 4.0))
    g.inputs = [x, p]
    outs = []

    def op(code, inputs, name, lo_hi=None, out_shape=shape, quant=None, dtype=None, options=None):
        if qt == np.uint8 and code in INT8_ONLY:
            return None
        q = quant if quant is not None else (qp(*lo_hi) if lo_hi else None)
        y = g.tensor(name, out_shape, dtype or qt, quant=q)
        g.op(OP[code], inputs, [y], options)
        outs.append(y)
        return y

    int8 = qt == np.int8
    zp_fixed = lambda z8, zu8: z8 if int8 else zu8
    op("PRELU", [x, g.const("alpha", *weight(G, (rng.random(6) * 0.5).astype(np.float32), qt))],
       "prelu", (-1.0, 2.0))
    op("SQUARED_DIFFERENCE", [x, p], "sqdiff", (0.0, 36.0))
    op("RSQRT", [p], "rsqrt", (0.0, 8.0))
    op("ABS", [x], "abs", (0.0, 2.0))
    if not int8:  # int8 SUM: in mixed_math_builtin (the reference kernel is wrong)
        op("SUM", [x, g.const("hw", np.array([1, 2], np.int32))], "sum", (-16.0, 16.0), [1, 6],
           options=G.simple_options("ReducerOptions", keep_dims=False))
    op("REDUCE_MAX", [x, g.const("c", np.array([3], np.int32))], "reduce_max", (-2.0, 2.0),
       [1, 4, 4, 1], options=G.simple_options("ReducerOptions", keep_dims=True))
    op("L2_NORMALIZATION", [x], "l2", quant=([1 / 128], [zp_fixed(0, 128)], 0),
       options=G.simple_options("L2NormOptions"))
    op("LOG_SOFTMAX", [x], "log_softmax", quant=([16 / 256], [zp_fixed(127, 255)], 0))
    op("HARD_SWISH", [x], "hard_swish", (-0.5, 2.0))
    op("LEAKY_RELU", [x], "leaky_relu", (-0.5, 2.0),
       options=G.simple_options("LeakyReluOptions", alpha=0.2))
    op("TANH", [x], "tanh", quant=([1 / 128], [zp_fixed(0, 128)], 0))
    op("LOGISTIC", [x], "logistic", quant=([1 / 256], [zp_fixed(-128, 0)], 0))
    op("GELU", [x], "gelu", (-0.2, 2.0))
    op("ARG_MAX", [x, g.const("axis", np.array([3], np.int32))], "argmax", out_shape=[1, 4, 4],
       dtype=np.int32, options=G.simple_options("ArgMaxOptions", output_type=2))
    less = op("LESS", [x, p], "less", out_shape=shape, dtype=np.bool_)
    op("EQUAL", [x, g.const("zero_q", *weight(G, np.zeros(6, np.float32), qt))], "equal",
       out_shape=shape, dtype=np.bool_)
    op("GREATER_EQUAL", [p, x], "greater_equal", out_shape=shape, dtype=np.bool_)
    op("REDUCE_MIN", [p, g.const("w", np.array([2], np.int32))], "reduce_min", (0.0, 4.0),
       [1, 4, 1, 6], options=G.simple_options("ReducerOptions", keep_dims=True))
    op("REDUCE_PROD", [p, g.const("h", np.array([1], np.int32))], "reduce_prod",
       (0.0, 256.0), [1, 4, 6], options=G.simple_options("ReducerOptions", keep_dims=False))
    # TFLite's SELECT copies stored values even where x and p are quantized differently.
    op("SELECT_V2", [less, x, p], "select", (-2.0, 4.0))
    op("ARG_MIN", [p, g.const("axis1", np.array(1, np.int32))], "argmin", out_shape=[1, 4, 6],
       dtype=np.int64, options=G.simple_options("ArgMinOptions", output_type=4))
    g.outputs = outs
    xs = G.quantize_array(rng.uniform(-2, 2, shape).astype(np.float32), *qp(-2.0, 2.0), qt)
    ps = G.quantize_array(rng.uniform(0.05, 4, shape).astype(np.float32), *qp(0.0, 4.0), qt)
    return (g.serialize(S), [xs, ps], None)


def weight(G, w, qt):
    data, params = G.weight_quant(w, qt)
    return data, params


def run_builtin(model, inputs):
    """The interpreter's outputs with its builtin (optimized) kernels, without the XNNPACK
    delegate: 2.14's reference resolver registers no CEIL, ROUND, CUMSUM or ELU, and its LRN and
    int8 SUM differ from TensorFlow."""
    from tflite_runtime.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=model,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    for detail, value in zip(it.get_input_details(), inputs):
        it.set_tensor(detail["index"], value)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]
