#!/usr/bin/python3
"""The onednn device picks jit kernels on every x86 vector ISA, never oneDNN's reference ones.

A MobileNet-style graph (3x3 stride-2 stem, depthwise 3x3, 1x1 layers with 24 channels (a
multiple of 8 but not of 16), an inverted residual with its Add, a wide 3x3 Winograd candidate)
runs on `onednn --no-fallback` under ONEDNN_MAX_CPU_ISA=AVX2, AVX512_CORE and ALL. The device
logs each convolution's implementation (option verbose=1); none may be `ref:` (the reference
convolution is ~700x slower on MobileNetV2: a blocked layout the ISA has no kernel for picks
it). The outputs must match the cpu device's.

Usage: isa_layout_test.py --infer-run PATH --plugin-dir DIR
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)


def weight(name, shape):
    fan_in = int(np.prod(shape[1:]))
    data = RNG.standard_normal(shape).astype(np.float32) / np.sqrt(fan_in)
    return numpy_helper.from_array(data, name)


def conv(nodes, inits, x, y, cin, cout, k, stride=1, group=1, relu=True):
    w = y + "_w"
    inits.append(weight(w, [cout, cin // group, k, k]))
    inits.append(numpy_helper.from_array(RNG.standard_normal(cout).astype(np.float32) * 0.1,
                                         y + "_b"))
    out = y + "_pre" if relu else y
    nodes.append(helper.make_node("Conv", [x, w, y + "_b"], [out], kernel_shape=[k, k],
                                  strides=[stride, stride], pads=[k // 2] * 4, group=group,
                                  name=y))
    if relu:
        nodes.append(helper.make_node("Relu", [out], [y]))
    return y


def model(path):
    nodes, inits = [], []
    h = conv(nodes, inits, "x", "stem", 3, 32, 3, stride=2)
    h = conv(nodes, inits, h, "dw1", 32, 32, 3, group=32)
    h = conv(nodes, inits, h, "proj1", 32, 24, 1, relu=False)
    e = conv(nodes, inits, h, "exp2", 24, 144, 1)
    e = conv(nodes, inits, e, "dw2", 144, 144, 3, group=144)
    p = conv(nodes, inits, e, "proj2", 144, 24, 1, relu=False)
    nodes.append(helper.make_node("Add", [h, p], ["res2"]))
    h = conv(nodes, inits, "res2", "exp3", 24, 64, 1)
    h = conv(nodes, inits, h, "wide", 64, 64, 3)
    h = conv(nodes, inits, h, "dw3", 64, 64, 3, stride=2, group=64)
    nodes.append(helper.make_node("GlobalAveragePool", [h], ["y"]))
    graph = helper.make_graph(
        nodes, "isa_layout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 40, 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def run(args, model_path, out_dir, devices, env_extra, extra_args):
    env = dict(os.environ, **env_extra)
    cmd = [args.infer_run, "--plugin", args.plugin_dir, "--no-default-plugins", "--device",
           devices, "--input", "x=" + os.path.join(os.path.dirname(out_dir), "x.npy"), "--output", out_dir,
           *extra_args, "--model", model_path]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stderr, np.load(os.path.join(out_dir, "y.npy"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--plugin-dir", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_path = os.path.join(tmp, "isa_layout.onnx")
        model(model_path)
        np.save(os.path.join(tmp, "x.npy"), RNG.standard_normal([1, 3, 40, 40]).astype(np.float32))
        ref_dir = os.path.join(tmp, "cpu")
        os.mkdir(ref_dir)
        _, want = run(args, model_path, ref_dir, "cpu", {}, [])
        failures = []
        for isa in ["AVX2", "AVX512_CORE", "ALL"]:
            out_dir = os.path.join(tmp, isa)
            os.mkdir(out_dir)
            log, got = run(args, model_path, out_dir, "onednn", {"ONEDNN_MAX_CPU_ISA": isa},
                           ["--no-fallback", "--device-option", "onednn.verbose=1",
                            "--log-level", "info"])
            impls = re.findall(r"onednn: Conv \S+ \[([^,\]]+)", log)
            if len(impls) < 9:
                failures.append(f"{isa}: expected the device to log 9+ convolutions, got {impls}")
            refs = [i for i in impls if i.startswith("ref")]
            if refs:
                failures.append(f"{isa}: reference convolution kernels {refs} (all: {impls})")
            err = float(np.max(np.abs(got - want)))
            if err > 1e-4 + 1e-4 * float(np.max(np.abs(want))):
                failures.append(f"{isa}: max abs difference from cpu {err}")
            print(f"{isa}: {len(impls)} convolutions {sorted(set(impls))}, max|diff| {err:.2e}")
        if failures:
            sys.exit("FAIL: " + "; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
