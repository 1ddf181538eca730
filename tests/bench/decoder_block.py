#!/usr/bin/python3
"""Benchmarks one opset-23 transformer decoder block on Loom against ONNX Runtime (CPU, f32).

The model is what a current decoder export holds per layer, written with onnx.helper from
fixed-seed random weights (no download): pre-norm RMSNormalization, Q/K/V projections,
RotaryEmbedding on Q and K (position_ids, cos/sin caches), grouped-query Attention with a
past/present key-value cache and is_causal, the output projection and residual, a second
RMSNormalization, a SwiGLU MLP (silu(x W_gate) * (x W_up), W_down; Sigmoid and Mul, as opset 23
has no SwiGLU) and the residual. Default geometry: Qwen2.5-0.5B's (hidden 896, 14 query heads,
2 key-value heads, head size 64, intermediate 4864), --layers blocks stacked (default 1).

Inputs: hidden [batch, seq, hidden], position_ids [batch, seq] (int64), past_key and
past_value [batch, kv_heads, past, head]; batch, seq and past are symbolic, as in an exported
model. Outputs: the block's hidden state and present_key/present_value per layer.

Phases (each with its own fixed-seed inputs):
  prompt   seq 128 (--prompt), past 0: the prefill of a 128-token prompt
  decode   seq 1, past 512 (--cache-len): one generated token against a 512-token cache
  generate a generation loop as an application runs it: one session, --steps decode steps,
           each feeding the previous step's present key/value as its past (the cache grows
           from --cache-len tokens by one a step, so every step has a new shape); Loom through
           its Python package (`loom`, from --loom-python, default <infer-run's build>/python),
           ORT in its venv; reported per step: the median and the mean (which carries the
           steps that had to plan for a new shape), and the first step

Per phase, ROUNDS rounds alternate Loom (infer-run --device onednn,cpu) and ONNX Runtime (one
session, intra_op_num_threads=--threads, inter_op 1, all graph optimizations) with the same
inputs. Reported: median latencies, Loom/ORT, the lowest cosine and max abs difference of Loom's
outputs against ORT's, and Loom's nodes per device.

The model is generated into --cache (default build/decoder-models) and regenerated when this
file's model section changes. Not part of ctest: run it by hand on a quiet machine, e.g.

  tests/bench/decoder_block.py --infer-run build/default/bin/infer-run
"""

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_onnxruntime import ORT_VERSION, log  # noqa: E402
from bench_vs_onnxruntime import ensure_venv  # noqa: E402
import dynamic_shapes  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---- the model -------------------------------------------------------------------------------

