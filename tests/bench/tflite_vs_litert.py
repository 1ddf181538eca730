#!/usr/bin/python3
"""Benchmarks Loom's TFLite path against LiteRT (ai-edge-litert, XNNPACK) on CPU, and checks
Loom's outputs against LiteRT's.

Issue #27. Models (random weights, fixed seeds, never committed), built by tests/bench/
tflite_models.py with the helpers of tests/formats/tflite/generate_models.py:

  blazeface_like_float/int8  BlazeFace-style front face detector, 128x128x3, BlazeBlocks
                             (depthwise 5x5, 1x1 conv, residual ADD, max-pool + channel-PAD
                             shortcuts), regressors [1,896,16] and classificators [1,896,1]
  landmark_like_float/int8   MobileNet-style face-mesh body, 192x192x3, PRELU activations with
                             per-channel alpha, residual ADDs, FULLY_CONNECTED to 1404 values

They are cached in --cache (default build/tflite-bench-models) with a stamp (a hash of
tflite_models.py, generate_models.py, the plugin's schema subset and the ai-edge-litert
version) and rebuilt only when it changes. Besides them, every committed test model of
tests/formats/tflite/models/*.tflite (with its committed input) is benchmarked; --models takes
comma-separated fnmatch patterns over all names (e.g. --models 'blazeface*,landmark*').

Latency: per model, ROUNDS alternating rounds of Loom (infer-run --device onednn,cpu --threads
N on the .tflite file with the same input, a .npy; tests/bench/dynamic_shapes.py's run_loom),
LiteRT with its default XNNPACK delegate (Interpreter(num_threads=N)) and, unless
--skip-builtin, LiteRT's optimized builtin kernels without the default delegates
(OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES, same threads). LiteRT runs in a child
process of the same venv per round, like infer-run: WARMUP runs, then REPEAT timed runs of
set_tensor + invoke + get_tensor (what infer-run's latency also covers: feeding the input and
reading the outputs). Reported: medians of the round medians, the ratio Loom/LiteRT (XNNPACK),
the issue's target being <= 1.0; Loom's outputs against LiteRT XNNPACK's (float: max abs
difference relative to the output's largest magnitude, OK within 1e-4; int8/uint8: the largest
difference in steps, OK within one step or within one step more than LiteRT's own builtin
kernels differ from XNNPACK, which is shown in parentheses: on deep int8 models the two LiteRT
kernel sets already differ by several steps; where XNNPACK disagrees with the builtin kernels,
as on float_sparse_fc, agreeing with the builtin kernels passes), and the nodes per device of Loom's plan (onednn / all,
the rest are cpu fallbacks), with the op types of the nodes left to cpu.

The venv is build/bench-venv (--venv); `ai-edge-litert` is installed into it when missing. Not
part of ctest: run it by hand on a quiet machine (the load average is reported), e.g.

  build/bench-venv/bin/python tests/bench/tflite_vs_litert.py --infer-run build/h-bench/bin/infer-run \
      --rounds 3 --repeat 10 --json-out tflite-bench.json
  build/bench-venv/bin/python tests/bench/tflite_vs_litert.py --models 'landmark*' --profile
"""

import argparse
import importlib
import fnmatch
import glob
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# Shared with the other benchmarks: logging, infer-run runner, plan device counts.
from bench_vs_onnxruntime import log, run_measured  # noqa: E402
import dynamic_shapes  # noqa: E402

REPO = dynamic_shapes.REPO
TFLITE_TESTS = os.path.join(REPO, "tests", "formats", "tflite")
COMMITTED = os.path.join(TFLITE_TESTS, "models")
SCHEMA = os.path.join(REPO, "plugins", "formats", "tflite", "schema", "tflite_subset.fbs")
GENERATED = ("blazeface_like", "landmark_like")
LITERT_PACKAGE = "ai-edge-litert"
FLOAT_TOLERANCE = 1e-4


# ---- environment and models ------------------------------------------------------------------

