#!/usr/bin/python3
"""Trains a small CNN on scikit-learn's 8x8 digits and exports it as ONNX for the infer-run demo.

Writes, next to this script (or into --out):
  digits.onnx               opset 17, input image float32 [N,1,8,8] (raw pixels 0..16),
                            outputs probabilities float32 [N,10] and digit int64 [N]
  samples.npy               8 held-out images, float32 [8,1,8,8]
  samples_labels.txt        their true labels, one line, space separated
  heldout_probabilities.npy torch's probabilities on the whole held-out set, float32 [M,10]
  accuracy.json             held-out accuracy, split seed, sizes and the split's fingerprint

Everything is seeded and runs single-threaded, so a rerun reproduces the same files.
Needs Debian's python3-torch, python3-onnx, python3-sklearn (run with /usr/bin/python3).
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
import onnx.checker
import onnx.defs
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits_data  # noqa: E402

OPSET = 17
TRAIN_SEED = 7
EPOCHS = 40
BATCH = 32
SAMPLE_COUNT = 8


class DigitsNet(nn.Module):
    """Conv -> ReLU -> MaxPool -> Linear: small enough for a few-KB model, about 97-98% held out."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def logits(self, image):
        # Normalisation lives in the graph, so callers feed sklearn's raw 0..16 pixels.
        x = image * (1.0 / 16.0) - 0.5
        x = self.pool(torch.relu(self.conv(x)))
        return self.fc(torch.flatten(x, 1))

    def forward(self, image):
        logits = self.logits(image)
        return torch.softmax(logits, dim=1), torch.argmax(logits, dim=1)


def train(model, train_x, train_y):
    data = torch.from_numpy(train_x)
    target = torch.from_numpy(train_y)
    generator = torch.Generator().manual_seed(TRAIN_SEED)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, EPOCHS)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    for _ in range(EPOCHS):
        order = torch.randperm(len(target), generator=generator)
        for start in range(0, len(order), BATCH):
            batch = order[start:start + BATCH]
            optimizer.zero_grad()
            loss = loss_fn(model.logits(data[batch]), target[batch])
            loss.backward()
            optimizer.step()
        scheduler.step()
    model.eval()


def export(model, path):
    example = torch.zeros(2, 1, 8, 8)
    torch.onnx.export(
        model, (example,), path, opset_version=OPSET, do_constant_folding=True,
        input_names=["image"], output_names=["probabilities", "digit"],
        dynamic_axes={"image": {0: "N"}, "probabilities": {0: "N"}, "digit": {0: "N"}})
    proto = onnx.load(path)
    proto.doc_string = "Loom infer-run demo: CNN on scikit-learn digits (train_digits.py)"
    proto.producer_name = "loom-train_digits"
    onnx.save(proto, path)
    check_standard(path)


def check_standard(path):
    """Fails unless the file is a valid opset-17 model built from standard ONNX ops only."""
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    opsets = {o.domain: o.version for o in proto.opset_import}
    if opsets.get("", opsets.get("ai.onnx")) != OPSET or len(opsets) != 1:
        raise SystemExit(f"{path}: expected only the default domain at opset {OPSET}, got {opsets}")
    for node in proto.graph.node:
        if node.domain not in ("", "ai.onnx"):
            raise SystemExit(f"{path}: non-standard op {node.domain}::{node.op_type}")
        # since_version <= 17 means the node uses the opset-17 form, never a later one.
        schema = onnx.defs.get_schema(node.op_type, OPSET, "")
        if schema.since_version > OPSET:
            raise SystemExit(f"{path}: {node.op_type} needs opset {schema.since_version}")
    dims = [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    if not isinstance(dims[0], str) or dims[1:] != [1, 8, 8]:
        raise SystemExit(f"{path}: unexpected input shape {dims}")
    return sorted({n.op_type for n in proto.graph.node})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                        help="directory for the outputs (default: next to this script)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(TRAIN_SEED)
    torch.set_num_threads(1)  # one thread: reductions in a fixed order, reproducible weights
    torch.use_deterministic_algorithms(True)

    start = time.monotonic()
    train_x, train_y, test_x, test_y, test_idx = digits_data.load_split()
    model = DigitsNet()
    train(model, train_x, train_y)
    with torch.no_grad():
        probabilities, predicted = model(torch.from_numpy(test_x))
    accuracy = float((predicted.numpy() == test_y).mean())
    train_seconds = time.monotonic() - start

    onnx_path = os.path.join(args.out, "digits.onnx")
    export(model, onnx_path)
    np.save(os.path.join(args.out, "heldout_probabilities.npy"),
            probabilities.numpy().astype(np.float32))
    np.save(os.path.join(args.out, "samples.npy"), test_x[:SAMPLE_COUNT])
    with open(os.path.join(args.out, "samples_labels.txt"), "w") as f:
        f.write(" ".join(str(int(v)) for v in test_y[:SAMPLE_COUNT]) + "\n")
    summary = {
        "held_out_accuracy": accuracy,
        "held_out_correct": int((predicted.numpy() == test_y).sum()),
        "held_out_size": int(len(test_y)),
        "train_size": int(len(train_y)),
        "split_seed": digits_data.SPLIT_SEED,
        "held_out_fraction": digits_data.HELD_OUT_FRACTION,
        "held_out_indices_sha256_16": digits_data.indices_digest(test_idx),
        "train_seed": TRAIN_SEED,
        "epochs": EPOCHS,
        "opset": OPSET,
    }
    with open(os.path.join(args.out, "accuracy.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(f"held-out accuracy {accuracy:.4f} ({summary['held_out_correct']}/{len(test_y)}), "
          f"trained in {train_seconds:.1f}s; ops: {', '.join(check_standard(onnx_path))}; "
          f"{onnx_path}: {os.path.getsize(onnx_path)} bytes")


if __name__ == "__main__":
    main()
