#!/usr/bin/python3
"""Runs infer-run on a generated model and compares every output with torch's reference.

Float outputs pass when the cosine similarity with the reference is >= --min-cosine (default
0.9999) and contain no NaN or Inf; integer outputs must match exactly; shapes and dtypes must
match. Prints the max abs error, the cosine and infer-run's latency per output.
The model directory comes from generate_models.py: model.onnx, inputs/, reference/, meta.json.
"""

import argparse
import json
import os
import sys

import numpy as np

from infer_run_driver import (SKIP_EXIT_CODE, CheckError, UnclaimedNodes, add_matrix_arguments,
                              latency_text, run_infer_run)


def compare(name, actual, expected, min_cosine):
    """Returns a one-line summary; raises CheckError naming what differs."""
    if actual.shape != expected.shape:
        raise CheckError(f"{name}: shape {list(actual.shape)}, expected {list(expected.shape)}")
    if actual.dtype != expected.dtype:
        raise CheckError(f"{name}: dtype {actual.dtype}, expected {expected.dtype}")
    if not np.issubdtype(expected.dtype, np.floating):
        mismatches = int(np.count_nonzero(actual != expected))
        if mismatches:
            raise CheckError(f"{name}: {mismatches} of {expected.size} elements differ")
        return f"{name}: exact match ({expected.size} elements)"
    if not np.all(np.isfinite(actual)):
        raise CheckError(f"{name}: {int(np.count_nonzero(~np.isfinite(actual)))} NaN/Inf values")
    a = actual.astype(np.float64).ravel()
    b = expected.astype(np.float64).ravel()
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    cosine = float(a @ b / norms) if norms > 0 else float(np.array_equal(a, b))
    max_abs = float(np.max(np.abs(a - b))) if a.size else 0.0
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    summary = (f"{name}: cosine {cosine:.7f}, max abs error {max_abs:.3g} "
               f"(reference max |x| {scale:.3g})")
    if not cosine >= min_cosine:
        raise CheckError(f"{summary} -- below the required cosine {min_cosine}")
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", help="a model directory written by generate_models.py")
    parser.add_argument("--infer-run", required=True, help="path to the infer-run binary")
    parser.add_argument("--plugin", action="append", default=[],
                        help="plugin file or directory, passed on to infer-run (repeatable)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, help="infer-run --threads (default: its own)")
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--min-cosine", type=float, default=0.9999)
    parser.add_argument("--timeout", type=float, default=1200, help="seconds for infer-run")
    add_matrix_arguments(parser)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # keep order with stderr under ctest

    try:
        with open(os.path.join(args.model_dir, "meta.json")) as f:
            meta = json.load(f)
        inputs = {name: os.path.join(args.model_dir, "inputs", name + ".npy")
                  for name in meta["inputs"]}
        references = {name: np.load(os.path.join(args.model_dir, "reference", name + ".npy"))
                      for name in meta["outputs"]}
    except (OSError, ValueError, KeyError) as error:
        print(f"FAIL: cannot read the generated model in {args.model_dir} ({error}); "
              f"run generate_models.py first", file=sys.stderr)
        return 1

    try:
        outputs, report = run_infer_run(
            args.infer_run, os.path.join(args.model_dir, "model.onnx"), inputs, args.plugin,
            args.device, args.threads, args.warmup, args.repeat, args.timeout, args.infer_run_arg)
        missing = sorted(set(references) - set(outputs))
        if missing:
            raise CheckError(f"infer-run wrote no {', '.join(m + '.npy' for m in missing)} "
                             f"(it wrote {sorted(outputs) or 'nothing'})")
        failures = []
        for name, expected in references.items():
            try:
                print(compare(name, outputs[name], expected, args.min_cosine))
            except CheckError as error:
                failures.append(str(error))
        print(f"{meta['name']}: latency {latency_text(report)} on {args.device}"
              f" (threads {args.threads if args.threads is not None else 'default'})")
        if failures:
            raise CheckError("; ".join(failures))
    except UnclaimedNodes as error:
        if not args.skip_unclaimed:
            print(f"FAIL: {meta['name']}: {error}", file=sys.stderr)
            return 1
        print(f"SKIP: {meta['name']}: {args.device} does not claim every node: {error}")
        return SKIP_EXIT_CODE
    except CheckError as error:
        print(f"FAIL: {meta['name']}: {error}", file=sys.stderr)
        return 1
    print(f"PASS: {meta['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