def build_model(hidden, heads, kv_heads, head, inter, layers, max_positions, seed):
    """The decoder block(s) as an onnx ModelProto (opset 23)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def weight(name, shape, scale):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    # Rotary caches as a model stores them: cos/sin of position * inv_freq, [positions, head/2].
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, head, 2, dtype=np.float64) / head))
    angles = np.outer(np.arange(max_positions, dtype=np.float64), inv_freq)
    inits.append(numpy_helper.from_array(np.cos(angles).astype(np.float32), "rope_cos"))
    inits.append(numpy_helper.from_array(np.sin(angles).astype(np.float32), "rope_sin"))

    inputs = [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", hidden]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])]
    outputs = []
    x = "hidden"
    for layer in range(layers):
        p = f"l{layer}_"
        past_k, past_v = p + "past_key", p + "past_value"
        for name in (past_k, past_v):
            inputs.append(helper.make_tensor_value_info(
                name, TensorProto.FLOAT, ["batch", kv_heads, "past", head]))
        # Weights scaled so activations stay O(1) through the block (as trained ones are).
        scale_in = 1.0 / np.sqrt(hidden)
        norm1 = weight(p + "norm1", [hidden], 0.1)
        inits[-1] = numpy_helper.from_array(
            (1.0 + rng.standard_normal(hidden) * 0.1).astype(np.float32), norm1)
        nodes.append(helper.make_node("RMSNormalization", [x, norm1], [p + "n1"], axis=-1,
                                      epsilon=1e-6))
        for proj, width in (("q", heads * head), ("k", kv_heads * head), ("v", kv_heads * head)):
            w = weight(p + "w" + proj, [hidden, width], scale_in)
            nodes.append(helper.make_node("MatMul", [p + "n1", w], [p + proj]))
        for proj, n in (("q", heads), ("k", kv_heads)):
            nodes.append(helper.make_node(
                "RotaryEmbedding", [p + proj, "rope_cos", "rope_sin", "position_ids"],
                [p + proj + "_rot"], num_heads=n))
        nodes.append(helper.make_node(
            "Attention", [p + "q_rot", p + "k_rot", p + "v", "", past_k, past_v],
            [p + "attn", p + "present_key", p + "present_value"], is_causal=1, q_num_heads=heads,
            kv_num_heads=kv_heads))
        wo = weight(p + "wo", [heads * head, hidden], 1.0 / np.sqrt(heads * head))
        nodes.append(helper.make_node("MatMul", [p + "attn", wo], [p + "o"]))
        nodes.append(helper.make_node("Add", [x, p + "o"], [p + "h"]))
        norm2 = p + "norm2"
        inits.append(numpy_helper.from_array(
            (1.0 + rng.standard_normal(hidden) * 0.1).astype(np.float32), norm2))
        nodes.append(helper.make_node("RMSNormalization", [p + "h", norm2], [p + "n2"], axis=-1,
                                      epsilon=1e-6))
        wg = weight(p + "wgate", [hidden, inter], scale_in)
        wu = weight(p + "wup", [hidden, inter], scale_in)
        wd = weight(p + "wdown", [inter, hidden], 1.0 / np.sqrt(inter))
        nodes.append(helper.make_node("MatMul", [p + "n2", wg], [p + "gate"]))
        nodes.append(helper.make_node("MatMul", [p + "n2", wu], [p + "up"]))
        nodes.append(helper.make_node("Sigmoid", [p + "gate"], [p + "gate_sig"]))
        nodes.append(helper.make_node("Mul", [p + "gate", p + "gate_sig"], [p + "silu"]))
        nodes.append(helper.make_node("Mul", [p + "silu", p + "up"], [p + "glu"]))
        nodes.append(helper.make_node("MatMul", [p + "glu", wd], [p + "down"]))
        out = "output" if layer == layers - 1 else p + "out"
        nodes.append(helper.make_node("Add", [p + "h", p + "down"], [out]))
        x = out
        for name in (p + "present_key", p + "present_value"):
            outputs.append(helper.make_tensor_value_info(
                name, TensorProto.FLOAT, ["batch", kv_heads, "total", head]))
    outputs.insert(0, helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                                    ["batch", "seq", hidden]))
    graph = helper.make_graph(nodes, "decoder_block", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)],
                              producer_name="loom tests/bench/decoder_block.py")
    model.ir_version = 10
    return model


def model_stamp(args):
    """Changes when the model section of this file or the geometry changes."""
    with open(os.path.abspath(__file__), "rb") as f:
        source = f.read()
    section = source[source.index(b"# ---- the model"):source.index(b"# ---- running")]
    geometry = f"{args.hidden},{args.heads},{args.kv_heads},{args.head},{args.inter}," \
               f"{args.layers},{args.max_positions}"
    return hashlib.sha256(section + geometry.encode()).hexdigest()[:16]


def phase_inputs(args, folder, seq, past, seed):
    """Writes one phase's inputs as .npy files; returns {name: path}."""
    import numpy as np
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    arrays = {"hidden": rng.standard_normal((1, seq, args.hidden)).astype(np.float32),
              "position_ids": np.arange(past, past + seq, dtype=np.int64).reshape(1, seq)}
    for layer in range(args.layers):
        for kind in ("past_key", "past_value"):
            arrays[f"l{layer}_{kind}"] = rng.standard_normal(
                (1, args.kv_heads, past, args.head)).astype(np.float32)
    paths = {}
    for name, array in arrays.items():
        paths[name] = os.path.join(folder, name + ".npy")
        np.save(paths[name], array)
    return paths


def ensure_model(args):
    """The model and the phases' inputs under --cache/<stamp>; returns (model path, phases)."""
    folder = os.path.join(args.cache, model_stamp(args))
    model_path = os.path.join(folder, "decoder.onnx")
    if not os.path.exists(model_path):
        log(f"generating the decoder block into {folder}")
        os.makedirs(folder, exist_ok=True)
        import onnx
        model = build_model(args.hidden, args.heads, args.kv_heads, args.head, args.inter,
                            args.layers, args.max_positions, seed=2023)
        onnx.save(model, model_path + ".tmp")
        os.replace(model_path + ".tmp", model_path)
    phases = {
        "prompt": phase_inputs(args, os.path.join(folder, f"prompt{args.prompt}"), args.prompt, 0,
                               seed=1),
        "decode": phase_inputs(args, os.path.join(folder, f"decode{args.cache_len}"), 1,
                               args.cache_len, seed=2),
    }
    return model_path, phases


