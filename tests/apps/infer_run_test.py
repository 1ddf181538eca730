#!/usr/bin/python3
"""Behaviour tests of infer-run: exit codes, error lines, listings and real runs.

Usage: infer_run_test.py CASE --infer-run PATH --plugin-dir DIR
Each CASE is one ctest test; every check asserts on real output of the binary.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TESTDATA = "/usr/share/libonnx-testdata/data/node/test_add"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXIT_USAGE, EXIT_MODEL, EXIT_RUNTIME, EXIT_PLUGIN = 2, 3, 4, 5


class Env:
    def __init__(self, args, tmp):
        self.exe = args.infer_run
        self.plugin_dir = args.plugin_dir
        self.tmp = tmp

    def run(self, *argv, plugins=True):
        cmd = [self.exe] + (["--plugin", self.plugin_dir] if plugins else []) + list(argv)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, LOOM_PLUGIN_PATH=""))
        assert p.returncode >= 0, f"{cmd} died by signal {-p.returncode}: {p.stderr}"
        return p

    def path(self, name):
        return os.path.join(self.tmp, name)


def expect_error(p, code, *fragments):
    """Exit code `code` and exactly one stderr line 'infer-run: error: ...' holding fragments."""
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == code, f"exit {p.returncode}, expected {code}; stderr: {p.stderr}"
    errors = [l for l in lines if l.startswith("infer-run: error: ")]
    assert len(errors) == 1 and len(lines) == 1, f"expected one error line, got: {lines}"
    for f in fragments:
        assert f in errors[0], f"'{f}' not in '{errors[0]}'"


def save_model(env, name, nodes, inputs, outputs):
    graph = helper.make_graph(nodes, name, inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    path = env.path(name + ".onnx")
    onnx.save(model, path)
    return path


def add_model(env, name, elem, shape):
    return save_model(env, name, [helper.make_node("Add", ["x", "y"], ["z"])],
                      [helper.make_tensor_value_info("x", elem, shape),
                       helper.make_tensor_value_info("y", elem, shape)],
                      [helper.make_tensor_value_info("z", elem, shape)])


def abi_version():
    """"MAJOR.MINOR" of the plugin ABI as the source's plugin.h declares it: the build's plugins
    and infer-run report it, and a copy here would go stale with every ABI addition."""
    with open(os.path.join(REPO, "sdk", "include", "loom", "plugin.h")) as f:
        header = f.read()
    return ".".join(header.split(f"#define LOOM_ABI_VERSION_{part} ")[1].split()[0]
                    for part in ("MAJOR", "MINOR"))


def read_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def case_help_and_version(env):
    p = env.run("--help", plugins=False)
    assert p.returncode == 0, p.stderr
    for text in ["--model", "--input", "--shape", "--device", "--no-fallback", "--plugin",
                 "--json", "--explain", "--list-plugins", "Exit codes", "5  plugin error",
                 "--profile", "--profile-summary", "Chrome trace"]:
        assert text in p.stdout, f"--help lacks '{text}'"
    p = env.run("--version", plugins=False)
    assert p.returncode == 0 and p.stdout.startswith("infer-run "), p.stdout
    assert f"plugin ABI {abi_version()}" in p.stdout, (abi_version(), p.stdout)


def case_usage_errors(env):
    expect_error(env.run("--no-such-flag"), EXIT_USAGE, "--no-such-flag")
    expect_error(env.run(), EXIT_USAGE, "no model given")
    model = os.path.join(TESTDATA, "model.onnx")
    expect_error(env.run(model, "--input", "x"), EXIT_USAGE, "NAME=VALUE")
    expect_error(env.run(model, "--repeat", "0"), EXIT_USAGE, "--repeat")
    expect_error(env.run(model, "--shape", "x=3xbad"), EXIT_USAGE, "bad shape")
    expect_error(env.run(model, "--device", "cpu,,x"), EXIT_USAGE, "empty device name")
    expect_error(env.run(model, "--precision", "fp8"), EXIT_USAGE, "--precision", "f32,bf16,f16")
    expect_error(env.run(model, "--input", "nope=" + env.path("a.npy")), EXIT_USAGE,
                 "'nope'", "inputs: x, y")
    expect_error(env.run(model, "--input", "x=" + env.path("missing.npy")), EXIT_USAGE,
                 "input 'x'", "missing.npy")
    np.save(env.path("wrong_dtype.npy"), np.zeros((3, 4, 5), dtype=np.int32))
    expect_error(env.run(model, "--input", "x=" + env.path("wrong_dtype.npy")), EXIT_USAGE,
                 "holds int32", "expects float32")
    np.save(env.path("wrong_shape.npy"), np.zeros((3, 4), dtype=np.float32))
    expect_error(env.run(model, "--input", "x=" + env.path("wrong_shape.npy")), EXIT_USAGE,
                 "shape [3, 4]", "declares [3, 4, 5]")
    np.save(env.path("fortran.npy"), np.asfortranarray(np.zeros((3, 4, 5), dtype=np.float32)))
    expect_error(env.run(model, "--input", "x=" + env.path("fortran.npy")), EXIT_USAGE,
                 "Fortran")

    # Numeric bounds read as such, not as the largest double in 309 digits.
    for flag, value, bound in [("--repeat", "-1", ">= 1"), ("--warmup", "-1", ">= 0"),
                               ("--threads", "-1", ">= 0"), ("--deadline", "-5", ">= 0"),
                               ("--max-loop-iterations", "-1", ">= 0"),
                               ("--max-tensor-bytes", "-1", ">= 0"),
                               ("--time", "0", "between 0.001 and 1000000"),
                               ("--concurrency", "0", "between 1 and 64"),
                               ("--plan-cache", "-1", "between 0 and 1048576")]:
        p = env.run(model, flag, value)
        expect_error(p, EXIT_USAGE, flag, bound)
        assert len(p.stderr) < 200 and "000000000000" not in p.stderr, p.stderr
    expect_error(env.run(model, "--repeat", "abc"), EXIT_USAGE, "--repeat", "'abc' is not a number")
    expect_error(env.run(model, "--json-max-values", "-1"), EXIT_USAGE, "--json-max-values",
                 "between 0 and")
    expect_error(env.run(model, "--seed", "-1"), EXIT_USAGE, "--seed", ">= 0")

    # A misspelled flag gets a suggestion; one far from every flag does not.
    expect_error(env.run(model, "--repet", "3"), EXIT_USAGE, "unknown option '--repet'",
                 "did you mean '--repeat'?")
    expect_error(env.run(model, "--jsn"), EXIT_USAGE, "did you mean '--json'?")
    p = env.run(model, "--no-such-flag")
    expect_error(p, EXIT_USAGE, "unknown option '--no-such-flag'")
    assert "did you mean" not in p.stderr, p.stderr

    # A file that is neither .npy nor a TensorProto is named as such.
    with open(env.path("garbage.npy"), "w") as f:
        f.write("garbage, not a tensor\n")
    expect_error(env.run(model, "-i", "x=" + env.path("garbage.npy"), "--random-inputs"),
                 EXIT_USAGE, "input 'x'", "garbage.npy", "neither a .npy file", "TensorProto")

    # --shape and --input for one input must agree; the error names the input.
    data = os.path.join(TESTDATA, "test_data_set_0")
    both = ["-i", "x=" + os.path.join(data, "input_0.pb"), "-i",
            "y=" + os.path.join(data, "input_1.pb")]
    expect_error(env.run(model, *both, "--shape", "x=3x4x6"), EXIT_USAGE, "input 'x'",
                 "--shape [3, 4, 6] contradicts", "input_0.pb")

    # An unknown device option is a usage error naming the key and the device's options.
    expect_error(env.run(model, "--device-option", "no_such_key=1"), EXIT_USAGE,
                 "--device-option", "unknown option 'no_such_key'", "known: threads")

    # An --output that cannot be written is found before the model loads (a missing model
    # would otherwise be the error).
    with open(env.path("a_file"), "w") as f:
        f.write("x")
    expect_error(env.run(env.path("no_such_model.onnx"), "--output", env.path("a_file/out")),
                 EXIT_USAGE, "--output", "a_file/out", "Not a directory")
    p = env.run(model, "--output", env.path("a_file"))
    expect_error(p, EXIT_USAGE, "--output", "Not a directory")


def case_model_errors(env):
    missing = env.path("no_such_model.onnx")
    expect_error(env.run(missing), EXIT_MODEL, missing, "does not exist")
    garbage = env.path("garbage.onnx")
    with open(garbage, "w") as f:
        f.write("this is not a model\n")
    expect_error(env.run(garbage), EXIT_MODEL, "garbage.onnx")


def case_bogus_plugins(env):
    bogus = env.path("bogus.so")
    with open(bogus, "w") as f:
        f.write("not a shared object\n")
    p = env.run("--list-plugins", "--plugin", bogus)
    expect_error(p, EXIT_PLUGIN, "bogus.so")
    # The real plugins still load and are listed next to the failure.
    assert "onnx" in p.stdout and "cpu" in p.stdout, p.stdout

    real = [f for f in sorted(os.listdir(env.plugin_dir)) if f.endswith(".so")]
    assert real, f"no plugins in {env.plugin_dir}"
    truncated = env.path("truncated.so")
    with open(os.path.join(env.plugin_dir, real[0]), "rb") as src:
        data = src.read()
    with open(truncated, "wb") as dst:
        # ELF and program headers intact, loadable segments cut off (debug info at the end of
        # a plugin is not needed to load it, so a late cut would not break it).
        dst.write(data[:16384])
    model = os.path.join(TESTDATA, "model.onnx")
    expect_error(env.run(model, "--plugin", truncated, plugins=False), EXIT_PLUGIN,
                 "truncated.so")


def case_list_plugins(env):
    p = env.run("--list-plugins")
    assert p.returncode == 0, p.stderr
    rows = {line.split()[0]: line for line in p.stdout.splitlines() if line.strip()}
    for name in ("onnx", "cpu"):
        assert name in rows, f"plugin {name} not listed: {p.stdout}"
        assert f"ABI {abi_version()}" in rows[name] and env.plugin_dir in rows[name], rows[name]
    assert "format onnx" in rows["onnx"] and "device cpu" in rows["cpu"], p.stdout


def case_list_devices(env):
    p = env.run("--list-devices")
    assert p.returncode == 0, p.stderr
    cpu = [l for l in p.stdout.splitlines() if l.startswith("cpu")]
    assert cpu and "available" in cpu[0] and "unavailable" not in cpu[0], p.stdout


def case_describe(env):
    # --describe: the model's inputs and outputs without a session or a run (no device is
    # asked, no input generated), as text and as the report's "model" object.
    model = os.path.join(TESTDATA, "model.onnx")
    p = env.run(model, "--describe")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith(model) and "(onnx, 1 node)" in lines[0], p.stdout
    assert [l.split(":")[0] for l in lines[1:]] == ["input x", "input y", "output sum"], p.stdout
    p = env.run(model, "--describe", "--json", "--device", "no-such-device")
    assert p.returncode == 0, p.stderr
    described = json.loads(p.stdout)["model"]
    assert [t["name"] for t in described["inputs"]] == ["x", "y"], p.stdout
    assert described["outputs"][0]["name"] == "sum" and described["format"] == "onnx", p.stdout


def case_run_add_model(env):
    model = os.path.join(TESTDATA, "model.onnx")
    data = os.path.join(TESTDATA, "test_data_set_0")
    expected = read_pb(os.path.join(data, "output_0.pb"))
    inputs = ["--input", "x=" + os.path.join(data, "input_0.pb"),
              "--input", "y=" + os.path.join(data, "input_1.pb")]

    out_dir = env.path("out")
    p = env.run(model, *inputs, "--output", out_dir)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("sum: float32 [3, 4, 5] = "), p.stdout
    got = np.load(os.path.join(out_dir, "sum.npy"))
    assert got.dtype == np.float32 and got.shape == (3, 4, 5), (got.dtype, got.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-6)

    p = env.run(model, *inputs, "--json", "--repeat", "4", "--warmup", "1")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    out = doc["outputs"]["sum"]
    assert out["dtype"] == "float32" and out["shape"] == [3, 4, 5], out
    np.testing.assert_allclose(np.array(out["values"], dtype=np.float32).reshape(3, 4, 5),
                               expected, rtol=1e-6)
    lat = doc["latency_ms"]
    assert lat["runs"] == 4 and 0 <= lat["min"] <= lat["median"] <= lat["p90"] <= lat["max"], lat
    assert doc["model"]["format"] == "onnx" and doc["model"]["path"] == model, doc["model"]
    assert doc["devices"] == ["cpu"] and doc["load_ms"] >= 0, doc
    assert isinstance(doc["plan"], (dict, list)) and isinstance(doc["planned_peak_bytes"], int)
    assert doc["inputs"]["x"]["source"].endswith("input_0.pb"), doc["inputs"]

    # The same inputs as .npy files give the same result; --json-max-values drops values.
    np.save(env.path("x.npy"), read_pb(os.path.join(data, "input_0.pb")))
    np.save(env.path("y.npy"), read_pb(os.path.join(data, "input_1.pb")))
    p = env.run(model, "-i", "x=" + env.path("x.npy"), "-i", "y=" + env.path("y.npy"),
                "--json", "--json-max-values", "10")
    doc = json.loads(p.stdout)
    assert "values" not in doc["outputs"]["sum"] and doc["outputs"]["sum"]["elements"] == 60

    p = env.run(model, *inputs, "--explain")
    assert p.returncode == 0 and "cpu" in p.stdout.split("sum: float32")[0], p.stdout

    # Integer vectors are printed in full (the digits demo prints its predictions so).
    ints = add_model(env, "add_int64", TensorProto.INT64, [20])
    np.save(env.path("a.npy"), np.arange(20, dtype=np.int64))
    np.save(env.path("b.npy"), np.full(20, 100, dtype=np.int64))
    p = env.run(ints, "-i", "x=" + env.path("a.npy"), "-i", "y=" + env.path("b.npy"))
    assert p.returncode == 0, p.stderr
    line = p.stdout.splitlines()[0]
    assert line == "z: int64 [20] = " + " ".join(str(100 + i) for i in range(20)), line
    # ... up to 256 values: a million ids are previewed as float outputs are.
    big = add_model(env, "add_int64_big", TensorProto.INT64, [1000000])
    np.save(env.path("big_a.npy"), np.arange(1000000, dtype=np.int64))
    np.save(env.path("big_b.npy"), np.zeros(1000000, dtype=np.int64))
    p = env.run(big, "-i", "x=" + env.path("big_a.npy"), "-i", "y=" + env.path("big_b.npy"))
    assert p.returncode == 0, p.stderr
    line = p.stdout.splitlines()[0]
    assert line == ("z: int64 [1000000] = " + " ".join(str(i) for i in range(16)) +
                    " ... (1000000 values)"), line
    assert len(p.stdout) < 2000, len(p.stdout)


def case_run_random_inputs(env):
    model = os.path.join(TESTDATA, "model.onnx")

    def values(*argv):
        p = env.run(model, "--json", *argv)
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert doc["inputs"]["x"]["source"] == "random"
        return doc["outputs"]["sum"]["values"]

    a, b, c = values("--seed", "7"), values("--seed", "7"), values("--seed", "8")
    assert a == b, "the same seed must give the same inputs"
    assert a != c, "another seed must give other inputs"
    assert all(0.0 <= v < 2.0 for v in a), "x + y of values in [0, 1) must lie in [0, 2)"

    # Some inputs from files and the others generated only with --random-inputs.
    np.save(env.path("x.npy"), np.ones((3, 4, 5), dtype=np.float32))
    expect_error(env.run(model, "-i", "x=" + env.path("x.npy")), EXIT_USAGE,
                 "input 'y' not given with --input", "--random-inputs")
    p = env.run(model, "-i", "x=" + env.path("x.npy"), "--random-inputs", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["inputs"]["y"]["source"] == "random", doc["inputs"]
    assert doc["inputs"]["x"]["source"].endswith("x.npy"), doc["inputs"]
    assert all(1.0 <= v < 2.0 for v in doc["outputs"]["sum"]["values"])

    dyn = add_model(env, "add_dynamic", TensorProto.FLOAT, ["N", 3])
    expect_error(env.run(dyn), EXIT_USAGE, "input 'x'", "'N'", "--shape")
    p = env.run(dyn, "--shape", "x=2x3", "--shape", "y=2x3", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["outputs"]["z"]["shape"] == [2, 3], p.stdout
    expect_error(env.run(dyn, "--shape", "x=2x4", "--shape", "y=2x3"), EXIT_USAGE,
                 "input 'x'", "[2, 4]")


def case_shape_plans(env):
    """Symbolic dimensions: a plan per input-shape signature, --shape compiles at creation,
    --plan-cache bounds the plans, and the first run is reported apart."""
    dyn = add_model(env, "add_symbolic", TensorProto.FLOAT, ["N", 3])
    # --shape fixes the shapes: one plan, compiled at creation, which every run then finds.
    p = env.run(dyn, "--shape", "x=2x3", "--shape", "y=2x3", "--json", "--repeat", "2")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    cache = doc["plan"]["plan_cache"]
    assert (cache["entries"], cache["misses"], cache["hits"]) == (1, 1, 3), cache
    assert doc["first_run_ms"] >= 0 and doc["latency_ms"]["runs"] == 2, doc
    # Inputs from files leave the shapes symbolic: the plan is made at the first run, for the
    # shapes fed, and --explain names them.
    for name in ("x", "y"):
        np.save(env.path(name + ".npy"), np.ones((4, 3), np.float32))
    p = env.run(dyn, "--input", "x=" + env.path("x.npy"), "--input", "y=" + env.path("y.npy"),
                "--json", "--explain", "--plan-cache", "3")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["plan"]["signature"] == "x=4x3, y=4x3", doc["plan"]
    cache = doc["plan"]["plan_cache"]
    assert (cache["entries"], cache["misses"], cache["capacity_entries"]) == (1, 1, 3), cache
    assert "plan for input shapes x=4x3, y=4x3 (the last run's)" in p.stderr, p.stderr
    assert doc["outputs"]["z"]["values"] == [2.0] * 12, doc["outputs"]
    p = env.run(dyn, "--shape", "x=2x3", "--shape", "y=2x3", "--plan-cache", "-1")
    assert p.returncode == EXIT_USAGE, p.stderr
    # The text report names the first run.
    p = env.run(dyn, "--shape", "x=2x3", "--shape", "y=2x3")
    assert p.returncode == 0 and "first run" in p.stdout, p.stdout

    # The digits demo (batch N) on onednn: every node but ArgMax there at batch 8.
    if not os.path.exists(os.path.join(env.plugin_dir, "loom_onednn.so")):
        print("no onednn plugin: the demo part is skipped")
        return
    demo = os.path.join(REPO, "apps", "infer-run", "demo")
    p = env.run(os.path.join(demo, "digits.onnx"), "--input",
                "image=" + os.path.join(demo, "samples.npy"), "--device", "onednn,cpu", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    on = {}
    for sg in doc["plan"]["subgraphs"]:
        on[sg["device"]] = on.get(sg["device"], 0) + sg["nodes"]
    assert on.get("onednn", 0) >= 8 and on.get("cpu", 0) <= 1, (on, doc["plan"])


def case_sequence_models(env):
    """Sequences inside a graph run; sequence graph inputs/outputs get one clear line."""
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 4])
    # Split into rows of 2, 1 and 3, drop the middle one, concatenate the rest on a new axis 1.
    inner = save_model(
        env, "seq_inner",
        [helper.make_node("Constant", [], ["lens"],
                          value=numpy_helper.from_array(np.array([2, 1, 3], np.int64))),
         helper.make_node("SplitToSequence", ["x", "lens"], ["seq"], axis=0),
         helper.make_node("Constant", [], ["pos"], value=numpy_helper.from_array(np.array(1, np.int64))),
         helper.make_node("SequenceErase", ["seq", "pos"], ["rest"]),
         helper.make_node("SequenceLength", ["rest"], ["count"]),
         helper.make_node("ConcatFromSequence", ["rest"], ["y"], axis=0)],
        [x_info],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 4]),
         helper.make_tensor_value_info("count", TensorProto.INT64, [])])
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    np.save(env.path("x.npy"), x)
    p = env.run(inner, "-i", "x=" + env.path("x.npy"), "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    y = np.array(doc["outputs"]["y"]["values"], np.float32).reshape(doc["outputs"]["y"]["shape"])
    np.testing.assert_array_equal(y, np.concatenate([x[:2], x[3:]]))
    assert doc["outputs"]["count"]["values"] == [2], doc["outputs"]["count"]

    seq_in = save_model(
        env, "seq_input",
        [helper.make_node("SequenceLength", ["s"], ["n"])],
        [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    expect_error(env.run(seq_in), EXIT_USAGE, "input 's' is a seq(tensor)", "loom_session_run_values")
    seq_out = save_model(
        env, "seq_output",
        [helper.make_node("SplitToSequence", ["x"], ["s"], axis=0)],
        [x_info], [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)])
    expect_error(env.run(seq_out), EXIT_USAGE, "output 's' is a seq(tensor)")


def case_scheduler_flags(env):
    """--place, --cost, --dot and the plan in --explain / --json."""
    model = save_model(env, "relu_add", [helper.make_node("Relu", ["x"], ["r"]),
                                         helper.make_node("Add", ["r", "x"], ["z"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                       [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])])
    dot = env.path("plan.dot")
    p = env.run(model, "--place", "Relu=cpu", "--place", "z*=cpu", "--cost", "cpu.gflops=5",
                "--explain", "--dot", dot)
    assert p.returncode == 0, p.stderr
    assert "subgraph 0 on cpu: 2 nodes (Add x1, Relu x1), 12 FLOP" in p.stdout, p.stdout
    assert "x [2x3] from the application (zero-copy)" in p.stdout, p.stdout
    assert "cost model: cpu 5 GFLOP/s" in p.stdout, p.stdout
    text = open(dot).read()
    assert text.startswith("digraph loom_plan {") and "subgraph cluster_0" in text, text
    if shutil.which("dot"):
        r = subprocess.run(["dot", "-Tsvg", dot], capture_output=True, text=True)
        assert r.returncode == 0 and "<svg" in r.stdout, r.stderr

    p = env.run(model, "--json")
    plan = json.loads(p.stdout)["plan"]
    assert plan["total_flops"] == 12 and plan["subgraphs"][0]["flops"] == 12, plan
    assert plan["subgraphs"][0]["transfers"][0] == {"value": "x", "from": "application",
                                                     "copy": False, "bytes": 24}, plan
    assert plan["cost_model"][0]["device"] == "cpu", plan

    expect_error(env.run(model, "--place", "Relu"), EXIT_USAGE, "--place expects NAME=VALUE")
    expect_error(env.run(model, "--place", "Relu=gpu"), EXIT_RUNTIME,
                 "placement 'Relu=gpu' names device 'gpu'", "(cpu)")
    expect_error(env.run(model, "--cost", "gflops=3"), EXIT_USAGE, "--cost expects DEVICE.KEY=VALUE")
    expect_error(env.run(model, "--cost", "cpu.speed=3"), EXIT_RUNTIME, "unknown key 'speed'")
    expect_error(env.run(model, "--dot", env.path("no/such/dir/plan.dot")), EXIT_RUNTIME,
                 "--dot", "cannot write")
    p = env.run(model, "--place", "Nothing=cpu")
    assert p.returncode == 0 and "placement 'Nothing=cpu' matches no node" in p.stderr, p.stderr


def case_throughput_and_progress(env):
    """--time, the latency and throughput statistics, the --threads cap, progress on a TTY."""
    model = os.path.join(TESTDATA, "model.onnx")
    # An absurd thread count is a usage error before any thread starts (it used to start
    # tens of thousands of threads and hang).
    started = time.monotonic()
    expect_error(env.run(model, "--threads", "100000"), EXIT_USAGE, "--threads 100000",
                 "the most a session takes")
    assert time.monotonic() - started < 5, "the --threads check must come before any work"
    expect_error(env.run(model, "--time", "1", "--repeat", "3"), EXIT_USAGE, "--time")
    expect_error(env.run(model, "--time", "0"), EXIT_USAGE, "--time")

    p = env.run(model, "--json", "--time", "0.3")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    lat = doc["latency_ms"]
    assert lat["runs"] >= 1 and lat["wall"] >= 300 * 0.99, lat
    assert 0 <= lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"] <= lat["max"], lat
    assert lat["min"] <= lat["mean"] <= lat["max"] and lat["stddev"] >= 0, lat
    expected = lat["runs"] * 1000.0 / lat["wall"]
    assert abs(doc["throughput_per_s"] - expected) <= 1e-6 * expected, (doc, expected)
    # The sum of the latencies fits in the wall time they were measured in.
    assert lat["mean"] * lat["runs"] <= lat["wall"] * 1.001, lat

    # --concurrency: sessions running at once from threads of their own, --threads split
    # between them; every run counted once, the outputs those of a single session.
    expect_error(env.run(model, "--concurrency", "0"), EXIT_USAGE, "--concurrency")
    expect_error(env.run(model, "--concurrency", "65"), EXIT_USAGE, "--concurrency")
    single = json.loads(env.run(model, "--json", "--seed", "3").stdout)
    p = env.run(model, "--json", "--seed", "3", "--concurrency", "3", "--threads", "6",
                "--repeat", "7")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["concurrency"] == 3 and doc["threads_per_session"] == 2, doc
    assert doc["latency_ms"]["runs"] == 7, doc["latency_ms"]
    assert doc["outputs"] == single["outputs"], "concurrent sessions must compute the same"
    p = env.run(model, "--json", "--concurrency", "2", "--time", "0.2")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["latency_ms"]["runs"] >= 1 and doc["latency_ms"]["wall"] >= 200 * 0.99, doc
    p = env.run(model, "--concurrency", "2", "--threads", "1")
    assert p.returncode == 0 and "2 sessions ran at once, 1 thread each" in p.stdout, p.stdout

    p = env.run(model, "--repeat", "5")
    assert p.returncode == 0, p.stderr
    assert "latency over 5 runs" in p.stdout and "p99" in p.stdout, p.stdout
    assert "inferences/s" in p.stdout, p.stdout
    assert "loading" not in p.stderr, "no progress when stderr is not a terminal: " + p.stderr

    # On a terminal, loading and session creation show a line redrawn in place, erased at the
    # end (INFER_RUN_PROGRESS_DELAY_MS=0: shown however fast the step); never with --json.
    def on_tty(*argv):
        import pty
        master, slave = pty.openpty()
        cmd = [env.exe, "--plugin", env.plugin_dir, *argv]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                                env=dict(os.environ, LOOM_PLUGIN_PATH="",
                                         INFER_RUN_PROGRESS_DELAY_MS="0"))
        os.close(slave)
        out, _ = proc.communicate(timeout=60)
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            err += chunk
        os.close(master)
        assert proc.returncode == 0, err
        return out.decode(), err.decode()

    out, err = on_tty(model)
    assert "\rinfer-run: loading model.onnx... " in err, repr(err)
    assert "creating the session (compiling for cpu)" in err, repr(err)
    assert err.endswith("\r\x1b[K"), "the progress line must be erased: " + repr(err)
    assert "latency over" in out, out
    out, err = on_tty(model, "--json")
    assert err == "", "no progress with --json: " + repr(err)
    json.loads(out)


def load_trace(path):
    """A Chrome trace infer-run wrote: its complete ("X") events, checked for the fields
    Perfetto and chrome://tracing need, and the names of its processes."""
    with open(path) as f:
        doc = json.load(f)
    assert doc["displayTimeUnit"] == "ms" and doc["otherData"]["producer"] == "loom", doc.keys()
    events = doc["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"}
    xs = [e for e in events if e["ph"] == "X"]
    assert xs, "no timed events in the trace"
    for e in xs:
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)), e
        assert e["ts"] >= 0 and e["dur"] >= 0, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["tid"] > 0, e
        assert e["pid"] in processes and processes[e["pid"]] == e["args"]["device"], (e, processes)
        assert e["cat"] in ("node", "fused", "device", "transfer", "subgraph", "host", "run"), e
    return doc, xs


