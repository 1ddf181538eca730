#!/usr/bin/python3
"""If/Loop/Scan bodies partitioned across the two test devices give the cpu device's outputs.

sched_remote (memory the core must copy) takes Relu, Sigmoid, Mul, Sub, MatMul, Softmax,
Transpose, If, ...; sched_host takes everything else (Loop and Scan included). A control-flow
node whose bodies hold work for a device earlier in the --device order than the one that takes
the whole node runs as a host control-flow step, each body a child plan split across the
devices: Loop/Scan under `sched_remote,sched_host`, If under `sched_host,sched_remote`. Every
model's outputs must equal the cpu device's, and the plan (--json, --explain, --dot) must show
the step with split bodies.

Usage: control_flow_test.py --infer-run PATH --plugin-dir DIR --test-devices DIR
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from two_device_test import Env, compare, const, vi  # noqa: E402

FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
LOOP_FIRST = ["--device", "sched_remote,sched_host", "--no-fallback"]
IF_FIRST = ["--device", "sched_host,sched_remote", "--no-fallback"]
STEP = "host (control flow)"
n = helper.make_node


def save(env, name, nodes, inputs, outputs, initializers=(), opset=16):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(env.tmp, name + ".onnx")
    onnx.save(model, path)
    return path


def array_input(env, tag, name, array):
    path = os.path.join(env.tmp, f"{tag}_{name}.npy")
    np.save(path, array)
    return (name, path)


def body_plans(plan):
    """Every body plan under the plan's control-flow steps, nested ones included."""
    found = []
    for s in plan["subgraphs"]:
        for step in s.get("control_flow", []):
            for body in step["bodies"]:
                found.append((step["op"], body["attribute"], body["plan"]))
                found += body_plans(body["plan"])
    return found


def check(env, model, order, inputs=(), split_ops=("Loop",)):
    """Outputs equal the cpu device's on `order` and on sched_remote,cpu; the plan on `order`
    has a control-flow step for each op in split_ops whose bodies use both test devices."""
    name = os.path.basename(model)
    reference, _ = env.outputs(model, "cpu", "--device", "cpu", inputs=inputs)
    dot = os.path.join(env.tmp, name + ".dot")
    got, p = env.outputs(model, "split", *order, "--explain", "--json", "--dot", dot,
                         "--log-level", "info", inputs=inputs)
    compare(reference, got, f"{name} on {order[1]}")
    got_fallback, _ = env.outputs(model, "fallback", "--device", "sched_remote,cpu", inputs=inputs)
    compare(reference, got_fallback, f"{name} on sched_remote,cpu")
    plan = json.loads(p.stdout)["plan"]
    assert any(s["device"] == STEP for s in plan["subgraphs"]), f"{name}: no step: {plan}"
    bodies = body_plans(plan)
    for op in split_ops:
        split = [b for b in bodies if b[0] == op and
                 {s["device"] for s in b[2]["subgraphs"]} >= {"sched_remote", "sched_host"}]
        assert split, f"{name}: no {op} body split across both devices: {json.dumps(bodies)}"
    assert "on host (control flow)" in p.stderr and ", body '" in p.stderr, p.stderr
    assert "runs as a control-flow step on the host" in p.stderr, p.stderr
    text = open(dot).read()
    assert text.startswith("digraph loom_plan {") and "host (control flow)" in text, text[:300]
    return reference


