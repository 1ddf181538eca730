"""The Python package `loom` (apps/python): API, results, zero copy, errors, threads.

Run by ctest (label python) with the build tree's package on PYTHONPATH; infer-run's path in
LOOM_TEST_INFER_RUN lets the digits test compare with the C++ path.
"""

import gc
import os
import re
import subprocess
import threading
import time

import numpy as np
import pytest

import loom
from loom import _session
from conftest import DEMO, TensorProto

CPU = ["cpu"]


def digits_inputs():
    return np.load(os.path.join(DEMO, "samples.npy"))


# ---- module level ----


def test_version_and_listings():
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", loom.__version__)
    plugins = {p["name"]: p for p in loom.list_plugins() if p["loaded"]}
    assert "onnx" in plugins and "cpu" in plugins, loom.list_plugins()
    assert all(p["abi_version"] > 0 for p in plugins.values())
    devices = {d["name"]: d for d in loom.list_devices()}
    assert devices["cpu"]["available"] and devices["cpu"]["host_memory"]


# ---- the digits demo ----


@pytest.mark.parametrize("devices", [["onednn", "cpu"], ["cpu"]])
def test_digits_demo_matches_infer_run(devices, tmp_path):
    model = os.path.join(DEMO, "digits.onnx")
    session = loom.InferenceSession(model, devices=devices)
    x = digits_inputs()
    probabilities, digit = session.run(None, {"image": x})
    assert probabilities.shape == (len(x), 10) and probabilities.dtype == np.float32
    assert digit.dtype == np.int64
    np.testing.assert_array_equal(digit, probabilities.argmax(axis=1))
    labels = [int(t) for t in open(os.path.join(DEMO, "samples_labels.txt")).read().split()]
    assert (digit == np.array(labels[: len(x)])).mean() >= 0.75

    infer_run = os.environ.get("LOOM_TEST_INFER_RUN")
    if not infer_run or not os.path.exists(infer_run):
        pytest.skip("LOOM_TEST_INFER_RUN not set: no comparison with the C++ path")
    np.save(tmp_path / "x.npy", x)
    p = subprocess.run(
        [infer_run, "--model", model, "--device", ",".join(devices), "-i", f"image={tmp_path / 'x.npy'}",
         "--output", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0, p.stderr
    np.testing.assert_allclose(probabilities, np.load(tmp_path / "out" / "probabilities.npy"), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(digit, np.load(tmp_path / "out" / "digit.npy"))


def test_io_info_and_symbolic_shapes():
    session = loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), devices=CPU)
    (image,) = session.get_inputs()
    assert (image.name, image.type) == ("image", "tensor(float)")
    assert image.shape == ["N", 1, 8, 8]
    outs = session.get_outputs()
    assert [(o.name, o.type, o.shape) for o in outs] == [
        ("probabilities", "tensor(float)", ["N", 10]),
        ("digit", "tensor(int64)", ["N"]),
    ]
    assert "NodeArg(name='image'" in repr(image)
    # Another batch size runs through the same session (a plan per input-shape signature).
    x = digits_inputs()
    for n in (1, 3, len(x)):
        probabilities, digit = session.run(None, {"image": x[:n]})
        assert probabilities.shape == (n, 10) and digit.shape == (n,)
    assert session.plan_cache_stats()["entries"] == 3


def test_bytes_and_pathlike():
    model = os.path.join(DEMO, "digits.onnx")
    with open(model, "rb") as f:
        from_bytes = loom.InferenceSession(f.read(), devices=CPU)
    import pathlib

    from_path = loom.InferenceSession(pathlib.Path(model), devices=CPU)
    x = digits_inputs()
    np.testing.assert_array_equal(from_bytes.run(["digit"], {"image": x})[0], from_path.run(["digit"], {"image": x})[0])


def test_plan_explain_dot():
    session = loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), devices=["onednn", "cpu"])
    session.run(None, {"image": digits_inputs()})
    plan = session.plan()
    assert isinstance(plan, dict) and plan["subgraphs"]
    assert "subgraph" in session.explain()
    assert session.plan_dot().lstrip().startswith("digraph")
    assert session.planned_peak_bytes() > 0
    assert session.get_providers() == ["onednn", "cpu"]
    assert session.get_modelmeta().format == "onnx"


