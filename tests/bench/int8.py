#!/usr/bin/python3
"""Benchmarks Loom on int8 models against ONNX Runtime and OpenVINO (CPU), and checks accuracy.

Issue #26. Models: the static f32 exports of tests/bench/dynamic_shapes.py (generated into
--f32-cache, default build/dynamic-models, by its ensure_models: random weights, fixed seeds;
resnet50 and mobilenetv2 take `input` float [1,3,224,224], bert, the 4-layer BERT-base-width
encoder, `input_ids` and `attention_mask` int64 [1,32]), quantized by onnxruntime's quantizer
after onnxruntime.quantization.shape_inference.quant_pre_process:

  resnet50, mobilenetv2  quantize_static, QuantFormat.QDQ, per channel, QUInt8 activations,
                         QInt8 weights, MinMax calibration on 8 inputs drawn from a seeded numpy
                         generator (standard normal, like the benchmark's inputs)
  bert                   quantize_dynamic, QInt8 weights (DynamicQuantizeLinear + MatMulInteger)

The quantization runs in the benchmark venv's python (a child process); onnxruntime's quantizer
needs `ml_dtypes` and an `onnx` with `onnx.reference`, which Debian's onnx 1.12 lacks, so they
are installed into the venv when missing (`pip install --no-deps "ml_dtypes<0.5" onnx==1.17.0`:
without --no-deps, ml_dtypes>=0.5 would pull numpy 2 over Debian's). The int8 models are cached
in --cache (default build/int8-models/<model>/int8.onnx) with a stamp (a hash of this file's
quantization section, the f32 model's stamp and the onnxruntime/onnx versions) and regenerated
only when it changes.

Latency: per model, ROUNDS alternating rounds of Loom (infer-run --device onednn,cpu on the int8
model), ONNX Runtime (the same int8 model; intra_op_num_threads=N, inter_op 1) and OpenVINO
(reading the same QDQ / dynamically quantized model; CPU, INFERENCE_NUM_THREADS=N,
INFERENCE_PRECISION_HINT=f32, which leaves its int8 paths on), then Loom on the f32 model, all
with the same input files and N threads (--threads, default 2). The infer-run and ORT/OV child
processes are dynamic_shapes.py's (run_loom, run_worker: imported, not copied). Reported: the
medians of the round medians, the ratios Loom/ORT, Loom/OV and Loom int8 / Loom f32 (the issue's
criterion: ResNet-50 int8 <= 0.5x Loom's own f32), Loom's first run and session creation, the
max abs difference and cosine of Loom's int8 outputs against ORT's, and the nodes per device of
Loom's plan (onednn / all; the rest fell back).

Accuracy, over fixed inputs drawn from seeds (--samples, default 100, for the CNNs;
--bert-samples, default 20, for bert): top-1 agreement (argmax of the logits) of Loom int8 with
ORT int8 and with the f32 model (ORT f32 being the f32 model's reference), ORT int8 against f32
beside them (what the quantization itself costs), and the mean and lowest cosine of the outputs
(for bert the only measure). The weights are random, so the CNNs' logits lie close together and
their top-1 flips under small perturbations: the ORT int8 vs f32 column is the yardstick, and
the tables also give how often the top-1 lies in the reference's top 5. Loom's outputs come from
one child process of the build's Python package (build/python-venv/bin/python with
PYTHONPATH=<infer-run's bin>/../python, see docs/python.md) when `import loom` works there, else
from one infer-run per input; the latencies always come from infer-run. With --bf16
(the default; --no-bf16 skips it) the same is done for Loom `--precision bf16` on the three f32
models against ORT f32: max abs difference relative to the range of ORT's output, top-1 agreement
(CNNs), cosine. Without AVX-512 BF16 the onednn device warns and computes in f32; the warning is
shown as the row's note. Every Loom accuracy pass has a time budget per model (--accuracy-budget,
--bf16-budget, seconds): it stops after the input that crosses it and reports how many inputs it
covered; a pass that fails or covers none prints "n/a" and why.

ONNX Runtime (1.30.0) and OpenVINO (2026.4.1) come from the shared benchmark venv (--venv,
default build/bench-venv, created on first use). Not part of ctest: run it by hand on a quiet
machine, e.g.

  tests/bench/int8.py --json-out int8.json
  tests/bench/int8.py --models mobilenetv2 --rounds 1 --repeat 3 --samples 10
  tests/bench/int8.py --setup          # only the venv, the f32 and the int8 models
"""

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Shared with the other benchmarks: the ONNX Runtime version, logging, timed child processes,
# and dynamic_shapes' f32 models, venv, infer-run runner and ORT/OV workers.
from bench_vs_onnxruntime import ORT_VERSION, log, run_measured  # noqa: E402
import dynamic_shapes  # noqa: E402

