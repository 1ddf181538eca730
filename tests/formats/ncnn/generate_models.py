#!/usr/bin/env python3
"""Writes the ncnn test models of tests/formats/ncnn and ncnn's own outputs for them.

The .param/.bin files are written directly (random weights from fixed seeds, some blobs stored
fp32 and some fp16, as ncnn's ModelBin tags them), then run with ncnn's Python bindings
(PyPI `ncnn`), the reference, on a fixed input. For each model NAME the directory gets:

  NAME.param (or NAME.param.bin)   network description, text or binary
  NAME.bin                         weights
  NAME.input.npy                   the input in Loom's layout: ncnn's c,h,w plus a batch of 1
  NAME.output.npy                  ncnn's output for it, also with the batch of 1

and, with --fuzz-seeds DIR, DIR/NAME holds the param, a "\n#BIN\n" line and the weights (the
input form of the fuzz_ncnn_load target).

Usage: generate_models.py OUTPUT_DIR [--fuzz-seeds DIR]
"""
import struct
import sys
from pathlib import Path

import numpy as np

FP16_TAG = 0x01306B47
LAYER_INDEX = {"Input": 16, "Convolution": 6, "ConvolutionDepthWise": 42, "Split": 33,
               "BatchNorm": 2, "Scale": 29, "Eltwise": 10, "Pooling": 21, "Deconvolution": 8,
               "Interp": 50, "Concat": 5, "Padding": 43, "Crop": 7, "Slice": 31,
               "InnerProduct": 15, "BinaryOp": 40, "Softmax": 32}


