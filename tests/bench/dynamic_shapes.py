#!/usr/bin/python3
"""Benchmarks Loom on dynamic-shape models against ONNX Runtime and OpenVINO (CPU, f32).

Models (opset 17, standard ONNX ops only, random weights from fixed seeds), each exported twice
with torch.onnx.export: "dynamic" (with dynamic_axes) and "static" (no dynamic_axes, at the
model's first shape):

  resnet50, mobilenetv2  torchvision, BatchNorm statistics calibrated on random images
                         (generate_models.calibrate_batch_norm); dynamic batch, height, width
  bert                   generate_models.BertEncoder (imported, not copied) at BERT-base width
                         but 4 layers instead of 12 (hidden 768, 12 heads, intermediate 3072,
                         vocab 30522), so that one run stays short enough to cycle through many
                         shapes; dynamic batch and sequence; input_ids, attention_mask int64
  crnn                   text recognizer: 5 conv blocks (BatchNorm, max pools to height 1),
                         2-layer bidirectional LSTM (hidden 128), linear to 37 classes,
                         log-softmax; input 1x1x32xW, dynamic width, output [W/4, 1, 37]
  dbnet                  text detector: 4-stage conv backbone (strides 4..32), FPN with nearest
                         top-down upsampling and bilinear upsampling to 1/4, ConvTranspose head,
                         sigmoid probability map; dynamic batch, height and width
  sentence               sentence encoder: embeddings + 4 generate_models.BertLayer (hidden 384,
                         12 heads, intermediate 1536) + mean pooling over the attention mask +
                         L2 normalisation; dynamic batch and sequence
  vad                    streaming voice-activity model (Silero-VAD-like): a torch.jit.script'ed
                         front end that branches on the int64 scalar `sr` (16000: conv-STFT of
                         256/128; else: 128/64 and a pool), so the export holds a real If node;
                         conv encoder, 2-layer LSTM with state h/c [2,B,64] in and out, linear,
                         sigmoid; 512-sample chunks, batch 1 (the dynamic export has a dynamic
                         batch); the rows are sr=16000 and sr=8000, the latency is per chunk

They are generated into --cache (default build/dynamic-models) by a child process and
regenerated only when the stamp (a hash of this file's model section, of generate_models.py and
of the torch/onnx versions) changes, together with fixed-seed inputs for every shape (.npy).

Per model and shape, ROUNDS rounds alternate Loom (infer-run --device onednn,cpu on the dynamic
export, and on the static export at the first shape), ONNX Runtime and OpenVINO on the dynamic
export, with the same input files and 2 threads (--threads): ORT intra_op_num_threads=N,
inter_op 1; OpenVINO CPU INFERENCE_NUM_THREADS=N, INFERENCE_PRECISION_HINT=f32. Reported: the
median latencies and ratios Loom/ORT, Loom/OV, Loom dynamic/static; the first run of a fresh
Loom session at that shape (infer-run's `first_run_ms` where the report has it, else a separate
infer-run with --warmup 0 --repeat 1, whose one latency is that first run; session creation is
`session_ms`); the max abs difference and cosine of Loom's outputs against ORT's; and the nodes
per device of Loom's plan (the `plan` object of infer-run --json, If bodies included).

Memory (unless --skip-rss): tests/bench/cycle_shapes.c, compiled with the system cc against the
build's headers and libloom (found from --infer-run: <bin>/../lib), runs one session of the
dynamic export CYCLE_RUNS times (default 500) over CYCLE_SHAPES shapes (default 20) and reports
VmHWM/VmRSS after the first 20 runs and after all, RSS(all)/RSS(20), and each shape's first run
in that session.

ONNX Runtime (1.30.0) and OpenVINO (2026.4.1) come from a virtual environment that sees the
system packages (torch, onnx, numpy are Debian's), created on first use at --venv (default
build/bench-venv). Not part of ctest: run it by hand on a quiet machine, e.g.

  tests/bench/dynamic_shapes.py --infer-run build/default/bin/infer-run --json-out dyn.json
"""

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Shared with the other benchmarks: the ONNX Runtime version, logging, timed child processes.
from bench_vs_onnxruntime import ORT_VERSION, log, run_measured  # noqa: E402
from bench_vs_onnxruntime import ensure_venv as bench_ensure_venv  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATE_MODELS = os.path.join(REPO, "tests", "models", "generate_models.py")
CYCLE_SOURCE = os.path.join(REPO, "tests", "bench", "cycle_shapes.c")
OV_VERSION = "2026.4.1"


# ---- models begin (the stamp hashes the text from here to "models end") --------------------

OPSET = 17
SEED = 1234
BERT_CONFIG = dict(vocab=30522, hidden=768, layers=4, heads=12, intermediate=3072,
                   max_positions=512, type_vocab=2)
SENTENCE_CONFIG = dict(vocab=30522, hidden=384, layers=4, heads=12, intermediate=1536,
                       max_positions=512)
CRNN_CLASSES = 37
VAD_STATE = (2, 64)  # LSTM layers, hidden


def image_case(b, c, h, w):
    return {"label": f"{b}x{c}x{h}x{w}", "shapes": {"input": (b, c, h, w)}}


def token_case(b, s):
    return {"label": f"{b}x{s}", "shapes": {"input_ids": (b, s), "attention_mask": (b, s)}}


def vad_case(batch, sr):
    layers, hidden = VAD_STATE
    return {"label": f"{batch}x512 sr={sr}", "values": {"sr": sr},
            "shapes": {"input": (batch, 512), "sr": (), "h": (layers, batch, hidden),
                       "c": (layers, batch, hidden)}}


