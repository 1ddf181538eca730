#!/usr/bin/python3
"""Writes a small ONNX model that uses com.example::SwishBeta, an input and the expected output.

    /usr/bin/python3 make_model.py OUT_DIR [--beta 1.5]

OUT_DIR/swish_beta.onnx:  Z = SwishBeta(X + B, beta) * 2   (Add and Mul are standard ONNX ops,
                          so the model mixes built-in cpu kernels with the plugin's kernel)
OUT_DIR/x.npy             a float32 input of shape [2, 3, 5] (fixed seed)
OUT_DIR/z_expected.npy    Z computed with numpy in float64, rounded to float32
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [2, 3, 5]


def build_model(beta: float, bias: np.ndarray) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Add", ["x", "b"], ["t"], name="add_bias"),
        helper.make_node("SwishBeta", ["t"], ["s"], name="swish", domain="com.example", beta=beta),
        helper.make_node("Mul", ["s", "two"], ["z"], name="double"),
    ]
    graph = helper.make_graph(
        nodes,
        "swish_beta_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, SHAPE)],
        initializer=[
            numpy_helper.from_array(bias, "b"),
            numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two"),
        ],
    )
    # The custom domain must be imported, like any ONNX domain; its version selects the schema.
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="loom-sdk-example")


def expected(x: np.ndarray, bias: np.ndarray, beta: float) -> np.ndarray:
    t = x.astype(np.float64) + bias.astype(np.float64)
    s = t / (1.0 + np.exp(-beta * t))
    return (s * 2.0).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--beta", type=float, default=1.5)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    rng = np.random.default_rng(7)
    x = rng.uniform(-6.0, 6.0, SHAPE).astype(np.float32)
    bias = rng.uniform(-1.0, 1.0, [SHAPE[-1]]).astype(np.float32)  # broadcast over the last axis

    model = build_model(args.beta, bias)
    onnx.save(model, os.path.join(args.out_dir, "swish_beta.onnx"))
    np.save(os.path.join(args.out_dir, "x.npy"), x)
    np.save(os.path.join(args.out_dir, "z_expected.npy"), expected(x, bias, args.beta))


if __name__ == "__main__":
    main()