def ensure_litert(python):
    probe = [python, "-c", "import ai_edge_litert, importlib.metadata as m; "
             "print(m.version('ai-edge-litert'))"]
    found = subprocess.run(probe, capture_output=True, text=True)
    if found.returncode != 0:
        log(f"installing {LITERT_PACKAGE} into {python}")
        if subprocess.run([python, "-m", "pip", "install", "-q", LITERT_PACKAGE]).returncode:
            sys.exit(f"tflite_vs_litert: pip could not install {LITERT_PACKAGE}")
        found = subprocess.run(probe, capture_output=True, text=True, check=True)
        # This interpreter imports what pip just put into its site-packages (flatbuffers, for the
        # generated models): its import system cached those directories' listings before.
        importlib.invalidate_caches()
    return found.stdout.strip()


def models_stamp(litert_version):
    digest = hashlib.sha256(litert_version.encode())
    for path in (os.path.join(HERE, "tflite_models.py"),
                 os.path.join(TFLITE_TESTS, "generate_models.py"), SCHEMA):
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


def ensure_generated(cache, litert_version):
    """The generated models and their inputs in cache; {name: (model path, [(input, npy)])}."""
    import numpy as np
    stamp = models_stamp(litert_version)
    stamp_file = os.path.join(cache, "stamp")
    names = [f"{n}_{m}" for n in GENERATED for m in ("float", "int8")]
    fresh = os.path.exists(stamp_file) and open(stamp_file).read().strip() == stamp and all(
        os.path.exists(os.path.join(cache, n + ".tflite")) for n in names)
    if not fresh:
        log(f"building the generated models into {cache}")
        sys.path.insert(0, TFLITE_TESTS)
        import generate_models as G
        import tflite_models
        S = G.load_schema("flatc")
        os.makedirs(cache, exist_ok=True)
        for base in GENERATED:
            started = time.monotonic()
            models, x = tflite_models.build(G, S, base)
            for name, data in models.items():
                with open(os.path.join(cache, name + ".tflite"), "wb") as f:
                    f.write(data)
                np.save(os.path.join(cache, name + ".input.npy"), x)
            log(f"  {base}: {time.monotonic() - started:.1f}s, "
                + ", ".join(f"{n} {len(d) / 1024:.0f} KiB" for n, d in models.items()))
        with open(stamp_file, "w") as f:
            f.write(stamp)
    return {n: (os.path.join(cache, n + ".tflite"),
                [("input", os.path.join(cache, n + ".input.npy"))]) for n in names}


def input_details_worker(model_file):
    """Runs in the venv: the model's inputs (name, shape, dtype) as JSON."""
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path=model_file)
    print(json.dumps([{"name": d["name"], "shape": [int(v) for v in d["shape"]],
                       "dtype": d["dtype"].__name__} for d in it.get_input_details()]))


def committed_models(tmp, python):
    """The committed test models, their .input.bin split into one .npy per input (LiteRT's
    input details give the shapes and types); those LiteRT cannot load are reported and left
    out."""
    import numpy as np
    found, skipped = {}, {}
    listed = subprocess.run(["git", "-C", REPO, "ls-files", "--", "tests/formats/tflite/models"],
                            capture_output=True, text=True)
    if listed.returncode == 0:  # committed files only, not models being written beside
        paths = [os.path.join(REPO, f) for f in listed.stdout.split() if f.endswith(".tflite")]
    else:
        paths = glob.glob(os.path.join(COMMITTED, "*.tflite"))
    for path in sorted(paths):
        name = os.path.basename(path)[:-len(".tflite")]
        done = subprocess.run([python, os.path.abspath(__file__), "--input-details", path],
                              capture_output=True, text=True)
        if done.returncode != 0:
            skipped[name] = last_line(done.stderr) or f"exit {done.returncode}"
            continue
        raw = open(os.path.join(COMMITTED, name + ".input.bin"), "rb").read()
        offset, files = 0, []
        for i, d in enumerate(json.loads(done.stdout)):
            dtype = np.dtype(d["dtype"])
            count = int(np.prod(d["shape"])) if d["shape"] else 1
            value = np.frombuffer(raw, dtype, count, offset).reshape(d["shape"])
            offset += count * dtype.itemsize
            files.append((d["name"], os.path.join(tmp, f"{name}.{i}.npy")))
            np.save(files[-1][1], value)
        found[name] = (path, files)
    return found, skipped


