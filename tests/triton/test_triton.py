#!/usr/bin/env python3
"""Loom's Triton backend served by a real tritonserver (docs/triton.md).

Starts the tritonserver of nvidia-pytriton's wheel (the venv of .ci/triton-venv) on 127.0.0.1
only (HTTP on a free port; gRPC on another when the venv's tritonclient.grpc imports, else off;
metrics off), with the build tree's backend directory and a
model repository this script generates with the onnx package:

  linear   x[N,4] -> y = relu(x @ W + b) [N,3], z = 2x [N,4]; config lists the tensors,
           max_batch_size 8, dynamic batching with a queue delay so concurrent requests merge
  auto     the same model with a config that names only the backend (auto-complete)
  wrong    the same model with a config naming an input the model does not have (not ready)
  badparam the same model with a misspelt parameter (not ready)
  fixed    v[4] -> w = v + 1 without a batch dimension, config dims [-1] (looser than the
           model), so that a request of the wrong length reaches Loom and gets its message;
           two instances (two sessions) serving concurrent requests
  strings  s[N,2] STRING -> echo = s (STRING), num = float(s) (FP32); config names only the backend
  digits   the digits demo (apps/infer-run/demo) with max_batch_size 8 and its tensors left to
           auto-complete, checked against infer-run's outputs on the same samples
  mobilenet a small MobileNetV2-like network (strided conv, ReLU6, depthwise and pointwise convs,
           a residual Add, global average pooling, Gemm) x[N,3,16,16] -> logits[N,10], generated
           with random weights; config names the backend and threads only (the batch dimension,
           max_batch_size 4 and dynamic batching are completed); checked against infer-run's
           outputs when infer-run is given, and through gRPC (tritonclient.grpc from the venv,
           when importable) against the HTTP result

and talks to it through the KServe v2 REST API with urllib only (and one gRPC inference with the
venv's tritonclient): readiness, inference checked against numpy, requested outputs, concurrent requests merged by the batcher (the statistics'
batch counts), bad requests, the statistics, unload and load, and a clean shutdown.

Exit status 77 (ctest's SKIP_RETURN_CODE) when the server is not installed.
"""
import argparse
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from pathlib import Path