REPO = dynamic_shapes.REPO
OV_VERSION = dynamic_shapes.OV_VERSION
MODELS = ("resnet50", "mobilenetv2", "bert")
CNNS = ("resnet50", "mobilenetv2")
# What onnxruntime's quantizer needs beyond onnxruntime, installed with --no-deps.
QUANT_PACKAGES = ["ml_dtypes<0.5", "onnx==1.17.0"]


# ---- quantization begin (the stamp hashes the text from here to "quantization end") ---------

CALIBRATION_SEED = 2600
CALIBRATION_SAMPLES = 8
ACCURACY_SEED = 2601  # sample i of the accuracy pass is drawn from ACCURACY_SEED + i


def quantize_worker(name, source, directory):
    """Runs in the venv: writes directory/int8.onnx and directory/meta.json."""
    import numpy as np
    import onnx
    import onnxruntime
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    started = time.monotonic()
    prepared = os.path.join(directory, "prepared.onnx")
    target = os.path.join(directory, "int8.onnx")
    quant_pre_process(source, prepared)
    if name in CNNS:
        graph = onnx.load(source, load_external_data=False).graph
        initializers = {t.name for t in graph.initializer}
        inputs = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
                  for v in graph.input if v.name not in initializers}
        rng = np.random.default_rng(CALIBRATION_SEED)
        batches = [{k: rng.standard_normal(shape).astype(np.float32) for k, shape in inputs.items()}
                   for _ in range(CALIBRATION_SAMPLES)]

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.items = iter(batches)

            def get_next(self):
                return next(self.items, None)

        settings = dict(quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        quantize_static(prepared, target, Reader(), **settings)
        method = "static QDQ, per channel, U8 activations, S8 weights"
    else:
        quantize_dynamic(prepared, target, weight_type=QuantType.QInt8)
        method = "dynamic, S8 weights"
    os.remove(prepared)
    ops = {}
    for node in onnx.load(target, load_external_data=False).graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    meta = {"name": name, "method": method, "source": source, "ops": ops,
            "bytes": os.path.getsize(target), "onnxruntime": onnxruntime.__version__,
            "onnx": onnx.__version__, "quantize_seconds": round(time.monotonic() - started, 1)}
    with open(os.path.join(directory, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)

# ---- quantization end ------------------------------------------------------------------------


# ---- environment and models ------------------------------------------------------------------

def ensure_quantizer(python):
    """Installs what onnxruntime's quantizer needs into the venv when it is missing; returns the
    venv's onnx version."""
    probe = [python, "-c", "import ml_dtypes, onnx, onnx.reference; "
             "from onnxruntime.quantization import quantize_static; print(onnx.__version__)"]
    found = subprocess.run(probe, capture_output=True, text=True)
    if found.returncode != 0:
        log(f"installing {' '.join(QUANT_PACKAGES)} into the venv (--no-deps, numpy stays)")
        if subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps",
                           *QUANT_PACKAGES]).returncode != 0:
            sys.exit(f"int8: pip could not install {' '.join(QUANT_PACKAGES)} into {python}")
        found = subprocess.run(probe, capture_output=True, text=True)
        if found.returncode != 0:
            sys.exit("int8: onnxruntime's quantizer still does not import:\n"
                     + found.stderr[-2000:])
    return found.stdout.strip()


def quant_stamp(f32_stamp, onnx_version):
    with open(os.path.abspath(__file__)) as f:
        text = f.read()
    section = text[text.index("# ---- quantization begin"):text.index("# ---- quantization end")]
    digest = hashlib.sha256(section.encode())
    digest.update(f"{f32_stamp} onnxruntime {ORT_VERSION} onnx {onnx_version}".encode())
    return digest.hexdigest()


