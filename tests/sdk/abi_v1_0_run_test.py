#!/usr/bin/python3
"""Runs test.abi10::Double from the plugin built against the frozen v1.0 header.

    abi_v1_0_run_test.py --infer-run BIN --plugin FILE --work DIR
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, save


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    node = helper.make_node("Double", ["x"], ["y"], domain="test.abi10", name="double")
    graph = helper.make_graph([node], "abi_v1_0",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("test.abi10", 1)])
    model_path = os.path.join(args.work, "double.onnx")
    save(model, model_path)
    x = np.array([[1.5, -2.0, 0.0], [3.25, -0.5, 7.0]], dtype=np.float32)
    np.save(os.path.join(args.work, "x.npy"), x)

    env = {k: v for k, v in os.environ.items() if k != "LOOM_PLUGIN_PATH"}
    out_dir = os.path.join(args.work, "out")
    cmd = [args.infer_run, model_path, "--plugin", args.plugin, "-i",
           "x=" + os.path.join(args.work, "x.npy"), "-o", out_dir]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        print("FAIL: infer-run exited with", run.returncode, "\n", run.stdout, run.stderr)
        return 1
    y = np.load(os.path.join(out_dir, "y.npy"))
    if y.dtype != np.float32 or y.shape != x.shape or not np.array_equal(y, 2 * x):
        print("FAIL: expected", 2 * x, "got", y)
        return 1
    print("ok: the v1.0 plugin's kernel ran:", y.ravel().tolist())
    return 0


if __name__ == "__main__":
    sys.exit(main())
