"""Loading from memory (loom_model_load_memory), DLPack in and out, and the type stubs."""

import gc
import os
import subprocess
import typing

import numpy as np
import pytest

import loom
from loom import _session
from conftest import DEMO, REPO, TensorProto, helper, numpy_helper, onnx, save

CPU = ["cpu"]
DIGITS = os.path.join(DEMO, "digits.onnx")
TFLITE = os.path.join(REPO, "tests", "formats", "tflite", "models")
NCNN = os.path.join(REPO, "tests", "formats", "ncnn", "models")


def digits_inputs():
    return np.load(os.path.join(DEMO, "samples.npy"))


def digits_bytes():
    with open(DIGITS, "rb") as f:
        return f.read()


def one_line(error):
    text = str(error)
    assert text and "\n" not in text, repr(text)
    return text


# ---- bytes ----


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview])
@pytest.mark.parametrize("fmt", [None, "onnx"])
def test_onnx_from_bytes_matches_the_file(wrap, fmt):
    x = digits_inputs()
    expected = loom.InferenceSession(DIGITS, devices=CPU).run(None, {"image": x})
    session = loom.InferenceSession(wrap(digits_bytes()), devices=CPU, format=fmt)
    assert session.get_modelmeta().format == "onnx"
    assert "<bytes>" in repr(session)
    for got, want in zip(session.run(None, {"image": x}), expected):
        np.testing.assert_array_equal(got, want)


def test_bytes_are_copied_by_the_core():
    """The caller may reuse its buffer as soon as the session exists."""
    buffer = bytearray(digits_bytes())
    session = loom.InferenceSession(buffer, devices=CPU)
    buffer[:] = b"\0" * len(buffer)
    (digit,) = session.run(["digit"], {"image": digits_inputs()})
    labels = np.array(open(os.path.join(DEMO, "samples_labels.txt")).read().split(), np.int64)
    assert (digit == labels[: len(digit)]).mean() >= 0.75


