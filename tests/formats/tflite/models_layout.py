"""Test models of the shape / data-movement family (convert_layout.cpp, convert_shape.cpp).

build(G, S) -> {name: (model bytes, [inputs], None)}: the TFLite reference interpreter computes
every expected output.

  float_split_pack   CONV_2D -> SPLIT (channels) -> CONV_2D on one half, SPLIT_V (a -1 size),
                     UNPACK of the channels, PACK (reordered), CONCATENATION; UNPACK/PACK of a
                     rank-3 input along inner axes
  float_gather_slice GATHER (axis 2 batch_dims 1, axis 1 batch_dims 1, batch_dims -1),
                     GATHER_ND, SLICE (size -1), STRIDED_SLICE (ellipsis, new_axis + shrink,
                     offset), EXPAND_DIMS, TILE, BROADCAST_TO, REVERSE_V2, TOP_K_V2 (values
                     and int32 indices), SHAPE, FILL, RANGE, ONE_HOT
  float_space_ops    CONV_2D -> SPACE_TO_DEPTH -> DEPTH_TO_SPACE, SPACE_TO_BATCH_ND -> dilated
                     CONV_2D -> BATCH_TO_SPACE_ND (with crops), MIRROR_PAD REFLECT and
                     SYMMETRIC, TILE, REVERSE_V2, SLICE, all in the nchw form between convs
  int8_layout        the data movement on int8 values: SPLIT, SPLIT_V, PACK, UNPACK, GATHER,
                     GATHER_ND, SLICE, STRIDED_SLICE, TILE, MIRROR_PAD (both modes),
                     SPACE_TO_DEPTH, DEPTH_TO_SPACE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, PAD,
                     PADV2, REVERSE_V2, TOP_K_V2, EXPAND_DIMS, BROADCAST_TO, CONCATENATION of
                     inputs with different quantization
  uint8_layout       the same graph on uint8 values
  int8_quant_change  SPLIT, SPLIT_V, GATHER, GATHER_ND, SLICE, STRIDED_SLICE, TILE, PAD, PADV2,
                     BROADCAST_TO, REVERSE_V2, TOP_K_V2, SPACE_TO_DEPTH, DEPTH_TO_SPACE whose
                     outputs are quantized differently from their input (TFLite copies the
                     stored values)

REVERSE_V2 reverses one axis in the interpreter-checked models: tflite-runtime 2.14's kernel
reverses only the first of several axes (it logs "Current does not support more than 1 axis"),
while Loom reverses every listed axis as TensorFlow does; float_reverse_axes checks that
against numpy.
"""
import numpy as np

SEED = 20261129

# Operators whose version 1 the interpreter does not register (BROADCAST_TO starts at 2).
MIN_VERSION = {130: 2}


def serialize(g, S):
    """g.serialize(S) with the operator-code versions of MIN_VERSION: Graph writes version 1
    for every code, so the schema's builder functions are wrapped while it runs."""
    M = S.OperatorCode
    add_code, add_version = M.OperatorCodeAddBuiltinCode, M.OperatorCodeAddVersion
    last = [0]

    def code(b, number):
        last[0] = number
        return add_code(b, number)

    def version(b, v):
        return add_version(b, max(v, MIN_VERSION.get(last[0], v)))

    M.OperatorCodeAddBuiltinCode, M.OperatorCodeAddVersion = code, version
    try:
        return g.serialize(S)
    finally:
        M.OperatorCodeAddBuiltinCode, M.OperatorCodeAddVersion = add_code, add_version


