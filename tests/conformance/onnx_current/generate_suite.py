#!/usr/bin/python3
"""Writes the node tests of a pinned onnx release as backend test data (model.onnx and
test_data_set_N/{input,output}_K.pb), the layout loom-conformance reads.

The onnx wheel carries only the case definitions of its node tests (onnx/backend/test/case/node);
the data is computed by numpy when the cases are collected. This script therefore runs in a
virtual environment that has exactly the pinned onnx (created on first use with pip), and it
regenerates the data only when the pinned version changes (a stamp file records it).

    generate_suite.py --venv BUILD/onnx-current-venv --output BUILD/onnx-current-data

prints the directory of the node tests (OUTPUT/<version>/node) on its last line.
"""
import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys

# The current onnx release from PyPI (opsets up to 28). Bump it deliberately: the expected-failure
# files name tests of this version.
ONNX_VERSION = "1.23.2"


def ensure_venv(venv):
    python = os.path.join(venv, "bin", "python")
    probe = [python, "-c", "import onnx; print(onnx.__version__)"]
    if os.path.exists(python):
        got = subprocess.run(probe, capture_output=True, text=True)
        if got.returncode == 0 and got.stdout.strip() == ONNX_VERSION:
            return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    f"onnx=={ONNX_VERSION}"], check=True)
    return python


def write_proto(path, proto):
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def generate(out_dir):
    """Runs inside the venv: writes every node case under out_dir/node."""
    import warnings

    import numpy as np  # noqa: F401  (the cases need it)
    import onnx
    from onnx import TensorProto, numpy_helper
    import onnx.backend.test.case.node as node_cases

    warnings.simplefilter("ignore")  # the cases overflow casts and divide by zero on purpose
    cases = node_cases.collect_testcases()
    node_dir = os.path.join(out_dir, "node")
    os.makedirs(node_dir, exist_ok=True)

    def as_proto(value, value_info):
        kind = value_info.type.WhichOneof("value")
        if kind == "map_type":
            return numpy_helper.from_dict(value, value_info.name)
        if kind == "sequence_type":
            return numpy_helper.from_list(value, value_info.name)
        if kind == "optional_type":
            return numpy_helper.from_optional(value, value_info.name)
        if isinstance(value, TensorProto):
            return value
        return numpy_helper.from_array(value, value_info.name)

    for case in cases:
        case_dir = os.path.join(node_dir, case.name)
        os.makedirs(case_dir, exist_ok=True)
        write_proto(os.path.join(case_dir, "model.onnx"), case.model)
        for i, (inputs, outputs) in enumerate(case.data_sets):
            set_dir = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(set_dir, exist_ok=True)
            for j, value in enumerate(inputs):
                write_proto(os.path.join(set_dir, f"input_{j}.pb"),
                            as_proto(value, case.model.graph.input[j]))
            for j, value in enumerate(outputs):
                write_proto(os.path.join(set_dir, f"output_{j}.pb"),
                            as_proto(value, case.model.graph.output[j]))
    return len(cases), onnx.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--inside-venv", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    target = os.path.join(args.output, ONNX_VERSION)
    if args.inside_venv:
        count, version = generate(target)
        with open(os.path.join(target, "stamp.json"), "w") as f:
            json.dump({"onnx": version, "node_tests": count}, f)
        return

    # Builds of several presets share the data: one generates, the others wait for it.
    os.makedirs(args.output, exist_ok=True)
    lock = open(os.path.join(args.output, ".lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    stamp = os.path.join(target, "stamp.json")
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f).get("onnx") == ONNX_VERSION:
                print(os.path.join(target, "node"))
                return
    python = ensure_venv(args.venv)
    # Other versions' data is stale: only the pinned one is kept.
    if os.path.isdir(args.output):
        for entry in os.listdir(args.output):
            if entry not in (ONNX_VERSION, ".lock"):
                shutil.rmtree(os.path.join(args.output, entry), ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run([python, os.path.abspath(__file__), "--venv", args.venv, "--output",
                    args.output, "--inside-venv"], check=True)
    print(os.path.join(target, "node"))


if __name__ == "__main__":
    main()