SKIP = 77
DEADLINE = time.monotonic() + 240  # the whole test, server start included


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def find_server(venv):
    """tritonserver and the libraries it needs, from the nvidia-pytriton wheel in `venv`."""
    if not (venv / "bin" / "python3").exists():
        skip(f"no Triton venv at {venv}: run .ci/triton-venv (it installs nvidia-pytriton)")
    purelib = subprocess.run(
        [str(venv / "bin" / "python3"), "-c",
         "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    server = Path(purelib) / "pytriton" / "tritonserver" / "bin" / "tritonserver"
    libs = Path(purelib) / "nvidia_pytriton.libs"
    if not server.exists() or not libs.is_dir():
        skip(f"no tritonserver in {venv} ({server}): rerun .ci/triton-venv")
    return server, libs


def write_models(repo, digits_model):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "B"], ["pre"]),
         helper.make_node("Relu", ["pre"], ["y"]),
         helper.make_node("Mul", ["x", "two"], ["z"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 4])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B"),
         numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    linear = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    linear.ir_version = 8
    onnx.checker.check_model(linear)

    fixed_graph = helper.make_graph(
        [helper.make_node("Add", ["v", "one"], ["w"])], "fixed",
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("w", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array(1.0, np.float32), "one")])
    fixed = helper.make_model(fixed_graph, opset_imports=[helper.make_opsetid("", 13)])
    fixed.ir_version = 8

    strings_graph = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["echo"]),
         helper.make_node("Cast", ["s"], ["num"], to=TensorProto.FLOAT)], "strings",
        [helper.make_tensor_value_info("s", TensorProto.STRING, ["batch", 2])],
        [helper.make_tensor_value_info("echo", TensorProto.STRING, ["batch", 2]),
         helper.make_tensor_value_info("num", TensorProto.FLOAT, ["batch", 2])])
    strings = helper.make_model(strings_graph, opset_imports=[helper.make_opsetid("", 13)])
    strings.ir_version = 8
    models = {"fixed": fixed, "strings": strings, "mobilenet": mobilenet_like(rng)}

    configs = {
        "linear": """
backend: "loom"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 3 ] },
         { name: "z" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { max_queue_delay_microseconds: 500000 }
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters { key: "threads" value { string_value: "1" } }
parameters { key: "devices" value { string_value: "cpu" } }
""",
        "auto": 'backend: "loom"\n',
        "wrong": """
backend: "loom"
max_batch_size: 8
input [ { name: "not_x" data_type: TYPE_FP32 dims: [ 4 ] } ]
""",
        "fixed": """
backend: "loom"
max_batch_size: 0
input [ { name: "v" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "w" data_type: TYPE_FP32 dims: [ -1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
parameters { key: "threads" value { string_value: "1" } }
""",
        "strings": 'backend: "loom"\ndynamic_batching { max_queue_delay_microseconds: 300000 }\n',
        "badparam": """
backend: "loom"
parameters { key: "device" value { string_value: "cpu" } }
""",
        "mobilenet": """
backend: "loom"
parameters { key: "threads" value { string_value: "1" } }
""",
    }
    if digits_model:
        configs["digits"] = 'backend: "loom"\nmax_batch_size: 8\ndynamic_batching { }\n'
    for name, config in configs.items():
        (repo / name / "1").mkdir(parents=True, exist_ok=True)
        (repo / name / "config.pbtxt").write_text(config)
        if name == "digits":
            (repo / name / "1" / "model.onnx").write_bytes(digits_model.read_bytes())
        else:
            onnx.save(models.get(name, linear), str(repo / name / "1" / "model.onnx"))

    def reference(x):
        return {"y": np.maximum(x @ w + b, 0), "z": x * 2}
    return reference