def traced_nodes(xs):
    """Node names the events name: a node's own event, a fused step's "nodes", a host step."""
    names = set()
    for e in xs:
        if e["cat"] in ("node", "host"):
            names.add(e["name"])
        elif e["cat"] == "fused":
            names.update(e["args"]["nodes"].split(","))
    return names


def leaf_totals(xs):
    """Per run, microseconds by (op type, device) of the steps whose time is their own, as
    docs/profiling.md defines them: device steps, transfers, host nodes without bodies, and a
    device call only when its device reported no step during it. Returns (table, total, runs,
    mean run time)."""
    table, total, pending = {}, 0.0, {}
    runs = {e["args"]["run"] for e in xs}
    whole = [e["dur"] for e in xs if e["cat"] == "run"]
    for e in xs:  # in the order recorded
        cat, run, op = e["cat"], e["args"]["run"], e["args"].get("op_type", "")
        if cat in ("node", "fused", "device"):
            pending[run] = pending.get(run, 0) + 1
            leaf = True
        elif cat == "subgraph":
            leaf = pending.get(run, 0) == 0
            pending[run] = 0
        elif cat == "host":
            leaf = op not in ("If", "Loop", "Scan", "SequenceMap")
        else:
            leaf = cat == "transfer"
        # The core's own flag (loom_profile_event_t::counted) agrees with the documented rule.
        assert leaf == e["args"]["counted"], e
        if not leaf:
            continue
        key = {"transfer": "(transfer)", "device": "(device step)",
               "subgraph": "(subgraph, no steps reported)"}.get(cat, op)
        key = (key, e["args"]["device"])
        table[key] = table.get(key, 0.0) + e["dur"] / len(runs)
        total += e["dur"] / len(runs)
    mean_run = sum(whole) / len(whole) if whole else total
    return table, total, len(runs), mean_run