class Model:
    """Collects layers (text form) and weights (ModelBin form) in ncnn's order."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.layers = []  # (type, name, bottoms, tops, [(id, value)])
        self.weights = bytearray()

    def layer(self, type_, name, bottoms, tops, **params):
        items = []
        for key, value in params.items():
            pid = int(key[1:])
            items.append((pid, value))
        self.layers.append((type_, name, list(bottoms), list(tops), items))

    def tagged(self, values, fp16=False):
        values = np.asarray(values, dtype=np.float32).ravel()
        if fp16:
            self.weights += struct.pack("<I", FP16_TAG)
            data = values.astype(np.float16).tobytes()
            self.weights += data + b"\0" * (-len(data) % 4)
        else:
            self.weights += struct.pack("<I", 0) + values.tobytes()

    def raw(self, values):
        self.weights += np.asarray(values, dtype=np.float32).ravel().tobytes()

    def random(self, *shape, scale=0.5):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def blob_count(self):
        blobs = set()
        for _, _, bottoms, tops, _ in self.layers:
            blobs.update(bottoms)
            blobs.update(tops)
        return len(blobs)

    def text_param(self):
        lines = ["7767517", f"{len(self.layers)} {self.blob_count()}"]
        for type_, name, bottoms, tops, items in self.layers:
            fields = [f"{type_:<24}", f"{name:<16}", str(len(bottoms)), str(len(tops))]
            fields += bottoms + tops
            for pid, value in items:
                if isinstance(value, (list, tuple)):
                    text = ",".join(format_value(v) for v in value)
                    fields.append(f"{-23300 - pid}={len(value)},{text}")
                else:
                    fields.append(f"{pid}={format_value(value)}")
            lines.append(" ".join(fields))
        return "\n".join(lines) + "\n"

    def binary_param(self):
        index = {}
        for _, _, bottoms, tops, _ in self.layers:
            for b in bottoms + tops:
                index.setdefault(b, len(index))
        out = struct.pack("<iii", 7767517, len(self.layers), len(index))
        for type_, _, bottoms, tops, items in self.layers:
            out += struct.pack("<iii", LAYER_INDEX[type_], len(bottoms), len(tops))
            out += b"".join(struct.pack("<i", index[b]) for b in bottoms + tops)
            for pid, value in items:
                if isinstance(value, (list, tuple)):
                    out += struct.pack("<ii", -23300 - pid, len(value))
                    out += b"".join(pack_value(v) for v in value)
                else:
                    out += struct.pack("<i", pid) + pack_value(value)
            out += struct.pack("<i", -233)
        return out, index


def format_value(v):
    return f"{v:e}" if isinstance(v, float) else str(v)


def pack_value(v):
    return struct.pack("<f", v) if isinstance(v, float) else struct.pack("<i", v)


def conv(m, name, bottom, top, cin, cout, k, stride=1, pad=0, group=1, act=0, act_params=None,
         fp16=False, depthwise=False):
    params = dict(p0=cout, p1=k, p3=stride, p4=pad, p5=1, p6=cout * cin // group * k * k)
    if depthwise:
        params["p7"] = group
    if act:
        params["p9"] = act
        if act_params:
            params["p10"] = act_params
    m.layer("ConvolutionDepthWise" if depthwise else "Convolution", name, [bottom], [top], **params)
    m.tagged(m.random(cout, cin // group, k, k), fp16)
    m.raw(m.random(cout, scale=0.1))


def small_cnn(seed=1):
    """conv/depthwise/pool/innerproduct/eltwise/concat/split/softmax/BN/scale/padding/crop/
    slice/interp/deconv, fused activations, fp32 and fp16 weights."""
    m = Model(seed)
    m.layer("Input", "data", [], ["data"], p0=16, p1=16, p2=3)
    conv(m, "conv1", "data", "c1", 3, 8, 3, pad=1, act=1)
    m.layer("Split", "split1", ["c1"], ["c1a", "c1b", "c1c"])
    conv(m, "dw1", "c1a", "dw", 8, 8, 3, pad=1, group=8, act=6, act_params=[0.2, 0.5],
         fp16=True, depthwise=True)
    m.layer("BatchNorm", "bn1", ["dw"], ["bn"], p0=8, p1=1e-5)
    for part in ("slope", "mean", "var", "bias"):
        v = m.random(8)
        m.raw(np.abs(v) + 0.5 if part == "var" else v)
    m.layer("Scale", "scale1", ["bn"], ["sc"], p0=8, p1=1)
    m.raw(m.random(8))
    m.raw(m.random(8))
    m.layer("Eltwise", "sum1", ["c1b", "sc"], ["e1"], p0=1, p1=[1.0, 0.5])
    m.layer("Pooling", "pool1", ["e1"], ["p1"], p0=0, p1=2, p2=2)
    m.layer("Split", "split2", ["p1"], ["p1a", "p1b"])
    m.layer("Deconvolution", "up1", ["p1a"], ["d1"], p0=4, p1=2, p3=2, p5=1, p6=4 * 8 * 2 * 2)
    m.tagged(m.random(4, 8, 2, 2), fp16=True)
    m.raw(m.random(4, scale=0.1))
    m.layer("Interp", "interp1", ["p1b"], ["i1"], p0=2, p1=2.0, p2=2.0)
    m.layer("Concat", "cat1", ["d1", "i1", "c1c"], ["cat"], p0=0)
    m.layer("Padding", "pad1", ["cat"], ["pd"], p0=1, p1=1, p2=1, p3=1, p4=0, p5=0.5)
    m.layer("Crop", "crop1", ["pd"], ["cr"], p0=1, p1=1, p3=16, p4=16, p5=-233)
    m.layer("Slice", "slice1", ["cr"], ["s1", "s2"], p0=[12, -233], p1=0)
    conv(m, "conv2", "s1", "c2", 12, 8, 3, stride=2, pad=1, act=2, act_params=[0.1])
    m.layer("Pooling", "pool2", ["c2"], ["p2"], p0=1, p1=2, p2=2)
    m.layer("Pooling", "gap", ["s2"], ["g"], p0=1, p4=1)
    m.layer("InnerProduct", "fc1", ["p2"], ["f1"], p0=10, p1=1, p2=10 * 8 * 4 * 4)
    m.tagged(m.random(10, 128, scale=0.1), fp16=True)
    m.raw(m.random(10, scale=0.1))
    m.layer("InnerProduct", "fc2", ["g"], ["f2"], p0=10, p1=1, p2=10 * 8, p9=4)
    m.tagged(m.random(10, 8))
    m.raw(m.random(10, scale=0.1))
    m.layer("BinaryOp", "add1", ["f1", "f2"], ["f"], p0=0)
    m.layer("Softmax", "prob", ["f"], ["out"], p0=0)
    return m, m.random(3, 16, 16, scale=1.0)


def memory_data_broadcast(seed=2):
    """MemoryData constants and BinaryOp's outer-aligned broadcasting, scalar ops,
    standalone activations, Reshape/Permute/row-wise InnerProduct/Flatten/Dropout."""
    m = Model(seed)
    m.layer("Input", "data", [], ["data"], p0=5, p1=6, p2=4)
    m.layer("MemoryData", "per_channel", [], ["mc"], p0=4)
    m.raw(m.random(4))
    m.layer("MemoryData", "per_row", [], ["mr"], p0=6, p1=4)
    m.raw(m.random(4, 6))
    m.layer("MemoryData", "per_col", [], ["mw"], p0=5, p1=1, p2=1)
    m.raw(m.random(1, 1, 5))
    m.layer("BinaryOp", "mul_c", ["data", "mc"], ["x1"], p0=2)
    m.layer("BinaryOp", "add_r", ["x1", "mr"], ["x2"], p0=0)
    m.layer("BinaryOp", "sub_w", ["x2", "mw"], ["x3"], p0=1)
    m.layer("BinaryOp", "half", ["x3"], ["x4"], p0=3, p1=1, p2=2.0)
    m.layer("BinaryOp", "rsub", ["x4"], ["x5"], p0=7, p1=1, p2=1.0)
    m.layer("ReLU", "leaky", ["x5"], ["x6"], p0=0.1)
    m.layer("Clip", "clip", ["x6"], ["x7"], p0=-0.5, p1=0.8)
    m.layer("Swish", "swish", ["x7"], ["x8"])
    m.layer("HardSwish", "hswish", ["x8"], ["x9"], p0=0.2, p1=0.5)
    m.layer("Sigmoid", "sig", ["x9"], ["x10"])
    m.layer("Reshape", "reshape", ["x10"], ["r"], p0=30, p1=4)
    m.layer("Permute", "permute", ["r"], ["t"], p0=1)
    m.layer("InnerProduct", "rows", ["t"], ["ip"], p0=3, p1=1, p2=12)
    m.tagged(m.random(3, 4), fp16=True)
    m.raw(m.random(3))
    m.layer("Flatten", "flat", ["ip"], ["fl"])
    m.layer("Dropout", "drop", ["fl"], ["dr"])
    m.layer("Softmax", "prob", ["dr"], ["out"], p0=0)
    return m, m.random(4, 6, 5, scale=1.0)


def run_ncnn(param_path, bin_path, binary, x, input_name, output_name):
    import ncnn

    net = ncnn.Net()
    net.opt.use_vulkan_compute = False
    net.opt.use_fp16_packed = False
    net.opt.use_fp16_storage = False
    net.opt.use_fp16_arithmetic = False
    net.opt.use_bf16_storage = False
    net.opt.num_threads = 1
    rc = net.load_param_bin(str(param_path)) if binary else net.load_param(str(param_path))
    if rc != 0:
        raise RuntimeError(f"ncnn could not load {param_path}")
    if net.load_model(str(bin_path)) != 0:
        raise RuntimeError(f"ncnn could not load {bin_path}")
    ex = net.create_extractor()
    ex.input(input_name, ncnn.Mat(np.ascontiguousarray(x)))
    rc, out = ex.extract(output_name)
    if rc != 0:
        raise RuntimeError(f"ncnn failed to run {param_path}")
    return np.array(out, dtype=np.float32)


def write(out_dir, name, m, x, binary=False, seeds_dir=None):
    out_dir.mkdir(parents=True, exist_ok=True)
    bin_path = out_dir / f"{name}.bin"
    bin_path.write_bytes(bytes(m.weights))
    if binary:
        param_path = out_dir / f"{name}.param.bin"
        data, index = m.binary_param()
        param_path.write_bytes(data)
        input_name, output_name = index["data"], index["out"]
    else:
        param_path = out_dir / f"{name}.param"
        param_path.write_text(m.text_param())
        input_name, output_name = "data", "out"
    y = run_ncnn(param_path, bin_path, binary, x, input_name, output_name)
    np.save(out_dir / f"{name}.input.npy", x[np.newaxis])
    np.save(out_dir / f"{name}.output.npy", y[np.newaxis])
    if seeds_dir:
        seeds_dir.mkdir(parents=True, exist_ok=True)
        (seeds_dir / name).write_bytes(param_path.read_bytes() + b"\n#BIN\n" + bytes(m.weights))
    print(f"{name}: input {x.shape} output {y.shape}")


def main():
    args = sys.argv[1:]
    seeds = None
    if len(args) == 3 and args[1] == "--fuzz-seeds":
        seeds = Path(args[2])
    elif len(args) != 1:
        sys.exit(__doc__)
    out_dir = Path(args[0])
    m, x = small_cnn()
    write(out_dir, "small_cnn", m, x, seeds_dir=seeds)
    m, x = small_cnn()
    write(out_dir, "small_cnn_binary", m, x, binary=True, seeds_dir=seeds)
    m, x = memory_data_broadcast()
    write(out_dir, "memory_data_broadcast", m, x, seeds_dir=seeds)


if __name__ == "__main__":
    main()
