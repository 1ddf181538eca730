#!/usr/bin/python3
"""Runs a generated model on opencl,cpu in f32 and with --precision f16 (fp16 storage).

The f16 run must keep the model's answer: cosine >= --min-cosine (default 0.999) against the
reference outputs of generate_models.py, no NaN/Inf, and the same top-1 class per row as the
reference. Prints both cosines and both latencies. Exits 77 (skipped) when the model has not
been generated or no OpenCL device is usable.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models"))
from infer_run_driver import CheckError, latency_text, run_infer_run  # noqa: E402

SKIP = 77


def cosine(a, b):
    a = a.astype(np.float64).ravel()
    b = b.astype(np.float64).ravel()
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / norms) if norms > 0 else float(np.array_equal(a, b))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--plugin", action="append", default=[])
    parser.add_argument("--min-cosine", type=float, default=0.999)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    try:
        with open(os.path.join(args.model_dir, "meta.json")) as f:
            meta = json.load(f)
    except OSError as error:
        print(f"SKIP: no generated model in {args.model_dir} ({error})")
        return SKIP
    inputs = {n: os.path.join(args.model_dir, "inputs", n + ".npy") for n in meta["inputs"]}
    refs = {n: np.load(os.path.join(args.model_dir, "reference", n + ".npy"))
            for n in meta["outputs"]}
    model = os.path.join(args.model_dir, "model.onnx")
    results = {}
    try:
        for precision in ("f32", "f16"):
            extra = ["--no-default-plugins"] if args.plugin else []
            if precision == "f16":
                extra += ["--precision", "f16"]
            outputs, report = run_infer_run(args.infer_run, model, inputs, args.plugin,
                                            "opencl,cpu", None, 1, args.repeat, 1800, extra)
            results[precision] = (outputs, latency_text(report))
    except CheckError as error:
        text = str(error)
        if "no OpenCL" in text or "unavailable" in text:
            print(f"SKIP: {text}")
            return SKIP
        print(f"FAIL: {meta['name']}: {text}", file=sys.stderr)
        return 1
    failures = []
    for name, expected in refs.items():
        f32, f16 = results["f32"][0][name], results["f16"][0][name]
        c32, c16 = cosine(f32, expected), cosine(f16, expected)
        line = f"{name}: cosine f32 {c32:.7f}, f16 {c16:.7f}"
        if not np.all(np.isfinite(f16)):
            failures.append(f"{name}: NaN/Inf in the f16 output")
        if c16 < args.min_cosine:
            failures.append(f"{line} -- f16 below {args.min_cosine}")
        if np.issubdtype(expected.dtype, np.floating) and expected.ndim == 2:
            # Classifier logits [batch, classes]: the answer must not change.
            top_ref, top16 = expected.argmax(axis=1), f16.argmax(axis=1)
            same = int(np.count_nonzero(top_ref == top16))
            line += f", top-1 equal in {same}/{len(top_ref)} rows"
            if same != len(top_ref):
                failures.append(f"{name}: top-1 differs in {len(top_ref) - same} rows")
        print(line)
    print(f"{meta['name']}: latency f32 {results['f32'][1]}; f16 {results['f16'][1]}")
    if failures:
        print(f"FAIL: {meta['name']}: {'; '.join(failures)}", file=sys.stderr)
        return 1
    print(f"PASS: {meta['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