def mobilenet_like(rng):
    """A MobileNetV2-shaped network with a dynamic batch: x[N,3,16,16] -> logits[N,10]."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def weight(name, *shape):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32), name)

    inits = [weight("w_stem", 8, 3, 3, 3), weight("b_stem", 8), weight("w_dw", 8, 1, 3, 3),
             weight("b_dw", 8), weight("w_pw", 8, 8, 1, 1), weight("b_pw", 8),
             weight("w_fc", 10, 8), weight("b_fc", 10),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array(6.0, np.float32), "six")]
    nodes = [
        helper.make_node("Conv", ["x", "w_stem", "b_stem"], ["stem"], kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["stem", "zero", "six"], ["stem6"]),
        helper.make_node("Conv", ["stem6", "w_dw", "b_dw"], ["dw"], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], group=8),
        helper.make_node("Clip", ["dw", "zero", "six"], ["dw6"]),
        helper.make_node("Conv", ["dw6", "w_pw", "b_pw"], ["pw"], kernel_shape=[1, 1]),
        helper.make_node("Add", ["pw", "stem6"], ["res"]),
        helper.make_node("GlobalAveragePool", ["res"], ["pool"]),
        helper.make_node("Flatten", ["pool"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "w_fc", "b_fc"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "mobilenet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def die_with_parent():
    """In the server's process before exec: killed when this script dies, even by SIGKILL
    (a ctest timeout), so that no server outlives the test."""
    import ctypes
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def request(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        timeout = max(1.0, min(timeout, DEADLINE - time.monotonic()))
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
                return r.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, {"error": text}

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body=None):
        return self.request("POST", path, body if body is not None else {})

    def infer(self, model, inputs, outputs=None):
        body = {"inputs": inputs}
        if outputs is not None:
            body["outputs"] = [{"name": n} for n in outputs]
        return self.post(f"/v2/models/{model}/infer", body)


def tensor(name, array, datatype="FP32", shape=None):
    return {"name": name, "shape": list(shape if shape is not None else array.shape),
            "datatype": datatype, "data": array.flatten().tolist()}


def outputs_of(reply):
    import numpy as np
    types = {"FP32": np.float32, "INT64": np.int64, "BYTES": object}
    return {o["name"]: np.array(o["data"], dtype=types[o["datatype"]]).reshape(o["shape"])
            for o in reply["outputs"]}


FAILURES = []


def expect(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        FAILURES.append(what)


def stats(client, model):
    status, body = client.get(f"/v2/models/{model}/stats")
    assert status == 200, body
    return body["model_stats"][0]


def check_digits(client, digits):
    """The demo through Triton against infer-run's outputs on the same samples."""
    import numpy as np
    samples, expected = digits
    status, config = client.get("/v2/models/digits/config")
    expect(status == 200 and [i["name"] for i in config.get("input", [])] == ["image"]
           and [int(d) for d in config["input"][0]["dims"]] == [1, 8, 8],
           "digits: inputs completed without the batch dimension (max_batch_size 8 given)")
    status, reply = client.infer("digits", [tensor("image", samples)])
    got = outputs_of(reply) if status == 200 else {}
    expect(status == 200 and np.allclose(got.get("probabilities"), expected["probabilities"],
                                         rtol=1e-5, atol=1e-6)
           # digit is [N] in the model: the completed config states it as dims [1] with
           # reshape [] (Triton's convention), so clients see [N,1].
           and got["digit"].shape == (len(samples), 1)
           and np.array_equal(got["digit"].reshape(-1), expected["digit"]),
           "digits: 8 samples in one request equal infer-run's outputs")
    with concurrent.futures.ThreadPoolExecutor(len(samples)) as pool:
        replies = list(pool.map(
            lambda i: client.infer("digits", [tensor("image", samples[i:i + 1])]),
            range(len(samples))))
    expect(all(s == 200 and np.allclose(outputs_of(rep)["probabilities"],
                                        expected["probabilities"][i:i + 1], rtol=1e-5, atol=1e-6)
               and outputs_of(rep)["digit"].reshape(-1).tolist() == expected["digit"][i:i + 1].tolist()
               for i, (s, rep) in enumerate(replies)),
           "digits: the samples as concurrent requests, each equal to infer-run's row")


def infer_run_outputs(infer_run, model, samples_path, work, input_name="image",
                      names=("probabilities", "digit")):
    """The outputs `names` of `model` by infer-run, the reference for the served model (the
    digits demo by default)."""
    import numpy as np
    out = work / f"infer-run-out-{input_name}"
    subprocess.run([str(infer_run), "--model", str(model), "--input", f"{input_name}={samples_path}",
                    "--output", str(out)], check=True, timeout=120,
                   env={**os.environ, "LOOM_PLUGIN_PATH": ""})
    return {name: np.load(out / f"{name}.npy") for name in names}


# Run by the Triton venv's python: one gRPC inference, its output saved for the comparison.
GRPC_CLIENT = r"""
import sys
import numpy as np
import tritonclient.grpc as grpcclient
url, model, x_path, out_path = sys.argv[1:5]
client = grpcclient.InferenceServerClient(url=url)
assert client.is_server_live() and client.is_model_ready(model), "not ready over gRPC"
x = np.load(x_path)
inp = grpcclient.InferInput("x", list(x.shape), "FP32")
inp.set_data_from_numpy(x)
result = client.infer(model, [inp], outputs=[grpcclient.InferRequestedOutput("logits")],
                      client_timeout=30)
np.save(out_path, result.as_numpy("logits"))
"""


