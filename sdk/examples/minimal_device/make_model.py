#!/usr/bin/python3
"""Writes a model for the minimal device, its inputs and the expected outputs.

    /usr/bin/python3 make_model.py OUT_DIR

OUT_DIR/relu_add.onnx:  r = Relu(x + y)            -> minimal (float32, equal shapes)
                        b = x + bias[4]             -> cpu: broadcasting, which minimal refuses
                        z = r * 0.5 + b             -> cpu: Mul is not a minimal op, and the
                                                       type of its result is unknown at placement
OUT_DIR/x.npy, y.npy    float32 inputs of shape [3, 4] (fixed seed)
OUT_DIR/r_expected.npy, z_expected.npy
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [3, 4]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    rng = np.random.default_rng(11)
    x = rng.uniform(-2.0, 2.0, SHAPE).astype(np.float32)
    y = rng.uniform(-2.0, 2.0, SHAPE).astype(np.float32)
    bias = rng.uniform(-1.0, 1.0, [SHAPE[-1]]).astype(np.float32)
    half = np.array(0.5, dtype=np.float32)

    nodes = [
        helper.make_node("Add", ["x", "y"], ["s"], name="add_inputs"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("Add", ["x", "bias"], ["b"], name="add_bias"),
        helper.make_node("Mul", ["r", "half"], ["m"], name="halve"),
        helper.make_node("Add", ["m", "b"], ["z"], name="add_halves"),
    ]
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, SHAPE)
    graph = helper.make_graph(nodes, "relu_add", [value("x"), value("y")], [value("r"), value("z")],
                              initializer=[numpy_helper.from_array(half, "half"),
                                           numpy_helper.from_array(bias, "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="loom-sdk-example")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(args.out_dir, "relu_add.onnx"))

    r = np.maximum(x + y, 0.0).astype(np.float32)
    z = (r * half + (x + bias)).astype(np.float32)
    for name, array in (("x", x), ("y", y), ("r_expected", r), ("z_expected", z)):
        np.save(os.path.join(args.out_dir, name + ".npy"), array)


if __name__ == "__main__":
    main()