def summary_tables(text):
    """The two tables of loom_session_profile_summary's text: {(op type, device): ms} and
    {(node, device): ms}, and the 'add up to' figure of its first line."""
    lines = text.splitlines()
    head = [l for l in lines if l.startswith("profile: ")]
    assert len(head) == 1, text
    steps = float(head[0].split("add up to ")[1].split(" ms")[0])
    assert "by op type (per run):" in lines and "by node (per run):" in lines, text
    by_type, by_node, section = {}, {}, None
    for line in lines:
        if line in ("by op type (per run):", "by node (per run):"):
            section = by_type if "op type" in line else by_node
            continue
        words = line.split()
        if section is None or not words or words[0] in ("op", "ms"):
            continue
        if section is by_type:  # op type (may hold spaces), device, ms, share%, count, mean us
            section[(" ".join(words[:-5]), words[-5])] = float(words[-4])
        else:  # ms, share%, count, device, op type, node (last: a fused step lists its nodes)
            section[(" ".join(words[5:]), words[3])] = float(words[0])
    return steps, by_type, by_node


def case_profile(env):
    """--profile writes a Chrome trace of the timed runs naming every node; --profile-summary
    prints the core's tables (text) or a "profile" object (--json) that agree with the trace."""
    demo = os.path.join(REPO, "apps", "infer-run", "demo")
    digits = os.path.join(demo, "digits.onnx")
    image = "image=" + os.path.join(demo, "samples.npy")
    graph = onnx.load(digits).graph
    op_of = {n.name: n.op_type for n in graph.node}
    # Constant nodes holding a tensor become initializers before planning: nothing runs them.
    computed = {n.name for n in graph.node if n.op_type != "Constant"}
    assert len(computed) >= 8, computed

    # A trace that cannot be written is a usage error, found before the model even loads.
    missing_dir = env.path("no/such/dir/trace.json")
    expect_error(env.run(digits, "-i", image, "--profile", missing_dir), EXIT_USAGE,
                 "--profile " + missing_dir, "No such file or directory")
    expect_error(env.run(env.path("absent.onnx"), "--profile", missing_dir), EXIT_USAGE,
                 "--profile " + missing_dir)
    expect_error(env.run(digits, "-i", image, "--profile", env.tmp), EXIT_USAGE,
                 "--profile " + env.tmp, "is a directory")
    # A run that fails leaves no file behind, not even the temporary one.
    out_dir = env.path("traces")
    os.mkdir(out_dir)
    expect_error(env.run(env.path("absent.onnx"), "--profile", os.path.join(out_dir, "t.json")),
                 EXIT_MODEL)
    assert os.listdir(out_dir) == [], os.listdir(out_dir)

    device_sets = ["cpu"]
    if os.path.exists(os.path.join(env.plugin_dir, "loom_onednn.so")):
        device_sets.append("onednn,cpu")
    for devices in device_sets:
        trace = os.path.join(out_dir, devices.replace(",", "_") + ".json")
        p = env.run(digits, "-i", image, "--device", devices, "--warmup", "2", "--repeat", "3",
                    "--profile", trace, "--profile-summary")
        assert p.returncode == 0, p.stderr
        assert f"profile trace: 3 runs written to {trace}" in p.stdout, p.stdout
        assert sorted(os.listdir(out_dir)) == sorted(
            f for f in os.listdir(out_dir) if not f.startswith(".")), "a temporary file stayed"
        doc, xs = load_trace(trace)
        # The timed runs only: the warm-up runs are not profiled.
        assert {e["args"]["run"] for e in xs} == {1, 2, 3}, devices
        assert sum(e["cat"] == "run" for e in xs) == 3, devices
        assert doc["otherData"]["dropped_events"] == 0, doc["otherData"]
        names = traced_nodes(xs)
        assert computed <= names, (devices, computed - names)
        for e in xs:
            if e["cat"] == "node":
                assert e["args"]["op_type"] == op_of[e["name"]], e
            if e["cat"] == "fused":
                ops = [op_of[n] for n in e["args"]["nodes"].split(",")]
                assert e["args"]["op_type"] == "+".join(ops), e
        # Every step lies inside its run (times in microseconds, to the nanosecond).
        spans = {e["args"]["run"]: (e["ts"], e["ts"] + e["dur"]) for e in xs if e["cat"] == "run"}
        for e in xs:
            start, end = spans[e["args"]["run"]]
            assert start - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= end + 1e-3, (e, start, end)
        # The Conv's event carries its input shapes.
        conv = [e for e in xs if e["cat"] in ("node", "fused") and "Conv" in e["args"]["op_type"]]
        assert conv and all(e["args"]["shapes"].startswith("8x1x") for e in conv), conv
        # The core's summary of the same runs, from its own leaf flags, matches the rule the
        # docs give, applied to the trace: the 'add up to' figure and every op type's time.
        steps, by_type, by_node = summary_tables(p.stdout.split("written to")[1])
        table, total, runs, _ = leaf_totals(xs)
        assert runs == 3 and abs(steps - total / 1e3) <= 0.0015, (steps, total)
        assert set(by_type) == set(table), (by_type, table)
        for key, ms in by_type.items():
            assert abs(ms - table[key] / 1e3) <= 0.0015, (key, ms, table[key])
        assert computed <= {n for name, _ in by_node for n in name.split(",")}, by_node

        # --json: the "profile" object, whose numbers the trace of the same runs reproduces.
        p = env.run(digits, "-i", image, "--device", devices, "--repeat", "4", "--json",
                    "--profile", trace, "--profile-summary")
        assert p.returncode == 0, p.stderr
        report = json.loads(p.stdout)
        prof = report["profile"]
        assert report["profile_trace"] == trace and prof["trace"] == trace, prof
        assert (prof["session"], prof["sessions"], prof["runs"]) == (0, 1, 4), prof
        assert prof["dropped_events"] == 0 and prof["events"] > 0, prof
        _, xs = load_trace(trace)
        assert prof["events"] == len(xs), (prof["events"], len(xs))
        table, total, runs, mean_run = leaf_totals(xs)
        assert abs(prof["steps_ms"] - total / 1e3) <= 1e-6, (prof["steps_ms"], total)
        assert abs(prof["run_ms"] - mean_run / 1e3) <= 1e-6, (prof["run_ms"], mean_run)
        assert 0 < prof["steps_ms"] <= prof["run_ms"], prof
        rows = {(r["op_type"], r["device"]): r for r in prof["by_op_type"]}
        assert set(rows) == set(table) and len(rows) == len(prof["by_op_type"]), (rows, table)
        for key, r in rows.items():
            assert abs(r["ms"] - table[key] / 1e3) <= 1e-6, (key, r, table[key])
            assert abs(r["share"] - 100 * r["ms"] / prof["run_ms"]) <= 1e-6, r
            assert r["count"] > 0 and r["mean_us"] >= 0, r
        assert abs(sum(r["ms"] for r in prof["by_op_type"]) - prof["steps_ms"]) <= 1e-6, prof
        ms = [r["ms"] for r in prof["by_op_type"]]
        assert ms == sorted(ms, reverse=True), "most time first"
        in_nodes = {n for r in prof["by_node"] for n in r["node"].split(",")}
        assert computed <= in_nodes, computed - in_nodes
        for r in prof["by_node"]:
            assert r["count"] == 1.0, r  # each node runs once per run
            if "," not in r["node"] and r["device"] != "host":
                assert r["op_type"] == op_of[r["node"]], r
        # On cpu alone every node is its own step: one row per node.
        if devices == "cpu":
            assert {r["node"] for r in prof["by_node"]} == computed, prof["by_node"]

    # Nodes the core runs itself (sequence ops) are "host" steps, in the tables too.
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 4])
    seq = save_model(
        env, "seq_profile",
        [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=0, name="split"),
         helper.make_node("ConcatFromSequence", ["seq"], ["c"], axis=0, name="concat"),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        [x_info], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 4])])
    trace = env.path("seq.json")
    p = env.run(seq, "--repeat", "2", "--profile", trace, "--profile-summary")
    assert p.returncode == 0, p.stderr
    _, xs = load_trace(trace)
    host = {e["name"]: e["args"]["op_type"] for e in xs if e["cat"] == "host"}
    assert host == {"split": "SplitToSequence", "concat": "ConcatFromSequence"}, host
    assert "relu" in traced_nodes(xs), xs
    steps, by_type, _ = summary_tables(p.stdout.split("written to")[1])
    table, total, _, _ = leaf_totals(xs)
    assert ("SplitToSequence", "host") in by_type and set(by_type) == set(table), by_type
    assert abs(steps - total / 1e3) <= 0.0015, (steps, total)

    # --concurrency: session 0's runs only, said so in the report.
    # (--time rather than --repeat: the sessions share a count of runs, and one session may
    # take them all before the other starts.)
    p = env.run(digits, "-i", image, "--concurrency", "2", "--threads", "2", "--time", "0.3",
                "--profile", trace, "--profile-summary")
    assert p.returncode == 0, p.stderr
    assert "profiled: session 0 of 2 (the others ran unprofiled beside it)" in p.stdout, p.stdout
    _, xs = load_trace(trace)
    runs = {e["args"]["run"] for e in xs}
    assert runs == set(range(1, len(runs) + 1)), runs
    p = env.run(digits, "-i", image, "--concurrency", "2", "--time", "0.3", "--json",
                "--profile-summary")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    prof = doc["profile"]
    assert prof["sessions"] == 2 and prof["trace"] is None, prof
    # Session 0's runs only: fewer than all the sessions' runs together.
    assert 1 <= prof["runs"] < doc["latency_ms"]["runs"], (prof, doc["latency_ms"])

    # --threads: infer-run refuses what the core would, with the core's own bound
    # (loom_max_threads: the larger of 64 and 4 per online core).
    cap = max(64, 4 * os.cpu_count())
    expect_error(env.run(digits, "-i", image, "--threads", str(cap + 1)), EXIT_USAGE,
                 f"--threads {cap + 1} is more than {cap}")
    p = env.run(digits, "-i", image, "--threads", str(cap), "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["threads_per_session"] == cap, p.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case")
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--plugin-dir", required=True)
    args = parser.parse_args()
    case = globals().get("case_" + args.case)
    if case is None:
        sys.exit(f"unknown case {args.case}")
    tmp = tempfile.mkdtemp(prefix="infer_run_test_")
    try:
        case(Env(args, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.case}: ok")


if __name__ == "__main__":
    main()
