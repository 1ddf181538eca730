#!/usr/bin/python3
"""Generates the end-to-end test models with fixed-seed random weights, inputs and torch outputs.

For each model it writes <cache>/<name>/:
  model.onnx                  opset 17, batch 1, standard ONNX ops only
  inputs/<input name>.npy     fixed-seed inputs
  reference/<output name>.npy what torch computes for those inputs (eval mode, float32)
  meta.json                   names, shapes, dtypes, the generator's stamp, timings, sizes

A model is regenerated only when its directory is missing or the stamp (a hash of this script
and the torch/onnx versions) differs, so the ctest fixture is cheap after the first run. Each
model is written to a temporary directory and renamed into place, so an interrupted run never
leaves a half-written model behind.

Models: resnet50 and mobilenetv2 (torchvision, 1x3x224x224) and bert (a BERT-base-shaped encoder
built from torch.nn: hidden 768, 12 layers, 12 heads, intermediate 3072, sequence 128; inputs
input_ids and attention_mask, int64 [1,128]; outputs last_hidden_state and pooler_output).
Debian has no python3-transformers, hence the hand-built encoder, which follows BertModel's
layout (post-LayerNorm, erf GELU, additive -10000 attention mask, tanh pooler).
"""

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.checker
import onnx.defs
import torch
import torchvision
from torch import nn

OPSET = 17
SEED = 1234
MODELS = ("resnet50", "mobilenetv2", "bert")


def default_cache():
    return os.environ.get("LOOM_MODEL_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "loom", "models")


def stamp():
    with open(os.path.abspath(__file__), "rb") as f:
        digest = hashlib.sha256(f.read())
    digest.update(f"torch {torch.__version__} onnx {onnx.__version__}".encode())
    return digest.hexdigest()


# ---------------------------------------------------------------------------- vision models


def calibrate_batch_norm(model, seed):
    """Sets BatchNorm running statistics from random images.

    Freshly initialised BatchNorm layers hold mean 0 / variance 1, which lets activations grow
    through the residual stacks; estimating the statistics once keeps the values in the ranges
    a trained network sees, so the numeric comparison is representative.
    """
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None  # cumulative average over the calibration batches
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(4, 3, 224, 224, generator=generator))
    model.eval()


def vision_model(name):
    torch.manual_seed(SEED)
    if name == "resnet50":
        model = torchvision.models.resnet50(weights=None)
    else:
        model = torchvision.models.mobilenet_v2(weights=None)
    calibrate_batch_norm(model, SEED + 1)
    generator = torch.Generator().manual_seed(SEED + 2)
    inputs = {"input": torch.randn(1, 3, 224, 224, generator=generator)}
    return model, inputs, ["logits"], None


# ---------------------------------------------------------------------------- BERT encoder

BERT = dict(vocab=30522, hidden=768, layers=12, heads=12, intermediate=3072, max_positions=512,
            type_vocab=2, sequence=128)


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)

    def split_heads(self, x):
        batch, sequence, _ = x.shape
        return x.view(batch, sequence, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden_states, additive_mask):
        q = self.split_heads(self.query(hidden_states))
        k = self.split_heads(self.key(hidden_states))
        v = self.split_heads(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        probs = torch.softmax(scores + additive_mask, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3)
        context = context.reshape(hidden_states.shape)
        return self.norm(self.output(context) + hidden_states)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, hidden_states, additive_mask):
        attended = self.attention(hidden_states, additive_mask)
        expanded = nn.functional.gelu(self.intermediate(attended))  # erf form, as in BERT
        return self.norm(self.output(expanded) + attended)


class BertEncoder(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, intermediate, max_positions, type_vocab,
                 **_):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(
            BertLayer(hidden, heads, intermediate) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        self.apply(self.init_weights)

    @staticmethod
    def init_weights(module):
        # BERT's N(0, 0.02) weights. Biases and LayerNorm scales/offsets get small random values
        # rather than BERT's zeros and ones: a trained model has such values, a bias or affine
        # bug then changes the result, and the exporter cannot merge equal initialisers.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
        if isinstance(module, nn.Linear):
            module.bias.data.normal_(mean=0.0, std=0.02)
        if isinstance(module, nn.LayerNorm):
            module.weight.data.normal_(mean=1.0, std=0.1)
            module.bias.data.normal_(mean=0.0, std=0.1)

    def forward(self, input_ids, attention_mask):
        sequence = input_ids.shape[1]
        positions = torch.arange(sequence, dtype=torch.int64).unsqueeze(0)
        token_types = torch.zeros_like(input_ids)
        hidden_states = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
                         + self.token_type_embeddings(token_types))
        hidden_states = self.embedding_norm(hidden_states)
        # [B,S] 1 = attend, 0 = padding  ->  [B,1,1,S] additive mask, as BertModel does.
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            hidden_states = layer(hidden_states, additive_mask)
        pooled = torch.tanh(self.pooler(hidden_states[:, 0]))
        return hidden_states, pooled


