#!/usr/bin/python3
"""Folded shape computations give the outputs of the unfolded graph.

Each model is saved twice: with static input dims (the session folds its shape computations into
constants) and with a symbolic batch dim, whose runs are planned for the fed shapes and fold the
same nodes. Both run on the cpu device and on the two test devices with the same inputs and must
give what numpy computes from the graph's definition; both plans must report the same folded
nodes and, on the two devices, the same subgraphs.

Usage: shape_folding_test.py --infer-run PATH --plugin-dir DIR --test-devices DIR
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

from two_device_test import TWO_DEVICES, Env, compare, const, save, vi

INT64 = TensorProto.INT64


def shape_chain_model(env, name, batch):
    """Shape -> Gather -> Mul -> Unsqueeze -> Concat -> Reshape (BERT's head split), Shape ->
    Slice -> Cast -> Cast, Range on a gathered dim, Equal/Where and ConstantOfShape on the shape,
    each ending in a node that reads a graph input (so the outputs themselves stay computed)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["dim0"], axis=0),
        helper.make_node("Mul", ["dim0", "one"], ["dim0x1"]),
        helper.make_node("Unsqueeze", ["dim0x1", "axes0"], ["batch"]),
        helper.make_node("Concat", ["batch", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["heads"]),
        helper.make_node("Relu", ["heads"], ["y"]),
        # Shape -> Slice(-2:) -> Cast(int32) -> Cast(int64)
        helper.make_node("Slice", ["shape", "minus2", "big"], ["tail"]),
        helper.make_node("Cast", ["tail"], ["tail32"], to=TensorProto.INT32),
        helper.make_node("Cast", ["tail32"], ["tail64"], to=INT64),
        helper.make_node("Add", ["tail64", "n2"], ["tail_out"]),
        # Range(0, dim2, 3) with dim2 = shape[-1]
        helper.make_node("Gather", ["shape", "minus1"], ["dim2"], axis=0),
        helper.make_node("Range", ["zero", "dim2", "three"], ["steps"]),
        helper.make_node("Add", ["steps", "n6"], ["range_out"]),
        # Where(shape == [2, 8, 16], shape, -1) and ConstantOfShape(Div(shape, 4)) summed
        helper.make_node("Equal", ["shape", "expected"], ["same"]),
        helper.make_node("Where", ["same", "shape", "minus1"], ["checked"]),
        helper.make_node("Add", ["checked", "n3"], ["where_out"]),
        helper.make_node("Div", ["tail64", "four"], ["quarter"]),
        helper.make_node("ConstantOfShape", ["quarter"], ["sevens"],
                         value=helper.make_tensor("v", INT64, [1], [7])),
        helper.make_node("Add", ["sevens", "n24"], ["fill_out"]),
    ]
    initializers = [const("zero", np.int64(0)), const("one", np.int64(1)),
                    const("axes0", np.array([0], np.int64)),
                    const("rest", np.array([-1, 4], np.int64)),
                    const("minus2", np.array([-2], np.int64)),
                    const("big", np.array([2**63 - 1], np.int64)),
                    const("minus1", np.int64(-1)), const("three", np.int64(3)),
                    const("expected", np.array([2, 8, 16], np.int64)),
                    const("four", np.int64(4))]
    inputs = [vi("x", [batch, 8, 16]), vi("n2", [2], INT64), vi("n6", [6], INT64),
              vi("n3", [3], INT64), vi("n24", [2, 4], INT64)]
    outputs = [vi("y", [batch, 32, 4]), vi("tail_out", [2], INT64), vi("range_out", [6], INT64),
               vi("where_out", [3], INT64), vi("fill_out", [2, 4], INT64)]
    return save(env, name, nodes, inputs, outputs, initializers)