# ---- running ---------------------------------------------------------------------------------

def generate_worker(args):
    """Runs a generation loop in this process (Loom or ORT); prints per-step milliseconds."""
    import time
    import numpy as np
    rng = np.random.default_rng(3)
    if args.generate_worker == "loom":
        sys.path.insert(0, args.loom_python)
        import loom
        session = loom.InferenceSession(args.model_file, devices=args.device.split(","),
                                        threads=args.threads)
    else:
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(args.model_file, options,
                                       providers=["CPUExecutionProvider"])
    past = {}
    for layer in range(args.layers):
        for kind in ("key", "value"):
            past[f"l{layer}_past_{kind}"] = rng.standard_normal(
                (1, args.kv_heads, args.cache_len, args.head)).astype(np.float32)
    steps_ms = []
    for step in range(args.steps):
        position = args.cache_len + step
        feeds = {"hidden": rng.standard_normal((1, 1, args.hidden)).astype(np.float32),
                 "position_ids": np.array([[position]], dtype=np.int64), **past}
        start = time.perf_counter()
        outputs = session.run(None, feeds)
        steps_ms.append((time.perf_counter() - start) * 1000.0)
        for layer in range(args.layers):
            past[f"l{layer}_past_key"] = outputs[1 + 2 * layer]
            past[f"l{layer}_past_value"] = outputs[2 + 2 * layer]
    print(json.dumps({"steps_ms": steps_ms, "last_output": outputs[0].ravel().tolist()}))


def bench_generate(args, python, model_path):
    """The generation loop on both runtimes, alternating rounds."""
    import subprocess
    loom_python = args.loom_python or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(args.infer_run))), "python")
    runs = {"loom": [], "ort": []}
    outputs = {}
    for round_index in range(args.rounds):
        for runtime, interpreter in (("loom", sys.executable), ("ort", python)):
            command = [interpreter, os.path.abspath(__file__), "--generate-worker", runtime,
                       "--model-file", model_path, "--loom-python", loom_python]
            for name in ("device", "threads", "steps", "cache_len", "layers", "kv_heads", "head",
                         "hidden"):
                command += ["--" + name.replace("_", "-"), str(getattr(args, name))]
            result = subprocess.run(command, check=True, capture_output=True, text=True)
            report = json.loads(result.stdout)
            runs[runtime].append(report["steps_ms"])
            outputs[runtime] = report["last_output"]
        log(f"  generate round {round_index + 1}: Loom mean "
            f"{statistics.mean(runs['loom'][-1]):.3f} ms, ORT "
            f"{statistics.mean(runs['ort'][-1]):.3f} ms")
    import numpy as np
    a, b = np.array(outputs["loom"], np.float64), np.array(outputs["ort"], np.float64)
    cosine = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    def summary(rounds):
        return (statistics.median(statistics.median(r) for r in rounds),
                statistics.median(statistics.mean(r) for r in rounds),
                statistics.median(r[0] for r in rounds))
    loom_median, loom_mean, loom_first = summary(runs["loom"])
    ort_median, ort_mean, ort_first = summary(runs["ort"])
    return {"phase": "generate", "loom_ms": loom_median, "ort_ms": ort_median,
            "ratio": loom_median / ort_median, "loom_mean_ms": loom_mean, "ort_mean_ms": ort_mean,
            "mean_ratio": loom_mean / ort_mean, "loom_first_ms": loom_first,
            "ort_first_ms": ort_first, "cosine": cosine, "max_abs": float(np.max(np.abs(a - b))),
            "devices": "?"}