def last_line(text):
    # LiteRT's "INFO: Created TensorFlow Lite XNNPACK delegate" is not the error.
    lines = [line for line in text.strip().splitlines()
             if line.strip() and not line.startswith("INFO:")]
    return lines[-1] if lines else ""


# ---- LiteRT --------------------------------------------------------------------------------

def litert_worker(args):
    """Runs in the venv: one interpreter, WARMUP runs, REPEAT timed runs; writes the outputs
    (in output order, keys o0, o1, ...) and prints the latencies."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    resolver = {"xnnpack": OpResolverType.AUTO,
                "builtin": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}[args.litert_worker]
    start = time.perf_counter()
    it = Interpreter(model_path=args.model_file, num_threads=args.threads,
                     experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    load_ms = (time.perf_counter() - start) * 1000.0
    feeds = [np.load(p) for p in args.worker_input]
    inputs = [d["index"] for d in it.get_input_details()]
    outputs = it.get_output_details()

    def run():
        for index, value in zip(inputs, feeds):
            it.set_tensor(index, value)
        it.invoke()
        return [it.get_tensor(d["index"]) for d in outputs]

    latencies = []
    for i in range(args.warmup + args.repeat):
        t = time.perf_counter()
        run()
        if i >= args.warmup:
            latencies.append((time.perf_counter() - t) * 1000.0)
    # The outputs compared are a first run's: TFLite carries variable (recurrent state) tensors
    # from one invoke to the next, where Loom starts every run from zero (docs/tflite-format.md).
    it.reset_all_variables()
    produced = run()
    np.savez(args.worker_output, **{f"o{i}": v for i, v in enumerate(produced)})
    print(json.dumps({"latencies_ms": latencies, "load_ms": load_ms,
                      "outputs": [d["name"] for d in outputs]}))


def run_litert(args, python, kind, model, inputs, out_file):
    import numpy as np
    command = [python, os.path.abspath(__file__), "--litert-worker", kind, model, out_file,
               "--threads", str(args.threads), "--warmup", str(args.warmup),
               "--repeat", str(args.repeat)]
    for _, path in inputs:
        command += ["--worker-input", path]
    try:
        stdout, _ = run_measured(command)
    except RuntimeError as e:
        text = str(e).split(" failed: ", 1)[-1]  # run_measured's message: command, stderr
        raise RuntimeError(last_line(text) or "the LiteRT child exited without a message "
                           "(a crash?)") from None
    report = json.loads(stdout)
    with np.load(out_file) as data:
        outputs = [data[f"o{i}"] for i in range(len(report["outputs"]))]
    return statistics.median(report["latencies_ms"]), report["outputs"], outputs


# ---- Loom ----------------------------------------------------------------------------------

def loom_inputs(args, model, inputs):
    """{input name: npy} for infer-run, checked by one infer-run --explain with those inputs
    (the tflite plugin names the inputs after the TFLite tensors, as LiteRT does; generated
    inputs would not do: random indices make GATHER models fail); returns it and the explain
    text."""
    command = [args.infer_run, model, "--device", args.device, "--threads", str(args.threads),
               "--warmup", "0", "--repeat", "1", "--json", "--json-max-values", "0",
               "--explain"]
    for plugin in args.plugin:
        command += ["--plugin", plugin]
    for name, path in inputs:
        command += ["--input", f"{name}={path}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(last_line(done.stderr) or f"infer-run exit {done.returncode}")
    return dict(inputs), done.stderr


def cpu_ops(explain):
    """({op type: count} of the nodes the plan leaves to cpu, [the plan's "fallback:" lines])
    from infer-run --explain's text ("subgraph 0 on cpu: 1 nodes (Pad x1), 0 FLOP")."""
    import re
    ops, fallbacks = {}, []
    for line in explain.splitlines():
        found = re.match(r"\s*subgraph \d+ on (\S+): \d+ nodes \((.*)\)", line)
        if found and found.group(1) == "cpu":
            for item in found.group(2).split(", "):
                op, _, count = item.rpartition(" x")
                if op and count.isdigit():
                    ops[op] = ops.get(op, 0) + int(count)
        if line.strip().startswith("fallback:"):
            # One line per reason: the node's own name ('op6:Pad/1') left out.
            reason = re.sub(r" node '[^']*'", "", line.strip()[len("fallback:"):].strip())
            if reason not in fallbacks:
                fallbacks.append(reason)
    return ops, fallbacks


def compare(loom_outputs, litert_names, litert_outputs):
    """(worst difference, unit, ok): float outputs relative to the largest magnitude, integer
    outputs in steps."""
    import numpy as np
    worst, unit, ok = 0.0, "rel", True
    loom_list = list(loom_outputs.values())
    for i, (name, expected) in enumerate(zip(litert_names, litert_outputs)):
        actual = loom_outputs.get(name, loom_list[i] if i < len(loom_list) else None)
        if actual is None or actual.shape != expected.shape:
            return float("inf"), "shape", False
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        diff = float(np.max(np.abs(a - e))) if a.size else 0.0
        if np.issubdtype(expected.dtype, np.floating):
            scale = float(np.max(np.abs(e))) if e.size else 0.0
            rel = diff / scale if scale else diff
            worst, ok = max(worst, rel), ok and rel <= FLOAT_TOLERANCE
        else:
            unit = "steps"
            worst, ok = max(worst, diff), ok and diff <= 1
    return worst, unit, ok


def bench_model(args, python, name, model, inputs, tmp):
    row = {"model": name, "file": os.path.relpath(model, REPO)}
    try:
        feeds, explain = loom_inputs(args, model, inputs)
    except RuntimeError as e:
        log(f"  {name}: loom cannot run it: {e}")
        row["loom_error"] = str(e)
        feeds, explain = None, ""
    row["cpu_ops"], row["fallbacks"] = cpu_ops(explain)
    loom, xnn, builtin = [], [], []
    loom_out = xnn_out = xnn_names = builtin_out = builtin_names = None
    loom_dir = os.path.join(tmp, "loom-out")
    os.makedirs(loom_dir, exist_ok=True)
    for r in range(args.rounds):
        if feeds is not None and "loom_error" not in row:
            try:
                report, loom_out = dynamic_shapes.run_loom(args, model, feeds, loom_dir,
                                                           args.warmup, args.repeat)
                loom.append(report["latency_ms"]["median"])
                row.setdefault("devices", dynamic_shapes.plan_devices(report.get("plan")))
                row.setdefault("session_ms", report.get("session_ms"))
            except RuntimeError as e:
                log(f"  {name}: loom failed: {e}")
                row["loom_error"] = str(e)[-2000:]
        if "litert_error" not in row:
            try:
                median, xnn_names, xnn_out = run_litert(args, python, "xnnpack", model, inputs,
                                                        os.path.join(tmp, "litert.npz"))
                xnn.append(median)
            except RuntimeError as e:
                log(f"  {name}: litert (xnnpack) failed: {last_line(str(e))}")
                row["litert_error"] = last_line(str(e))
        if not args.skip_builtin and "litert_builtin_error" not in row:
            try:
                median, builtin_names, builtin_out = run_litert(
                    args, python, "builtin", model, inputs, os.path.join(tmp, "litert.npz"))
                builtin.append(median)
            except RuntimeError as e:
                log(f"  {name}: litert (builtin) failed: {last_line(str(e))}")
                row["litert_builtin_error"] = last_line(str(e))
        log(f"  {name} round {r + 1}: " + (f"loom {loom[-1]:.3f} ms, " if loom else "")
            + (f"litert xnnpack {xnn[-1]:.3f} ms" if xnn else "litert xnnpack failed")
            + (f", builtin {builtin[-1]:.3f} ms" if builtin else ""))

    def median_of(values):
        return statistics.median(values) if values else None

    row.update({"loom_ms": median_of(loom), "litert_ms": median_of(xnn),
                "litert_builtin_ms": median_of(builtin)})
    row["ratio"] = (row["loom_ms"] / row["litert_ms"]
                    if row["loom_ms"] and row["litert_ms"] else None)
    if xnn_out is not None and builtin_out is not None:
        # LiteRT's own spread: its builtin kernels against XNNPACK. Deep int8 models differ by
        # several steps between the two (rounding differences add up over the layers).
        row["litert_spread"], _, _ = compare(dict(zip(xnn_names, builtin_out)), xnn_names,
                                             xnn_out)
    if xnn_out is None and builtin_out is not None:
        # XNNPACK refused the model (e.g. a uint8 or sparse FULLY_CONNECTED): check Loom
        # against LiteRT's builtin kernels instead.
        xnn_names, xnn_out, row["reference"] = builtin_names, builtin_out, "builtin"
    if loom_out is not None and xnn_out is not None:
        row["diff"], row["diff_unit"], row["output_ok"] = compare(loom_out, xnn_names, xnn_out)
        if row["diff_unit"] == "steps" and not row["output_ok"] and "litert_spread" in row:
            row["output_ok"] = row["diff"] <= row["litert_spread"] + 1
        if not row["output_ok"] and builtin_out is not None and row.get("reference") is None:
            # Where XNNPACK disagrees with LiteRT's own builtin kernels (float_sparse_fc: LiteRT
            # 2.3's XNNPACK answer differs from the builtin and reference kernels), agreeing
            # with the builtin kernels is a correct answer too.
            row["builtin_diff"], _, row["output_ok"] = compare(loom_out, builtin_names,
                                                               builtin_out)
            if row["output_ok"]:
                row["reference"] = "builtin"
    if "devices" in row:
        row["devices_text"] = dynamic_shapes.devices_text(row["devices"])
    if args.profile and feeds is not None and "loom_error" not in row:
        row["profile"] = profile_loom(args, model, feeds)
    return row


def profile_loom(args, model, feeds):
    """infer-run --profile-summary: the op types taking the most time (ms per run)."""
    command = [args.infer_run, model, "--device", args.device, "--threads", str(args.threads),
               "--warmup", str(args.warmup), "--repeat", str(args.repeat), "--json",
               "--json-max-values", "0", "--profile-summary"]
    for plugin in args.plugin:
        command += ["--plugin", plugin]
    for input_name, path in feeds.items():
        command += ["--input", f"{input_name}={path}"]
    stdout, _ = run_measured(command)
    return json.loads(stdout).get("profile")


# ---- report ----------------------------------------------------------------------------------

def fmt(value, spec=".3f"):
    return "-" if value is None else format(value, spec)


def print_table(args, rows, load_before, load_after, litert_version, skipped):
    print(f"\nLoom (infer-run --device {args.device} --threads {args.threads}) vs LiteRT "
          f"{litert_version} (num_threads={args.threads}); {args.rounds} rounds x {args.repeat} "
          f"runs after {args.warmup} warm-up, medians in ms; load average {load_before:.2f} "
          f"before, {load_after:.2f} after, {os.cpu_count()} cpus\n")
    print("| model | Loom | LiteRT XNNPACK | LiteRT builtin | Loom/LiteRT | Loom vs XNNPACK (builtin vs XNNPACK) "
          "| nodes onednn/all | left to cpu |")
    print("|---|---:|---:|---:|---:|---|---|---|")
    for row in rows:
        if "diff" in row:
            check = (f"{row['diff']:.1e} rel" if row["diff_unit"] == "rel"
                     else f"{row['diff']:.0f} step(s)" if row["diff_unit"] == "steps" else "shape")
            if row.get("litert_spread") is not None and row["diff_unit"] != "shape":
                spread = row["litert_spread"]
                check += (f" ({spread:.1e})" if row["diff_unit"] == "rel" else f" ({spread:.0f})")
            check += "" if row["output_ok"] else " MISMATCH"
            if row.get("reference") == "builtin":
                check += (f"; {row['builtin_diff']:.1e} vs builtin" if "builtin_diff" in row
                          else " vs builtin")
        else:
            check = "-"
        ratio = fmt(row["ratio"], ".2f") + ("x" if row["ratio"] else "")
        cpu = ", ".join(f"{op} {n}" for op, n in sorted(row.get("cpu_ops", {}).items())) or "-"
        error = (row.get("loom_error") or row.get("litert_error")
                 or row.get("litert_builtin_error"))
        print(f"| {row['model']} | {fmt(row['loom_ms'])} | {fmt(row['litert_ms'])} | "
              f"{fmt(row['litert_builtin_ms'])} | {ratio} | {check} | "
              f"{row.get('devices_text', '-')} | {cpu if not error else error[-100:]} |")
    if skipped:
        print("\nLiteRT cannot load: " + "; ".join(f"{n} ({why[:60]})"
                                                    for n, why in sorted(skipped.items())))
    reasons = {}
    for row in rows:
        for line in row.get("fallbacks", []):
            reasons.setdefault(line, []).append(row["model"])
    if reasons:
        print("\nFallbacks to cpu (infer-run --explain):")
        for line, names in sorted(reasons.items(), key=lambda item: -len(item[1])):
            print(f"- {line} [{', '.join(names[:6])}{', ...' if len(names) > 6 else ''}]")
    for row in rows:
        profile = row.get("profile")
        if profile:
            print(f"\n{row['model']}: Loom's time per op type (--profile-summary, "
                  f"{profile['run_ms']:.3f} ms per run)\n")
            print("| op type | device | ms per run | share | nodes |")
            print("|---|---|---:|---:|---:|")
            for item in profile["by_op_type"][:args.profile_top]:
                print(f"| {item['op_type']} | {item['device']} | {item['ms']:.3f} | "
                      f"{item['share']:.1f}% | {item['count']:g} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--infer-run", default=os.path.join(REPO, "build", "default", "bin",
                                                            "infer-run"))
    parser.add_argument("--device", default="onednn,cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--models", default="*",
                        help="comma-separated fnmatch patterns over the model names")
    parser.add_argument("--no-committed", action="store_true",
                        help="only the generated models")
    parser.add_argument("--skip-builtin", action="store_true",
                        help="no LiteRT run without XNNPACK")
    parser.add_argument("--profile", action="store_true",
                        help="also one infer-run --profile-summary per model")
    parser.add_argument("--profile-top", type=int, default=8,
                        help="op types shown per profiled model")
    parser.add_argument("--plugin", action="append", default=[])
    parser.add_argument("--cache", default=os.path.join(REPO, "build", "tflite-bench-models"))
    parser.add_argument("--venv", default=os.path.join(REPO, "build", "bench-venv"))
    parser.add_argument("--json-out", help="also write the results to this file")
    parser.add_argument("--litert-worker", choices=["xnnpack", "builtin"], help=argparse.SUPPRESS)
    parser.add_argument("--input-details", help=argparse.SUPPRESS)
    parser.add_argument("--worker-input", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("model_file", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("worker_output", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.litert_worker:
        return litert_worker(args)
    if args.input_details:
        return input_details_worker(args.input_details)

    python = os.path.join(args.venv, "bin", "python")
    if not os.path.exists(python):
        sys.exit(f"tflite_vs_litert: no {python} (tests/bench/dynamic_shapes.py creates it)")
    if os.path.realpath(sys.prefix) != os.path.realpath(args.venv):
        # The generated models need flatbuffers and LiteRT's reference kernels: run in the venv.
        # (Its prefix tells, not the interpreter's path: a venv's python is a link to the
        # system's.)
        os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
    litert_version = ensure_litert(python)
    if not os.path.exists(args.infer_run):
        sys.exit(f"tflite_vs_litert: no infer-run at {args.infer_run} (pass --infer-run)")
    patterns = [p for p in args.models.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="loom-tflite-bench-") as tmp:
        models = ensure_generated(args.cache, litert_version)
        skipped = {}
        if not args.no_committed:
            committed, skipped = committed_models(tmp, python)
            models.update(committed)
        models = {n: m for n, m in models.items()
                  if any(fnmatch.fnmatch(n, p) for p in patterns)}
        load_before = os.getloadavg()[0]
        log(f"load average {load_before:.2f}; {len(models)} models, threads {args.threads}, "
            f"{args.rounds} rounds x {args.repeat} runs")
        rows = [bench_model(args, python, name, path, inputs, tmp)
                for name, (path, inputs) in models.items()]
        load_after = os.getloadavg()[0]
    print_table(args, rows, load_before, load_after, litert_version, skipped)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"device": args.device, "threads": args.threads, "rounds": args.rounds,
                       "repeat": args.repeat, "warmup": args.warmup, "litert": litert_version,
                       "load_average": [load_before, load_after], "cpus": os.cpu_count(),
                       "skipped": skipped, "results": rows}, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
