#!/usr/bin/python3
"""Runs the committed TFLite or ncnn test models on one plugin combination and compares them with
the reference outputs of the framework that produced them; the same again after converting each
model to .loom with infer-convert.

A model is a file in MODELS_DIR named <stem>.tflite, <stem>.param or <stem>.param.bin with its
reference input and output next to it: <stem>.input.bin/<stem>.output.bin (raw little-endian
tensor bytes, the TFLite interpreter's; dtype and shape are the model's own) or
<stem>.input.npy/<stem>.output.npy (ncnn's). A raw .bin holds several inputs (outputs) one after
the other, in the model's order; an .npy holds the model's one input (output). The model's
inputs and outputs come from `infer-run --describe` (no run on generated inputs, which may be
invalid for a model: indices, for example). Kernel plugins (--kernel-plugin, e.g. the TFLite
custom-operator kernels) are loaded by infer-run and infer-convert alike.
Tolerances are the format tests' (tests/formats/tflite, tests/formats/ncnn):
  float32        |loom - reference| <= 1e-5 + 1e-4 * |reference|
  int8, uint8    one quantization step (Loom requantizes in float with round-half-even, TFLite
                 with fixed-point multipliers)
  anything else  equal
With --skip-unclaimed (nofallback combinations) a model with a node the device does not claim is
skipped, not failed; the check then exits 77 (ctest's SKIP) unless another model failed, so a
combination that skipped a model is never counted as a pass. Models that did run are reported.
"""

import argparse
import os
import shlex
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from infer_run_driver import (SKIP_EXIT_CODE, CheckError, UnclaimedNodes,  # noqa: E402
                              add_matrix_arguments, run_infer_run)

MODEL_SUFFIXES = (".tflite", ".param.bin", ".param")  # .param.bin before .param
FLOAT_ATOL = 1e-5
FLOAT_RTOL = 1e-4
QUANTIZED_STEPS = 1


def find_models(models_dir):
    """[(stem, model path)] of every model file in models_dir, sorted by name."""
    models = []
    for entry in sorted(os.listdir(models_dir)):
        for suffix in MODEL_SUFFIXES:
            if entry.endswith(suffix):
                models.append((entry[:-len(suffix)], os.path.join(models_dir, entry)))
                break
    return models


def reference_files(models_dir, stem):
    """(input path, output path) of a model's reference data, .npy or raw .bin."""
    for extension in (".npy", ".bin"):
        paths = [os.path.join(models_dir, f"{stem}.{kind}{extension}")
                 for kind in ("input", "output")]
        if all(os.path.isfile(path) for path in paths):
            return paths
    raise CheckError(f"no reference data: {stem}.input.npy/.output.npy or "
                     f"{stem}.input.bin/.output.bin must sit next to the model in {models_dir}")


def numpy_dtype(name):
    try:
        return np.dtype(name)
    except TypeError as error:
        raise CheckError(f"tensor type {name} has no numpy equivalent to compare with") from error


def only_one(tensors, what):
    if len(tensors) != 1:
        names = [tensor["name"] for tensor in tensors]
        raise CheckError(f"the reference .npy holds one {what}, the model has {len(names)}: "
                         f"{names}")
    return tensors[0]


def static_shape(tensor):
    shape = tensor.get("shape")
    if shape is None or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise CheckError(f"tensor '{tensor['name']}' has no static shape "
                         f"({shape}); a raw .bin reference needs one")
    return shape


def read_references(path, tensors):
    """The reference tensors of `path`: an .npy file (one tensor), or the raw bytes of every
    model tensor of `tensors` (dtype and shape from the model) one after the other."""
    if path.endswith(".npy"):
        only_one(tensors, "tensor")
        return [np.load(path)]
    raw = open(path, "rb").read()
    offset, values = 0, []
    for tensor in tensors:
        dtype = np.dtype(numpy_dtype(tensor["dtype"])).newbyteorder("<")
        shape = static_shape(tensor)
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if offset + size > len(raw):
            raise CheckError(f"{os.path.basename(path)} ends before tensor '{tensor['name']}' "
                             f"({tensor['dtype']}{shape})")
        values.append(np.frombuffer(raw[offset:offset + size], dtype=dtype)
                      .astype(dtype.newbyteorder("=")).reshape(shape))
        offset += size
    if offset != len(raw):
        raise CheckError(f"{os.path.basename(path)} holds {len(raw)} bytes, the model's "
                         f"tensors {offset}")
    return values


def compare(actual, expected):
    """"" when actual matches the reference within its dtype's tolerance, else what differs."""
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype}, reference {expected.dtype}"
    if actual.size != expected.size or (expected.ndim > 1 and actual.shape != expected.shape):
        return f"shape {list(actual.shape)}, reference {list(expected.shape)}"
    a = actual.reshape(-1).astype(np.float64)
    e = expected.reshape(-1).astype(np.float64)
    if np.issubdtype(expected.dtype, np.floating):
        tolerance = FLOAT_ATOL + FLOAT_RTOL * np.abs(e)
        what = f"{FLOAT_ATOL} + {FLOAT_RTOL} x |reference|"
    elif expected.dtype in (np.int8, np.uint8):
        tolerance = np.full(e.shape, float(QUANTIZED_STEPS))
        what = f"{QUANTIZED_STEPS} quantization step"
    else:
        tolerance = np.zeros(e.shape)
        what = "equality"
    error = np.abs(a - e)
    bad = ~(error <= tolerance)  # NaN counts as a difference
    if not bad.any():
        return ""
    worst = int(np.argmax(np.where(bad, np.nan_to_num(error / np.maximum(tolerance, 1e-30),
                                                      nan=np.inf), -1.0)))
    return (f"{int(bad.sum())} of {e.size} elements beyond {what}; element {worst}: "
            f"loom {a[worst]:.9g}, reference {e[worst]:.9g}")


