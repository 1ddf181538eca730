#!/usr/bin/python3
"""Runs a zoo of torchvision architectures on Loom and on ONNX Runtime, side by side.

The three models of bench_vs_onnxruntime.py are what the oneDNN device was tuned on; this
script is the check that the rest of what users bring runs as well: for each architecture it
prints how the plan splits the graph (subgraphs, and the ops that fell back off the first
device of --device), Loom's and ONNX Runtime's median latency (alternating rounds, same inputs
and threads), their ratio, and the max abs difference and cosine of the outputs.

Models are exported on demand with Debian's torch/torchvision (random weights, fixed seed,
opset 17, batch 1, 224x224; parameters a model initializes to all zeros, such as ViT's head,
get small random values so that outputs are comparable) into --cache/zoo/<name>. ONNX Runtime
runs from the venv bench_vs_onnxruntime.py creates. Not part of ctest: run it by hand on a
quiet machine, e.g.

  tests/bench/zoo_vs_onnxruntime.py --infer-run build/bin/infer-run --plugin build/plugins
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_vs_onnxruntime as bench  # noqa: E402  (the shared venv, timing and comparison)

ZOO = ("resnet18", "squeezenet1_1", "shufflenet_v2_x1_0", "mnasnet1_0", "efficientnet_b0",
       "densenet121", "googlenet", "regnet_y_400mf", "mobilenet_v3_small", "convnext_tiny",
       "vit_b_16")


def export_worker(name, directory):
    """Runs under /usr/bin/python3 (torch): writes model.onnx and inputs/x.npy."""
    import numpy as np
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    with torch.no_grad():
        for p in model.parameters():
            if not p.any():
                p.normal_(0.0, 0.02)
    x = torch.from_numpy(np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32))
    os.makedirs(os.path.join(directory, "inputs"), exist_ok=True)
    path = os.path.join(directory, "model.onnx.tmp")
    torch.onnx.export(model, x, path, opset_version=17, input_names=["x"], output_names=["y"])
    os.replace(path, os.path.join(directory, "model.onnx"))
    np.save(os.path.join(directory, "inputs", "x.npy"), x.numpy())


def ensure_export(cache, name):
    directory = os.path.join(cache, "zoo", name)
    if not os.path.exists(os.path.join(directory, "model.onnx")):
        bench.log(f"exporting {name} into {directory}")
        subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "--export-worker", name,
                        directory], check=True, stderr=subprocess.DEVNULL)
    return directory


def placement(args, directory, inputs):
    """(number of subgraphs, {op: count} of nodes off the first device) from --explain."""
    command = [args.infer_run, os.path.join(directory, "model.onnx"), "--device", args.device,
               "--explain", "--repeat", "1"]
    for plugin in args.plugin:
        command += ["--plugin", plugin]
    for name, path in inputs.items():
        command += ["--input", f"{name}={path}"]
    result = subprocess.run(command, capture_output=True, text=True)
    text = result.stdout + result.stderr
    first = args.device.split(",")[0]
    subgraphs, fallback = 0, {}
    for device, ops in re.findall(r"subgraph \d+ on (\S+): \d+ nodes \(([^)]*)\)", text):
        subgraphs += 1
        if device == first:
            continue
        for op, count in re.findall(r"(\w+) x(\d+)", ops):
            fallback[op] = fallback.get(op, 0) + int(count)
    return subgraphs, fallback


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--infer-run", default=os.path.join(bench.REPO, "build", "bin", "infer-run"))
    parser.add_argument("--plugin", action="append", default=[], help="passed to infer-run")
    parser.add_argument("--device", default="onednn,cpu", help="infer-run --device")
    parser.add_argument("--models", default=",".join(ZOO), help="torchvision.models names")
    parser.add_argument("--cache", default="/tmp/loom-models", help="exported models go to CACHE/zoo")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="alternating Loom/ORT rounds")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per round")
    parser.add_argument("--venv", default=os.path.join(bench.REPO, "build", "bench-venv"))
    parser.add_argument("--export-worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.export_worker:
        return export_worker(*args.export_worker)

    python = bench.ensure_venv(args.venv)
    if not os.path.exists(args.infer_run):
        sys.exit(f"zoo: no infer-run at {args.infer_run} (build it, or pass --infer-run)")
    models = [m for m in args.models.split(",") if m]
    timing = types.SimpleNamespace(infer_run=args.infer_run, plugin=args.plugin, device=args.device,
                                   threads=args.threads, warmup=args.warmup, repeat=args.repeat,
                                   precision="f32", no_spin=False)
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="loom-zoo-") as tmp:
        for model in models:
            directory = ensure_export(args.cache, model)
            inputs = bench.model_inputs(directory)
            subgraphs, fallback = placement(args, directory, inputs)
            loom_ms, ort_ms = [], []
            for _ in range(args.rounds):
                loom, _, _, loom_out = bench.run_loom(timing, directory, inputs, tmp)
                ort, _, _, ort_out = bench.run_ort(timing, python, directory, inputs,
                                                   os.path.join(tmp, "ort.npz"))
                loom_ms.append(loom)
                ort_ms.append(ort)
            max_abs, cosine, _ = bench.compare(loom_out, ort_out)
            rows.append((model, subgraphs, fallback, statistics.median(loom_ms),
                         statistics.median(ort_ms), max_abs, cosine))
            bench.log(f"  {model}: loom {rows[-1][3]:.2f} ms, ort {rows[-1][4]:.2f} ms")
    print(f"Loom {args.device} vs ONNX Runtime {bench.ORT_VERSION} CPU, f32, {args.threads} "
          f"threads, {args.rounds} rounds x {args.repeat} runs, load average {load:.2f} at start")
    print(f"{'model':<20} {'subgraphs':>9} {'loom ms':>9} {'ort ms':>9} {'loom/ort':>8} "
          f"{'max|diff|':>10} {'cosine':>9}  off {args.device.split(',')[0]}")
    for model, subgraphs, fallback, loom, ort, max_abs, cosine in rows:
        off = ", ".join(f"{op} x{n}" for op, n in sorted(fallback.items())) or "-"
        print(f"{model:<20} {subgraphs:>9} {loom:>9.2f} {ort:>9.2f} {loom / ort:>8.3f} "
              f"{max_abs:>10.3g} {cosine:>9.6f}  {off}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