def test_output_names_subset_and_order(models):
    session = loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), devices=CPU)
    x = digits_inputs()
    both = session.run(None, {"image": x})
    digit, probabilities = session.run(["digit", "probabilities"], {"image": x})
    np.testing.assert_array_equal(digit, both[1])
    np.testing.assert_array_equal(probabilities, both[0])
    with pytest.raises(loom.InvalidArgument, match="no output named 'nope'.*probabilities, digit"):
        session.run(["nope"], {"image": x})


# ---- element types, checked against NumPy ----


@pytest.mark.parametrize(
    "elem,dtype",
    [(TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64), (TensorProto.INT32, np.int32),
     (TensorProto.INT64, np.int64)],
)
def test_add_types(models, elem, dtype):
    session = loom.InferenceSession(models.add(elem, name=f"add_{elem}"), devices=CPU)
    assert session.get_inputs()[0].shape == ["N", 3]
    rng = np.random.default_rng(elem)
    x = (rng.standard_normal((4, 3)) * 100).astype(dtype)
    y = (rng.standard_normal((4, 3)) * 100).astype(dtype)
    (z,) = session.run(None, {"x": x, "y": y})
    assert z.dtype == dtype
    np.testing.assert_array_equal(z, x + y)


def test_python_lists_take_the_declared_type(models):
    session = loom.InferenceSession(models.add(), devices=CPU)
    (z,) = session.run(None, {"x": [[1, 2, 3]], "y": [[0.5, 0.5, 0.5]]})
    assert z.dtype == np.float32
    np.testing.assert_array_equal(z, [[1.5, 2.5, 3.5]])


def test_float16_and_bool(models):
    cast = loom.InferenceSession(
        models.unary("Cast", TensorProto.FLOAT, "cast_f16", out_elem=TensorProto.FLOAT16, to=TensorProto.FLOAT16),
        devices=CPU,
    )
    assert cast.get_outputs()[0].type == "tensor(float16)"
    x = np.array([0.1, 1.5, -3.25, 65504.0], np.float32)
    (y,) = cast.run(None, {"x": x})
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, x.astype(np.float16))

    negate = loom.InferenceSession(models.unary("Not", TensorProto.BOOL, "not"), devices=CPU)
    assert negate.get_inputs()[0].type == "tensor(bool)"
    b = np.array([True, False, False, True])
    (nb,) = negate.run(None, {"x": b})
    assert nb.dtype == np.bool_
    np.testing.assert_array_equal(nb, ~b)


def test_bfloat16(models):
    path = models.unary("Cast", TensorProto.FLOAT, "cast_bf16", out_elem=TensorProto.BFLOAT16, to=TensorProto.BFLOAT16)
    try:
        session = loom.InferenceSession(path, devices=CPU)
    except loom.Unsupported as e:
        pytest.skip(f"no bfloat16 Cast on cpu: {e}")
    assert session.get_outputs()[0].type == "tensor(bfloat16)"
    x = np.array([1.0, -2.5, 3.0], np.float32)
    try:
        import ml_dtypes
    except ImportError:
        with pytest.raises(TypeError, match="ml_dtypes"):
            session.run(None, {"x": x})
        return
    (y,) = session.run(None, {"x": x})
    assert y.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y.astype(np.float32), x)


def test_strings(models):
    session = loom.InferenceSession(models.strings(), devices=CPU)
    assert session.get_inputs()[0].type == "tensor(string)"
    assert session.get_inputs()[0].shape == [2, "M"]
    x = np.array([["a", "bé"], ["", "long string " * 10]])
    (y,) = session.run(None, {"x": x})
    assert y.dtype == object and y.shape == (2, 2)
    assert y.tolist() == x.tolist()
    (y,) = session.run(None, {"x": np.array([[b"x"], [b"y"]], dtype=object)})
    assert y.tolist() == [["x"], ["y"]]


# ---- sequences and optionals ----


def test_sequences(models):
    session = loom.InferenceSession(models.sequence(), devices=CPU)
    types = {i.name: i.type for i in session.get_inputs() + session.get_outputs()}
    assert types == {"x": "tensor(float)", "s": "seq(tensor(int64))", "rows": "seq(tensor(float))", "n": "tensor(int64)"}
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    rows, n = session.run(None, {"x": x, "s": [np.arange(2), np.arange(5), np.array([7])]})
    assert isinstance(rows, list) and len(rows) == 4
    for k in range(4):
        np.testing.assert_array_equal(rows[k], x[k])
    assert n == 3
    rows, n = session.run(None, {"x": x, "s": []})  # an empty sequence takes the declared type
    assert n == 0
    with pytest.raises(loom.InvalidArgument, match="pass a list of arrays"):
        session.run(None, {"x": x, "s": np.arange(3)})