def pick(candidates, count, seed):
    """`count` of the candidates (the first kept first), in a fixed-seed order."""
    import random
    rest = list(candidates[1:])
    random.Random(seed).shuffle(rest)
    return [candidates[0]] + rest[:max(0, count - 1)]


def vision_cycle(count):
    sides = [160, 192, 224, 256, 288, 320]
    combos = [(b, h, w) for b in (1, 2) for h in sides for w in sides]
    combos.remove((1, 224, 224))
    return [image_case(b, 3, h, w) for b, h, w in pick([(1, 224, 224)] + combos, count, SEED)]


def token_cycle(count):
    combos = [(b, s) for b in (1, 2, 4) for s in (8, 16, 24, 32, 48, 64, 96, 128)]
    combos.remove((1, 32))
    return [token_case(b, s) for b, s in pick([(1, 32)] + combos, count, SEED)]


def detector_cycle(count):
    sides = [256, 320, 384, 448, 512, 576, 640]
    combos = [(h, w) for h in sides for w in sides]
    combos.remove((320, 320))
    return [image_case(1, 3, h, w) for h, w in pick([(320, 320)] + combos, count, SEED)]


# name: cases of the timed benchmark (the first is the static export's shape), the cycle's
# cases for the memory check, value ranges of integer inputs in the cycle, output names.
MODELS = {
    "resnet50": dict(
        cases=[image_case(1, 3, 224, 224), image_case(2, 3, 192, 256), image_case(1, 3, 320, 320)],
        cycle=vision_cycle, outputs=["logits"],
        dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}}),
    "mobilenetv2": dict(
        cases=[image_case(1, 3, 224, 224), image_case(2, 3, 192, 256), image_case(1, 3, 320, 320)],
        cycle=vision_cycle, outputs=["logits"],
        dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}}),
    "bert": dict(
        cases=[token_case(1, 32), token_case(1, 128), token_case(4, 64)],
        cycle=token_cycle, int_ranges={"input_ids": (0, 1000), "attention_mask": (1, 2)},
        outputs=["last_hidden_state", "pooler_output"],
        dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                      "attention_mask": {0: "batch", 1: "sequence"},
                      "last_hidden_state": {0: "batch", 1: "sequence"},
                      "pooler_output": {0: "batch"}}),
    "crnn": dict(
        cases=[image_case(1, 1, 32, 100), image_case(1, 1, 32, 200), image_case(1, 1, 32, 320)],
        cycle=lambda count: [image_case(1, 1, 32, 64 + 32 * i) for i in range(count)],
        outputs=["logits"],
        dynamic_axes={"input": {3: "width"}, "logits": {0: "time"}}),
    "dbnet": dict(
        cases=[image_case(1, 3, 320, 320), image_case(1, 3, 480, 640), image_case(1, 3, 640, 640)],
        cycle=detector_cycle, outputs=["probability"],
        dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"},
                      "probability": {0: "batch", 2: "height", 3: "width"}}),
    "sentence": dict(
        cases=[token_case(1, 32), token_case(1, 128), token_case(4, 64)],
        cycle=token_cycle, int_ranges={"input_ids": (0, 1000), "attention_mask": (1, 2)},
        outputs=["sentence_embedding"],
        dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                      "attention_mask": {0: "batch", 1: "sequence"},
                      "sentence_embedding": {0: "batch"}}),
    "vad": dict(
        cases=[vad_case(1, 16000), vad_case(1, 8000)],
        cycle=lambda count: [vad_case(1 + i, 16000) for i in range(count)],
        int_ranges={"sr": (16000, 16001)}, outputs=["output", "hn", "cn"],
        dynamic_axes={"input": {0: "batch"}, "h": {1: "batch"}, "c": {1: "batch"},
                      "output": {0: "batch"}, "hn": {1: "batch"}, "cn": {1: "batch"}}),
}