def wrong_value_info_model(env):
    """value_info declares the intermediate r as 5x3 although x's batch is dynamic: folding
    Shape(r) from that declaration would turn the batch into the constant 5."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Shape", ["r"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
             helper.make_node("Cast", ["batch"], ["scale"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["r", "scale"], ["y"])]
    graph = helper.make_graph(nodes, "wrong_value_info", [vi("x", ["N", 3])], [vi("y", ["N", 3])],
                              value_info=[vi("r", [5, 3])], initializer=[const("zero", np.int64(0))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    path = os.path.join(env.tmp, "wrong_value_info.onnx")
    onnx.save(model, path)
    return path


def check_wrong_value_info(env):
    model = wrong_value_info_model(env)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    x_path = os.path.join(env.tmp, "x23.npy")
    np.save(x_path, x)
    got, p = env.outputs(model, "wrong-vi", "--device", "cpu", "--json", inputs=[("x", x_path)])
    y = got["y.npy"]
    # y = Relu(x) * batch; a Shape folded from the declaration would scale by 5, silently. The
    # plan for the fed shape folds Shape(r) from the inferred 2x3.
    assert y.shape == (2, 3) and np.array_equal(y, np.maximum(x, 0) * 2), y
    assert json.loads(p.stdout)["plan"]["signature"] == "x=2x3", p.stdout
    print("wrong value_info: Shape of the intermediate folded from the fed shape, ok")


def pad_model(env, name, pads_are_outputs):
    """x -> Pad (spatial, zeros) -> Conv (own pads) -> Pad -> AveragePool -> y. With the Pads'
    results also graph outputs they must stay nodes: the reference for their fused form."""
    rng = np.random.default_rng(5)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3],
                           rng.standard_normal(4 * 3 * 3 * 3).astype(np.float32).tolist())
    nodes = [
        helper.make_node("Pad", ["x", "pads1"], ["p1"]),
        helper.make_node("Conv", ["p1", "w"], ["c"], pads=[1, 0, 0, 1]),
        helper.make_node("Pad", ["c", "pads2", "zero"], ["p2"], mode="constant"),
        helper.make_node("AveragePool", ["p2"], ["y"], kernel_shape=[3, 3]),
    ]
    outputs = [vi("y", [1, 4, 10, 12])]
    if pads_are_outputs:
        outputs += [vi("p1", [1, 3, 12, 12]), vi("p2", [1, 4, 12, 14])]
    initializers = [w, const("pads1", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)),
                    const("pads2", np.array([0, 0, 1, 1, 0, 0, 0, 2], np.int64)),
                    const("zero", np.array(0.0, np.float32))]
    return save(env, name, nodes, [vi("x", [1, 3, 9, 9])], outputs, initializers)


def check_pad_fusion(env):
    x = os.path.join(env.tmp, "pad_x.npy")
    np.save(x, np.random.default_rng(6).standard_normal((1, 3, 9, 9)).astype(np.float32))
    for device in (["--device", "cpu"], list(TWO_DEVICES)):
        kept, kept_plan = env.outputs(pad_model(env, "pads_kept", True), "pads_kept", *device,
                                      "--json", inputs=[("x", x)])
        fused, fused_plan = env.outputs(pad_model(env, "pads_fused", False), "pads_fused",
                                        *device, "--json", inputs=[("x", x)])
        kept_plan, fused_plan = json.loads(kept_plan.stdout)["plan"], json.loads(fused_plan.stdout)["plan"]
        assert kept_plan["pads_fused"] == 0, kept_plan
        assert fused_plan["pads_fused"] == 2, fused_plan
        compare({"y.npy": kept["y.npy"]}, fused, "Pads moved into Conv and AveragePool")
    print("pad fusion: 2 Pads moved into their Conv/AveragePool, same outputs, ok")


def constant_model(env, name, overridable):
    """Nodes of constants of any dtype: a float table (Sqrt(a + b)) a MatMul reads, the float
    shape arithmetic torch exports for int(n / 2) (Shape -> Gather -> Cast -> Div -> Cast) that
    a Reshape reads, a RandomUniformLike (never folded: it differs per run) whose result is
    multiplied by zero, and a ConstantOfShape of 8 MiB (over the bound: left to run). With the
    table's inputs overridable initializers (graph inputs with defaults), nothing after them
    folds: the reference."""
    n = helper.make_node
    nodes = [
        n("Add", ["a", "b"], ["ab"]), n("Sqrt", ["ab"], ["table"]),
        n("MatMul", ["x", "table"], ["xt"]),
        n("Shape", ["xt"], ["shape"]), n("Gather", ["shape", "one"], ["cols"], axis=0),
        n("Cast", ["cols"], ["cols_f"], to=TensorProto.FLOAT),
        n("Div", ["cols_f", "two_f"], ["half_f"]),
        n("Cast", ["half_f"], ["half"], to=TensorProto.INT64),
        n("Concat", ["minus1", "half"], ["target"], axis=0),
        n("Reshape", ["xt", "target"], ["folded"]),
        n("RandomUniformLike", ["folded"], ["noise"]), n("Mul", ["noise", "zero_f"], ["none"]),
        n("Add", ["folded", "none"], ["y"]),
        n("ConstantOfShape", ["big_shape"], ["big"],
          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        n("ReduceSum", ["big"], ["big_sum"], keepdims=0),
    ]
    rng = np.random.default_rng(9)
    a = const("a", rng.random((4, 4)).astype(np.float32))
    b = const("b", rng.random((4, 4)).astype(np.float32))
    initializers = [a, b, const("one", np.array([1], np.int64)),
                    const("two_f", np.array([2.0], np.float32)),
                    const("minus1", np.array([-1], np.int64)),
                    const("zero_f", np.array(0.0, np.float32)),
                    const("big_shape", np.array([2048, 1024], np.int64))]
    inputs = [vi("x", [3, 4])]
    if overridable:
        inputs += [vi("a", [4, 4]), vi("b", [4, 4])]
    return save(env, name, nodes, inputs, [vi("y", [6, 2]), vi("big_sum", [])], initializers)


def check_constant_evaluation(env):
    x = os.path.join(env.tmp, "const_x.npy")
    np.save(x, np.random.default_rng(10).standard_normal((3, 4)).astype(np.float32))
    for device in (["--device", "cpu"], list(TWO_DEVICES)):
        ref, ref_plan = env.outputs(constant_model(env, "consts_overridable", True), "consts_ref",
                                    *device, "--json", inputs=[("x", x)])
        got, got_plan = env.outputs(constant_model(env, "consts", False), "consts", *device,
                                    "--json", inputs=[("x", x)])
        ref_plan, got_plan = json.loads(ref_plan.stdout)["plan"], json.loads(got_plan.stdout)["plan"]
        # The table's Add and Sqrt, then the shape arithmetic's Casts, Div and the Concat after
        # them (once the integer folding made Shape and Gather constants); never the random
        # node or the big one.
        assert got_plan["constant_nodes_evaluated"] == 6, got_plan
        # With overridable inputs even the shapes after the MatMul may change: nothing folds.
        assert ref_plan["constant_nodes_evaluated"] == 0, ref_plan
        compare(ref, got, "nodes of constants evaluated at session creation")
        assert got["y.npy"].shape == (6, 2), got["y.npy"].shape
    print("constant evaluation: 6 nodes of constants evaluated on cpu, same outputs, ok")


def alternating_chain_model(env, name, links):
    """`links` Reshapes in a row, each reading a target computed from the previous one's shape
    through float arithmetic (Shape -> Gather -> Cast -> Div by 1 -> Cast -> Concat). Each link
    needs the integer shape folding (Shape, Gather) and then the constant evaluation (Cast,
    Div, Cast, Concat) before the next link's shape is static: one round of each per link. Swin-T
    builds its shifted-window masks through chains like this, longer than the 8 rounds folding
    used to stop at."""
    n = helper.make_node
    nodes, previous = [], "x"
    for i in range(links):
        p = f"l{i}_"
        nodes += [
            n("Shape", [previous], [p + "shape"]),
            n("Gather", [p + "shape", "one"], [p + "cols"], axis=0),
            n("Cast", [p + "cols"], [p + "cols_f"], to=TensorProto.FLOAT),
            n("Div", [p + "cols_f", "one_f"], [p + "same_f"]),
            n("Cast", [p + "same_f"], [p + "same"], to=TensorProto.INT64),
            n("Concat", ["minus1", p + "same"], [p + "target"], axis=0),
            n("Reshape", [previous, p + "target"], [p + "out"]),
        ]
        previous = p + "out"
    nodes.append(n("Relu", [previous], ["y"]))
    initializers = [const("one", np.array([1], np.int64)),
                    const("one_f", np.array([1.0], np.float32)),
                    const("minus1", np.array([-1], np.int64))]
    return save(env, name, nodes, [vi("x", [3, 4])], [vi("y", [3, 4])], initializers)


def check_alternating_chain(env):
    x = os.path.join(env.tmp, "chain_x.npy")
    np.save(x, np.random.default_rng(11).standard_normal((3, 4)).astype(np.float32))
    links = 20
    got, got_plan = env.outputs(alternating_chain_model(env, "alternating", links), "alternating",
                                "--device", "cpu", "--json", inputs=[("x", x)])
    got_plan = json.loads(got_plan.stdout)["plan"]
    assert got_plan["constant_nodes_evaluated"] == 4 * links, got_plan
    assert got_plan["folded_nodes"] == 2 * links, got_plan
    np.testing.assert_allclose(got["y.npy"], np.maximum(np.load(x), 0), rtol=0, atol=0)
    print(f"alternating chain: all {links} links folded, ok")


CHAIN_INPUTS = {"n2": np.array([3, -4], np.int64), "n6": np.arange(6, dtype=np.int64) * 5,
                "n3": np.array([1, 2, 3], np.int64),
                "n24": np.arange(8, dtype=np.int64).reshape(2, 4)}


def chain_expected(x):
    """What shape_chain_model computes for x (the graph's definition, in numpy)."""
    shape = np.array(x.shape, np.int64)
    tail = shape[-2:]
    checked = np.where(shape == np.array([2, 8, 16]), shape, -1)
    return {"y.npy": np.maximum(x.reshape(x.shape[0], -1, 4), 0),
            "tail_out.npy": tail + CHAIN_INPUTS["n2"],
            "range_out.npy": np.arange(0, shape[-1], 3, dtype=np.int64) + CHAIN_INPUTS["n6"],
            "where_out.npy": checked + CHAIN_INPUTS["n3"],
            "fill_out.npy": np.full(tail // 4, 7, np.int64) + CHAIN_INPUTS["n24"]}


def plan(env, model, *argv):
    inputs = [("x", env.x)]
    for name, value in CHAIN_INPUTS.items():
        path = os.path.join(env.tmp, name + ".npy")
        np.save(path, value)
        inputs.append((name, path))
    got, p = env.outputs(model, os.path.basename(model) + "-" + "-".join(argv)[:20], *argv,
                         "--json", inputs=inputs)
    return got, json.loads(p.stdout)["plan"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--plugin-dir", required=True)
    parser.add_argument("--test-devices", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="loom-fold-") as tmp:
        env = Env(args, tmp)
        env.x = os.path.join(tmp, "x.npy")
        np.save(env.x, np.random.default_rng(3).standard_normal((2, 8, 16)).astype(np.float32))
        static = shape_chain_model(env, "shape_chain_static", 2)
        dynamic = shape_chain_model(env, "shape_chain_dynamic", "N")

        reference = chain_expected(np.load(env.x))
        got, dynamic_plan = plan(env, dynamic, "--device", "cpu")
        compare(reference, got, "shape computations of the symbolic model on cpu")
        got, folded = plan(env, static, "--device", "cpu")
        compare(reference, got, "folded shape computations on cpu")
        # Everything but the Relu, the Reshape and the Adds reading graph inputs folds, and the
        # symbolic model's plan for the fed shapes folds the same.
        assert folded["folded_nodes"] == 14, folded
        assert dynamic_plan["folded_nodes"] == 14, dynamic_plan
        assert dynamic_plan["signature"].startswith("x=2x8x16"), dynamic_plan

        got, two_folded = plan(env, static, *TWO_DEVICES)
        compare(reference, got, "folded shape computations on two devices")
        got, two_dynamic = plan(env, dynamic, *TWO_DEVICES)
        compare(reference, got, "the symbolic model on two devices")
        static_parts, dynamic_parts = len(two_folded["subgraphs"]), len(two_dynamic["subgraphs"])
        assert dynamic_parts == static_parts, f"{dynamic_parts} subgraphs != {static_parts}"
        print(f"shape chains: {folded['folded_nodes']} nodes folded; two devices: "
              f"{static_parts} subgraphs for both exports, ok")
        check_wrong_value_info(env)
        check_pad_fusion(env)
        check_constant_evaluation(env)
        check_alternating_chain(env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
