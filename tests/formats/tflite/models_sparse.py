"""Models with constant weights in TFLite's sparse format (generate_models.py family module).

The expected outputs come from the same model with dense weights, run by the interpreter;
where the interpreter also runs the sparse file (DENSIFY, and FULLY_CONNECTED's sparse
kernels), its answer must agree, which checks this encoder against TFLite's own decoder.

  float_sparse_fc     FULLY_CONNECTED with 1x4-blocked CSR float weights (TFLite's layout
                      for pruned fully-connected layers)
  float_sparse_conv   DENSIFY -> CONV_2D with weights sparse in two CSR dimensions, unblocked
  int8_sparse_fc      FULLY_CONNECTED, int8 per-tensor weights, 1x16-blocked CSR, DENSIFY
"""
import numpy as np

OP_DENSIFY = 124


def _prune(rng, shape, keep, block=None):
    w = rng.standard_normal(shape).astype(np.float32)
    if block is None:
        mask = rng.uniform(size=shape) < keep
    else:
        d, size = block
        coarse = list(shape)
        coarse[d] //= size
        mask = np.repeat(rng.uniform(size=coarse) < keep, size, axis=d)
    return np.where(mask, w, 0).astype(np.float32)


def _fc_model(G, w, b, sparsity, densify, quant=None):
    g = G.Graph()
    x = g.tensor("input", [1, w.shape[1]], np.float32)
    if quant is None:
        wt = g.tensor("weights", w.shape, np.float32, w, sparsity=sparsity)
        bt = g.const("bias", b)
        xin = x
    else:
        (xs, xz), (ws,), (ys, yz) = quant
        xin = g.tensor("input_q", [1, w.shape[1]], np.int8, quant=([xs], [xz], 0))
        g.op(G.OP["QUANTIZE"], [x], [xin])
        wq = np.clip(np.round(w / ws), -127, 127).astype(np.int8)
        wt = g.tensor("weights", w.shape, np.int8, wq, quant=([ws], [0], 0),
                      sparsity=None if sparsity is None else G.sparsify(wq, *sparsity))
        bt = g.tensor("bias", b.shape, np.int32, np.round(b / (xs * ws)).astype(np.int32),
                      quant=([xs * ws], [0], 0))
    if densify:
        dense = g.tensor("weights_dense", w.shape, g.tensors[wt]["dtype"],
                         quant=g.tensors[wt]["quant"])
        g.op(OP_DENSIFY, [wt], [dense])
        wt = dense
    if quant is None:
        y = g.tensor("output", [1, w.shape[0]], np.float32)
    else:
        y = g.tensor("output", [1, w.shape[0]], np.int8, quant=([ys], [yz], 0))
    g.op(G.OP["FULLY_CONNECTED"], [xin, wt, bt], [y],
         G.simple_options("FullyConnectedOptions", fused_activation_function=0))
    g.inputs, g.outputs = [x], [y]
    return g


def _conv_model(G, w, b, sparsity):
    g = G.Graph()
    x = g.tensor("input", [1, 6, 6, w.shape[3]], np.float32)
    wt = g.tensor("filter", w.shape, np.float32, w, sparsity=sparsity)
    if sparsity is not None:
        dense = g.tensor("filter_dense", w.shape, np.float32)
        g.op(OP_DENSIFY, [wt], [dense])
        wt = dense
    y = g.tensor("output", [1, 6, 6, w.shape[0]], np.float32)
    g.op(G.OP["CONV_2D"], [x, wt, g.const("bias", b)], [y], G.conv_options(1, 0, 1))
    g.inputs, g.outputs = [x], [y]
    return g


def _check(G, name, sparse_bytes, dense_bytes, x):
    expected = G.run(dense_bytes, x)
    try:
        got = G.run(sparse_bytes, x)
    except Exception as error:  # the reference resolver may lack a sparse kernel
        print(f"{name}: the interpreter does not run the sparse file ({error}); "
              "expected outputs from the dense twin")
        return expected
    tolerance = 1e-5 if got.dtype == np.float32 else 1
    assert np.allclose(got.astype(np.float64), expected.astype(np.float64), atol=tolerance), name
    return expected


def build(G, S):
    rng = np.random.default_rng(20261128)
    models = {}

    w = _prune(rng, (8, 16), 0.4, block=(1, 4))
    b = rng.standard_normal(8).astype(np.float32)
    x = rng.standard_normal((1, 16)).astype(np.float32)
    sparse = _fc_model(G, w, b, G.sparsify(w, ["dense", "csr", "dense"], (1, 4)), False)
    sparse = sparse.serialize(S)
    expected = _check(G, "float_sparse_fc", sparse, _fc_model(G, w, b, None, False).serialize(S), x)
    models["float_sparse_fc"] = (sparse, [x], [expected])

    w = _prune(rng, (4, 3, 3, 5), 0.5)
    b = rng.standard_normal(4).astype(np.float32)
    x = rng.standard_normal((1, 6, 6, 5)).astype(np.float32)
    sparse = _conv_model(G, w, b, G.sparsify(w, ["dense", "csr", "dense", "csr"])).serialize(S)
    expected = _check(G, "float_sparse_conv", sparse, _conv_model(G, w, b, None).serialize(S), x)
    models["float_sparse_conv"] = (sparse, [x], [expected])

    w = _prune(rng, (4, 32), 0.5, block=(1, 16))
    b = rng.standard_normal(4).astype(np.float32)
    x = rng.uniform(-1, 1, (1, 32)).astype(np.float32)
    quant = ((2 / 255, 0), (float(np.abs(w).max()) / 127,), (0.05, -3))
    sparse = _fc_model(G, w, b, (["dense", "csr", "dense"], (1, 16)), True, quant).serialize(S)
    dense = _fc_model(G, w, b, None, False, quant).serialize(S)
    models["int8_sparse_fc"] = (sparse, [x], [_check(G, "int8_sparse_fc", sparse, dense, x)])
    return models