def if_split(env):
    # Both branches split: then = Add (host) of Relu'd outer value (made on remote) -> Relu
    # (remote); else = Mul (remote) -> Concat (host), a different shape than then's.
    then_g = helper.make_graph([n("Add", ["outer", "x"], ["ta"]), n("Relu", ["ta"], ["t"])],
                               "then", [], [vi("t", [2, 3])])
    else_g = helper.make_graph([n("Mul", ["outer", "x"], ["em"]),
                                n("Concat", ["em", "outer"], ["e"], axis=0)],
                               "else", [], [vi("e", [4, 3])])
    model = save(env, "if_split", [
        n("Relu", ["x"], ["outer"]), n("ReduceSum", ["x"], ["s"], keepdims=0),
        n("Greater", ["s", "zero"], ["cond"]),
        n("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
        [vi("x", [2, 3])], [vi("y", ["r", 3])], [const("zero", np.float32(0))])
    base = np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3)
    for tag, x in (("pos", base), ("neg", -base)):
        ref = check(env, model, IF_FIRST, [array_input(env, tag, "x", x)], split_ops=("If",))
        shape = next(iter(ref.values())).shape
        assert shape == ((2, 3) if tag == "pos" else (4, 3)), f"if_split {tag}: {shape}"


def loop_body_changing_shapes():
    # (i, cond, acc [?, 3], v [3]) -> (cond, acc ++ [v * w], v * 2, scan Relu(v - i)).
    # w = Sigmoid(x) is an outer-scope value made on the remote device.
    return helper.make_graph([
        n("Mul", ["v_in", "w"], ["vw"]), n("Unsqueeze", ["vw", "ax0"], ["row"]),
        n("Concat", ["acc_in", "row"], ["acc_out"], axis=0),
        n("Mul", ["v_in", "two"], ["v_out"]),
        n("Cast", ["i"], ["fi"], to=FLOAT), n("Sub", ["v_in", "fi"], ["vs"]),
        n("Relu", ["vs"], ["scan"]),
        n("Less", ["i", "limit"], ["cond_out"])],
        "body",
        [vi("i", [], INT64), vi("cond_in", [], BOOL), vi("acc_in", ["n", 3]), vi("v_in", [3])],
        [vi("cond_out", [], BOOL), vi("acc_out", ["m", 3]), vi("v_out", [3]), vi("scan", [3])],
        [const("two", np.float32(2)), const("ax0", np.array([0], np.int64))])


def loop_model(env, name, trips):
    return save(env, name, [
        n("Sigmoid", ["x"], ["w"]),
        n("Loop", ["M", "cond", "acc0", "x"], ["acc", "v", "scans"], body=loop_body_changing_shapes())],
        [vi("x", [3]), vi("acc0", [1, 3])], [vi("acc", ["k", 3]), vi("v", [3]), vi("scans", ["t", 3])],
        [const("M", np.int64(trips)), const("cond", np.bool_(True)), const("limit", np.int64(3))])


def loop_changing_shapes(env):
    # The body's cond (i < 3) is false after iteration 3: 4 iterations, before M = 6 ends it.
    ref = check(env, loop_model(env, "loop_changing", 6), LOOP_FIRST)
    assert ref["acc.npy"].shape == (5, 3) and ref["scans.npy"].shape == (4, 3), \
        {k: v.shape for k, v in ref.items()}


def loop_zero_trip(env):
    # M = 0: outputs are the initial values and empty scan outputs.
    ref = check(env, loop_model(env, "loop_zero_trip", 0), LOOP_FIRST, split_ops=())
    assert ref["acc.npy"].shape == (1, 3) and ref["scans.npy"].shape[0] == 0, \
        {k: v.shape for k, v in ref.items()}


def scan_axes(env):
    # One state, two scan inputs: a [4, 3] forward along axis 0, b [3, 4] reversed along axis 1.
    body = helper.make_graph([
        n("Mul", ["a", "b"], ["ab"]), n("Add", ["s_in", "ab"], ["s_out"]),
        n("Relu", ["s_out"], ["o1"]), n("Sub", ["a", "b"], ["d"]), n("Neg", ["d"], ["o2"])],
        "scan_body", [vi("s_in", [3]), vi("a", [3]), vi("b", [3])],
        [vi("s_out", [3]), vi("o1", [3]), vi("o2", [3])])
    model = save(env, "scan_axes", [
        n("Scan", ["s0", "xa", "xb"], ["s", "y1", "y2"], body=body, num_scan_inputs=2,
          scan_input_axes=[0, 1], scan_input_directions=[0, 1],
          scan_output_axes=[0, -1], scan_output_directions=[1, 0])],
        [vi("s0", [3]), vi("xa", [4, 3]), vi("xb", [3, 4])],
        [vi("s", [3]), vi("y1", [4, 3]), vi("y2", [3, 4])])
    ref = check(env, model, LOOP_FIRST, split_ops=("Scan",))
    assert ref["y2.npy"].shape == (3, 4), ref["y2.npy"].shape


def loop_in_if(env):
    # The If is split (its branches hold host work); its then branch holds a Loop that reads
    # both the top-level graph (x) and the branch (doubled).
    loop_body = helper.make_graph([
        n("Add", ["v_in", "doubled"], ["v_out"]), n("Identity", ["cond_in"], ["cond_out"])],
        "inner", [vi("i", [], INT64), vi("cond_in", [], BOOL), vi("v_in", [2, 3])],
        [vi("cond_out", [], BOOL), vi("v_out", [2, 3])])
    then_g = helper.make_graph([
        n("Mul", ["x", "x"], ["doubled"]),
        n("Loop", ["three", "", "x"], ["t"], body=loop_body)], "then", [], [vi("t", [2, 3])])
    else_g = helper.make_graph([n("Neg", ["x"], ["e"])], "else", [], [vi("e", [2, 3])])
    model = save(env, "loop_in_if", [
        n("Relu", ["x"], ["r"]), n("ReduceSum", ["r"], ["s"], keepdims=0),
        n("Greater", ["s", "zero"], ["cond"]),
        n("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
        [vi("x", [2, 3])], [vi("y", [2, 3])],
        [const("zero", np.float32(0)), const("three", np.int64(3))])
    x = np.linspace(-0.5, 1.5, 6, dtype=np.float32).reshape(2, 3)
    check(env, model, IF_FIRST, [array_input(env, "lif", "x", x)], split_ops=("If",))


def loop_in_loop(env):
    # Both levels split under sched_remote,sched_host: the inner body multiplies (remote) and
    # adds (host); the outer body runs the inner Loop and a Relu.
    inner = helper.make_graph([
        n("Mul", ["u_in", "c"], ["um"]), n("Add", ["um", "v_in"], ["u_out"]),
        n("Identity", ["cond_in"], ["cond_out"])],
        "inner", [vi("j", [], INT64), vi("cond_in", [], BOOL), vi("u_in", [4])],
        [vi("cond_out", [], BOOL), vi("u_out", [4])])
    outer = helper.make_graph([
        n("Loop", ["three", "", "v_in"], ["u"], body=inner), n("Relu", ["u"], ["v_out"]),
        n("Abs", ["u"], ["scan"]), n("Identity", ["cond_in"], ["cond_out"])],
        "outer", [vi("i", [], INT64), vi("cond_in", [], BOOL), vi("v_in", [4])],
        [vi("cond_out", [], BOOL), vi("v_out", [4]), vi("scan", [4])])
    model = save(env, "loop_in_loop", [
        n("Loop", ["two", "", "x"], ["y", "ys"], body=outer)],
        [vi("x", [4])], [vi("y", [4]), vi("ys", [2, 4])],
        [const("two", np.int64(2)), const("three", np.int64(3)),
         const("c", np.array([0.5, -1, 1.5, 0.25], np.float32))])
    check(env, model, LOOP_FIRST, split_ops=("Loop",))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--plugin-dir", required=True)
    parser.add_argument("--test-devices", required=True)
    args = parser.parse_args()
    cases = [if_split, loop_changing_shapes, loop_zero_trip, scan_axes, loop_in_if, loop_in_loop]
    with tempfile.TemporaryDirectory(prefix="loom-sched-cf-") as tmp:
        env = Env(args, tmp)
        for case in cases:
            case(env)
            print(f"{case.__name__}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