def test_optionals(models):
    try:
        session = loom.InferenceSession(models.optional(), devices=CPU)
    except loom.LoomError as e:
        pytest.skip(f"optional model not supported: {e}")
    assert session.get_inputs()[0].type == "optional(tensor(float))"
    has, same = session.run(None, {"o": None})
    assert not has and same is None
    v = np.array([1.0, 2.0], np.float32)
    has, same = session.run(None, {"o": v})
    assert has
    np.testing.assert_array_equal(same, v)


# ---- zero copy ----


def _owner_chain(array):
    chain, obj = [], array.base
    while obj is not None:
        chain.append(obj)
        obj = getattr(obj, "base", None) if isinstance(obj, np.ndarray) else getattr(obj, "obj", None)
    return chain


def test_outputs_are_loom_buffers_without_copy():
    session = loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), devices=CPU)
    probabilities, digit = session.run(None, {"image": digits_inputs()})
    for out in (probabilities, digit):
        assert not out.flags.owndata
        assert out.flags.writeable and out.flags.c_contiguous
        chain = _owner_chain(out)
        # numpy -> memoryview -> nanobind's ndarray, which holds the capsule owning the
        # loom_value_t: no NumPy array in between owns a copy.
        assert chain and not any(isinstance(o, np.ndarray) for o in chain), chain
        assert type(chain[-1]).__name__ == "nb_ndarray", chain
    expected = probabilities.copy()
    del session
    gc.collect()
    np.testing.assert_array_equal(probabilities, expected)  # the buffer outlives the session


def test_outputs_are_released(models):
    session = loom.InferenceSession(models.add(), devices=CPU)
    x = np.ones((100_000, 3), np.float32)  # 1.2 MB per output

    def rss_kib():
        with open("/proc/self/status") as f:
            return int(next(line for line in f if line.startswith("VmRSS")).split()[1])

    for _ in range(10):
        session.run(None, {"x": x, "y": x})
    before = rss_kib()
    for _ in range(100):  # 120 MB of outputs if none were freed
        (z,) = session.run(None, {"x": x, "y": x})
    assert rss_kib() - before < 40 * 1024
    assert z[0, 0] == 2


def test_inputs_are_borrowed_without_copy():
    x = digits_inputs()
    assert x.flags.c_contiguous
    dtype, shape, data = _session._tensor("image", x, 1)
    assert shape == list(x.shape) and np.shares_memory(data, x)  # the caller's buffer itself
    # A non-contiguous array is copied once; the caller's array is never written.
    wide = np.zeros((len(x), 1, 8, 16), np.float32)
    wide[..., ::2] = x
    view = wide[..., ::2]
    assert not view.flags.c_contiguous
    _, _, data = _session._tensor("image", view, 1)
    assert not np.shares_memory(data, wide)
    snapshot = wide.copy()
    session = loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), devices=CPU)
    np.testing.assert_array_equal(session.run(["digit"], {"image": view})[0], session.run(["digit"], {"image": x})[0])
    np.testing.assert_array_equal(wide, snapshot)


# ---- errors ----


def test_run_errors_carry_loom_messages(models):
    session = loom.InferenceSession(models.add(), devices=CPU)
    x = np.ones((2, 3), np.float32)
    with pytest.raises(loom.LoomError) as e:
        session.run(None, {"x": x, "why": x})
    assert isinstance(e.value, loom.InvalidArgument) and e.value.code == 1
    assert "why" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(loom.InvalidArgument, match="'y'"):
        session.run(None, {"x": x})  # missing
    with pytest.raises(loom.InvalidArgument, match=r"(?i)float64|double") as e:
        session.run(None, {"x": x, "y": x.astype(np.float64)})  # wrong dtype
    with pytest.raises(loom.InvalidArgument) as e:
        session.run(None, {"x": x, "y": np.ones((2, 4), np.float32)})  # wrong shape
    assert "y" in str(e.value) or "x" in str(e.value)
    with pytest.raises(loom.InvalidArgument, match="None is only for optional"):
        session.run(None, {"x": x, "y": None})
    with pytest.raises(loom.InvalidArgument, match="no Loom element type"):
        session.run(None, {"x": x, "y": np.ones((2, 3), np.float128)})
    with pytest.raises(ValueError):
        session.run(None, [x, x])
    with pytest.raises(ValueError, match="RunOptions"):
        session.run(None, {"x": x, "y": x}, run_options=object())


