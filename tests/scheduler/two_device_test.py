#!/usr/bin/python3
"""Split-graph runs on two test devices give the cpu device's outputs.

The test devices (built by tests/scheduler/CMakeLists.txt from the cpu device's sources) take
complementary op subsets: sched_remote (memory the core must copy) takes SPLIT_OPS, sched_host
(host memory) everything else. Every model runs on `cpu` alone and on
`sched_remote,sched_host --no-fallback`, once with the default cost model and once with a cost
model that makes transfers free (so islands stay on sched_remote and every boundary is a real
copy), and once on `sched_remote,cpu` (where cheap islands move back to the host), and the
outputs must match.

Usage: two_device_test.py synthetic|model --infer-run PATH --plugin-dir DIR --test-devices DIR
       [--model-dir DIR]
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
TWO_DEVICES = ["--device", "sched_remote,sched_host", "--no-fallback"]
# Transfers free and the remote device fast: nothing moves off sched_remote for cost reasons.
FREE_TRANSFERS = ["--cost", "sched_remote.transfer_latency_us=0", "--cost", "sched_remote.launch_us=0",
                  "--cost", "sched_remote.gflops=1e6", "--cost", "sched_remote.transfer_gbps=1e9"]


class Env:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp

    def run(self, *argv, timeout=600):
        cmd = [self.args.infer_run, "--no-default-plugins", "--plugin", self.args.plugin_dir,
               "--plugin", self.args.test_devices] + list(argv)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, LOOM_PLUGIN_PATH="", LOOM_COST_MODEL=""))
        assert p.returncode == 0, f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}"
        return p

    def outputs(self, model, tag, *argv, inputs=()):
        out = os.path.join(self.tmp, tag)
        shutil.rmtree(out, ignore_errors=True)
        args = [model, "--seed", "7", "--output", out]
        for name, path in inputs:
            args += ["--input", f"{name}={path}"]
        p = self.run(*args, *argv)
        result = {}
        for f in sorted(glob.glob(os.path.join(out, "*.npy"))):
            result[os.path.basename(f)] = np.load(f)
        assert result, f"no outputs in {out}"
        return result, p


def compare(reference, got, what):
    assert reference.keys() == got.keys(), f"{what}: outputs {sorted(got)} != {sorted(reference)}"
    for name, ref in reference.items():
        val = got[name]
        assert ref.shape == val.shape and ref.dtype == val.dtype, f"{what}: {name} {val.shape} {val.dtype}"
        if ref.dtype.kind == "f":
            err = float(np.max(np.abs(ref.astype(np.float64) - val))) if ref.size else 0.0
            tol = 1e-5 * (1 + float(np.max(np.abs(ref)))) if ref.size else 0.0
            assert err <= tol, f"{what}: {name} differs by {err} (tolerance {tol})"
        else:
            assert np.array_equal(ref, val), f"{what}: {name} differs"


def check_model(env, model, expect_copies, inputs=()):
    """Runs `model` on cpu and on the two devices; returns the free-transfer run's plan."""
    name = os.path.basename(model)
    reference, _ = env.outputs(model, "cpu", "--device", "cpu", inputs=inputs)
    got, p = env.outputs(model, "two", *TWO_DEVICES, "--explain", "--json", inputs=inputs)
    compare(reference, got, f"{name} on two devices, default cost model")
    # The devices' own cost hints (ABI 1.9) reach the plan: sched_remote states 512 GFLOP/s,
    # 8 GB/s, 20 us per copy and per launch; sched_host states none and gets the host's defaults
    # for a host-memory device (50 GFLOP/s, 2 us).
    costs = {c["device"]: c for c in json.loads(p.stdout)["plan"]["cost_model"]}
    assert (costs["sched_remote"]["gflops"], costs["sched_remote"]["transfer_gbps"],
            costs["sched_remote"]["transfer_latency_us"], costs["sched_remote"]["launch_us"],
            costs["sched_remote"]["host_memory"]) == (512, 8, 20, 20, False), costs
    assert (costs["sched_host"]["gflops"], costs["sched_host"]["launch_us"],
            costs["sched_host"]["host_memory"]) == (50, 2, True), costs
    # With the full cpu device behind the copy-only device, the cost model may move islands
    # that save less than their transfers cost back to the host: still the same outputs.
    got, _ = env.outputs(model, "remote-cpu", "--device", "sched_remote,cpu", inputs=inputs)
    compare(reference, got, f"{name} on sched_remote,cpu")
    dot = os.path.join(env.tmp, name + ".dot")
    got, p = env.outputs(model, "two-free", *TWO_DEVICES, *FREE_TRANSFERS, "--explain", "--json",
                         "--dot", dot, inputs=inputs)
    compare(reference, got, f"{name} on two devices, free transfers")
    plan = json.loads(p.stdout)["plan"]
    devices = {s["device"] for s in plan["subgraphs"]}
    copies = sum(1 for s in plan["subgraphs"] for t in s.get("transfers", []) if t["copy"])
    if expect_copies:
        assert devices == {"sched_remote", "sched_host"}, f"{name}: devices used {devices}"
        assert copies > 0, f"{name}: no copies in the plan: {p.stderr}"
        assert "(copy, " in p.stderr, f"{name}: --explain shows no copy: {p.stderr}"
    assert "subgraph 0 on " in p.stderr and "FLOP" in p.stderr, p.stderr
    assert plan["total_flops"] >= 0
    text = open(dot).read()
    assert text.startswith("digraph loom_plan {") and "cluster_0" in text, text[:200]
    if shutil.which("dot"):
        r = subprocess.run(["dot", "-Tsvg", dot, "-o", dot + ".svg"], capture_output=True, text=True)
        assert r.returncode == 0, f"graphviz rejects {dot}: {r.stderr}"
    return plan