def run_variant(args, model, plugins, models_dir, stem, scratch):
    """Runs one model file (the source or its .loom) on the combination; "" or what differs."""
    input_path, output_path = reference_files(models_dir, stem)
    _, description = run_infer_run(args.infer_run, model, {}, plugins, args.device, None, None,
                                   None, args.timeout, ["--describe"])
    info = description.get("model", {})
    model_inputs, model_outputs = info.get("inputs", []), info.get("outputs", [])
    feeds = {}
    for tensor, value in zip(model_inputs, read_references(input_path, model_inputs)):
        feeds[tensor["name"]] = os.path.join(scratch, f"{stem}.input.{len(feeds)}.npy")
        np.save(feeds[tensor["name"]], value)
    outputs, _ = run_infer_run(args.infer_run, model, feeds, plugins, args.device, None, None,
                               None, args.timeout, args.infer_run_arg)
    for tensor in model_outputs:
        if tensor["name"] not in outputs:
            raise CheckError(f"infer-run wrote no {tensor['name']}.npy (it wrote "
                             f"{sorted(outputs)})")
    # The shapes the run produced: a model may declare a placeholder output shape that the
    # interpreter (and Loom) replace with the computed one.
    actual_outputs = [dict(t, shape=list(outputs[t["name"]].shape)) for t in model_outputs]
    differences = []
    for tensor, expected in zip(actual_outputs, read_references(output_path, actual_outputs)):
        difference = compare(outputs[tensor["name"]], expected)
        if difference:
            differences.append(f"{tensor['name']}: {difference}")
    return "; ".join(differences)


def convert(args, source, destination):
    launcher = shlex.split(os.environ.get("LOOM_INFER_RUN_LAUNCHER", ""))
    command = launcher + [args.infer_convert, "--no-default-plugins", "--quiet",
                          "--plugin", args.format_plugin, "--plugin", args.loom_plugin]
    for plugin in args.kernel_plugin:
        command += ["--plugin", plugin]
    command += [source, destination]
    print("+ " + " ".join(command), flush=True)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired as error:
        raise CheckError(f"infer-convert did not finish within {args.timeout}s") from error
    if done.returncode != 0:
        raise CheckError(f"infer-convert exited with {done.returncode}: "
                         f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")


def check_model(args, stem, path, scratch):
    """[(variant, status, detail)] for the source model and its .loom conversion."""
    converted = os.path.join(scratch, f"{stem}.loom")
    results = []
    for variant, model, plugins in (
            ("source", path, args.plugin + args.kernel_plugin + [args.format_plugin]),
            (".loom", converted, args.plugin + args.kernel_plugin + [args.loom_plugin])):
        try:
            if variant == ".loom":
                convert(args, path, converted)
            difference = run_variant(args, model, plugins, args.models_dir, stem, scratch)
            results.append((variant, "FAIL" if difference else "PASS", difference))
        except UnclaimedNodes as error:
            results.append((variant, "SKIP" if args.skip_unclaimed else "FAIL",
                            f"{args.device} does not claim every node: {error}"))
        except CheckError as error:
            results.append((variant, "FAIL", str(error)))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models_dir", help="directory of the committed models and references")
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--infer-convert", required=True)
    parser.add_argument("--format-plugin", required=True, help="the tflite or ncnn plugin file")
    parser.add_argument("--loom-plugin", required=True, help="the loom format plugin file")
    parser.add_argument("--plugin", action="append", default=[],
                        help="device plugin file or directory, passed on to infer-run (repeatable)")
    parser.add_argument("--kernel-plugin", action="append", default=[],
                        help="op-kernel plugin file for infer-run and infer-convert (repeatable)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timeout", type=float, default=300)
    add_matrix_arguments(parser)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # keep order with stderr under ctest

    try:
        models = find_models(args.models_dir)
    except OSError as error:
        print(f"FAIL: cannot list the models in {args.models_dir} ({error})", file=sys.stderr)
        return 1
    if not models:
        print(f"FAIL: no {'/'.join(MODEL_SUFFIXES)} model in {args.models_dir}", file=sys.stderr)
        return 1

    counts = {"PASS": 0, "SKIP": 0, "FAIL": 0}
    summary = []
    with tempfile.TemporaryDirectory(prefix="loom-format-models-") as scratch:
        for stem, path in models:
            for variant, status, detail in check_model(args, stem, path, scratch):
                counts[status] += 1
                line = f"{status}: {os.path.basename(path)} ({variant}) on {args.device}"
                summary.append(line + (f": {detail}" if detail else ""))
    print("\n".join(summary))
    print(f"{counts['PASS']} passed, {counts['SKIP']} skipped, {counts['FAIL']} failed "
          f"({len(models)} models, each as its source file and converted to .loom)")
    if counts["FAIL"]:
        return 1
    return SKIP_EXIT_CODE if counts["SKIP"] else 0


if __name__ == "__main__":
    sys.exit(main())
