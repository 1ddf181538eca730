#!/usr/bin/python3
"""Prints the single-node ONNX backend tests as plain-text cases for the shape inference
conformance test (tests/core/shape_inference_test.cpp, ShapeInferenceConformance).

    /usr/bin/python3 dump_onnx_node_tests.py [/usr/share/libonnx-testdata/data/node]

Each case is the node (op, domain, model opset, attributes), its inputs as fed by
test_data_set_0 (dtype, shape, and the values of small numeric inputs, as a constant-folded
graph would have them), and the shapes of the expected outputs:

    TEST <name>
    OP <op_type> <domain or -> <opset>
    IN <dtype> <rank> <dims...> [CONST <count> <values...>]    or  IN -   (omitted)
    ATTR <name> INT <i> | FLOAT <f> | STRING <text to end of line> | INTS <n> <i...>
         | FLOATS <n> <f...> | STRINGS <n> | TENSOR <dtype> <rank> <dims...>
    OUT <dtype> <rank> <dims...>    or  OUT -   (not checked)
    END

Tests with graph attributes, sequence/map/optional values or several nodes are left out.
"""
import os
import sys

import onnx
from onnx import numpy_helper

MAX_CONST_ELEMENTS = 64
SKIPPED_ATTRS = (
    onnx.AttributeProto.GRAPH,
    onnx.AttributeProto.GRAPHS,
    onnx.AttributeProto.SPARSE_TENSOR,
    onnx.AttributeProto.SPARSE_TENSORS,
    onnx.AttributeProto.TYPE_PROTO,
    onnx.AttributeProto.TYPE_PROTOS,
    onnx.AttributeProto.TENSORS,
)


def read_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor


def shape_text(dims):
    return " ".join([str(len(dims))] + [str(d) for d in dims])


def attribute_line(a):
    if a.type == onnx.AttributeProto.INT:
        return f"ATTR {a.name} INT {a.i}"
    if a.type == onnx.AttributeProto.FLOAT:
        return f"ATTR {a.name} FLOAT {a.f!r}"
    if a.type == onnx.AttributeProto.STRING:
        return f"ATTR {a.name} STRING {a.s.decode('utf-8', 'replace')}"
    if a.type == onnx.AttributeProto.INTS:
        return f"ATTR {a.name} INTS " + " ".join([str(len(a.ints))] + [str(i) for i in a.ints])
    if a.type == onnx.AttributeProto.FLOATS:
        return f"ATTR {a.name} FLOATS " + " ".join([str(len(a.floats))] + [repr(f) for f in a.floats])
    if a.type == onnx.AttributeProto.STRINGS:
        return f"ATTR {a.name} STRINGS {len(a.strings)}"
    if a.type == onnx.AttributeProto.TENSOR:
        return f"ATTR {a.name} TENSOR {a.t.data_type} {shape_text(list(a.t.dims))}"
    return None


def case(directory):
    model = onnx.load(os.path.join(directory, "model.onnx"))
    data = os.path.join(directory, "test_data_set_0")
    graph = model.graph
    if len(graph.node) != 1 or not os.path.isdir(data):
        return None
    node = graph.node[0]
    if any(a.type in SKIPPED_ATTRS for a in node.attribute):
        return None
    domain = "" if node.domain == "ai.onnx" else node.domain
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    fed = {}
    for i, value in enumerate(graph.input):
        path = os.path.join(data, f"input_{i}.pb")
        if not value.type.HasField("tensor_type") or not os.path.exists(path):
            return None
        fed[value.name] = (value.type.tensor_type.elem_type, read_tensor(path))
    lines = [f"TEST {os.path.basename(directory)}", f"OP {node.op_type} {domain or '-'} {opsets.get(domain, 1)}"]
    for name in node.input:
        if not name:
            lines.append("IN -")
            continue
        if name not in fed:
            return None
        # The declared element type: data files store bfloat16 values as uint16.
        elem_type, tensor = fed[name]
        array = numpy_helper.to_array(tensor)
        line = f"IN {elem_type} {shape_text(list(tensor.dims))}"
        if array.size <= MAX_CONST_ELEMENTS and array.dtype.kind in "iuf" and elem_type == tensor.data_type:
            line += f" CONST {array.size} " + " ".join(repr(float(x)) for x in array.flatten())
        lines.append(line)
    for a in node.attribute:
        line = attribute_line(a)
        if line is None:
            return None
        lines.append(line)
    position = {o.name: j for j, o in enumerate(graph.output)}
    for name in node.output:
        j = position.get(name)
        value = graph.output[j] if j is not None else None
        path = os.path.join(data, f"output_{j}.pb")
        if value is None or not value.type.HasField("tensor_type") or not os.path.exists(path):
            lines.append("OUT -")
            continue
        lines.append(f"OUT {value.type.tensor_type.elem_type} {shape_text(list(read_tensor(path).dims))}")
    lines.append("END")
    return "\n".join(lines)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/libonnx-testdata/data/node"
    for name in sorted(os.listdir(root)):
        try:
            text = case(os.path.join(root, name))
        except Exception:  # unreadable test data: not this tool's concern
            continue
        if text:
            print(text)


if __name__ == "__main__":
    main()
