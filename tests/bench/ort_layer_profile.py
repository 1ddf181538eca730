#!/usr/bin/python3
"""Per-node times of ONNX Runtime's CPU provider, to set beside Loom's per-step profile.

Loom's onednn device prints its own per-step times with LOOM_ONEDNN_PROFILE=1 (summed over the
runs, printed when the session ends). This prints ONNX Runtime's, from its profiler: the
median time of each node over the timed runs, in execution order, then their sum. ORT names a
fused node after its output (e.g. `..._nchwc` for its channel-blocked convolutions).

Run it with the benchmark's venv python (tests/bench/bench_vs_onnxruntime.py --setup creates
it), on a model directory of the benchmark's cache (model.onnx and inputs/NAME.npy), e.g.

  build/bench-venv/bin/python tests/bench/ort_layer_profile.py /tmp/loom-models/mobilenetv2

and beside it

  LOOM_ONEDNN_PROFILE=1 build/bin/infer-run MODEL -i input=... -d onednn,cpu -t 2 -r 200
"""

import argparse
import collections
import json
import os
import statistics
import tempfile
import time

import numpy as np
import onnxruntime as ort


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", help="directory with model.onnx and inputs/<name>.npy")
    parser.add_argument("--runs", type=int, default=200, help="timed runs (after 20 warmups)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ort-profile-") as tmp:
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(os.path.join(args.model_dir, "model.onnx"), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {i.name: np.load(os.path.join(args.model_dir, "inputs", i.name + ".npy"))
                 for i in session.get_inputs()}
        for _ in range(20):
            session.run(None, feeds)
        latencies = []
        for _ in range(args.runs):
            start = time.perf_counter()
            session.run(None, feeds)
            latencies.append((time.perf_counter() - start) * 1e3)
        with open(session.end_profiling()) as f:
            events = json.load(f)

    # Node events are named "<node>_kernel_time"; the last `runs` of each are the timed ones.
    per_node = collections.OrderedDict()
    for event in events:
        name = event.get("name", "")
        if event.get("cat") == "Node" and name.endswith("_kernel_time"):
            per_node.setdefault(name[:-len("_kernel_time")], []).append(event["dur"] / 1e3)
    total = 0.0
    for node, times in per_node.items():
        median = statistics.median(times[-args.runs:])
        total += median
        print(f"{median:9.4f} ms  {node}")
    print(f"sum of node medians {total:.3f} ms; median run {statistics.median(latencies):.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