def ensure_int8(args, python, onnx_version, names):
    """The int8 model of each name in args.cache, quantized again only when its stamp changed;
    returns {name: meta}."""
    os.makedirs(args.cache, exist_ok=True)
    metas = {}
    for name in names:
        source = os.path.join(args.f32_cache, name, "static.onnx")
        with open(os.path.join(args.f32_cache, name, "meta.json")) as f:
            current = quant_stamp(json.load(f).get("stamp"), onnx_version)
        directory = os.path.join(args.cache, name)
        try:
            with open(os.path.join(directory, "meta.json")) as f:
                meta = json.load(f)
            if (meta.get("stamp") == current
                    and os.path.isfile(os.path.join(directory, "int8.onnx"))):
                metas[name] = meta
                continue
        except (OSError, ValueError):
            pass
        log(f"quantizing {name} into {args.cache}")
        meta = dynamic_shapes.build_cached(
            args.cache, name, current,
            [python, os.path.abspath(__file__), "--quantize-worker", name, source],
            f"int8: quantizing {name}", cwd_in_target=True)
        log(f"  {name}: {meta['method']}, {meta['quantize_seconds']}s, "
            f"{meta['bytes'] / 2**20:.1f} MiB; ops "
            + ", ".join(f"{op} {n}" for op, n in sorted(meta["ops"].items())))
        metas[name] = meta
    return metas


def loom_python(args):
    """(python, PYTHONPATH) that import the build's loom package, or (None, reason)."""
    python = args.loom_python
    package = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.infer_run))),
                           "python")
    if not os.path.exists(python):
        return None, f"no {python}"
    env = dict(os.environ, PYTHONPATH=package)
    probe = subprocess.run([python, "-c", "import loom"], capture_output=True, text=True, env=env)
    if probe.returncode != 0:
        return None, f"import loom fails with PYTHONPATH={package}: " + \
            (probe.stderr.strip().splitlines() or ["?"])[-1]
    return python, package


# ---- accuracy --------------------------------------------------------------------------------

def write_samples(args, name, count, folder):
    """`count` fixed-seed inputs of the model's static shape, folder/<i>/<input>.npy."""
    import numpy as np
    case = dynamic_shapes.MODELS[name]["cases"][0]
    for i in range(count):
        sample = os.path.join(folder, str(i))
        os.makedirs(sample)
        for input_name, value in dynamic_shapes.make_inputs(name, case, ACCURACY_SEED + i).items():
            np.save(os.path.join(sample, input_name + ".npy"), value)


def read_samples(folder):
    import numpy as np
    samples = []
    for i in range(len(os.listdir(folder))):
        sample = os.path.join(folder, str(i))
        samples.append({f[:-4]: np.load(os.path.join(sample, f))
                        for f in sorted(os.listdir(sample)) if f.endswith(".npy")})
    return samples


def outputs_worker(args):
    """Runs in a child (ORT in the venv, or the loom package): every sample through one session,
    until args.budget_s; writes {"<i>.<output>": array} to the .npz and a report on stdout."""
    import numpy as np
    samples = read_samples(args.samples_dir)
    start = time.perf_counter()
    if args.outputs_worker == "ort":
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(args.model_file, options, providers=["CPUExecutionProvider"])
    else:
        import loom
        session = loom.InferenceSession(args.model_file, devices=args.device.split(","),
                                        threads=args.threads, precision=args.precision,
                                        plugins=args.plugin)
    names = [o.name for o in session.get_outputs()]
    session_ms = (time.perf_counter() - start) * 1000.0
    start = time.perf_counter()
    results = {}
    done = 0
    for i, feeds in enumerate(samples):
        for name, value in zip(names, session.run(None, feeds)):
            results[f"{i}.{name}"] = np.asarray(value)
        done += 1
        if args.budget_s and time.perf_counter() - start > args.budget_s:
            break
    np.savez(args.worker_output, **results)
    print(json.dumps({"samples": done, "session_ms": session_ms,
                      "seconds": time.perf_counter() - start}))


def split_outputs(path):
    """{"<i>.<output>": array} from an outputs .npz as a list of {output: array}."""
    import numpy as np
    samples = {}
    with np.load(path) as data:
        for key in data.files:
            index, name = key.split(".", 1)
            samples.setdefault(int(index), {})[name] = data[key]
    return [samples[i] for i in sorted(samples)]


