"""Shared pieces of the Python package's tests: tiny ONNX models made with onnx.helper."""

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(REPO, "apps", "infer-run", "demo")


def save(path, nodes, inputs, outputs, opset=13, initializers=()):
    graph = helper.make_graph(nodes, os.path.basename(path), inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


class Models:
    """Writes each model on first use into one temporary directory."""

    def __init__(self, root):
        self.root = str(root)

    def path(self, name):
        return os.path.join(self.root, name + ".onnx")

    def add(self, elem=TensorProto.FLOAT, shape=("N", 3), name="add"):
        """z = x + y with a symbolic first dimension."""
        return save(
            self.path(name),
            [helper.make_node("Add", ["x", "y"], ["z"])],
            [helper.make_tensor_value_info("x", elem, list(shape)), helper.make_tensor_value_info("y", elem, list(shape))],
            [helper.make_tensor_value_info("z", elem, list(shape))],
        )

    def unary(self, op, elem, name, shape=("N",), out_elem=None, **attrs):
        return save(
            self.path(name),
            [helper.make_node(op, ["x"], ["y"], **attrs)],
            [helper.make_tensor_value_info("x", elem, list(shape))],
            [helper.make_tensor_value_info("y", out_elem if out_elem is not None else elem, list(shape))],
        )

    def strings(self):
        """Identity over a string tensor."""
        return self.unary("Identity", TensorProto.STRING, "strings", shape=(2, "M"))

    def sequence(self):
        """x (rows) -> a sequence of its rows, and the count of a sequence input."""
        return save(
            self.path("sequence"),
            [
                helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
                helper.make_node("SequenceLength", ["s"], ["n"]),
            ],
            [
                helper.make_tensor_value_info("x", TensorProto.FLOAT, ["R", 3]),
                helper.make_tensor_sequence_value_info("s", TensorProto.INT64, None),
            ],
            [
                helper.make_tensor_sequence_value_info("rows", TensorProto.FLOAT, None),
                helper.make_tensor_value_info("n", TensorProto.INT64, []),
            ],
            opset=15,
        )

    def optional(self):
        """has = OptionalHasElement(o); passes o through as an optional output too."""
        opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, ["K"]))
        return save(
            self.path("optional"),
            [
                helper.make_node("OptionalHasElement", ["o"], ["has"]),
                helper.make_node("Identity", ["o"], ["same"]),
            ],
            [helper.make_value_info("o", opt)],
            [helper.make_tensor_value_info("has", TensorProto.BOOL, []), helper.make_value_info("same", opt)],
            opset=16,
        )

    def endless_loop(self):
        """A Loop whose condition never turns false: v = v + 1 forever."""
        body = helper.make_graph(
            [
                helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                helper.make_node("Add", ["v_in", "one"], ["v_out"]),
            ],
            "endless_body",
            [
                helper.make_tensor_value_info("i", TensorProto.INT64, []),
                helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1]),
            ],
            [
                helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1]),
            ],
            initializer=[numpy_helper.from_array(np.ones(1, np.float32), "one")],
        )
        return save(
            self.path("endless"),
            [helper.make_node("Loop", ["", "yes", "x"], ["v"], name="endless", body=body)],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("v", TensorProto.FLOAT, [1])],
            initializers=[numpy_helper.from_array(np.array(True), "yes")],
        )


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    return Models(tmp_path_factory.mktemp("models"))