def bench_phase(args, python, model_path, name, inputs, tmp):
    loom_dir = os.path.join(tmp, "loom-" + name)
    os.makedirs(loom_dir, exist_ok=True)
    loom_ms, ort_ms, plan, diff = [], [], None, None
    for round_index in range(args.rounds):
        report, outputs = dynamic_shapes.run_loom(args, model_path, inputs, loom_dir, args.warmup,
                                                  args.repeat)
        loom_ms.append(report["latency_ms"]["median"])
        plan = report.get("plan", plan)
        median, _, _, _, expected = dynamic_shapes.run_worker(
            args, python, "ort", model_path, inputs, os.path.join(tmp, f"ort-{name}.npz"))
        ort_ms.append(median)
        if diff is None:
            diff = dynamic_shapes.compare(outputs, expected)
        log(f"  {name} round {round_index + 1}: Loom {loom_ms[-1]:.3f} ms, ORT {median:.3f} ms")
    loom, ort = statistics.median(loom_ms), statistics.median(ort_ms)
    devices = dynamic_shapes.devices_text(dynamic_shapes.plan_devices(plan))
    return {"phase": name, "loom_ms": loom, "ort_ms": ort, "ratio": loom / ort,
            "max_abs": diff[0], "cosine": diff[1], "devices": devices}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--infer-run", default=os.path.join(REPO, "build", "default", "bin", "infer-run"))
    parser.add_argument("--plugin", action="append", default=[], help="passed to infer-run")
    parser.add_argument("--device", default="onednn,cpu", help="infer-run --device")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="alternating Loom/ORT rounds")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per round")
    parser.add_argument("--phases", default="prompt,decode,generate")
    parser.add_argument("--prompt", type=int, default=128, help="prompt tokens")
    parser.add_argument("--cache-len", type=int, default=512, help="past tokens when decoding")
    parser.add_argument("--hidden", type=int, default=896)
    parser.add_argument("--heads", type=int, default=14)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--head", type=int, default=64)
    parser.add_argument("--inter", type=int, default=4864)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--max-positions", type=int, default=4096)
    parser.add_argument("--cache", default=os.path.join(REPO, "build", "decoder-models"))
    parser.add_argument("--venv", default=os.path.join(REPO, "build", "bench-venv"))
    parser.add_argument("--setup", action="store_true", help="only create the venv and the model")
    parser.add_argument("--json-out", help="also write the results to this file")
    parser.add_argument("--steps", type=int, default=32, help="decode steps of the generate phase")
    parser.add_argument("--loom-python", help="directory holding the loom package (generate)")
    parser.add_argument("--generate-worker", choices=["loom", "ort"], help=argparse.SUPPRESS)
    parser.add_argument("--model-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_worker:
        generate_worker(args)
        return 0
    if args.heads % args.kv_heads or args.head % 2:
        parser.error("--heads must be a multiple of --kv-heads and --head even")
    if args.prompt + args.cache_len > args.max_positions:
        parser.error("--prompt and --cache-len exceed --max-positions")

    python = ensure_venv(args.venv)
    model_path, phases = ensure_model(args)
    if args.setup:
        return 0
    if not os.path.exists(args.infer_run):
        sys.exit(f"decoder_block: no infer-run at {args.infer_run} (build it, or pass --infer-run)")
    load = os.getloadavg()[0]
    log(f"load average {load:.2f} on {os.cpu_count()} cpus; threads {args.threads}, "
        f"{args.rounds} rounds x {args.repeat} runs")
    results = []
    with tempfile.TemporaryDirectory(prefix="loom-decoder-") as tmp:
        for name in [p for p in args.phases.split(",") if p]:
            if name == "generate":
                results.append(bench_generate(args, python, model_path))
                continue
            if name not in phases:
                parser.error(f"unknown phase {name}; choose from {', '.join(phases)}, generate")
            results.append(bench_phase(args, python, model_path, name, phases[name], tmp))
    print(f"decoder block x{args.layers}: hidden {args.hidden}, heads {args.heads}/{args.kv_heads}"
          f" x {args.head}, intermediate {args.inter}; {args.threads} threads, ORT {ORT_VERSION}, "
          f"load {load:.2f}")
    print(f"| phase | Loom ms | ORT ms | Loom/ORT | cosine | max abs | Loom devices |")
    print("|---|---:|---:|---:|---:|---:|---|")
    what = {"prompt": f"prompt {args.prompt}", "decode": f"decode, cache {args.cache_len}",
            "generate": f"generate {args.steps} steps from cache {args.cache_len}, median step"}
    for r in results:
        print(f"| {what[r['phase']]} | {r['loom_ms']:.3f} | {r['ort_ms']:.3f} | {r['ratio']:.2f}x"
              f" | {r['cosine']:.6f} | {r['max_abs']:.2e} | {r['devices']} |")
    for r in results:
        if r["phase"] == "generate":
            print(f"generate: mean step Loom {r['loom_mean_ms']:.3f} ms, ORT {r['ort_mean_ms']:.3f}"
                  f" ms ({r['mean_ratio']:.2f}x); first step Loom {r['loom_first_ms']:.1f} ms, ORT "
                  f"{r['ort_first_ms']:.1f} ms")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"device": args.device, "threads": args.threads, "ort": ORT_VERSION,
                       "load_average": load, "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
