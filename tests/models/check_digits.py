#!/usr/bin/python3
"""End-to-end check of the infer-run digits demo.

Rebuilds the demo's held-out split from scikit-learn (the same digits_data module the trainer
used), runs infer-run on the whole held-out set as one batch, and asserts that
  - the split is the one the trainer recorded (size and index fingerprint in accuracy.json),
  - the accuracy computed from digit.npy equals accuracy.json's held-out accuracy,
  - probabilities.npy matches the probabilities torch computed (heldout_probabilities.npy)
    within --atol (default 1e-4), and digit equals the argmax of those probabilities.
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np

from infer_run_driver import (SKIP_EXIT_CODE, CheckError, UnclaimedNodes, add_matrix_arguments,
                              latency_text, run_infer_run)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--infer-run", required=True, help="path to the infer-run binary")
    parser.add_argument("--demo-dir", required=True, help="apps/infer-run/demo")
    parser.add_argument("--plugin", action="append", default=[],
                        help="plugin file or directory, passed on to infer-run (repeatable)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--atol", type=float, default=1e-4)
    add_matrix_arguments(parser)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # keep order with stderr under ctest

    sys.path.insert(0, os.path.abspath(args.demo_dir))
    import digits_data  # pylint: disable=import-outside-toplevel

    with open(os.path.join(args.demo_dir, "accuracy.json")) as f:
        recorded = json.load(f)
    torch_probabilities = np.load(os.path.join(args.demo_dir, "heldout_probabilities.npy"))
    _, _, test_x, test_y, test_idx = digits_data.load_split(
        recorded["split_seed"], recorded["held_out_fraction"])

    try:
        if (len(test_y) != recorded["held_out_size"]
                or digits_data.indices_digest(test_idx) != recorded["held_out_indices_sha256_16"]):
            raise CheckError("the regenerated held-out split differs from the one in "
                             "accuracy.json; rerun train_digits.py")
        with tempfile.TemporaryDirectory(prefix="loom-digits-") as scratch:
            images = os.path.join(scratch, "heldout.npy")
            np.save(images, test_x)
            outputs, report = run_infer_run(
                args.infer_run, os.path.join(args.demo_dir, "digits.onnx"), {"image": images},
                args.plugin, args.device, args.threads, extra_args=args.infer_run_arg)
        for name, shape, dtype in (("digit", (len(test_y),), np.int64),
                                   ("probabilities", (len(test_y), 10), np.float32)):
            if name not in outputs:
                raise CheckError(f"infer-run wrote no {name}.npy (it wrote {sorted(outputs)})")
            if outputs[name].shape != shape or outputs[name].dtype != dtype:
                raise CheckError(f"{name}: {outputs[name].dtype}{list(outputs[name].shape)}, "
                                 f"expected {np.dtype(dtype)}{list(shape)}")
        digit, probabilities = outputs["digit"], outputs["probabilities"]
        accuracy = float((digit == test_y).mean())
        max_error = float(np.max(np.abs(probabilities - torch_probabilities)))
        disagreements = int(np.count_nonzero(digit != torch_probabilities.argmax(axis=1)))
        print(f"held-out accuracy {accuracy:.4f} ({int((digit == test_y).sum())}/{len(test_y)}), "
              f"recorded {recorded['held_out_accuracy']:.4f}; probabilities max abs error "
              f"{max_error:.3g}; latency {latency_text(report)}")
        if accuracy != recorded["held_out_accuracy"]:
            raise CheckError(f"accuracy {accuracy} differs from accuracy.json's "
                             f"{recorded['held_out_accuracy']}")
        if not max_error <= args.atol:
            raise CheckError(f"probabilities differ from torch's by {max_error} > {args.atol}")
        if disagreements:
            raise CheckError(f"digit disagrees with argmax(probabilities) on {disagreements} images")
    except UnclaimedNodes as error:
        if not args.skip_unclaimed:
            print(f"FAIL: digits demo: {error}", file=sys.stderr)
            return 1
        print(f"SKIP: digits demo: {args.device} does not claim every node: {error}")
        return SKIP_EXIT_CODE
    except CheckError as error:
        print(f"FAIL: digits demo: {error}", file=sys.stderr)
        return 1
    print("PASS: digits demo")
    return 0


if __name__ == "__main__":
    sys.exit(main())