def grpc_available(venv):
    """Whether the venv's tritonclient has its gRPC client (grpcio installed)."""
    try:
        return subprocess.run([str(venv / "bin" / "python3"), "-c", "import tritonclient.grpc"],
                              capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def check_mobilenet(client, mobilenet):
    """The MobileNetV2-like model: completed config, a batch of 3 against infer-run, the rows as
    concurrent requests, and the batch through gRPC against the HTTP answer."""
    import numpy as np
    samples, expected, grpc = mobilenet
    status, config = client.get("/v2/models/mobilenet/config")
    expect(status == 200 and config.get("max_batch_size") == 4 and "dynamic_batching" in config
           and [(i["name"], [int(d) for d in i["dims"]]) for i in config.get("input", [])]
           == [("x", [3, 16, 16])]
           and [(o["name"], [int(d) for d in o["dims"]]) for o in config.get("output", [])]
           == [("logits", [10])],
           "mobilenet: batch dimension, max_batch_size 4 and dynamic batching completed")
    status, reply = client.infer("mobilenet", [tensor("x", samples)])
    logits = outputs_of(reply).get("logits") if status == 200 else None
    expect(logits is not None and logits.shape == (len(samples), 10),
           "mobilenet: a batch of 3 in one request gives logits [3,10]")
    if logits is None:
        return
    if expected is not None:
        expect(np.allclose(logits, expected, rtol=1e-4, atol=1e-5),
               "mobilenet: the batch equals infer-run's logits")
    else:
        print("     mobilenet: infer-run's reference skipped (no --infer-run)")
    with concurrent.futures.ThreadPoolExecutor(len(samples)) as pool:
        replies = list(pool.map(
            lambda i: client.infer("mobilenet", [tensor("x", samples[i:i + 1])]),
            range(len(samples))))
    expect(all(s == 200 and np.allclose(outputs_of(rep)["logits"], logits[i:i + 1],
                                        rtol=1e-4, atol=1e-5)
               for i, (s, rep) in enumerate(replies)),
           "mobilenet: the samples as concurrent requests, each equal to its row of the batch")
    if grpc is None:
        print("     mobilenet over gRPC: skipped (the venv's tritonclient.grpc does not import)")
        return
    python, port, x_path, out_path = grpc
    run = subprocess.run([str(python), "-c", GRPC_CLIENT, f"127.0.0.1:{port}", "mobilenet",
                          str(x_path), str(out_path)], capture_output=True, text=True,
                         timeout=max(5.0, min(60.0, DEADLINE - time.monotonic())))
    if run.returncode != 0:
        print(run.stderr[-2000:])
    got = np.load(out_path) if run.returncode == 0 else None
    expect(got is not None and got.shape == logits.shape
           and np.allclose(got, logits, rtol=1e-5, atol=1e-6),
           "mobilenet: the batch over gRPC equals the HTTP answer")


def run_checks(client, reference, digits, mobilenet):
    import numpy as np

    # ---- readiness -------------------------------------------------------------------------
    expect(client.get("/v2/health/live")[0] == 200, "server live")
    expect(client.get("/v2/health/ready")[0] == 200, "server ready (not strict)")
    for model in ("linear", "auto", "fixed", "mobilenet"):
        expect(client.get(f"/v2/models/{model}/ready")[0] == 200, f"model {model} ready")
    status, index = client.post("/v2/repository/index")
    for model, words in (("wrong", ["not_x", "does not have"]),
                         ("badparam", ["unknown parameter 'device'"])):
        expect(client.get(f"/v2/models/{model}/ready")[0] != 200, f"model {model} not ready")
        entry = [m for m in index if m.get("name") == model] if status == 200 else []
        reason = entry[0].get("reason", "") if entry else ""
        print(f"     {model}'s reason: {reason}")
        expect(entry and entry[0].get("state") == "UNAVAILABLE"
               and all(w in reason for w in words), f"model {model} unavailable with the reason")

    # ---- auto-complete ---------------------------------------------------------------------
    status, config = client.get("/v2/models/auto/config")
    print(f"     auto's config: max_batch_size={config.get('max_batch_size')} "
          f"input={config.get('input')} output={config.get('output')}")
    inputs = config.get("input", [])
    expect(status == 200 and config.get("max_batch_size") == 4
           and [(i["name"], i["data_type"], [int(d) for d in i["dims"]]) for i in inputs]
           == [("x", "TYPE_FP32", [4])]
           and sorted(o["name"] for o in config.get("output", [])) == ["y", "z"]
           and "dynamic_batching" in config,
           "auto: inputs, outputs, max_batch_size 4 and dynamic batching completed from the model")
    status, meta = client.get("/v2/models/linear")
    expect(status == 200 and meta["inputs"][0]["shape"] == [-1, 4], "linear metadata")

    # ---- inference against numpy -----------------------------------------------------------
    before = stats(client, "linear")
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 4 - 1
    status, reply = client.infer("linear", [tensor("x", x)])
    got = outputs_of(reply) if status == 200 else {}
    ref = reference(x)
    expect(status == 200 and set(got) == {"y", "z"}
           and all(np.allclose(got[k], ref[k], rtol=1e-5, atol=1e-5) for k in ref),
           "linear: batch of 2, y and z equal numpy's")
    status, reply = client.infer("linear", [tensor("x", x[:1])], outputs=["z"])
    got = outputs_of(reply) if status == 200 else {}
    expect(status == 200 and list(got) == ["z"] and np.allclose(got["z"], ref["z"][:1]),
           "linear: only the requested output z")
    status, reply = client.infer("auto", [tensor("x", x)])
    got = outputs_of(reply) if status == 200 else {}
    expect(status == 200 and np.allclose(got.get("y"), ref["y"], rtol=1e-5, atol=1e-5),
           "auto: served with the completed config")
    v = np.array([1, 2, 3, 4], np.float32)
    status, reply = client.infer("fixed", [tensor("v", v)])
    expect(status == 200 and np.allclose(outputs_of(reply)["w"], v + 1), "fixed: w = v + 1")
    vs = [v * i for i in range(6)]
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        replies = list(pool.map(lambda a: client.infer("fixed", [tensor("v", a)]), vs))
    expect(all(s == 200 and np.allclose(outputs_of(rep)["w"], a + 1)
               for (s, rep), a in zip(replies, vs)),
           "fixed: 6 concurrent requests on two instances")

    # ---- strings (BYTES) in and out, batched -------------------------------------------------
    words = np.array([["1.5", "-2"], ["0.25", "1000"]], dtype=object)
    status, reply = client.infer("strings", [{"name": "s", "shape": [2, 2], "datatype": "BYTES",
                                              "data": words.flatten().tolist()}])
    got = outputs_of(reply) if status == 200 else {}
    expect(status == 200 and got["echo"].tolist() == words.tolist()
           and np.allclose(got["num"], words.astype(np.float32)),
           "strings: BYTES in, BYTES and FP32 out")
    rows_s = [[str(i) * (i + 1), f"{i}.5"] for i in range(4)]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda r: client.infer(
            "strings", [{"name": "s", "shape": [1, 2], "datatype": "BYTES", "data": r}]), rows_s))
    expect(all(st == 200 and outputs_of(rep)["echo"].tolist() == [r]
               and np.allclose(outputs_of(rep)["num"], [[float(x) for x in r]])
               for (st, rep), r in zip(replies, rows_s)),
           "strings: concurrent requests of strings of different lengths, each its own back")
    status, reply = client.infer("strings", [{"name": "s", "shape": [1, 2], "datatype": "BYTES",
                                              "data": ["1", "not a number"]}])
    print(f"     strings, Cast of 'not a number': {status} {(reply or {}).get('error')}")
    expect(status >= 400 and (reply or {}).get("error"), "strings: a failing Cast is an error")

    # ---- concurrent requests merged by the dynamic batcher ---------------------------------
    rows = [np.full((1, 4), i / 8, np.float32) for i in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda r: client.infer("linear", [tensor("x", r)]), rows))
    good = all(s == 200 and np.allclose(outputs_of(rep)["y"], reference(r)["y"], atol=1e-5)
               and np.allclose(outputs_of(rep)["z"], reference(r)["z"])
               for (s, rep), r in zip(replies, rows))
    expect(good, "8 concurrent requests: each gets its own rows back")
    after = stats(client, "linear")
    executions = int(after["execution_count"]) - int(before["execution_count"])
    successes = (int(after["inference_stats"]["success"]["count"])
                 - int(before["inference_stats"]["success"]["count"]))
    merged = [bs for bs in after.get("batch_stats", []) if int(bs["batch_size"]) > 2]
    print(f"     linear: {successes} requests in {executions} executions; batch sizes "
          f"{[(int(bs['batch_size']), int(bs['compute_infer']['count'])) for bs in after.get('batch_stats', [])]}")
    expect(successes == 10, "stats: 10 successful linear requests counted")
    expect(executions < 10 and merged, "stats: the batcher merged concurrent requests "
           "(fewer executions than requests, a batch size above 2)")
    expect(int(after["inference_count"]) - int(before["inference_count"]) == 11,
           "stats: inference_count counts the 11 rows")

    # ---- bad requests ------------------------------------------------------------------------
    bad = {
        "wrong dtype": [tensor("x", x.astype(np.int32), "INT32")],
        "wrong shape": [tensor("x", np.zeros((2, 5), np.float32))],
        "unknown input": [tensor("x", x), tensor("q", x)],
        "missing input": [],
        "batch above max_batch_size": [tensor("x", np.zeros((9, 4), np.float32))],
    }
    for what, inputs in bad.items():
        status, reply = client.infer("linear", inputs)
        message = (reply or {}).get("error", "")
        print(f"     {what}: {status} {message}")
        expect(status == 400 and message, f"linear: {what} rejected with a message")
    before_fixed = stats(client, "fixed")
    status, reply = client.infer("fixed", [tensor("v", np.zeros(3, np.float32))])
    message = (reply or {}).get("error", "")
    print(f"     fixed, 3 values for [4]: {status} {message}")
    expect(status == 400 and "v" in message and "\n" not in message,
           "fixed: a shape only Loom knows is wrong gets Loom's one-line message")
    after_fixed = stats(client, "fixed")
    expect(int(after_fixed["inference_stats"]["fail"]["count"])
           == int(before_fixed["inference_stats"]["fail"]["count"]) + 1,
           "stats: the failed request counted as a failure")
    status, reply = client.infer("linear", [tensor("x", x)])
    expect(status == 200 and np.allclose(outputs_of(reply)["y"], ref["y"], atol=1e-5),
           "linear still serves after the bad requests")

    if digits:
        check_digits(client, digits)
    else:
        print("     digits: skipped (no --infer-run)")
    check_mobilenet(client, mobilenet)

    # ---- unload and load -----------------------------------------------------------------------
    status, _ = client.post("/v2/repository/models/auto/unload")
    deadline = time.monotonic() + 30
    while client.get("/v2/models/auto/ready")[0] == 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    expect(status == 200 and client.get("/v2/models/auto/ready")[0] != 200, "auto unloaded")
    status, reply = client.post("/v2/repository/models/auto/load")
    expect(status == 200 and client.get("/v2/models/auto/ready")[0] == 200, "auto loaded again")
    status, reply = client.infer("auto", [tensor("x", x)])
    expect(status == 200 and np.allclose(outputs_of(reply)["y"], ref["y"], atol=1e-5),
           "auto serves after reloading")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path,
                        default=Path(os.environ.get("LOOM_TRITON_VENV", "build/triton-venv")))
    parser.add_argument("--backend-dir", type=Path, required=True,
                        help="directory holding loom/libtriton_loom.so")
    parser.add_argument("--work", type=Path, required=True, help="scratch directory")
    parser.add_argument("--infer-run", type=Path, help="infer-run, for the digits demo's reference")
    parser.add_argument("--demo", type=Path, help="apps/infer-run/demo (digits.onnx, samples.npy)")
    args = parser.parse_args()
    if os.environ.get("LOOM_TRITON_VENV"):
        args.venv = Path(os.environ["LOOM_TRITON_VENV"])

    server, libs = find_server(args.venv.resolve())
    backend = args.backend_dir / "loom" / "libtriton_loom.so"
    if not backend.exists():
        print(f"FAIL: no backend at {backend} (build the triton_loom target)")
        return 1
    repo = args.work / "repository"
    if repo.exists():
        import shutil
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    digits = None
    if args.infer_run and args.demo:
        import numpy as np
        samples_path = args.demo / "samples.npy"
        digits = (np.load(samples_path), infer_run_outputs(args.infer_run, args.demo / "digits.onnx",
                                                           samples_path, args.work))
    reference = write_models(repo, args.demo / "digits.onnx" if digits else None)
    import numpy as np
    x_path = args.work / "mobilenet_x.npy"
    np.save(x_path, np.random.default_rng(11).uniform(-1, 1, (3, 3, 16, 16)).astype(np.float32))
    expected = None
    if args.infer_run:
        expected = infer_run_outputs(args.infer_run, repo / "mobilenet" / "1" / "model.onnx",
                                     x_path, args.work, "x", ("logits",))["logits"]

    port = free_port()
    grpc_port = free_port() if grpc_available(args.venv.resolve()) else None
    while grpc_port == port:
        grpc_port = free_port()
    mobilenet = (np.load(x_path), expected,
                 None if grpc_port is None else (args.venv.resolve() / "bin" / "python3", grpc_port,
                                                 x_path, args.work / "mobilenet_grpc.npy"))
    log_path = args.work / "tritonserver.log"
    command = [str(server), f"--model-repository={repo}",
               f"--backend-directory={args.backend_dir.resolve()}",
               "--http-address=127.0.0.1", f"--http-port={port}",
               "--allow-metrics=false", "--allow-sagemaker=false",
               "--allow-vertex-ai=false", "--exit-timeout-secs=5", "--exit-on-error=false",
               "--strict-readiness=false", "--model-control-mode=explicit", "--load-model=*",
               "--log-verbose=0"]
    if grpc_port is None:
        command.append("--allow-grpc=false")
    else:
        command += ["--allow-grpc=true", "--grpc-address=127.0.0.1", f"--grpc-port={grpc_port}"]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = str(libs) + (":" + env["LD_LIBRARY_PATH"]
                                          if env.get("LD_LIBRARY_PATH") else "")
    print("$ " + " ".join(command))
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                preexec_fn=die_with_parent)
    client = Client(port)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"tritonserver exited with {proc.returncode} at startup")
            if time.monotonic() > DEADLINE - 150:
                raise RuntimeError("tritonserver did not come up in time")
            try:
                if client.get("/v2/health/live")[0] == 200:
                    status, index = client.post("/v2/repository/index")
                    if status == 200 and len(index) == (8 if digits else 7) and all(
                            m.get("state") in ("READY", "UNAVAILABLE") for m in index):
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.3)
        status, server_meta = client.get("/v2")
        print(f"     tritonserver {server_meta.get('version')}")
        run_checks(client, reference, digits, mobilenet)

        # ---- clean shutdown --------------------------------------------------------------------
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        expect(code == 0, f"tritonserver stops cleanly on SIGINT (exit status {code})")
    except Exception as e:  # noqa: BLE001 -- report with the server's log
        FAILURES.append(repr(e))
        print(f"FAIL {e!r}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log_text = log_path.read_text(errors="replace")
    for line in log_text.splitlines():
        if "loom" in line.lower():
            print("log: " + line[:300])
    if "TRITONBACKEND API" not in log_text:
        FAILURES.append("the backend's startup line is not in the server's log")
    if FAILURES:
        print(f"\n{len(FAILURES)} check(s) failed; server log: {log_path}")
        print("\n".join(log_text.splitlines()[-40:]))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