@pytest.mark.parametrize("name", ["float_cnn", "float_misc"])
def test_tflite_from_bytes(name):
    path = os.path.join(TFLITE, name + ".tflite")
    with open(path, "rb") as f:
        data = f.read()
    from_file = loom.InferenceSession(path, devices=CPU)
    from_bytes = loom.InferenceSession(data, devices=CPU, format="tflite")
    assert from_bytes.get_modelmeta().format == "tflite"
    assert [(i.name, i.shape, i.type) for i in from_bytes.get_inputs()] == [
        (i.name, i.shape, i.type) for i in from_file.get_inputs()
    ]
    (inp,) = from_file.get_inputs()
    x = np.fromfile(os.path.join(TFLITE, name + ".input.bin"), np.float32).reshape(inp.shape)
    want = np.fromfile(os.path.join(TFLITE, name + ".output.bin"), np.float32)
    (got,) = from_bytes.run(None, {inp.name: x})
    np.testing.assert_allclose(got.reshape(-1), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(got, from_file.run(None, {inp.name: x})[0])


def test_loom_format_from_bytes(tmp_path):
    convert = os.environ.get("LOOM_TEST_INFER_CONVERT")
    if not convert or not os.path.exists(convert):
        pytest.skip("LOOM_TEST_INFER_CONVERT not set: no .loom model to load")
    out = tmp_path / "digits.loom"
    p = subprocess.run([convert, DIGITS, str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    session = loom.InferenceSession(out.read_bytes(), devices=CPU, format="loom")
    assert session.get_modelmeta().format == "loom"
    x = digits_inputs()
    expected = loom.InferenceSession(DIGITS, devices=CPU).run(None, {"image": x})
    for got, want in zip(session.run(None, {"image": x}), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_ncnn_param_without_its_weights_is_refused_clearly():
    # ncnn's weights live in a second file (.bin): bytes are the .param alone, and a network
    # whose layers need weights must say so rather than crash.
    with open(os.path.join(NCNN, "small_cnn.param"), "rb") as f:
        data = f.read()
    with pytest.raises(loom.LoomError) as e:
        loom.InferenceSession(data, devices=CPU, format="ncnn")
    one_line(e.value)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(lambda: digits_bytes()[: len(digits_bytes()) // 2], id="truncated-onnx"),
        pytest.param(lambda: b"\x08\x07garbage that is no model", id="garbage"),
        pytest.param(lambda: b"", id="empty"),
        pytest.param(lambda: bytes(range(256)) * 64, id="noise"),
    ],
)
def test_corrupt_bytes_raise_model_errors(data):
    with pytest.raises(loom.LoomError) as e:
        loom.InferenceSession(data(), devices=CPU)
    assert isinstance(e.value, (loom.ModelError, loom.Unsupported, loom.InvalidArgument)), repr(e.value)
    one_line(e.value)


def test_corrupt_onnx_with_a_format_hint_is_a_model_error():
    with pytest.raises(loom.ModelError) as e:
        loom.InferenceSession(digits_bytes()[:100], devices=CPU, format="onnx")
    one_line(e.value)


def test_format_hint_mismatch_and_bad_arguments(tmp_path):
    with pytest.raises(loom.LoomError) as e:
        loom.InferenceSession(digits_bytes(), devices=CPU, format="tflite")
    one_line(e.value)
    with pytest.raises(ValueError, match="format must be one of"):
        loom.InferenceSession(digits_bytes(), devices=CPU, format="caffe")
    with pytest.raises(ValueError, match="for a model given as bytes"):
        loom.InferenceSession(DIGITS, devices=CPU, format="onnx")
    with pytest.raises(ValueError, match="for a model given as bytes"):
        loom.InferenceSession(DIGITS, devices=CPU, base_dir=str(tmp_path))
    with pytest.raises(ValueError, match="not a directory"):
        loom.InferenceSession(digits_bytes(), devices=CPU, base_dir=str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="path or bytes"):
        loom.InferenceSession(12345, devices=CPU)


def external_data_model(directory):
    """y = x @ W + b with W and b in weights.bin beside the model (ONNX external data)."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    path = os.path.join(directory, "external.onnx")
    save(
        path,
        [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
        initializers=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")],
    )
    model = onnx.load(path)
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    assert os.path.exists(os.path.join(directory, "weights.bin"))
    return path, w, b


def test_external_data_needs_a_base_dir(tmp_path):
    path, w, b = external_data_model(str(tmp_path))
    with open(path, "rb") as f:
        data = f.read()
    with pytest.raises(loom.LoomError) as e:
        loom.InferenceSession(data, devices=CPU)
    text = one_line(e.value)
    assert "external" in text.lower() or "weights.bin" in text, text

    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    session = loom.InferenceSession(data, devices=CPU, base_dir=tmp_path)
    (y,) = session.run(None, {"x": x})
    np.testing.assert_allclose(y, x @ w + b, rtol=1e-5, atol=1e-5)
    # The file itself finds weights.bin beside it.
    np.testing.assert_array_equal(loom.InferenceSession(path, devices=CPU).run(None, {"x": x})[0], y)


# ---- DLPack in ----


class OnlyDLPack:
    """Hides everything of an array but the DLPack protocol, as another framework's tensor."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_dlpack_input_is_read_in_place():
    x = digits_inputs()
    dtype, shape, data = _session._tensor("image", OnlyDLPack(x), 1)
    assert dtype == 1 and shape == list(x.shape)
    assert np.shares_memory(data, x) and data.ctypes.data == x.ctypes.data  # no copy
    assert not data.flags.writeable
    session = loom.InferenceSession(DIGITS, devices=CPU)
    np.testing.assert_array_equal(
        session.run(None, {"image": OnlyDLPack(x)})[0], session.run(None, {"image": x})[0]
    )


def test_strided_dlpack_input_is_copied_once():
    x = digits_inputs()
    wide = np.zeros((len(x), 1, 8, 16), np.float32)
    wide[..., 1::2] = x
    view = wide[..., 1::2]
    snapshot = wide.copy()
    _, shape, data = _session._tensor("image", OnlyDLPack(view), 1)
    assert shape == list(x.shape) and not np.shares_memory(data, wide)
    np.testing.assert_array_equal(data.view(np.float32).reshape(x.shape), x)
    session = loom.InferenceSession(DIGITS, devices=CPU)
    np.testing.assert_array_equal(
        session.run(None, {"image": OnlyDLPack(view)})[0], session.run(None, {"image": x})[0]
    )
    np.testing.assert_array_equal(wide, snapshot)  # never written


def test_dlpack_input_errors(models):
    session = loom.InferenceSession(models.add(), devices=CPU)
    x = np.ones((2, 3), np.float32)
    with pytest.raises(loom.InvalidArgument, match=r"(?i)float64|double"):
        session.run(None, {"x": OnlyDLPack(x), "y": OnlyDLPack(x.astype(np.float64))})

    class Broken:
        def __dlpack__(self, stream=None):
            raise BufferError("this producer cannot export")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(loom.InvalidArgument, match="this producer cannot export") as e:
        session.run(None, {"x": x, "y": Broken()})
    assert "'y'" in one_line(e.value)


torch = None
try:
    import torch  # noqa: F811 - optional
except ImportError:
    pass
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed in this interpreter")


@needs_torch
def test_torch_tensors_in_without_copy(models):
    session = loom.InferenceSession(models.add(), devices=CPU)
    a = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    b = torch.full((4, 3), 0.5)
    _, _, data = _session._tensor("x", a, 1)
    assert data.ctypes.data == a.data_ptr()  # the tensor's own memory
    (z,) = session.run(None, {"x": a, "y": b})
    np.testing.assert_array_equal(z, (a + b).numpy())
    # A transposed (non-contiguous) tensor is copied, with the right values.
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    assert not t.is_contiguous()
    (z,) = session.run(None, {"x": t, "y": b})
    np.testing.assert_array_equal(z, (t + b).numpy())
    # A tensor that requires grad is read as it is (inference only reads it; nanobind imports
    # it without the autograd graph), unlike torch's own .numpy(), which refuses.
    (z,) = session.run(None, {"x": a.clone().requires_grad_(), "y": b})
    np.testing.assert_array_equal(z, (a + b).numpy())
    with pytest.raises(loom.InvalidArgument, match=r"(?i)float64|double"):
        session.run(None, {"x": a.double(), "y": b})


@needs_torch
def test_torch_bfloat16_in_without_ml_dtypes(models):
    # NumPy has no bfloat16; through DLPack a torch bfloat16 tensor needs no ml_dtypes.
    path = models.unary("Cast", TensorProto.BFLOAT16, "bf16_to_f32", shape=("N",), out_elem=TensorProto.FLOAT,
                        to=TensorProto.FLOAT)
    session = loom.InferenceSession(path, devices=CPU)
    x = torch.tensor([1.5, -2.25, 3.0e10, 0.0078125], dtype=torch.bfloat16)
    (y,) = session.run(None, {"x": x})
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, x.float().numpy())


# ---- DLPack out ----


def test_outputs_export_through_dlpack():
    session = loom.InferenceSession(DIGITS, devices=CPU)
    probabilities, _ = session.run(None, {"image": digits_inputs()})
    expected = probabilities.copy()
    exported = np.from_dlpack(probabilities)
    assert exported.ctypes.data == probabilities.ctypes.data  # Loom's buffer, shared
    del probabilities, session
    gc.collect()
    np.testing.assert_array_equal(exported, expected)  # kept alive through the export


@needs_torch
def test_outputs_to_torch_without_copy():
    session = loom.InferenceSession(DIGITS, devices=CPU)
    probabilities, digit = session.run(None, {"image": digits_inputs()})
    expected = probabilities.copy()
    t = torch.from_dlpack(probabilities)
    d = torch.from_dlpack(digit)
    assert t.data_ptr() == probabilities.ctypes.data and t.dtype == torch.float32
    assert d.dtype == torch.int64 and d.tolist() == digit.tolist()
    del probabilities, digit, session
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), expected)
    # And back in: a torch view of Loom's output is an input like any other.
    session = loom.InferenceSession(DIGITS, devices=CPU)
    x = torch.from_numpy(digits_inputs())
    (again,) = session.run(["probabilities"], {"image": x})
    np.testing.assert_allclose(again, expected, rtol=1e-6, atol=1e-7)


# ---- type stubs ----


def test_stubs_beside_the_extension():
    package = os.path.dirname(loom.__file__)
    assert os.path.exists(os.path.join(package, "py.typed"))
    with open(os.path.join(package, "_loom.pyi")) as f:
        stub = f.read()
    assert "class Session" in stub and "def run(self" in stub, stub[:2000]
    assert "def dlpack_tensor(" in stub and "class Runtime" in stub
    # The Python layer is annotated in its source (PEP 561: py.typed).
    hints = typing.get_type_hints(loom.InferenceSession.run)
    assert set(hints) >= {"output_names", "input_feed", "return"}, hints
    assert "base_dir" in typing.get_type_hints(loom.InferenceSession.__init__)
