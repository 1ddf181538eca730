"""Loom's results against onnxruntime's on generated models, and an onnxruntime script that runs
on Loom after the one-line change (`onnxruntime.InferenceSession(p, providers=[...])` ->
`loom.InferenceSession(p, devices=[...])`). Skipped where onnxruntime is not importable
(.ci/python-venv installs it in CI's venv)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import loom
from conftest import DEMO, TensorProto, helper, numpy_helper, save

ort = pytest.importorskip("onnxruntime")

DEVICES = [pytest.param(["cpu"], id="cpu"), pytest.param(["onednn", "cpu"], id="onednn")]


def init(name, shape, rng, scale=0.5):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def cnn(path):
    """Conv+Relu, MaxPool, Conv+BatchNorm+Sigmoid, GlobalAveragePool, Flatten, Gemm, Softmax."""
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c2", "g", "beta", "mean", "var"], ["n2"], epsilon=1e-5),
        helper.make_node("Sigmoid", ["n2"], ["s2"]),
        helper.make_node("GlobalAveragePool", ["s2"], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"]),
        helper.make_node("Gemm", ["flat", "wf", "bf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    inits = [
        init("w1", (8, 3, 3, 3), rng), init("b1", (8,), rng), init("w2", (16, 8, 3, 3), rng),
        init("g", (16,), rng), init("beta", (16,), rng), init("mean", (16,), rng),
        numpy_helper.from_array(rng.uniform(0.5, 2, 16).astype(np.float32), "var"),
        init("wf", (10, 16), rng), init("bf", (10,), rng),
    ]
    save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
         [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10]),
          helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], initializers=inits)
    return path, {"x": rng.standard_normal((2, 3, 16, 16)).astype(np.float32)}


def attention(path):
    """A single-head attention block: MatMul, Transpose, Div, Softmax, MatMul, Add, LayerNorm-ish."""
    rng = np.random.default_rng(5)
    d = 16
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"]),
        helper.make_node("Div", ["qk", "scale"], ["qks"]),
        helper.make_node("Softmax", ["qks"], ["att"], axis=-1),
        helper.make_node("MatMul", ["att", "v"], ["ctx"]),
        helper.make_node("Add", ["ctx", "x"], ["res"]),
        helper.make_node("ReduceMean", ["res"], ["mu"], axes=[-1], keepdims=1),
        helper.make_node("Sub", ["res", "mu"], ["centered"]),
        helper.make_node("Mul", ["centered", "centered"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["var", "eps"], ["vare"]),
        helper.make_node("Sqrt", ["vare"], ["std"]),
        helper.make_node("Div", ["centered", "std"], ["y"]),
        helper.make_node("Tanh", ["y"], ["t"]),
    ]
    inits = [init("wq", (d, d), rng), init("wk", (d, d), rng), init("wv", (d, d), rng),
             numpy_helper.from_array(np.array(np.sqrt(d), np.float32), "scale"),
             numpy_helper.from_array(np.array(1e-5, np.float32), "eps")]
    save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", d])],
         [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["B", "T", d])], initializers=inits)
    return path, {"x": rng.standard_normal((2, 5, d)).astype(np.float32)}


def integer_ops(path):
    """Integer and shape arithmetic: Cast, Shape, Gather, Concat, Reshape, ArgMax, Where."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
        helper.make_node("Concat", ["n", "minus_one"], ["new_shape"], axis=0),
        helper.make_node("Reshape", ["x", "new_shape"], ["flat"]),
        helper.make_node("ArgMax", ["flat"], ["arg"], axis=1, keepdims=0),
        helper.make_node("Greater", ["flat", "half"], ["mask"]),
        helper.make_node("Where", ["mask", "flat", "half"], ["clipped"]),
        helper.make_node("Cast", ["clipped"], ["as_int"], to=TensorProto.INT32),
        helper.make_node("ReduceSum", ["as_int"], ["sum"], keepdims=0),
    ]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6])],
         [helper.make_tensor_value_info("arg", TensorProto.INT64, ["N"]),
          helper.make_tensor_value_info("clipped", TensorProto.FLOAT, ["N", 24]),
          helper.make_tensor_value_info("sum", TensorProto.INT32, [])], initializers=inits)
    rng = np.random.default_rng(9)
    return path, {"x": (rng.standard_normal((3, 4, 6)) * 4).astype(np.float32)}