def make_inputs(model, case, seed):
    """Fixed-seed inputs of one case (numpy only: the benchmark side needs no torch)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    shapes = case["shapes"]
    if model in ("bert", "sentence"):
        batch, sequence = shapes["input_ids"]
        ids = rng.integers(1000, 30000, size=(batch, sequence), dtype=np.int64)
        mask = np.ones((batch, sequence), dtype=np.int64)
        for row in range(batch):
            # Rows of different lengths, the tail padded, so the mask matters to the result.
            real = max(2, sequence - (row * sequence) // (2 * batch) - sequence // 8)
            ids[row, 0], ids[row, real - 1] = 101, 102
            ids[row, real:] = 0
            mask[row, real:] = 0
        return {"input_ids": ids, "attention_mask": mask}
    if model == "vad":
        layers, hidden = VAD_STATE
        batch = shapes["input"][0]
        return {"input": (0.1 * rng.standard_normal((batch, 512))).astype(np.float32),
                "sr": np.array(case["values"]["sr"], dtype=np.int64),
                "h": (0.1 * rng.standard_normal((layers, batch, hidden))).astype(np.float32),
                "c": (0.1 * rng.standard_normal((layers, batch, hidden))).astype(np.float32)}
    return {"input": rng.standard_normal(shapes["input"]).astype(np.float32)}


def build_torch_model(name):
    """The torch module of `name`, random weights from SEED, in eval mode."""
    import torch
    import torchvision
    from torch import nn
    import torch.nn.functional as F
    sys.path.insert(0, os.path.dirname(GENERATE_MODELS))
    import generate_models as gm

    def calibrate(model, shape, seed):
        # As gm.calibrate_batch_norm, for any input shape and BatchNorm1d/2d.
        generator = torch.Generator().manual_seed(seed)
        for module in model.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                module.reset_running_stats()
                module.momentum = None
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn(*shape, generator=generator))
        model.eval()

    def conv_bn(cin, cout, stride=1):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True))

    class Crnn(nn.Module):
        def __init__(self, classes):
            super().__init__()
            self.backbone = nn.Sequential(
                conv_bn(1, 32), nn.MaxPool2d(2),                  # 16 x W/2
                conv_bn(32, 64), nn.MaxPool2d(2),                 # 8 x W/4
                conv_bn(64, 128), conv_bn(128, 128), nn.MaxPool2d((2, 1)),  # 4 x W/4
                conv_bn(128, 256), nn.MaxPool2d((2, 1)),          # 2 x W/4
                nn.Conv2d(256, 256, (2, 1)), nn.ReLU(inplace=True))  # 1 x W/4
            self.rnn = nn.LSTM(256, 128, num_layers=2, bidirectional=True)
            self.classifier = nn.Linear(256, classes)
            # Default init leaves the LSTM's small outputs with near-uniform logits (all rows
            # close to log(1/37)), which hides differences; spread them like a trained model's.
            nn.init.normal_(self.classifier.weight, std=2.0)

        def forward(self, x):
            features = self.backbone(x).squeeze(2).permute(2, 0, 1)  # [T, B, 256]
            sequence, _ = self.rnn(features)
            return F.log_softmax(self.classifier(sequence), dim=2)

    class DbNet(nn.Module):
        def __init__(self):
            super().__init__()
            channels = [16, 32, 64, 128]
            self.stem = nn.Sequential(conv_bn(3, 16, 2), conv_bn(16, 16, 2))  # 1/4
            self.stages = nn.ModuleList()
            cin = 16
            for i, cout in enumerate(channels):
                self.stages.append(nn.Sequential(conv_bn(cin, cout, 1 if i == 0 else 2),
                                                 conv_bn(cout, cout)))
                cin = cout
            self.lateral = nn.ModuleList(nn.Conv2d(c, 64, 1) for c in channels)
            self.smooth = nn.ModuleList(nn.Conv2d(64, 16, 3, padding=1) for _ in channels)
            self.head = nn.Sequential(
                nn.Conv2d(64, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                nn.ConvTranspose2d(16, 16, 2, 2), nn.BatchNorm2d(16), nn.ReLU(),
                nn.ConvTranspose2d(16, 1, 2, 2))

        def forward(self, x):
            x = self.stem(x)
            features = []
            for stage in self.stages:
                x = stage(x)
                features.append(x)
            laterals = [conv(f) for conv, f in zip(self.lateral, features)]
            for i in range(len(laterals) - 1, 0, -1):  # top-down, nearest
                laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], scale_factor=2.0,
                                                                  mode="nearest")
            pyramid = [smooth(p) for smooth, p in zip(self.smooth, laterals)]
            pyramid = [pyramid[0]] + [
                F.interpolate(p, scale_factor=float(2 ** i), mode="bilinear", align_corners=False)
                for i, p in enumerate(pyramid[1:], 1)]
            return torch.sigmoid(self.head(torch.cat(pyramid, dim=1)))

    class SentenceEncoder(nn.Module):
        def __init__(self, vocab, hidden, layers, heads, intermediate, max_positions):
            super().__init__()
            self.word_embeddings = nn.Embedding(vocab, hidden)
            self.position_embeddings = nn.Embedding(max_positions, hidden)
            self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList(gm.BertLayer(hidden, heads, intermediate)
                                        for _ in range(layers))
            self.apply(gm.BertEncoder.init_weights)

        def forward(self, input_ids, attention_mask):
            positions = torch.arange(input_ids.shape[1], dtype=torch.int64).unsqueeze(0)
            hidden = self.embedding_norm(self.word_embeddings(input_ids)
                                         + self.position_embeddings(positions))
            additive_mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
            for layer in self.layers:
                hidden = layer(hidden, additive_mask)
            mask = attention_mask.unsqueeze(-1).to(torch.float32)
            pooled = (hidden * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
            return F.normalize(pooled, p=2.0, dim=1)

    def stft_magnitude(x: torch.Tensor, weight: torch.Tensor, hop: int) -> torch.Tensor:
        """|STFT|-like: reflect padding, a strided Conv1d to real and imaginary parts."""
        window = weight.shape[2]
        padded = F.pad(x.unsqueeze(1), [window // 4, window // 4], mode="reflect")
        spectrum = F.conv1d(padded, weight, None, [hop])
        bins = weight.shape[0] // 2
        real, imag = spectrum[:, :bins], spectrum[:, bins:]
        return torch.sqrt(real * real + imag * imag + 1e-9)

    def branch_on_rate(x: torch.Tensor, sr: torch.Tensor, at16k: torch.Tensor,
                       at8k: torch.Tensor) -> torch.Tensor:
        if bool(sr == 16000):
            return stft_magnitude(x, at16k, 128)  # 640 padded samples -> 4 frames
        else:
            return F.avg_pool1d(stft_magnitude(x, at8k, 64), [2])  # 576 -> 8 frames -> 4

    # Scripted, so that the trace keeps the branch: the export holds an If on `sr`.
    branch_on_rate = torch.jit.script(branch_on_rate)

    class FrontEnd(nn.Module):
        def __init__(self, bins=64):
            super().__init__()
            self.at16k = nn.Parameter(torch.randn(2 * bins, 1, 256) / 16.0)
            self.at8k = nn.Parameter(torch.randn(2 * bins, 1, 128) / 11.3)

        def forward(self, x, sr):
            return branch_on_rate(x, sr, self.at16k, self.at8k)

    class Vad(nn.Module):
        def __init__(self, layers, hidden):
            super().__init__()
            self.front = FrontEnd()
            self.encoder = nn.Sequential(
                nn.Conv1d(64, 128, 3, padding=1), nn.ReLU(),
                nn.Conv1d(128, 64, 3, padding=1), nn.ReLU(),
                nn.Conv1d(64, hidden, 1), nn.ReLU())
            self.lstm = nn.LSTM(hidden, hidden, num_layers=layers, batch_first=True)
            self.decoder = nn.Linear(hidden, 1)
            nn.init.normal_(self.decoder.weight, std=2.0)  # probabilities away from 0.5

        def forward(self, x, sr, h, c):
            features = self.encoder(torch.log(self.front(x, sr) + 1e-3)).transpose(1, 2)
            sequence, (hn, cn) = self.lstm(features, (h, c))
            return torch.sigmoid(self.decoder(sequence[:, -1])), hn, cn

    torch.manual_seed(SEED)
    if name in ("resnet50", "mobilenetv2"):
        model = torchvision.models.resnet50(weights=None) if name == "resnet50" \
            else torchvision.models.mobilenet_v2(weights=None)
        gm.calibrate_batch_norm(model, SEED + 1)
    elif name == "bert":
        model = gm.BertEncoder(**BERT_CONFIG)
    elif name == "crnn":
        model = Crnn(CRNN_CLASSES)
        calibrate(model, (4, 1, 32, 160), SEED + 1)
    elif name == "dbnet":
        model = DbNet()
        calibrate(model, (2, 3, 320, 320), SEED + 1)
    elif name == "sentence":
        model = SentenceEncoder(**SENTENCE_CONFIG)
    elif name == "vad":
        model = Vad(*VAD_STATE)
    return model.eval()

# ---- models end ----------------------------------------------------------------------------


def stamp():
    with open(os.path.abspath(__file__)) as f:
        text = f.read()
    section = text[text.index("# ---- models begin"):text.index("# ---- models end")]
    digest = hashlib.sha256(section.encode())
    with open(GENERATE_MODELS, "rb") as f:
        digest.update(f.read())
    versions = subprocess.run(
        ["/usr/bin/python3", "-c",
         "import torch, torchvision, onnx; print(torch.__version__, torchvision.__version__, "
         "onnx.__version__)"], capture_output=True, text=True, check=True).stdout
    digest.update(versions.encode())
    return digest.hexdigest()


def generate_worker(name, directory):
    """Runs in a child process (torch): writes dynamic.onnx, static.onnx, inputs/, meta.json."""
    import numpy as np
    import onnx
    import torch
    sys.path.insert(0, os.path.dirname(GENERATE_MODELS))
    import generate_models as gm
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    spec = MODELS[name]
    started = time.monotonic()
    model = build_torch_model(name)
    first = make_inputs(name, spec["cases"][0], SEED + 2)
    args = tuple(torch.from_numpy(v) for v in first.values())
    meta = {"name": name, "opset": OPSET, "seed": SEED, "exports": {}}
    for kind in ("dynamic", "static"):
        path = os.path.join(directory, kind + ".onnx")
        began = time.monotonic()
        with torch.no_grad():
            torch.onnx.export(model, args, path, opset_version=OPSET, do_constant_folding=True,
                              input_names=list(first), output_names=spec["outputs"],
                              dynamic_axes=spec["dynamic_axes"] if kind == "dynamic" else None)
        ops = gm.check_standard(path)
        proto = onnx.load(path)
        declared = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
                    for v in proto.graph.input}
        if name == "vad" and "If" not in ops:
            raise SystemExit(f"{path}: the export has no If node")
        meta["exports"][kind] = {"ops": ops, "nodes": len(proto.graph.node), "inputs": declared,
                                 "bytes": os.path.getsize(path),
                                 "export_seconds": round(time.monotonic() - began, 1)}
    for index, case in enumerate(spec["cases"]):
        folder = os.path.join(directory, "inputs", str(index))
        os.makedirs(folder)
        for input_name, value in make_inputs(name, case, SEED + 2 + index).items():
            np.save(os.path.join(folder, input_name + ".npy"), value)
    meta["generate_seconds"] = round(time.monotonic() - started, 1)
    with open(os.path.join(directory, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
    return meta


def build_cached(cache, name, current, command, what, cwd_in_target=False):
    """Runs `command` + [target] in a child, which writes a model directory with a meta.json into
    target (a scratch folder under `cache`); stamps meta.json with `current` and moves target to
    cache/name only once it is complete, so that an interrupted run never leaves a half-written
    model behind. Exits naming `what` when the child fails; returns the meta."""
    import shutil
    directory = os.path.join(cache, name)
    scratch = tempfile.mkdtemp(prefix=f".{name}-", dir=cache)
    try:
        target = os.path.join(scratch, name)
        os.makedirs(target)
        worker = subprocess.run(command + [target], capture_output=True, text=True,
                                cwd=target if cwd_in_target else None)
        if worker.returncode != 0:
            sys.exit(f"{what} failed:\n{worker.stderr[-4000:]}")
        with open(os.path.join(target, "meta.json")) as f:
            meta = json.load(f)
        meta["stamp"] = current
        with open(os.path.join(target, "meta.json"), "w") as f:
            json.dump(meta, f, indent=2)
        shutil.rmtree(directory, ignore_errors=True)
        os.rename(target, directory)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return meta


def ensure_models(cache, names):
    current = stamp()
    os.makedirs(cache, exist_ok=True)
    for name in names:
        directory = os.path.join(cache, name)
        try:
            with open(os.path.join(directory, "meta.json")) as f:
                if json.load(f).get("stamp") == current and all(
                        os.path.isfile(os.path.join(directory, kind + ".onnx"))
                        for kind in ("dynamic", "static")):
                    continue
        except (OSError, ValueError):
            pass
        log(f"generating {name} into {cache}")
        # The exporter's warnings only matter when it fails.
        meta = build_cached(cache, name, current, ["/usr/bin/python3", os.path.abspath(__file__),
                                                   "--generate-worker", name],
                            f"dynamic_shapes: generating {name}")
        exports = meta["exports"]
        log(f"  {name}: {meta['generate_seconds']}s; dynamic {exports['dynamic']['nodes']} nodes "
            f"({exports['dynamic']['export_seconds']}s), static {exports['static']['nodes']} nodes; "
            f"ops {', '.join(exports['dynamic']['ops'])}")


def case_inputs(cache, name, index):
    folder = os.path.join(cache, name, "inputs", str(index))
    return {f[:-4]: os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".npy")}


# ---- environment ---------------------------------------------------------------------------

def ensure_venv(venv, openvino):
    """The shared benchmark venv, with OpenVINO too unless skipped; returns its python."""
    return bench_ensure_venv(venv, [("openvino", OV_VERSION)] if openvino else [])


# ---- the three runtimes ----------------------------------------------------------------------

def run_loom(args, model_path, inputs, out_dir, warmup, repeat):
    """One infer-run; returns its JSON report (with `rss_mib` added) and the outputs."""
    import numpy as np
    command = [args.infer_run, model_path, "--device", args.device, "--threads",
               str(args.threads), "--warmup", str(warmup), "--repeat", str(repeat), "--json",
               "--json-max-values", "0", "--output", out_dir]
    for plugin in args.plugin:
        command += ["--plugin", plugin]
    for name, path in inputs.items():
        command += ["--input", f"{name}={path}"]
    stdout, rss = run_measured(command)
    report = json.loads(stdout)
    report["rss_mib"] = rss
    outputs = {name: np.load(os.path.join(out_dir, name + ".npy")) for name in report["outputs"]}
    return report, outputs


def run_worker(args, python, runtime, model_path, inputs, out_file):
    """ORT or OpenVINO in a venv child; returns (median ms, first-run ms, load ms, RSS, outputs)."""
    import numpy as np
    command = [python, os.path.abspath(__file__), "--runtime-worker", runtime, model_path, out_file,
               "--threads", str(args.threads), "--warmup", str(args.warmup), "--repeat",
               str(args.repeat)]
    for name, path in inputs.items():
        command += ["--worker-input", f"{name}={path}"]
    stdout, rss = run_measured(command)
    report = json.loads(stdout)
    with np.load(out_file) as data:
        outputs = {k: data[k] for k in data.files}
    return (statistics.median(report["latencies_ms"]), report["first_run_ms"], report["load_ms"],
            rss, outputs)


def runtime_worker(args):
    """Runs inside the venv: one session, its first run timed, then warmup, then repeat."""
    import numpy as np
    feeds = {}
    for item in args.worker_input:
        name, path = item.split("=", 1)
        feeds[name] = np.load(path)
    start = time.perf_counter()
    if args.runtime_worker == "ort":
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(args.model_file, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]

        def run():
            return session.run(None, feeds)
    else:
        import openvino as ov
        core = ov.Core()
        compiled = core.compile_model(core.read_model(args.model_file), "CPU", {
            "INFERENCE_NUM_THREADS": args.threads, "INFERENCE_PRECISION_HINT": "f32",
            "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
        request = compiled.create_infer_request()
        names = [o.get_any_name() for o in compiled.outputs]

        def run():
            results = request.infer(feeds)
            return [np.array(results[o]) for o in compiled.outputs]
    load_ms = (time.perf_counter() - start) * 1000.0
    start = time.perf_counter()
    outputs = run()
    first_ms = (time.perf_counter() - start) * 1000.0
    for _ in range(args.warmup):
        run()
    latencies = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        outputs = run()
        latencies.append((time.perf_counter() - start) * 1000.0)
    np.savez(args.worker_output, **dict(zip(names, outputs)))
    print(json.dumps({"load_ms": load_ms, "first_run_ms": first_ms, "latencies_ms": latencies}))


# ---- analysis --------------------------------------------------------------------------------

def compare(actual_outputs, expected_outputs):
    """Max abs difference and the lowest cosine over the outputs (float64)."""
    import numpy as np
    max_abs, cosines = 0.0, []
    for name, expected in expected_outputs.items():
        if name not in actual_outputs:
            return float("nan"), float("nan")
        actual = actual_outputs[name].astype(np.float64)
        expected = expected.astype(np.float64)
        if actual.shape != expected.shape:
            log(f"  output {name}: shape {actual.shape} vs {expected.shape}")
            return float("inf"), float("nan")
        max_abs = max(max_abs, float(np.max(np.abs(actual - expected))) if actual.size else 0.0)
        a, b = actual.ravel(), expected.ravel()
        norms = np.linalg.norm(a) * np.linalg.norm(b)
        cosines.append(float(a @ b / norms) if norms else float(np.array_equal(a, b)))
    return max_abs, min(cosines) if cosines else float("nan")


def plan_devices(plan, counts=None):
    """Nodes per device in infer-run's plan JSON; the bodies of If/Loop nodes included (the
    control-flow node itself counts for the core's "host (control flow)" step)."""
    counts = {} if counts is None else counts
    if not plan:
        return counts
    for subgraph in plan.get("subgraphs", []):
        device = subgraph.get("device", "?")
        counts[device] = counts.get(device, 0) + int(subgraph.get("nodes", 0))
        for step in subgraph.get("control_flow", []) or []:
            for body in step.get("bodies", []):
                plan_devices(body.get("plan"), counts)
    return counts


