#!/usr/bin/python3
"""Exports small models with the real exporters, for tests/formats/onnx (run by the build).

Writes into OUT_DIR:
  plain.onnx          torch.onnx.export of a small block network (weights embedded)
  functions.onnx      the same network, each Block exported as a model-local function
                      (export_modules_as_functions), as torch.onnx does for module hierarchies
  external/model.onnx the plain model re-saved by onnx with every tensor as external data
"""
import os
import sys

import onnx
import torch


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = torch.nn.Linear(width, width)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x):
        return torch.relu(self.norm(self.fc(x))) + x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = torch.nn.Sequential(Block(8), Block(8))
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.conv(x).mean(dim=(2, 3))
        return self.head(self.blocks(y))


def main(out_dir):
    torch.manual_seed(0)
    net = Net().eval()
    x = torch.randn(2, 3, 8, 8)
    os.makedirs(os.path.join(out_dir, "external"), exist_ok=True)
    kwargs = dict(opset_version=15, input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    plain = os.path.join(out_dir, "plain.onnx")
    torch.onnx.export(net, x, plain, **kwargs)
    torch.onnx.export(net, x, os.path.join(out_dir, "functions.onnx"),
                      export_modules_as_functions={Block}, **kwargs)
    model = onnx.load(plain)
    onnx.save_model(model, os.path.join(out_dir, "external", "model.onnx"),
                    save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)


if __name__ == "__main__":
    main(sys.argv[1])