def last_line(done):
    """The last line of a failed child's stderr, or its exit status."""
    return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]


def warnings_of(stderr):
    lines = [line.strip() for line in stderr.splitlines() if "warn" in line.lower()]
    return sorted(set(lines))[:5]


def outputs_child(args, python, env, kind, model, samples_dir, out_file, precision, budget):
    """One outputs_worker child; returns (outputs per sample, report, warnings). Raises
    RuntimeError when it fails or runs past twice its budget plus a minute."""
    command = [python, os.path.abspath(__file__), "--outputs-worker", kind, model, out_file,
               "--samples-dir", samples_dir, "--threads", str(args.threads), "--device",
               args.device, "--precision", precision, "--budget-s", str(budget or 0)]
    for plugin in args.plugin:
        command += ["--plugin", plugin]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=2 * budget + 60 if budget else None)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"no result within {2 * budget + 60:.0f} s (budget {budget:.0f} s)")
    if done.returncode != 0:
        raise RuntimeError(last_line(done))
    return split_outputs(out_file), json.loads(done.stdout), warnings_of(done.stderr)


def infer_run_outputs(args, model, samples_dir, out_dir, precision, budget):
    """The fallback without the Python package: one infer-run per sample (run_loom of
    dynamic_shapes has no --precision); same return as outputs_child."""
    import numpy as np
    outputs, warnings = [], set()
    start = time.perf_counter()
    for i in range(len(os.listdir(samples_dir))):
        sample = os.path.join(samples_dir, str(i))
        command = [args.infer_run, model, "--device", args.device, "--threads", str(args.threads),
                   "--precision", precision, "--output", out_dir]
        for plugin in args.plugin:
            command += ["--plugin", plugin]
        for f in sorted(os.listdir(sample)):
            command += ["--input", f"{f[:-4]}={os.path.join(sample, f)}"]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=budget + 60 if budget else None)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"input {i}: no result within {budget + 60:.0f} s")
        if done.returncode != 0:
            raise RuntimeError(last_line(done))
        warnings.update(warnings_of(done.stderr))
        outputs.append({f[:-4]: np.load(os.path.join(out_dir, f))
                        for f in os.listdir(out_dir) if f.endswith(".npy")})
        for f in os.listdir(out_dir):
            os.remove(os.path.join(out_dir, f))
        if budget and time.perf_counter() - start > budget:
            break
    return outputs, {"samples": len(outputs), "seconds": time.perf_counter() - start}, \
        sorted(warnings)[:5]


def loom_outputs(args, loom_env, model, samples_dir, tmp, precision, budget):
    python, package = loom_env
    if python:
        return outputs_child(args, python, dict(os.environ, PYTHONPATH=package), "loom", model,
                             samples_dir, os.path.join(tmp, "loom-outputs.npz"), precision, budget)
    out_dir = os.path.join(tmp, "loom-out")
    os.makedirs(out_dir, exist_ok=True)
    return infer_run_outputs(args, model, samples_dir, out_dir, precision, budget)


def agreement(actual, expected, cnn):
    """Over the samples both have: top-1 agreement (CNNs: argmax of the first output) and how
    often the actual top-1 is among the expected top 5, mean and lowest cosine over samples and
    outputs, max abs difference relative to the range of the expected output."""
    import numpy as np
    count = min(len(actual), len(expected))
    if not count:
        return None
    top1, top5, cosines, relative = 0, 0, [], 0.0
    for a_out, e_out in zip(actual[:count], expected[:count]):
        for name, e in e_out.items():
            a = a_out[name].astype(np.float64).ravel()
            e = e.astype(np.float64).ravel()
            norms = np.linalg.norm(a) * np.linalg.norm(e)
            cosines.append(float(a @ e / norms) if norms else float(np.array_equal(a, e)))
            spread = float(e.max() - e.min()) if e.size else 0.0
            diff = float(np.max(np.abs(a - e))) if e.size else 0.0
            relative = max(relative, diff / spread if spread else diff)
        if cnn:
            first = next(iter(e_out))
            best = int(np.argmax(a_out[first]))
            top1 += int(best == np.argmax(e_out[first]))
            top5 += int(best in np.argsort(e_out[first].ravel())[-5:])
    return {"samples": count, "top1": top1 / count if cnn else None,
            "top1_in_top5": top5 / count if cnn else None,
            "cosine_mean": statistics.fmean(cosines), "cosine_min": min(cosines),
            "max_abs_over_range": relative}