def test_load_errors(tmp_path):
    with pytest.raises(loom.LoomError) as e:
        loom.InferenceSession(str(tmp_path / "missing.onnx"), devices=CPU)
    assert "missing.onnx" in str(e.value) and isinstance(e.value, loom.NotFound)
    with pytest.raises(loom.LoomError) as e:
        loom.InferenceSession(b"\x08\x07garbage that is no model", devices=CPU)
    assert e.value.code in (loom.ModelError.code, loom.Unsupported.code, loom.NotFound.code), e.value
    with pytest.raises(loom.LoomError, match="nosuchdevice"):
        loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), devices=["nosuchdevice"], no_fallback=True)
    with pytest.raises(loom.PluginError, match="does not exist"):
        loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), plugins=[str(tmp_path / "nope.so")])
    bogus = tmp_path / "loom_bogus.so"
    bogus.write_bytes(b"not an ELF file")
    with pytest.raises(loom.PluginError, match="loom_bogus.so"):
        loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), plugins=[str(bogus)])


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(threads=-1), "threads"),
        (dict(threads=1.5), "threads"),
        (dict(precision="int4"), "precision"),
        (dict(providers=["CPUExecutionProvider"]), "devices="),
        (dict(provider_options=[{}]), "device_options="),
        (dict(sess_options=object()), "SessionOptions"),
        (dict(device_options={"a;b": "1"}), "device_options"),
        (dict(device_options={"a": "x;y"}), "device_options"),
        (dict(device_options="a=1"), "dict"),
        (dict(shape_overrides={"image": [1, -8, 8, 8]}), "shape_overrides"),
        (dict(shape_overrides={"image": "1x1x8x8"}), "shape_overrides"),
        (dict(devices=[]), "at least one"),
        (dict(devices=["cpu,onednn"]), "device"),
        (dict(max_tensor_bytes=-2), "max_tensor_bytes"),
        (dict(deadline_ms=-1), "deadline_ms"),
        (dict(log_level="loud"), "log_level"),
        (dict(runtime=loom.default_runtime(), plugins=["/tmp"]), "runtime"),
    ],
)
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), **kwargs)


def test_options_reach_the_session(models):
    path = os.path.join(DEMO, "digits.onnx")
    session = loom.InferenceSession(path, devices="cpu", threads=1, shape_overrides={"image": (3, 1, 8, 8)},
                                    plan_cache_entries=2)
    assert session.plan_cache_stats()["capacity_entries"] == 2
    with pytest.raises(loom.InvalidArgument):  # the override fixed N = 3
        session.run(None, {"image": digits_inputs()[:2]})
    assert session.run(["digit"], {"image": digits_inputs()[:3]})[0].shape == (3,)
    with pytest.raises(loom.LoomError, match="image"):  # an override that disagrees with the model
        loom.InferenceSession(path, devices=CPU, shape_overrides={"image": (3, 2, 8, 8)})
    tiny = loom.InferenceSession(models.add(), devices=CPU, max_tensor_bytes=64)
    with pytest.raises(loom.LimitExceeded, match="max_tensor_bytes"):
        tiny.run(None, {"x": np.ones((100, 3), np.float32), "y": np.ones((100, 3), np.float32)})


# ---- threads: cancel, deadlines, the GIL ----


def test_cancel_from_another_thread_ends_an_endless_loop(models):
    session = loom.InferenceSession(models.endless_loop(), devices=CPU)
    done = threading.Event()
    ticks = []

    def canceller():
        # A cancel reaches the runs in progress only: repeat it until the run has ended.
        while not done.wait(0.05):
            ticks.append(time.monotonic())  # this thread ran while the run held no GIL
            if len(ticks) >= 4:
                session.cancel()

    t = threading.Thread(target=canceller)
    t.start()
    start = time.monotonic()
    try:
        with pytest.raises(loom.Cancelled, match="cancel") as e:
            session.run(None, {"x": np.zeros(1, np.float32)})
    finally:
        done.set()
        t.join()
    assert e.value.code == 11
    assert len(ticks) >= 4 and time.monotonic() - start < 30