def devices_text(counts):
    total = sum(n for d, n in counts.items() if not d.startswith("host"))
    onednn = counts.get("onednn", 0)
    others = ", ".join(f"{d} {n}" for d, n in sorted(counts.items()) if d != "onednn")
    return f"{onednn}/{total}" + (f" ({others})" if others else "")


def first_run_of(args, model_path, inputs, out_dir, report):
    """Loom's first run at this shape in a fresh session: `first_run_ms` of the timed run's report
    when infer-run has it, else one infer-run with --warmup 0 --repeat 1 (its one latency)."""
    if report.get("first_run_ms") is not None:
        return report["first_run_ms"], report["session_ms"], "report"
    cold, _ = run_loom(args, model_path, inputs, out_dir, 0, 1)
    if cold.get("first_run_ms") is not None:
        return cold["first_run_ms"], cold["session_ms"], "report"
    return cold["latency_ms"]["median"], cold["session_ms"], "cold run"


# ---- the memory check -------------------------------------------------------------------------

def build_cycle(args, tmp):
    """Compiles cycle_shapes.c against the build's headers and libloom; returns the binary."""
    bin_dir = os.path.dirname(os.path.abspath(args.infer_run))
    lib_dir = args.lib_dir or os.path.join(os.path.dirname(bin_dir), "lib")
    if not os.path.exists(os.path.join(lib_dir, "libloom.so")):
        raise RuntimeError(f"no libloom.so in {lib_dir} (pass --lib-dir)")
    source_dir = REPO  # the headers of the tree the build was made from, where it says
    try:
        with open(os.path.join(os.path.dirname(bin_dir), "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    candidate = line.split("=", 1)[1].strip()
                    if os.path.exists(os.path.join(candidate, "core", "include", "loom", "loom.h")):
                        source_dir = candidate
    except OSError:
        pass
    binary = os.path.join(tmp, "cycle_shapes")
    command = [args.cc, "-std=c99", "-O2", "-Wall", "-I", os.path.join(source_dir, "core", "include"),
               "-I", os.path.join(source_dir, "sdk", "include"), CYCLE_SOURCE, "-L", lib_dir,
               f"-Wl,-rpath,{lib_dir}", "-lloom", "-o", binary]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{built.stderr}")
    log(f"built cycle_shapes against {source_dir} headers and {lib_dir}/libloom.so")
    return binary


def run_cycle(args, binary, name, model_path):
    spec = MODELS[name]
    cases = spec["cycle"](args.cycle_shapes)
    command = [binary, model_path, "--devices", args.device, "--threads", str(args.threads),
               "--runs", str(args.cycle_runs), "--early", str(min(args.cycle_early, args.cycle_runs)),
               "--seed", str(SEED), "--plan-cache", str(args.plan_cache)]
    for plugin in args.plugin:
        command += ["--plugin", plugin]
    for input_name, (lo, hi) in spec.get("int_ranges", {}).items():
        command += ["--int-range", f"{input_name}={lo}:{hi}"]
    for case in cases:
        command.append(",".join(f"{k}={'x'.join(str(d) for d in v)}" for k, v in case["shapes"].items()))
    started = time.monotonic()
    stdout, _ = run_measured(command)
    report = json.loads(stdout)
    memory = report["memory_kib"]
    early, after = memory.get("after_early"), memory["after_all"]
    firsts = [s["first_run_ms"] for s in report["sets"] if s["first_run_ms"] is not None]
    return {
        "runs": report["runs"], "shapes": len(cases), "early_runs": report["early_runs"],
        "seconds": round(time.monotonic() - started, 1), "memory_kib": memory,
        "hwm_ratio": after["vm_hwm"] / early["vm_hwm"] if early else None,
        "rss_ratio": after["vm_rss"] / early["vm_rss"] if early else None,
        "first_run_ms_median": statistics.median(firsts) if firsts else None,
        "first_run_ms_max": max(firsts) if firsts else None,
        "plan_cache": report.get("plan_cache"), "sets": report["sets"],
        "session_ms": report["session_ms"]}


def bench_case(args, python, name, index, case, tmp, loom_dir):
    """ROUNDS alternating rounds of Loom (dynamic, and static at the first shape), ORT and OV at
    one shape; returns the table row."""
    dynamic = os.path.join(args.cache, name, "dynamic.onnx")
    static = os.path.join(args.cache, name, "static.onnx")
    inputs = case_inputs(args.cache, name, index)
    loom, static_ms, ort, ov = [], [], [], []
    loom_out = static_out = ort_out = None
    row = {"model": name, "shape": case["label"], "case_index": index}

    def loom_side(path, key):
        """One timed infer-run; on the first, also the plan's devices and the first run."""
        try:
            report, outputs = run_loom(args, path, inputs, loom_dir, args.warmup, args.repeat)
        except RuntimeError as e:
            log(f"  {name} {case['label']} ({key}): loom failed: {e}")
            row[f"{key}_error"] = str(e)[-2000:]
            return None, None
        if f"{key}_devices" not in row:
            row[f"{key}_devices"] = plan_devices(report.get("plan"))
            row[f"{key}_rss_mib"] = report["rss_mib"]
            (row[f"{key}_first_run_ms"], row[f"{key}_session_ms"],
             row[f"{key}_first_run_source"]) = first_run_of(args, path, inputs, loom_dir, report)
        return report["latency_ms"]["median"], outputs

    for r in range(args.rounds):
        if "loom_error" not in row:
            median, outputs = loom_side(dynamic, "loom")
            if median is not None:
                loom.append(median)
                loom_out = outputs
        if index == 0 and "loom_static_error" not in row:
            median, outputs = loom_side(static, "loom_static")
            if median is not None:
                static_ms.append(median)
                static_out = outputs
        ort_median, ort_first, _, ort_rss, ort_out = run_worker(
            args, python, "ort", dynamic, inputs, os.path.join(tmp, "ort.npz"))
        ort.append(ort_median)
        row.setdefault("ort_first_run_ms", ort_first)
        row["ort_rss_mib"] = ort_rss
        if not args.skip_openvino and "ov_error" not in row:
            try:
                ov_median, ov_first, _, ov_rss, ov_out = run_worker(
                    args, python, "ov", dynamic, inputs, os.path.join(tmp, "ov.npz"))
                ov.append(ov_median)
                row.setdefault("ov_first_run_ms", ov_first)
                row["ov_rss_mib"] = ov_rss
                row["ov_max_abs_diff"], row["ov_cosine"] = compare(ov_out, ort_out)
            except RuntimeError as e:
                log(f"  {name} {case['label']}: openvino failed: {e}")
                row["ov_error"] = str(e)[-2000:]
        log(f"  {name} {case['label']} round {r + 1}: "
            + (f"loom {loom[-1]:.2f} ms, " if loom else "")
            + (f"static {static_ms[-1]:.2f} ms, " if static_ms else "")
            + f"ort {ort[-1]:.2f} ms" + (f", ov {ov[-1]:.2f} ms" if ov else ""))

    def median_of(values):
        return statistics.median(values) if values else None

    row.update({"loom_ms": median_of(loom), "loom_static_ms": median_of(static_ms),
                "ort_ms": median_of(ort), "ov_ms": median_of(ov)})
    row["loom_over_ort"] = ratio(row["loom_ms"], row["ort_ms"])
    row["loom_over_ov"] = ratio(row["loom_ms"], row["ov_ms"])
    row["dynamic_over_static"] = ratio(row["loom_ms"], row["loom_static_ms"])
    row["max_abs_diff"], row["cosine"] = compare(loom_out, ort_out) if loom_out else (None, None)
    if static_out:
        row["static_max_abs_diff"], row["static_cosine"] = compare(static_out, ort_out)
    row["devices_text"] = devices_text(row["loom_devices"]) if "loom_devices" in row else "error"
    return row


# ---- main -------------------------------------------------------------------------------------

def fmt(value, spec=".2f", width=0):
    text = "-" if value is None else format(value, spec)
    return text.rjust(width) if width else text


def ratio(a, b):
    return a / b if a is not None and b else None


def print_tables(args, results, memory, load):
    print(f"\nLoom {args.device} (infer-run) vs ONNX Runtime {ORT_VERSION} CPU vs OpenVINO "
          f"{OV_VERSION if not args.skip_openvino else '(skipped)'} CPU, f32, {args.threads} "
          f"threads, {args.rounds} rounds x {args.repeat} runs (median of round medians), "
          f"load average {load:.2f} at start\n")
    print("| model | shape | loom dyn ms | loom static ms | ort ms | ov ms | loom/ort | loom/ov | "
          "dyn/static | loom 1st run ms | ort 1st | ov 1st | max abs diff | cosine | "
          f"onednn nodes | RSS({args.cycle_runs})/RSS({min(args.cycle_early, args.cycle_runs)}) |")
    print("|---|---|" + "---:|" * 14)
    for r in results:
        rss = memory.get(r["model"]) if r["case_index"] == 0 else None
        rss_text = (fmt(rss.get("hwm_ratio"), ".3f") if rss and not rss.get("error")
                    else "error" if rss else "")
        g = r.get
        print(f"| {r['model']} | {r['shape']} | {fmt(g('loom_ms'))} | {fmt(g('loom_static_ms'))} | "
              f"{fmt(g('ort_ms'))} | {fmt(g('ov_ms'))} | {fmt(g('loom_over_ort'), '.3f')} | "
              f"{fmt(g('loom_over_ov'), '.3f')} | {fmt(g('dynamic_over_static'), '.3f')} | "
              f"{fmt(g('loom_first_run_ms'))} | {fmt(g('ort_first_run_ms'))} | "
              f"{fmt(g('ov_first_run_ms'))} | {fmt(g('max_abs_diff'), '.3g')} | "
              f"{fmt(g('cosine'), '.6f')} | {r['devices_text']} | {rss_text} |")
    print("\nloom 1st run: a fresh session's first run at that shape (session creation not "
          "included; see session_ms in --json-out); onednn nodes: nodes onednn ran / all nodes "
          "(If bodies included, the If step itself not), other devices in parentheses.")
    if memory:
        print(f"\nMemory: one session of the dynamic export, {args.cycle_runs} runs cycling "
              f"{args.cycle_shapes} shapes (cycle_shapes.c); VmHWM/VmRSS in MiB\n")
        early = min(args.cycle_early, args.cycle_runs)
        print(f"| model | HWM after {early} | HWM after all | HWM ratio | RSS after {early} | "
              "RSS after all | "
              "RSS ratio | 1st run ms median | 1st run ms max | plan cache (entries, hits/misses, "
              "evictions) |")
        print("|---|" + "---:|" * 9)
        for name, m in memory.items():
            if m.get("error"):
                print(f"| {name} | error: {m['error'][:200]} |" + " |" * 8)
                continue
            mem = m["memory_kib"]
            after_early = mem.get("after_early") or {}
            cache = m.get("plan_cache")
            cache_text = (f"{cache['entries']}, {cache['hits']}/{cache['misses']}, "
                          f"{cache['evictions']}" if cache else "n/a")
            print(f"| {name} | {fmt(after_early.get('vm_hwm', 0) / 1024, '.0f')} | "
                  f"{mem['after_all']['vm_hwm'] / 1024:.0f} | {fmt(m['hwm_ratio'], '.3f')} | "
                  f"{fmt(after_early.get('vm_rss', 0) / 1024, '.0f')} | {mem['after_all']['vm_rss'] / 1024:.0f} | "
                  f"{fmt(m['rss_ratio'], '.3f')} | {fmt(m['first_run_ms_median'])} | "
                  f"{fmt(m['first_run_ms_max'])} | {cache_text} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--infer-run", default=os.path.join(REPO, "build", "default", "bin", "infer-run"))
    parser.add_argument("--plugin", action="append", default=[], help="passed to infer-run and cycle_shapes")
    parser.add_argument("--lib-dir", help="libloom's directory (default: <infer-run's bin>/../lib)")
    parser.add_argument("--device", default="onednn,cpu", help="infer-run --device")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset")
    parser.add_argument("--cache", default=os.path.join(REPO, "build", "dynamic-models"),
                        help="generated models")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="alternating Loom/ORT/OV rounds")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per round")
    parser.add_argument("--skip-openvino", action="store_true")
    parser.add_argument("--skip-rss", action="store_true", help="skip the cycle_shapes memory check")
    parser.add_argument("--cycle-runs", type=int, default=500)
    parser.add_argument("--cycle-shapes", type=int, default=20)
    parser.add_argument("--cycle-early", type=int, default=20, help="runs before the first RSS reading")
    parser.add_argument("--plan-cache", type=int, default=0,
                        help="the cycling session's plan_cache_entries (0: Loom's default, 16)")
    parser.add_argument("--cc", default="cc")
    parser.add_argument("--venv", default=os.path.join(REPO, "build", "bench-venv"))
    parser.add_argument("--setup", action="store_true", help="only create the venv and the models")
    parser.add_argument("--json-out", help="also write the results to this file")
    parser.add_argument("--runtime-worker", choices=["ort", "ov"], help=argparse.SUPPRESS)
    parser.add_argument("--generate-worker", help=argparse.SUPPRESS)
    parser.add_argument("model_file", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("worker_output", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--worker-input", action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.runtime_worker:
        return runtime_worker(args)
    if args.generate_worker:
        generate_worker(args.generate_worker, args.model_file)
        return 0

    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        parser.error(f"unknown model {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    python = ensure_venv(args.venv, not args.skip_openvino)
    ensure_models(args.cache, models)
    if args.setup:
        return 0
    if not os.path.exists(args.infer_run):
        sys.exit(f"dynamic_shapes: no infer-run at {args.infer_run} (build it, or pass --infer-run)")
    load = os.getloadavg()[0]
    log(f"load average {load:.2f} on {os.cpu_count()} cpus; threads {args.threads}, "
        f"{args.rounds} rounds x {args.repeat} runs")
    results, memory = [], {}
    with tempfile.TemporaryDirectory(prefix="loom-dynamic-") as tmp:
        loom_dir = os.path.join(tmp, "loom")
        os.makedirs(loom_dir)
        cycle_binary = None
        for name in models:
            dynamic = os.path.join(args.cache, name, "dynamic.onnx")
            for index, case in enumerate(MODELS[name]["cases"]):
                results.append(bench_case(args, python, name, index, case, tmp, loom_dir))
            if args.skip_rss:
                continue
            try:
                if cycle_binary is None:
                    cycle_binary = build_cycle(args, tmp)
                log(f"  {name}: {args.cycle_runs} runs cycling {args.cycle_shapes} shapes")
                m = memory[name] = run_cycle(args, cycle_binary, name, dynamic)
                log(f"  {name}: VmHWM ratio {fmt(m['hwm_ratio'], '.3f')}, VmRSS ratio "
                    f"{fmt(m['rss_ratio'], '.3f')}, {m['seconds']}s")
            except RuntimeError as e:
                log(f"  {name}: memory check failed: {e}")
                memory[name] = {"error": str(e)[-2000:]}
    print_tables(args, results, memory, load)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"device": args.device, "threads": args.threads, "rounds": args.rounds,
                       "repeat": args.repeat, "warmup": args.warmup, "ort": ORT_VERSION,
                       "openvino": None if args.skip_openvino else OV_VERSION,
                       "load_average": load, "results": results, "memory": memory}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
