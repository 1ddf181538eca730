#!/usr/bin/python3
"""Int8 accuracy on a trained model: the bundled digits demo quantized as onnxruntime does.

tests/bench/int8.py measures the int8 models on random weights, whose near-flat logits make
top-1 agreement a weak measure (there even ONNX Runtime's int8 agrees with its own f32 on a
third of the inputs). This script takes a model that was trained (apps/infer-run/demo/
digits.onnx: Conv, Relu, MaxPool, Gemm, Softmax, ArgMax on scikit-learn's 8x8 digits, shipped
with the package) and quantizes it with onnxruntime's quantize_static (QDQ, per channel, uint8
activations, int8 weights, calibrated on the first 256 training images), then compares on the
held-out images (449, digits_data.load_split: the trainer's split):

  - the predicted digit of Loom int8 (--device, default onednn,cpu) against ONNX Runtime's
    int8, against Loom's cpu device (the QDQ graph computed as written, in float), and the
    accuracy of each against the labels, beside the f32 model's;
  - the largest difference of the probabilities.

It runs in the benchmark venv's python (build/bench-venv: onnxruntime, and for its quantizer
ml_dtypes and onnx >= 1.13, which tests/bench/int8.py installs) with the Loom Python package
of the build (--loom-python, default build/default/python). Not part of ctest:

  build/bench-venv/bin/python tests/bench/int8_digits.py
"""

import argparse
import os
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(REPO, "apps", "infer-run", "demo")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loom-python", default=os.path.join(REPO, "build", "default", "python"),
                        help="directory holding the loom package")
    parser.add_argument("--device", default="onednn,cpu")
    parser.add_argument("--calibration", type=int, default=256, help="training images")
    args = parser.parse_args()
    sys.path.insert(0, DEMO)
    sys.path.insert(0, args.loom_python)
    import loom  # noqa: E402
    import onnxruntime as ort  # noqa: E402
    from digits_data import load_split  # noqa: E402
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,  # noqa: E402
                                          QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process  # noqa: E402

    train_x, _, test_x, test_y, _ = load_split()

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"image": train_x[i:i + 32]}
                                 for i in range(0, args.calibration, 32)])

        def get_next(self):
            return next(self.batches, None)

    f32_path = os.path.join(DEMO, "digits.onnx")
    with tempfile.TemporaryDirectory() as tmp:
        pre = os.path.join(tmp, "pre.onnx")
        int8_path = os.path.join(tmp, "digits_qdq.onnx")
        quant_pre_process(f32_path, pre)
        quantize_static(pre, int8_path, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        feeds = {"image": test_x}
        ort_int8 = ort.InferenceSession(int8_path, providers=["CPUExecutionProvider"]).run(None, feeds)
        ort_f32 = ort.InferenceSession(f32_path, providers=["CPUExecutionProvider"]).run(None, feeds)
        loom_int8 = loom.InferenceSession(int8_path, devices=args.device).run(None, feeds)
        loom_ref = loom.InferenceSession(int8_path, devices="cpu").run(None, feeds)
    probs, digit = 0, 1
    agree = lambda a, b: float((a[digit] == b[digit]).mean())  # noqa: E731
    accuracy = lambda r: float((r[digit] == test_y).mean())  # noqa: E731
    print(f"digits, {len(test_y)} held-out images, Loom int8 on {args.device}")
    print("| predicted digit agrees | Loom int8 vs ORT int8 | Loom int8 vs Loom cpu (QDQ in float) |")
    print("|---|---:|---:|")
    print(f"| share | {agree(loom_int8, ort_int8):.4f} | {agree(loom_int8, loom_ref):.4f} |")
    print()
    print("| accuracy (labels) | Loom int8 | Loom cpu | ORT int8 | f32 (ORT) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| share | {accuracy(loom_int8):.4f} | {accuracy(loom_ref):.4f} | "
          f"{accuracy(ort_int8):.4f} | {accuracy(ort_f32):.4f} |")
    print()
    print(f"max |probability difference|: Loom int8 vs ORT int8 "
          f"{np.abs(loom_int8[probs] - ort_int8[probs]).max():.4g}, vs Loom cpu "
          f"{np.abs(loom_int8[probs] - loom_ref[probs]).max():.4g}")


if __name__ == "__main__":
    main()