def bert_model():
    torch.manual_seed(SEED)
    model = BertEncoder(**BERT).eval()
    generator = torch.Generator().manual_seed(SEED + 2)
    sequence = BERT["sequence"]
    input_ids = torch.randint(0, BERT["vocab"], (1, sequence), generator=generator)
    input_ids[0, 0] = 101  # [CLS] and [SEP] where a tokenizer puts them, for realism only
    real_tokens = sequence - 28  # the tail is padding, so the mask matters to the result
    input_ids[0, real_tokens - 1] = 102
    input_ids[0, real_tokens:] = 0
    attention_mask = torch.zeros(1, sequence, dtype=torch.int64)
    attention_mask[0, :real_tokens] = 1
    inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    return model, inputs, ["last_hidden_state", "pooler_output"], None


# ---------------------------------------------------------------------------- export


def check_standard(path):
    """Fails unless the file is a valid opset-17 model made of standard ONNX ops only."""
    onnx.checker.check_model(path, full_check=True)  # path form: works past 2 GB as well
    proto = onnx.load(path, load_external_data=False)
    opsets = {o.domain or "ai.onnx": o.version for o in proto.opset_import}
    if opsets != {"ai.onnx": OPSET}:
        raise SystemExit(f"{path}: expected only ai.onnx opset {OPSET}, got {opsets}")
    for node in proto.graph.node:
        schema = onnx.defs.get_schema(node.op_type, OPSET, node.domain)
        if schema.since_version > OPSET:
            raise SystemExit(f"{path}: {node.op_type} needs opset {schema.since_version}")
    return sorted({n.op_type for n in proto.graph.node})


def generate(name, directory):
    started = time.monotonic()
    model, inputs, output_names, dynamic_axes = (
        bert_model() if name == "bert" else vision_model(name))
    model.eval()
    with torch.no_grad():
        outputs = model(*inputs.values())
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    os.makedirs(os.path.join(directory, "inputs"))
    os.makedirs(os.path.join(directory, "reference"))
    for input_name, value in inputs.items():
        np.save(os.path.join(directory, "inputs", input_name + ".npy"), value.numpy())
    for output_name, value in zip(output_names, outputs):
        np.save(os.path.join(directory, "reference", output_name + ".npy"), value.numpy())
    model_path = os.path.join(directory, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, tuple(inputs.values()), model_path, opset_version=OPSET,
                          do_constant_folding=True, input_names=list(inputs),
                          output_names=output_names, dynamic_axes=dynamic_axes)
    del model
    ops = check_standard(model_path)
    meta = {
        "name": name,
        "stamp": stamp(),
        "opset": OPSET,
        "seed": SEED,
        "ops": ops,
        "inputs": {k: {"shape": list(v.shape), "dtype": str(v.numpy().dtype)}
                   for k, v in inputs.items()},
        "outputs": {k: {"shape": list(v.shape), "dtype": str(v.numpy().dtype)}
                    for k, v in zip(output_names, outputs)},
        "model_bytes": os.path.getsize(model_path),
        "generate_seconds": round(time.monotonic() - started, 1),
        "torch": torch.__version__,
    }
    with open(os.path.join(directory, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return meta


def up_to_date(directory):
    try:
        with open(os.path.join(directory, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    return meta.get("stamp") == stamp() and os.path.isfile(os.path.join(directory, "model.onnx"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help=f"models to generate: {', '.join(MODELS)} (default: all)")
    parser.add_argument("--cache", default=default_cache(),
                        help="cache directory (default: $LOOM_MODEL_CACHE or ~/.cache/loom/models)")
    parser.add_argument("--force", action="store_true", help="regenerate even if up to date")
    args = parser.parse_args()
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        parser.error(f"unknown model {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.cache, exist_ok=True)
    for name in args.models or MODELS:
        directory = os.path.join(args.cache, name)
        if not args.force and up_to_date(directory):
            print(f"{name}: up to date in {directory}")
            continue
        scratch = tempfile.mkdtemp(prefix=f".{name}-", dir=args.cache)
        try:
            meta = generate(name, os.path.join(scratch, name))
            shutil.rmtree(directory, ignore_errors=True)
            os.rename(os.path.join(scratch, name), directory)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"{name}: generated in {meta['generate_seconds']}s, model.onnx "
              f"{meta['model_bytes'] / 1e6:.1f} MB, ops: {', '.join(meta['ops'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