def accuracy_model(args, python, loom_env, name, tmp):
    """ORT f32, ORT int8, Loom int8 (and Loom bf16 on f32) on the fixed samples of one model."""
    cnn = name in CNNS
    count = args.samples if cnn else args.bert_samples
    samples_dir = os.path.join(tmp, f"samples-{name}")
    write_samples(args, name, count, samples_dir)
    f32 = os.path.join(args.f32_cache, name, "static.onnx")
    int8 = os.path.join(args.cache, name, "int8.onnx")
    row = {"model": name, "requested": count}
    ort = {}
    for key, model in (("f32", f32), ("int8", int8)):
        ort[key], report, _ = outputs_child(args, python, None, "ort", model, samples_dir,
                                            os.path.join(tmp, f"ort-{key}.npz"), "f32", 0)
        log(f"  {name}: ORT {key} on {report['samples']} inputs, {report['seconds']:.1f}s")
    row["ort_int8_vs_f32"] = agreement(ort["int8"], ort["f32"], cnn)
    try:
        loom, report, warnings = loom_outputs(args, loom_env, int8, samples_dir, tmp, "f32",
                                              args.accuracy_budget)
        log(f"  {name}: Loom int8 on {report['samples']} inputs, {report['seconds']:.1f}s")
        row["loom_seconds"] = report["seconds"]
        row["loom_warnings"] = warnings
        row["loom_int8_vs_ort_int8"] = agreement(loom, ort["int8"], cnn)
        row["loom_int8_vs_f32"] = agreement(loom, ort["f32"], cnn)
    except RuntimeError as e:
        log(f"  {name}: Loom int8 accuracy pass failed: {e}")
        row["loom_error"] = str(e)[-2000:]
    bf16 = None
    if args.bf16:
        bf16 = {"model": name, "requested": count}
        try:
            loom, report, warnings = loom_outputs(args, loom_env, f32, samples_dir, tmp, "bf16",
                                                  args.bf16_budget)
            log(f"  {name}: Loom bf16 on {report['samples']} inputs, {report['seconds']:.1f}s")
            bf16.update(agreement(loom, ort["f32"], cnn) or {})
            bf16["seconds"] = report["seconds"]
            bf16["note"] = "; ".join(warnings)
            if report["samples"] < count:
                bf16["note"] = (f"time budget: {report['samples']} of {count} inputs; "
                                + bf16["note"]).rstrip("; ")
        except RuntimeError as e:
            log(f"  {name}: Loom bf16 pass failed: {e}")
            bf16["error"] = str(e)[-2000:]
    shutil.rmtree(samples_dir, ignore_errors=True)
    return row, bf16


# ---- latency ---------------------------------------------------------------------------------