def digits(path):
    return os.path.join(DEMO, "digits.onnx"), {"image": np.load(os.path.join(DEMO, "samples.npy"))}


@pytest.mark.parametrize("devices", DEVICES)
@pytest.mark.parametrize("make", [cnn, attention, integer_ops, digits], ids=lambda f: f.__name__)
def test_outputs_equal_onnxruntime(make, devices, tmp_path):
    path, feed = make(str(tmp_path / (make.__name__ + ".onnx")))
    reference = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    session = loom.InferenceSession(path, devices=devices)
    # The same interface: names, types and shapes as onnxruntime reports them.
    for ours, theirs in ((session.get_inputs(), reference.get_inputs()), (session.get_outputs(), reference.get_outputs())):
        assert [(a.name, a.type, a.shape) for a in ours] == [(b.name, b.type, b.shape) for b in theirs]
    want = reference.run(None, feed)
    got = session.run(None, feed)
    assert len(got) == len(want)
    for g, w, info in zip(got, want, session.get_outputs()):
        assert g.dtype == w.dtype and g.shape == w.shape, info
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=info.name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=info.name)
    # A subset of outputs, in the order asked, as onnxruntime returns them.
    names = [o.name for o in session.get_outputs()][::-1]
    for g, w in zip(session.run(names, feed), reference.run(names, feed)):
        assert g.shape == w.shape and g.dtype == w.dtype


ORT_SCRIPT = textwrap.dedent(
    """
    # An onnxruntime example, as its documentation writes them.
    import sys
    import numpy as np
    import onnxruntime

    model_path, out_path = sys.argv[1], sys.argv[2]
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    print("input", inp.name, inp.shape, inp.type)
    for o in session.get_outputs():
        print("output", o.name, o.shape, o.type)
    batch = 1 if isinstance(inp.shape[0], str) else inp.shape[0]
    shape = [batch] + [d for d in inp.shape[1:]]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    outputs = session.run(None, {inp.name: x})
    first = session.run([session.get_outputs()[0].name], {inp.name: x})[0]
    assert np.array_equal(first, outputs[0])
    print("result", [tuple(o.shape) for o in outputs], [str(o.dtype) for o in outputs])
    np.savez(out_path, *outputs)
    """
)


def test_an_onnxruntime_script_runs_on_loom_after_one_line(tmp_path):
    path, _ = cnn(str(tmp_path / "cnn.onnx"))
    ort_script = tmp_path / "with_ort.py"
    ort_script.write_text(ORT_SCRIPT)
    loom_text = ORT_SCRIPT.replace("import onnxruntime", "import loom").replace(
        'onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])',
        'loom.InferenceSession(model_path, devices=["onednn", "cpu"])',
    )
    assert loom_text.count("onnxruntime") == 1  # the comment only: one line changed, one import
    loom_script = tmp_path / "with_loom.py"
    loom_script.write_text(loom_text)

    results = {}
    for name, script in (("ort", ort_script), ("loom", loom_script)):
        p = subprocess.run([sys.executable, str(script), path, str(tmp_path / f"{name}.npz")],
                           capture_output=True, text=True, timeout=120, env=dict(os.environ))
        assert p.returncode == 0, p.stdout + p.stderr
        results[name] = p.stdout
    assert results["ort"] == results["loom"]  # the same names, shapes and types printed
    ours, theirs = np.load(tmp_path / "loom.npz"), np.load(tmp_path / "ort.npz")
    assert sorted(ours.files) == sorted(theirs.files)
    for k in theirs.files:
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-4, atol=1e-5)