def build(G, S):
    OP = dict(G.OP, DEPTH_TO_SPACE=5, SPACE_TO_DEPTH=26, BATCH_TO_SPACE_ND=37,
              SPACE_TO_BATCH_ND=38, TOPK_V2=48, SPLIT=49, SLICE=65, TILE=69, EXPAND_DIMS=70,
              SHAPE=77, PACK=83, ONE_HOT=85, UNPACK=88, FILL=94, RANGE=96, MIRROR_PAD=100,
              SPLIT_V=102, REVERSE_V2=105, GATHER_ND=107, BROADCAST_TO=130)
    rng = np.random.default_rng(SEED)
    f = lambda *shape, s=0.5: (rng.standard_normal(shape) * s).astype(np.float32)
    i32 = lambda *v: np.array(v, np.int32)
    opt = G.simple_options
    SAME, VALID, NONE = G.SAME, G.VALID, 0
    models = {}

    # ---- float_split_pack -------------------------------------------------------------------
    g = G.Graph()
    t = lambda name, shape, dtype=np.float32, q=None: g.tensor(name, shape, dtype, quant=q)
    x = t("image", [1, 5, 5, 4])
    seq = t("seq", [3, 4, 5])
    g.inputs = [x, seq]
    conv = t("conv", [1, 5, 5, 8])
    g.op(OP["CONV_2D"], [x, g.const("conv/w", f(8, 1, 1, 4)), g.const("conv/b", f(8, s=0.1))],
         [conv], G.conv_options(1, SAME, NONE))
    a, b = t("half_a", [1, 5, 5, 4]), t("half_b", [1, 5, 5, 4])
    g.op(OP["SPLIT"], [g.const("split_axis", np.array(3, np.int32)), conv], [a, b],
         opt("SplitOptions", num_splits=2))
    a2 = t("conv_a", [1, 5, 5, 4])
    g.op(OP["CONV_2D"], [a, g.const("conv_a/w", f(4, 3, 3, 4)), g.const("conv_a/b", f(4, s=0.1))],
         [a2], G.conv_options(1, SAME, NONE))
    parts = [t("v0", [1, 5, 5, 1]), t("v1", [1, 5, 5, 2]), t("v2", [1, 5, 5, 1])]
    g.op(OP["SPLIT_V"], [b, g.const("sizes", i32(1, -1, 1)), g.const("split_v_axis", i32(3))],
         parts, opt("SplitVOptions", num_splits=3))
    chans = [t(f"chan{i}", [1, 5, 5]) for i in range(4)]
    g.op(OP["UNPACK"], [a2], chans, opt("UnpackOptions", num=4, axis=3))
    packed = t("packed", [1, 5, 5, 4])
    g.op(OP["PACK"], [chans[2], chans[0], chans[3], chans[1]], [packed],
         opt("PackOptions", values_count=4, axis=3))
    joined = t("joined", [1, 5, 5, 8])
    g.op(OP["CONCATENATION"], [packed, parts[2], parts[0], parts[1]], [joined],
         opt("ConcatenationOptions", axis=3))
    rows = [t(f"row{i}", [3, 5]) for i in range(4)]
    g.op(OP["UNPACK"], [seq], rows, opt("UnpackOptions", num=4, axis=-2))
    stacked = t("stacked", [3, 5, 3])
    g.op(OP["PACK"], [rows[3], rows[1], rows[0]], [stacked],
         opt("PackOptions", values_count=3, axis=2))
    g.outputs = [joined, stacked]
    models["float_split_pack"] = (serialize(g, S), [f(1, 5, 5, 4, s=1), f(3, 4, 5, s=1)], None)

    # ---- float_gather_slice -----------------------------------------------------------------
    g = G.Graph()
    t = lambda name, shape, dtype=np.float32, q=None: g.tensor(name, shape, dtype, quant=q)
    x = t("x", [2, 3, 4, 5])
    ids = t("ids", [2, 2], np.int32)
    g.inputs = [x, ids]
    g1 = t("gather_b1_axis2", [2, 3, 2, 5])
    g.op(OP["GATHER"], [x, g.const("g1_idx", i32([0, 3], [2, 1]))], [g1],
         opt("GatherOptions", axis=2, batch_dims=1))
    g2 = t("gather_b1_axis1", [2, 2, 4, 5])
    g.op(OP["GATHER"], [x, ids], [g2], opt("GatherOptions", axis=1, batch_dims=1))
    g3 = t("gather_bneg", [2, 3, 2, 5])
    g.op(OP["GATHER"], [x, g.const("g3_idx", i32([1, 1], [0, 3]))], [g3],
         opt("GatherOptions", axis=-2, batch_dims=-1))
    gnd = t("gather_nd", [2, 4, 5])
    g.op(OP["GATHER_ND"], [x, g.const("gnd_idx", i32([1, 2], [0, 1]))], [gnd])
    sl = t("slice", [2, 2, 3, 3])
    g.op(OP["SLICE"], [x, g.const("sl_begin", i32(0, 1, 1, 2)), g.const("sl_size", i32(-1, 2, -1, 3))],
         [sl])
    ss1 = t("ss_ellipsis", [2, 3, 4, 2])
    g.op(OP["STRIDED_SLICE"], [x, g.const("ss1_b", i32(0, 1)), g.const("ss1_e", i32(0, 4)),
                               g.const("ss1_s", i32(1, 2))], [ss1],
         opt("StridedSliceOptions", ellipsis_mask=1))
    ss2 = t("ss_new_axis", [1, 1, 3, 4])
    g.op(OP["STRIDED_SLICE"], [x, g.const("ss2_b", i32(0, 1, 0, 2)), g.const("ss2_e", i32(0, 2, 0, 3)),
                               g.const("ss2_s", i32(1, 1, 1, 1))], [ss2],
         opt("StridedSliceOptions", new_axis_mask=1, ellipsis_mask=4, shrink_axis_mask=8))
    ss3 = t("ss_offset", [2, 2, 4, 2])
    g.op(OP["STRIDED_SLICE"], [x, g.const("ss3_b", i32(0, 1, 0, 1)), g.const("ss3_e", i32(2, 2, 4, 3)),
                               g.const("ss3_s", i32(1, 1, 1, 2))], [ss3],
         opt("StridedSliceOptions", offset=True))
    ss4 = t("ss_new_mid", [3, 1, 2, 5])
    g.op(OP["STRIDED_SLICE"], [x, g.const("ss4_b", i32(1, 0, 0, 1)), g.const("ss4_e", i32(2, 3, 0, 4)),
                               g.const("ss4_s", i32(1, 1, 1, 2))], [ss4],
         opt("StridedSliceOptions", shrink_axis_mask=1, new_axis_mask=4))
    ex = t("expanded", [2, 2, 1, 4, 5])
    g.op(OP["EXPAND_DIMS"], [g2, g.const("ex_axis", i32(-3))], [ex])
    small = t("small", [2, 3])
    g.op(OP["SLICE"], [x, g.const("sm_b", i32(0, 0, 1, 2)), g.const("sm_s", i32(2, 3, 1, 1))],
         [t("small4", [2, 3, 1, 1])])
    g.op(OP["RESHAPE"], [len(g.tensors) - 1, g.const("sm_shape", i32(2, 3))], [small])
    tiled = t("tiled", [4, 9])
    g.op(OP["TILE"], [small, g.const("multiples", i32(2, 3))], [tiled])
    bc = t("broadcast", [4, 2, 3])
    g.op(OP["BROADCAST_TO"], [small, g.const("bc_shape", i32(4, 2, 3))], [bc])
    rev = t("reversed", [2, 3, 4, 5])
    g.op(OP["REVERSE_V2"], [x, g.const("rev_axes", i32(-1))], [rev])
    tv, ti = t("topk_values", [2, 3, 4, 3]), t("topk_indices", [2, 3, 4, 3], np.int32)
    g.op(OP["TOPK_V2"], [x, g.const("k", np.array(3, np.int32))], [tv, ti])
    # Rank-0 constants (G.Graph.const makes arrays of rank >= 1).
    scalar = lambda name, v, dtype: g.tensor(name, [], dtype, np.array(v, dtype))
    shp = t("shape", [4], np.int32)
    g.op(OP["SHAPE"], [x], [shp], opt("ShapeOptions", out_type=2))
    filled = t("filled", [2, 3])
    fill_dims = t("fill_dims", [2], np.int32)
    g.op(OP["SLICE"], [shp, g.const("fd_b", i32(0)), g.const("fd_s", i32(2))], [fill_dims])
    fill_value = scalar("fill_value", 1.5, np.float32)
    g.op(OP["FILL"], [fill_dims, fill_value], [filled])
    rng_out = t("range", [3], np.int32)
    g.op(OP["RANGE"], [scalar("r_start", 1, np.int32), scalar("r_limit", 10, np.int32),
                       scalar("r_delta", 3, np.int32)], [rng_out])
    frange = t("float_range", [4])
    g.op(OP["RANGE"], [scalar("fr_start", 2.0, np.float32),
                       scalar("fr_limit", -1.0, np.float32),
                       scalar("fr_delta", -0.75, np.float32)], [frange])
    oh = t("one_hot", [2, 4, 2])
    g.op(OP["ONE_HOT"], [ids, scalar("depth", 4, np.int32),
                         scalar("on", 2.0, np.float32), scalar("off", -1.0, np.float32)],
         [oh], opt("OneHotOptions", axis=1))
    g.outputs = [g1, g2, g3, gnd, sl, ss1, ss2, ss3, ss4, ex, tiled, bc, rev, tv, ti, shp, filled,
                 rng_out, frange, oh]
    models["float_gather_slice"] = (serialize(g, S), [f(2, 3, 4, 5, s=1), i32([2, 0], [1, 2])], None)

    # ---- float_space_ops --------------------------------------------------------------------
    g = G.Graph()
    t = lambda name, shape, dtype=np.float32, q=None: g.tensor(name, shape, dtype, quant=q)
    x = t("image", [1, 8, 8, 3])
    g.inputs = [x]
    c1 = t("conv1", [1, 8, 8, 4])
    g.op(OP["CONV_2D"], [x, g.const("c1/w", f(4, 1, 1, 3)), g.const("c1/b", f(4, s=0.1))], [c1],
         G.conv_options(1, SAME, NONE))
    s2d = t("s2d", [1, 4, 4, 16])
    g.op(OP["SPACE_TO_DEPTH"], [c1], [s2d], opt("SpaceToDepthOptions", block_size=2))
    c2 = t("conv2", [1, 4, 4, 8])
    g.op(OP["CONV_2D"], [s2d, g.const("c2/w", f(8, 1, 1, 16)), g.const("c2/b", f(8, s=0.1))], [c2],
         G.conv_options(1, SAME, NONE))
    d2s = t("d2s", [1, 8, 8, 2])
    g.op(OP["DEPTH_TO_SPACE"], [c2], [d2s], opt("DepthToSpaceOptions", block_size=2))
    stb = t("stb", [4, 6, 6, 2])
    g.op(OP["SPACE_TO_BATCH_ND"], [d2s, g.const("block", i32(2, 2)),
                                   g.const("stb_pads", i32([2, 2], [2, 2]))], [stb])
    dil = t("dilated", [4, 4, 4, 3])
    g.op(OP["CONV_2D"], [stb, g.const("c3/w", f(3, 3, 3, 2)), g.const("c3/b", f(3, s=0.1))], [dil],
         G.conv_options(1, VALID, NONE))
    bts = t("bts", [1, 7, 6, 3])
    g.op(OP["BATCH_TO_SPACE_ND"], [dil, g.const("block2", i32(2, 2)),
                                   g.const("crops", i32([1, 0], [0, 2]))], [bts])
    refl = t("reflect", [1, 10, 9, 3])
    g.op(OP["MIRROR_PAD"], [bts, g.const("refl_pads", i32([0, 0], [1, 2], [3, 0], [0, 0]))],
         [refl], opt("MirrorPadOptions", mode=0))
    sym = t("symmetric", [1, 13, 13, 3])
    g.op(OP["MIRROR_PAD"], [refl, g.const("sym_pads", i32([0, 0], [3, 0], [1, 3], [0, 0]))],
         [sym], opt("MirrorPadOptions", mode=1))
    tile = t("tile", [1, 13, 26, 6])
    g.op(OP["TILE"], [sym, g.const("tile_m", i32(1, 1, 2, 2))], [tile])
    rev = t("rev", [1, 13, 26, 6])
    g.op(OP["REVERSE_V2"], [tile, g.const("rev_axes", i32(2))], [rev])
    sl = t("sl", [1, 11, 20, 6])
    g.op(OP["SLICE"], [rev, g.const("sl_b", i32(0, 2, 3, 0)), g.const("sl_s", i32(-1, -1, 20, -1))],
         [sl])
    out = t("out", [1, 11, 20, 4])
    g.op(OP["CONV_2D"], [sl, g.const("c4/w", f(4, 1, 1, 6)), g.const("c4/b", f(4, s=0.1))], [out],
         G.conv_options(1, SAME, NONE))
    g.outputs = [out]
    models["float_space_ops"] = (serialize(g, S), [f(1, 8, 8, 3, s=1)], None)

    # ---- int8_layout / uint8_layout ---------------------------------------------------------
    for dtype, name in ((np.int8, "int8_layout"), (np.uint8, "uint8_layout")):
        qmin = -128 if dtype == np.int8 else 0
        q = ([0.05], [qmin + 131], 0)
        q_other = ([0.03], [qmin + 120], 0)
        # TFLite rescales concatenated uint8 inputs only; int8 ones must share the output's.
        q_other = q_other if dtype == np.uint8 else q
        q_cat = ([0.08], [qmin + 128], 0) if dtype == np.uint8 else q
        g = G.Graph()
        t = lambda name, shape, q=q: g.tensor(name, shape, dtype, quant=q)
        x = t("x", [1, 4, 4, 6])
        other = t("other", [1, 4, 4, 2], q_other)
        g.inputs = [x, other]
        outs = []
        a, b = t("split_a", [1, 4, 4, 3]), t("split_b", [1, 4, 4, 3])
        g.op(OP["SPLIT"], [g.const("split_axis", np.array(-1, np.int32)), x], [a, b],
             opt("SplitOptions", num_splits=2))
        v = [t("v0", [1, 1, 4, 3]), t("v1", [1, 3, 4, 3])]
        g.op(OP["SPLIT_V"], [a, g.const("sizes", i32(1, 3)), g.const("sv_axis", i32(1))], v,
             opt("SplitVOptions", num_splits=2))
        rows = [t(f"row{i}", [1, 4, 6]) for i in range(4)]
        g.op(OP["UNPACK"], [x], rows, opt("UnpackOptions", num=4, axis=1))
        packed = t("packed", [1, 6, 2, 4])
        g.op(OP["PACK"], [rows[3], rows[0]], [packed], opt("PackOptions", values_count=2, axis=2))
        gat = t("gather", [1, 4, 2, 6])
        g.op(OP["GATHER"], [x, g.const("g_idx", i32(3, 1))], [gat], opt("GatherOptions", axis=2))
        gnd = t("gather_nd", [2, 6])
        g.op(OP["GATHER_ND"], [x, g.const("gnd_idx", i32([0, 1, 2], [0, 3, 0]))], [gnd])
        sl = t("slice", [1, 2, 3, 6])
        g.op(OP["SLICE"], [x, g.const("sl_b", i32(0, 1, 1, 0)), g.const("sl_s", i32(1, 2, -1, -1))],
             [sl])
        ss = t("strided", [1, 4, 2, 2])
        g.op(OP["STRIDED_SLICE"], [x, g.const("ss_b", i32(0, 1)), g.const("ss_e", i32(0, 6)),
                                   g.const("ss_s", i32(2, 3))], [ss],
             opt("StridedSliceOptions", ellipsis_mask=0, begin_mask=1, end_mask=1))
        tile = t("tile", [1, 8, 12, 3])
        g.op(OP["TILE"], [b, g.const("tile_m", i32(1, 2, 3, 1))], [tile])
        refl = t("reflect", [1, 6, 5, 3])
        g.op(OP["MIRROR_PAD"], [b, g.const("rp", i32([0, 0], [1, 1], [0, 1], [0, 0]))], [refl],
             opt("MirrorPadOptions", mode=0))
        sym = t("symmetric", [1, 7, 8, 3])
        g.op(OP["MIRROR_PAD"], [b, g.const("sp", i32([0, 0], [0, 3], [4, 0], [0, 0]))], [sym],
             opt("MirrorPadOptions", mode=1))
        s2d = t("s2d", [1, 2, 2, 24])
        g.op(OP["SPACE_TO_DEPTH"], [x], [s2d], opt("SpaceToDepthOptions", block_size=2))
        d2s = t("d2s", [1, 4, 4, 6])
        g.op(OP["DEPTH_TO_SPACE"], [s2d], [d2s], opt("DepthToSpaceOptions", block_size=2))
        stb = t("stb", [4, 3, 3, 6])
        g.op(OP["SPACE_TO_BATCH_ND"], [d2s, g.const("block", i32(2, 2)),
                                       g.const("stb_pads", i32([1, 1], [0, 2]))], [stb])
        bts = t("bts", [1, 5, 5, 6])
        g.op(OP["BATCH_TO_SPACE_ND"], [stb, g.const("block2", i32(2, 2)),
                                       g.const("crops", i32([0, 1], [1, 0]))], [bts])
        pad = t("pad", [1, 6, 5, 3])
        g.op(OP["PAD"], [a, g.const("pads", i32([0, 0], [1, 1], [0, 1], [0, 0]))], [pad])
        padv2 = t("padv2", [1, 4, 7, 3])
        pad_value = g.const("pad_value", np.array([qmin + 140], dtype), q)
        g.op(OP["PADV2"], [b, g.const("pads2", i32([0, 0], [0, 0], [2, 1], [0, 0])), pad_value],
             [padv2])
        rev = t("reverse", [1, 4, 4, 6])
        g.op(OP["REVERSE_V2"], [x, g.const("rev_axes", i32(1))], [rev])
        tv, ti = t("topk_values", [1, 4, 4, 2]), g.tensor("topk_indices", [1, 4, 4, 2], np.int32)
        g.op(OP["TOPK_V2"], [x, g.const("k", np.array(2, np.int32))], [tv, ti])
        ex = t("expanded", [1, 4, 1, 4, 6])
        g.op(OP["EXPAND_DIMS"], [x, g.const("ex_axis", i32(2))], [ex])
        bc = t("broadcast", [2, 1, 4, 4, 3])
        g.op(OP["BROADCAST_TO"], [a, g.const("bc_shape", i32(2, 1, 4, 4, 3))], [bc])
        cat = t("concat", [1, 4, 4, 8], q_cat)
        g.op(OP["CONCATENATION"], [x, other], [cat], opt("ConcatenationOptions", axis=3))
        g.outputs = [v[0], v[1], packed, gat, gnd, sl, ss, tile, refl, sym, bts, pad, padv2, rev,
                     tv, ti, ex, bc, cat]
        info = np.iinfo(dtype)
        models[name] = (serialize(g, S), [rng.integers(info.min, info.max + 1, (1, 4, 4, 6)).astype(dtype),
                                         rng.integers(info.min, info.max + 1, (1, 4, 4, 2)).astype(dtype)],
                        None)

    # ---- int8_quant_change: outputs quantized differently from their input ----------------
    # TFLite's kernels of these operators copy the stored values anyway (PAD fills with the
    # output's zero point); the operators it refuses such models for are not in here.
    g = G.Graph()
    qin, qout = ([0.05], [3], 0), ([0.1], [-20], 0)
    t = lambda name, shape, q=qout: g.tensor(name, shape, np.int8, quant=q)
    x = t("x", [1, 4, 4, 6], qin)
    g.inputs = [x]
    a, b = t("split_a", [1, 4, 4, 3]), t("split_b", [1, 4, 4, 3])
    g.op(OP["SPLIT"], [g.const("split_axis", np.array(3, np.int32)), x], [a, b],
         opt("SplitOptions", num_splits=2))
    v = [t("v0", [1, 4, 1, 6]), t("v1", [1, 4, 3, 6])]
    g.op(OP["SPLIT_V"], [x, g.const("sizes", i32(1, 3)), g.const("sv_axis", i32(2))], v,
         opt("SplitVOptions", num_splits=2))
    gat = t("gather", [1, 4, 4, 2])
    g.op(OP["GATHER"], [x, g.const("g_idx", i32(5, 0))], [gat], opt("GatherOptions", axis=3))
    gnd = t("gather_nd", [2, 4, 6])
    g.op(OP["GATHER_ND"], [x, g.const("gnd_idx", i32([0, 1], [0, 3]))], [gnd])
    sl = t("slice", [1, 2, 4, 6])
    g.op(OP["SLICE"], [x, g.const("sl_b", i32(0, 2, 0, 0)), g.const("sl_s", i32(-1, -1, -1, -1))],
         [sl])
    ss = t("strided", [1, 2, 4, 3])
    g.op(OP["STRIDED_SLICE"], [x, g.const("ss_b", i32(0, 0, 0, 0)), g.const("ss_e", i32(1, 4, 4, 6)),
                               g.const("ss_s", i32(1, 2, 1, 2))], [ss], opt("StridedSliceOptions"))
    tile = t("tile", [1, 4, 8, 6])
    g.op(OP["TILE"], [x, g.const("tile_m", i32(1, 1, 2, 1))], [tile])
    pad = t("pad", [1, 6, 4, 6])
    g.op(OP["PAD"], [x, g.const("pads", i32([0, 0], [1, 1], [0, 0], [0, 0]))], [pad])
    padv2 = t("padv2", [1, 4, 5, 6])
    g.op(OP["PADV2"], [x, g.const("pads2", i32([0, 0], [0, 0], [0, 1], [0, 0])),
                       g.const("pad_value", np.array([17], np.int8), qout)], [padv2])
    bc = t("broadcast", [2, 1, 4, 4, 6])
    g.op(OP["BROADCAST_TO"], [x, g.const("bc_shape", i32(2, 1, 4, 4, 6))], [bc])
    rev = t("reverse", [1, 4, 4, 6])
    g.op(OP["REVERSE_V2"], [x, g.const("rev_axes", i32(2))], [rev])
    tv, ti = t("topk_values", [1, 4, 4, 3]), g.tensor("topk_indices", [1, 4, 4, 3], np.int32)
    g.op(OP["TOPK_V2"], [x, g.const("k", np.array(3, np.int32))], [tv, ti])
    s2d = t("s2d", [1, 2, 2, 24])
    g.op(OP["SPACE_TO_DEPTH"], [x], [s2d], opt("SpaceToDepthOptions", block_size=2))
    d2s = t("d2s", [1, 8, 8, 6], ([0.2], [7], 0))
    g.op(OP["DEPTH_TO_SPACE"], [s2d], [d2s], opt("DepthToSpaceOptions", block_size=2))
    g.outputs = [a, b, v[0], v[1], gat, gnd, sl, ss, tile, pad, padv2, bc, rev, tv, ti, d2s]
    models["int8_quant_change"] = (serialize(g, S),
                                   [rng.integers(-128, 128, (1, 4, 4, 6)).astype(np.int8)], None)

    # ---- float_reverse_axes: REVERSE_V2 of several axes, expected outputs from numpy -------
    # (tflite-runtime 2.14 reverses only the first listed axis; TensorFlow reverses them all.)
    g = G.Graph()
    x = g.tensor("x", [2, 3, 4, 5], np.float32)
    q = g.tensor("q", [3, 4], np.int8, quant=([0.1], [2], 0))
    g.inputs = [x, q]
    r1 = g.tensor("reversed_1_3", [2, 3, 4, 5], np.float32)
    g.op(OP["REVERSE_V2"], [x, g.const("axes_1_3", i32(1, -1))], [r1])
    r2 = g.tensor("reversed_all", [3, 4], np.int8, quant=([0.1], [2], 0))
    g.op(OP["REVERSE_V2"], [q, g.const("axes_all", i32(1, 0))], [r2])
    g.outputs = [r1, r2]
    xv = f(2, 3, 4, 5, s=1)
    qv = rng.integers(-128, 128, (3, 4)).astype(np.int8)
    models["float_reverse_axes"] = (serialize(g, S), [xv, qv],
                                    [np.ascontiguousarray(xv[:, ::-1, :, ::-1]),
                                     np.ascontiguousarray(qv[::-1, ::-1])])
    return models