def bench_model(args, python, name, tmp, loom_dir):
    """ROUNDS alternating rounds of Loom int8, ORT int8, OV int8 and Loom f32; the table row."""
    int8 = os.path.join(args.cache, name, "int8.onnx")
    f32 = os.path.join(args.f32_cache, name, "static.onnx")
    inputs = dynamic_shapes.case_inputs(args.f32_cache, name, 0)
    loom, ort, ov, loom_f32 = [], [], [], []
    loom_out = ort_out = None
    row = {"model": name}

    def loom_side(path, key):
        try:
            report, outputs = dynamic_shapes.run_loom(args, path, inputs, loom_dir, args.warmup,
                                                      args.repeat)
        except RuntimeError as e:
            log(f"  {name} ({key}): loom failed: {e}")
            row[f"{key}_error"] = str(e)[-2000:]
            return None
        if f"{key}_devices" not in row:
            row[f"{key}_devices"] = dynamic_shapes.plan_devices(report.get("plan"))
            row[f"{key}_first_run_ms"] = report.get("first_run_ms")
            row[f"{key}_session_ms"] = report.get("session_ms")
            row[f"{key}_rss_mib"] = report["rss_mib"]
        return report["latency_ms"]["median"], outputs

    for r in range(args.rounds):
        if "loom_error" not in row:
            result = loom_side(int8, "loom")
            if result:
                loom.append(result[0])
                loom_out = result[1]
        if "ort_error" not in row:
            try:
                median, first, _, rss, ort_out = dynamic_shapes.run_worker(
                    args, python, "ort", int8, inputs, os.path.join(tmp, "ort.npz"))
                ort.append(median)
                row.setdefault("ort_first_run_ms", first)
                row["ort_rss_mib"] = rss
            except RuntimeError as e:
                log(f"  {name}: onnxruntime failed: {e}")
                row["ort_error"] = str(e)[-2000:]
        if not args.skip_openvino and "ov_error" not in row:
            try:
                median, first, _, rss, ov_out = dynamic_shapes.run_worker(
                    args, python, "ov", int8, inputs, os.path.join(tmp, "ov.npz"))
                ov.append(median)
                row.setdefault("ov_first_run_ms", first)
                row["ov_rss_mib"] = rss
                if ort_out:
                    row["ov_max_abs_diff"], row["ov_cosine"] = dynamic_shapes.compare(ov_out,
                                                                                      ort_out)
            except RuntimeError as e:
                log(f"  {name}: openvino failed: {e}")
                row["ov_error"] = str(e)[-2000:]
        if "loom_f32_error" not in row:
            result = loom_side(f32, "loom_f32")
            if result:
                loom_f32.append(result[0])
        log(f"  {name} round {r + 1}: "
            + ", ".join(f"{label} {values[-1]:.2f} ms" for label, values in
                        (("loom int8", loom), ("ort int8", ort), ("ov int8", ov),
                         ("loom f32", loom_f32)) if values))

    def median_of(values):
        return statistics.median(values) if values else None

    row.update({"loom_ms": median_of(loom), "ort_ms": median_of(ort), "ov_ms": median_of(ov),
                "loom_f32_ms": median_of(loom_f32), "loom_rounds": loom, "ort_rounds": ort,
                "ov_rounds": ov, "loom_f32_rounds": loom_f32})
    row["loom_over_ort"] = ratio(row["loom_ms"], row["ort_ms"])
    row["loom_over_ov"] = ratio(row["loom_ms"], row["ov_ms"])
    row["int8_over_f32"] = ratio(row["loom_ms"], row["loom_f32_ms"])
    row["max_abs_diff"], row["cosine"] = (dynamic_shapes.compare(loom_out, ort_out)
                                          if loom_out and ort_out else (None, None))
    row["devices_text"] = (dynamic_shapes.devices_text(row["loom_devices"])
                           if "loom_devices" in row else "error")
    return row


# ---- main ------------------------------------------------------------------------------------