def test_limits_end_an_endless_loop(models):
    path = models.endless_loop()
    with pytest.raises(loom.LimitExceeded, match="max_loop_iterations"):
        loom.InferenceSession(path, devices=CPU, max_loop_iterations=1000).run(None, {"x": np.zeros(1, np.float32)})
    with pytest.raises(loom.Cancelled, match="deadline"):
        loom.InferenceSession(path, devices=CPU, deadline_ms=100).run(None, {"x": np.zeros(1, np.float32)})


def test_runs_on_two_threads_overlap(models):
    """Two sessions run at once from two Python threads: the GIL is released during run."""
    path = models.endless_loop()
    sessions = [loom.InferenceSession(path, devices=CPU, deadline_ms=400, threads=1) for _ in range(2)]
    spans, errors = [], []

    def work(s):
        start = time.monotonic()
        try:
            s.run(None, {"x": np.zeros(1, np.float32)})
        except loom.Cancelled as e:
            errors.append(e)
        spans.append((start, time.monotonic()))

    threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 2
    (a0, a1), (b0, b1) = spans
    assert min(a1, b1) > max(a0, b0), f"the runs did not overlap: {spans}"


def test_one_session_runs_two_threads_at_once(models):
    """max_concurrent_runs=2: two runs of one session overlap (each on a replica of its plan)."""
    path = models.endless_loop()
    session = loom.InferenceSession(path, devices=CPU, deadline_ms=400, threads=2, max_concurrent_runs=2)
    spans, errors = [], []

    def work():
        start = time.monotonic()
        try:
            session.run(None, {"x": np.zeros(1, np.float32)})
        except loom.Cancelled as e:
            errors.append(e)
        spans.append((start, time.monotonic()))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 2
    (a0, a1), (b0, b1) = spans
    assert min(a1, b1) > max(a0, b0), f"the runs of one session did not overlap: {spans}"
    with pytest.raises(ValueError, match="max_concurrent_runs"):
        loom.InferenceSession(path, devices=CPU, max_concurrent_runs=-1)


def test_profiling_names_every_node_and_writes_a_trace(tmp_path):
    import json

    session = loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), devices=CPU)
    images = np.load(os.path.join(DEMO, "samples.npy"))
    session.run(None, {"image": images})  # not profiled
    session.start_profiling()
    for _ in range(3):
        session.run(None, {"image": images})
    path = session.end_profiling(tmp_path / "trace.json")
    session.run(None, {"image": images})  # after the end: not recorded
    events = session.profile_events()
    assert sum(e["category"] == "run" for e in events) == 3
    import onnx

    model = onnx.load(os.path.join(DEMO, "digits.onnx"))
    covered = set()
    for e in events:
        assert e["start_ns"] <= e["end_ns"]
        if e["category"] in ("node", "fused"):
            covered.add(e["name"])
            covered.update(n for n in e["nodes"].split(",") if n)
    # Constant nodes are folded into initializers before any device sees them.
    wanted = {n.name for n in model.graph.node if n.op_type != "Constant"}
    assert wanted <= covered, f"not in the profile: {sorted(wanted - covered)}"
    trace = json.load(open(path))
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(events)
    assert all(e["dur"] >= 0 and "pid" in e and "tid" in e for e in complete)
    summary = session.profile_summary()
    assert summary.startswith("profile: 3 run(s)"), summary
    assert "Conv" in summary and "by node" in summary


def test_fast_and_general_paths_agree():
    """C-contiguous NumPy inputs take run's fast path (run_tensors); anything else the general
    one: the answers are the same, outputs own Loom's buffers either way."""
    session = loom.InferenceSession(os.path.join(DEMO, "digits.onnx"), devices=CPU, threads=1)
    images = np.load(os.path.join(DEMO, "samples.npy")).astype(np.float32)
    fast = session.run(None, {"image": images})
    strided = np.asfortranarray(images)  # not C-contiguous: copied once by the general path
    general = session.run(None, {"image": strided})
    listed = session.run(None, {"image": images.tolist()})  # a list: the general path
    for a, b, c in zip(fast, general, listed):
        assert a.dtype == b.dtype == c.dtype and a.shape == b.shape == c.shape
        assert np.array_equal(a, b) and np.array_equal(a, c)
        assert a.base is not None  # a view of Loom's buffer, not a copy NumPy owns
    assert session.run(["digit"], {"image": images})[0].tolist() == fast[1].tolist()
    with pytest.raises(loom.InvalidArgument, match="float64"):
        session.run(None, {"image": images.astype(np.float64)})