def save(env, name, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    path = os.path.join(env.tmp, name + ".onnx")
    onnx.save(model, path)
    return path


def vi(name, shape, elem=FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def synthetic_models(env):
    """(path, expect copies) for graphs that defeat naive partitioners. Ops on sched_remote:
    Relu, Sigmoid, Mul, Sub, MatMul, Softmax, Transpose, If...; everything else: sched_host."""
    n = helper.make_node
    models = []
    # Diamond: host Add -> remote Relu and remote Sigmoid -> host Add.
    models.append(save(env, "diamond", [
        n("Add", ["x", "c"], ["a"]), n("Relu", ["a"], ["b"]), n("Sigmoid", ["a"], ["s"]),
        n("Add", ["b", "s"], ["y"])],
        [vi("x", [2, 8])], [vi("y", [2, 8])], [const("c", np.full((2, 8), -0.5, np.float32))]))
    # Long skip around a node the host device lacks: host chain with a remote Relu in the
    # middle and a skip from the first Add to the last.
    models.append(save(env, "skip", [
        n("Add", ["x", "c"], ["a0"]), n("Neg", ["a0"], ["a1"]), n("Abs", ["a1"], ["a2"]),
        n("Relu", ["a2"], ["r"]), n("Neg", ["r"], ["a4"]), n("Add", ["a4", "a0"], ["y"])],
        [vi("x", [3, 5])], [vi("y", [3, 5])], [const("c", np.full((3, 5), 0.25, np.float32))]))
    # Cycle-inducing merge: host a -> host b, a -> remote c -> host d <- b.
    models.append(save(env, "cycle_merge", [
        n("Add", ["x", "x"], ["a"]), n("Neg", ["a"], ["b"]), n("Relu", ["a"], ["c"]),
        n("Add", ["b", "c"], ["y"])], [vi("x", [4, 4])], [vi("y", [4, 4])]))
    # Nested control flow: an If (remote) whose branches read values made on the host device.
    then_g = helper.make_graph([n("Add", ["outer", "outer"], ["t"])], "then", [], [vi("t", [2, 3])])
    else_g = helper.make_graph([n("Sub", ["outer", "x"], ["e"])], "else", [], [vi("e", [2, 3])])
    models.append(save(env, "if_outer", [
        n("Abs", ["x"], ["outer"]), n("ReduceSum", ["x"], ["s"], keepdims=0),
        n("Greater", ["s", "zero"], ["cond"]),
        n("If", ["cond"], ["i"], then_branch=then_g, else_branch=else_g),
        n("Add", ["i", "outer"], ["y"])],
        [vi("x", [2, 3])], [vi("y", [2, 3])], [const("zero", np.float32(0))]))
    # Shape computation: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, data through Relu.
    models.append(save(env, "shape_chain", [
        n("Relu", ["x"], ["r"]), n("Shape", ["r"], ["shp"]), n("Gather", ["shp", "i0"], ["d0"], axis=0),
        n("Unsqueeze", ["d0", "ax"], ["d0u"]), n("Concat", ["d0u", "m1"], ["ns"], axis=0),
        n("Reshape", ["r", "ns"], ["y"])],
        [vi("x", [2, 3, 4])], [vi("y", [2, 12])],
        [const("i0", np.int64(0)), const("ax", np.array([0], np.int64)), const("m1", np.array([-1], np.int64))]))
    # Attention-like block: MatMul, Transpose, Softmax on remote; scale and bias on host.
    models.append(save(env, "attention", [
        n("MatMul", ["q", "w"], ["qw"]), n("Add", ["qw", "bias"], ["qb"]),
        n("Transpose", ["qb"], ["kt"], perm=[1, 0]), n("MatMul", ["qb", "kt"], ["scores"]),
        n("Div", ["scores", "scale"], ["scaled"]), n("Softmax", ["scaled"], ["p"], axis=-1),
        n("MatMul", ["p", "qb"], ["ctx"]), n("Add", ["ctx", "q"], ["y"])],
        [vi("q", [6, 8])], [vi("y", [6, 8])],
        [const("w", np.random.default_rng(3).standard_normal((8, 8)).astype(np.float32)),
         const("bias", np.linspace(-1, 1, 8, dtype=np.float32)), const("scale", np.float32(2.83))]))
    return models


def case_synthetic(env):
    for path in synthetic_models(env):
        plan = check_model(env, path, expect_copies=True)
        print(f"{os.path.basename(path)}: {len(plan['subgraphs'])} subgraphs, ok")


def case_model(env):
    model = os.path.join(env.args.model_dir, "model.onnx")
    if not os.path.exists(model):
        print(f"SKIP: {model} is missing (generate it with tests/models/generate_models.py)")
        return
    plan = check_model(env, model, expect_copies=True)
    print(f"{model}: {len(plan['subgraphs'])} subgraphs, {plan['total_flops'] / 1e9:.2f} GFLOP, ok")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=["synthetic", "model"])
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--plugin-dir", required=True)
    parser.add_argument("--test-devices", required=True)
    parser.add_argument("--model-dir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="loom-sched-") as tmp:
        env = Env(args, tmp)
        {"synthetic": case_synthetic, "model": case_model}[args.case](env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