def fmt(value, spec=".2f"):
    return "-" if value is None else format(value, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def print_tables(args, results, accuracy, bf16, load, loom_env):
    print(f"\nLoom {args.device} (infer-run) vs ONNX Runtime {ORT_VERSION} CPU vs OpenVINO "
          f"{OV_VERSION if not args.skip_openvino else '(skipped)'} CPU, int8 models, "
          f"{args.threads} threads, {args.rounds} rounds x {args.repeat} runs (median of round "
          f"medians), load average {load:.2f} at start\n")
    print("| model | quantization | loom int8 ms | ort int8 ms | ov int8 ms | loom f32 ms | "
          "loom/ort | loom/ov | loom int8/f32 | loom 1st run ms | loom session ms | "
          "max abs diff vs ort | cosine vs ort | onednn nodes |")
    print("|---|---|" + "---:|" * 12)
    for r in results:
        g = r.get
        print(f"| {r['model']} | {r['method']} | {fmt(g('loom_ms'))} | {fmt(g('ort_ms'))} | "
              f"{fmt(g('ov_ms'))} | {fmt(g('loom_f32_ms'))} | {fmt(g('loom_over_ort'), '.3f')} | "
              f"{fmt(g('loom_over_ov'), '.3f')} | {fmt(g('int8_over_f32'), '.3f')} | "
              f"{fmt(g('loom_first_run_ms'))} | {fmt(g('loom_session_ms'), '.0f')} | "
              f"{fmt(g('max_abs_diff'), '.3g')} | {fmt(g('cosine'), '.6f')} | "
              f"{r['devices_text']} |")
    for r in results:
        for key, label in (("loom_error", "loom int8"), ("ort_error", "onnxruntime"),
                           ("ov_error", "openvino"), ("loom_f32_error", "loom f32")):
            if r.get(key):
                # run_measured's message: "<command> failed: <stderr>"; the stderr's last line.
                reason = r[key].split(" failed: ", 1)[-1].strip() or "no message, see --json-out"
                print(f"\n{r['model']}: {label} failed: {reason.splitlines()[-1][:300]}")
    criterion = next((r for r in results if r["model"] == "resnet50"), None)
    if criterion:
        value = criterion.get("int8_over_f32")
        verdict = "unknown" if value is None else "met" if value <= 0.5 else "not met"
        print(f"\nIssue #26 criterion, ResNet-50 Loom int8 <= 0.5x Loom f32: "
              f"{fmt(value, '.3f')} ({verdict})")
    print("\nonednn nodes: nodes of Loom's int8 plan on onednn / all (other devices in "
          "parentheses); loom 1st run: the first run of the timed session (session creation "
          "apart).")
    if not accuracy:
        return
    how = (f"the loom package ({loom_env[1]})" if loom_env[0]
           else f"one infer-run per input ({loom_env[1]})")
    print(f"\nAccuracy on fixed inputs (seeds {ACCURACY_SEED}+i); Loom via {how}; f32 = ORT on "
          "the f32 model; top-1: argmax agreement (CNNs), in parentheses how often the argmax is "
          "among the reference's top 5; cosine: mean (lowest) over inputs and outputs\n")
    print("| model | inputs | loom int8 vs ort int8 top-1 | loom int8 vs f32 top-1 | "
          "ort int8 vs f32 top-1 | loom int8 vs ort int8 cosine | loom int8 vs f32 cosine | "
          "ort int8 vs f32 cosine |")
    print("|---|" + "---:|" * 7)

    def cells(a):
        if not a:
            return "n/a", "n/a"
        top1 = (f"{a['top1']:.3f} ({a['top1_in_top5']:.3f})" if a["top1"] is not None else "-")
        return top1, f"{a['cosine_mean']:.5f} ({a['cosine_min']:.5f})"

    for r in accuracy:
        li, lf, oi = (cells(r.get(k)) for k in ("loom_int8_vs_ort_int8", "loom_int8_vs_f32",
                                                 "ort_int8_vs_f32"))
        loom_count = (r.get("loom_int8_vs_ort_int8") or {}).get("samples", 0)
        inputs = (f"{loom_count}/{r['requested']}" if loom_count != r["requested"]
                  else str(loom_count))
        print(f"| {r['model']} | {inputs} | {li[0]} | {lf[0]} | {oi[0]} | {li[1]} | {lf[1]} | "
              f"{oi[1]} |")
    for r in accuracy:
        if r.get("loom_error"):
            print(f"\n{r['model']}: Loom int8 accuracy n/a: {r['loom_error'][:300]}")
    if not bf16:
        return
    print("\nbf16: Loom --precision bf16 on the f32 models against ORT f32; max abs diff / range: "
          "the largest difference over the range of ORT's output\n")
    print("| model | inputs | max abs diff / range | top-1 (in top 5) | cosine mean (lowest) | "
          "note |")
    print("|---|---:|---:|---:|---:|---|")
    for b in bf16:
        if b.get("error") or not b.get("samples"):
            print(f"| {b['model']} | 0/{b['requested']} | n/a | n/a | n/a | "
                  f"{(b.get('error') or 'no input within the budget')[:200]} |")
            continue
        top1 = f"{b['top1']:.3f} ({b['top1_in_top5']:.3f})" if b["top1"] is not None else "-"
        inputs = (f"{b['samples']}/{b['requested']}" if b["samples"] != b["requested"]
                  else str(b["samples"]))
        print(f"| {b['model']} | {inputs} | {b['max_abs_over_range']:.3g} | {top1} | "
              f"{b['cosine_mean']:.5f} ({b['cosine_min']:.5f}) | {b.get('note') or ''} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--infer-run", default=os.path.join(REPO, "build", "default", "bin", "infer-run"))
    parser.add_argument("--plugin", action="append", default=[], help="passed to infer-run")
    parser.add_argument("--device", default="onednn,cpu", help="infer-run --device")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset")
    parser.add_argument("--cache", default=os.path.join(REPO, "build", "int8-models"),
                        help="quantized models")
    parser.add_argument("--f32-cache", default=os.path.join(REPO, "build", "dynamic-models"),
                        help="dynamic_shapes.py's generated f32 models")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="alternating Loom/ORT/OV rounds")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10, help="timed runs per round")
    parser.add_argument("--samples", type=int, default=100, help="accuracy inputs per CNN")
    parser.add_argument("--bert-samples", type=int, default=20, help="accuracy inputs for bert")
    parser.add_argument("--accuracy-budget", type=float, default=600.0,
                        help="seconds of Loom int8 accuracy runs per model (0: unbounded)")
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                        help="the bf16 accuracy table")
    parser.add_argument("--bf16-budget", type=float, default=120.0,
                        help="seconds of Loom bf16 runs per model (0: unbounded)")
    parser.add_argument("--skip-openvino", action="store_true")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--loom-python", default=os.path.join(REPO, "build", "python-venv", "bin", "python"),
                        help="python that runs the loom package for the accuracy passes")
    parser.add_argument("--venv", default=os.path.join(REPO, "build", "bench-venv"))
    parser.add_argument("--setup", action="store_true", help="only create the venv and the models")
    parser.add_argument("--json-out", help="also write the results to this file")
    parser.add_argument("--quantize-worker", help=argparse.SUPPRESS)
    parser.add_argument("--outputs-worker", choices=["ort", "loom"], help=argparse.SUPPRESS)
    parser.add_argument("--samples-dir", help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="f32", help=argparse.SUPPRESS)
    parser.add_argument("--budget-s", type=float, default=0, help=argparse.SUPPRESS)
    parser.add_argument("model_file", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("worker_output", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quantize_worker:
        quantize_worker(args.quantize_worker, args.model_file, args.worker_output)
        return 0
    if args.outputs_worker:
        return outputs_worker(args)

    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        parser.error(f"unknown model {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    python = dynamic_shapes.ensure_venv(args.venv, not args.skip_openvino)
    onnx_version = ensure_quantizer(python)
    dynamic_shapes.ensure_models(args.f32_cache, models)
    metas = ensure_int8(args, python, onnx_version, models)
    if args.setup:
        return 0
    if not os.path.exists(args.infer_run):
        sys.exit(f"int8: no infer-run at {args.infer_run} (build it, or pass --infer-run)")
    loom_env = loom_python(args)
    load = os.getloadavg()[0]
    log(f"load average {load:.2f} on {os.cpu_count()} cpus; threads {args.threads}, "
        f"{args.rounds} rounds x {args.repeat} runs; accuracy via "
        + (f"the loom package ({loom_env[1]})" if loom_env[0] else f"infer-run ({loom_env[1]})"))
    results, accuracy, bf16 = [], [], []
    with tempfile.TemporaryDirectory(prefix="loom-int8-") as tmp:
        loom_dir = os.path.join(tmp, "loom")
        os.makedirs(loom_dir)
        for name in models:
            row = bench_model(args, python, name, tmp, loom_dir)
            row["method"] = metas[name]["method"]
            results.append(row)
        if not args.skip_accuracy:
            for name in models:
                row, bf16_row = accuracy_model(args, python, loom_env, name, tmp)
                accuracy.append(row)
                if bf16_row:
                    bf16.append(bf16_row)
    print_tables(args, results, accuracy, bf16, load, loom_env)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"device": args.device, "threads": args.threads, "rounds": args.rounds,
                       "repeat": args.repeat, "warmup": args.warmup, "ort": ORT_VERSION,
                       "openvino": None if args.skip_openvino else OV_VERSION,
                       "load_average": load, "accuracy_seed": ACCURACY_SEED,
                       "calibration_seed": CALIBRATION_SEED,
                       "loom_accuracy_via": "python" if loom_env[0] else "infer-run",
                       "models": metas, "results": results, "accuracy": accuracy, "bf16": bf16},
                      f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
