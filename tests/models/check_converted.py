#!/usr/bin/python3
"""Converts a generated model to .loom with infer-convert and checks that infer-run gives the
converted model the same outputs as its source, on the same devices.

Outputs must be bit-identical when the source's own outputs are (two runs of the source tell).
Some devices are not bit-reproducible from run to run (oneDNN picks kernels and reduction orders
per run); then the converted model may differ from the source by at most 4x the source's own
run-to-run spread, relative to the output's largest magnitude, or by --rtol if that is larger.
Prints infer-run's load time of both files.
The model directory comes from generate_models.py: model.onnx, inputs/, meta.json.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from infer_run_driver import (SKIP_EXIT_CODE, CheckError, UnclaimedNodes, add_matrix_arguments,
                              run_infer_run)


def spread(a, b):
    """Largest difference between two runs of the source relative to the output's scale."""
    if not np.issubdtype(a.dtype, np.floating) or a.shape != b.shape or not a.size:
        return 0.0
    scale = float(np.max(np.abs(a)))
    return float(np.max(np.abs(a.astype(np.float64) - b))) / scale if scale > 0 else 0.0


def compare(name, converted, source, rtol):
    if converted.shape != source.shape or converted.dtype != source.dtype:
        raise CheckError(f"{name}: {converted.dtype}{list(converted.shape)} from the converted "
                         f"model, {source.dtype}{list(source.shape)} from the source")
    if np.array_equal(converted, source, equal_nan=np.issubdtype(source.dtype, np.floating)):
        return f"{name}: identical ({source.size} elements)"
    if rtol > 0 and np.issubdtype(source.dtype, np.floating):
        scale = float(np.max(np.abs(source))) if source.size else 0.0
        max_abs = float(np.max(np.abs(converted.astype(np.float64) - source)))
        if max_abs <= rtol * scale:
            return f"{name}: max abs difference {max_abs:.3g} (<= {rtol} x {scale:.3g})"
    raise CheckError(f"{name}: outputs of the converted model differ from the source's")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", help="a model directory written by generate_models.py")
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--infer-convert", required=True)
    parser.add_argument("--loom-plugin", required=True, help="the loom format plugin file")
    parser.add_argument("--plugin", action="append", default=[],
                        help="plugin file or directory, passed on to infer-run (repeatable)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rtol", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=1200)
    add_matrix_arguments(parser)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)

    try:
        with open(os.path.join(args.model_dir, "meta.json")) as f:
            meta = json.load(f)
        inputs = {name: os.path.join(args.model_dir, "inputs", name + ".npy")
                  for name in meta["inputs"]}
    except (OSError, ValueError, KeyError) as error:
        print(f"FAIL: cannot read the generated model in {args.model_dir} ({error})",
              file=sys.stderr)
        return 1

    source = os.path.join(args.model_dir, "model.onnx")
    with tempfile.TemporaryDirectory(prefix="loom-convert-") as work:
        converted = os.path.join(work, "model.loom")
        command = [args.infer_convert, "--no-default-plugins", "--plugin", args.loom_plugin]
        for plugin in args.plugin:
            command += ["--plugin", plugin]
        command += [source, converted]
        print("+ " + " ".join(command), flush=True)
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
        print((done.stdout + done.stderr).rstrip(), flush=True)
        if done.returncode != 0:
            print(f"FAIL: {meta['name']}: infer-convert exited with {done.returncode}",
                  file=sys.stderr)
            return 1
        try:
            expected, source_report = run_infer_run(
                args.infer_run, source, inputs, args.plugin, args.device, None, 0, 1,
                args.timeout, args.infer_run_arg)
            again, _ = run_infer_run(
                args.infer_run, source, inputs, args.plugin, args.device, None, 0, 1,
                args.timeout, args.infer_run_arg)
            actual, converted_report = run_infer_run(
                args.infer_run, converted, inputs, args.plugin + [args.loom_plugin], args.device,
                None, 0, 1, args.timeout, args.infer_run_arg)
            if sorted(actual) != sorted(expected):
                raise CheckError(f"outputs {sorted(actual)} from the converted model, "
                                 f"{sorted(expected)} from the source")
            failures = []
            for name in sorted(expected):
                try:
                    noise = spread(expected[name], again.get(name, expected[name]))
                    if noise > 0:
                        print(f"{name}: the source itself varies by {noise:.3g} (relative) "
                              f"from run to run on {args.device}")
                    print(compare(name, actual[name], expected[name], max(args.rtol, 4 * noise)))
                except CheckError as error:
                    failures.append(str(error))
            print(f"{meta['name']}: load {source_report.get('load_ms', '?')} ms (.onnx), "
                  f"{converted_report.get('load_ms', '?')} ms (.loom) on {args.device}")
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
