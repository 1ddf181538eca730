#!/usr/bin/python3
"""Throughput of Loom against OpenVINO and ONNX Runtime with several requests in flight.

For each model (MobileNetV2, ResNet-50, the BERT-shaped encoder: the static exports that
tests/bench/dynamic_shapes.py generates, random weights, fixed seeds) and each concurrency N
(default 1, 2 and 4), one process per runtime runs for --seconds with N requests in flight on
--threads threads in all (default 2), f32, same inputs:

- Loom: `infer-run --device onednn,cpu --concurrency N --threads T --time S`: N sessions of the
  model, each driven by a thread of its own, T split between them (the onednn device shares the
  sessions' reordered weights);
- OpenVINO: `PERFORMANCE_HINT=THROUGHPUT` with `INFERENCE_NUM_THREADS=T` (its own stream count)
  and an AsyncInferQueue of N requests;
- ONNX Runtime: one session with max(1, T / N) intra-op threads and N Python threads calling
  `run` on it at once (ORT's documented way of serving concurrent requests).

Prints per model and N: inferences/s, p50 and p99 latency (ms), peak RSS (MiB) of each runtime's
process and the throughput ratios Loom/OV and Loom/ORT. Run it on a quiet machine:

    tests/bench/throughput.py                       # all three models, N = 1, 2, 4, 10 s each
    tests/bench/throughput.py --models mobilenetv2 --concurrency 1,4 --seconds 5

ORT and OpenVINO run in the shared benchmark venv (build/bench-venv, created on first use);
the models are generated into build/dynamic-models on first use (minutes each).
"""

import argparse
import json
import math
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_onnxruntime import log, run_measured  # noqa: E402
import dynamic_shapes  # noqa: E402

REPO = dynamic_shapes.REPO
MODELS = ("mobilenetv2", "resnet50", "bert")


def percentile(samples, fraction):
    """Nearest rank, as infer-run reports it."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


def run_loom(args, model, inputs, n):
    command = [args.infer_run, model, "--device", args.device, "--threads", str(args.threads),
               "--concurrency", str(n), "--warmup", str(args.warmup), "--time",
               str(args.seconds), "--json", "--json-max-values", "0"]
    for plugin in args.plugin:
        command += ["--plugin", plugin]
    for name, path in inputs.items():
        command += ["--input", f"{name}={path}"]
    stdout, rss = run_measured(command)
    report = json.loads(stdout)
    latency = report["latency_ms"]
    return {"throughput": report["throughput_per_s"], "p50": latency["median"],
            "p99": latency["p99"], "rss": rss, "runs": latency["runs"]}


def run_worker(args, python, runtime, model, inputs, n):
    command = [python, os.path.abspath(__file__), "--worker", runtime, "--worker-model", model,
               "--threads", str(args.threads), "--worker-concurrency", str(n), "--seconds",
               str(args.seconds), "--warmup", str(args.warmup)]
    for name, path in inputs.items():
        command += ["--worker-input", f"{name}={path}"]
    stdout, rss = run_measured(command)
    report = json.loads(stdout)
    report["rss"] = rss
    return report


def worker(args):
    """Inside the venv: N requests in flight for --seconds; prints throughput and latencies."""
    import numpy as np
    feeds = {}
    for item in args.worker_input:
        name, path = item.split("=", 1)
        feeds[name] = np.load(path)
    n = args.worker_concurrency
    latencies = []
    lock = threading.Lock()
    if args.worker == "ov":
        import openvino as ov
        core = ov.Core()
        compiled = core.compile_model(core.read_model(args.worker_model), "CPU", {
            "PERFORMANCE_HINT": "THROUGHPUT", "INFERENCE_NUM_THREADS": args.threads,
            "INFERENCE_PRECISION_HINT": "f32"})
        queue = ov.AsyncInferQueue(compiled, n)
        starts = {}

        def done(request, job):
            with lock:
                latencies.append((time.perf_counter() - starts.pop(job)) * 1000.0)

        queue.set_callback(done)
        for _ in range(args.warmup):
            compiled.create_infer_request().infer(feeds)
        latencies.clear()
        start = time.perf_counter()
        job = 0
        while time.perf_counter() - start < args.seconds:
            with lock:
                starts[job] = time.perf_counter()
            queue.start_async(feeds, job)  # waits while all N requests are busy
            job += 1
        queue.wait_all()
        wall = time.perf_counter() - start
        streams = compiled.get_property("NUM_STREAMS")
    else:
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, args.threads // n)
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(args.worker_model, options,
                                       providers=["CPUExecutionProvider"])
        for _ in range(args.warmup):
            session.run(None, feeds)
        start = time.perf_counter()

        def loop():
            while time.perf_counter() - start < args.seconds:
                t = time.perf_counter()
                session.run(None, feeds)
                with lock:
                    latencies.append((time.perf_counter() - t) * 1000.0)

        threads = [threading.Thread(target=loop) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        streams = n
    print(json.dumps({"throughput": len(latencies) / wall, "p50": percentile(latencies, 0.5),
                      "p99": percentile(latencies, 0.99), "runs": len(latencies),
                      "streams": str(streams)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--infer-run", default=os.path.join(REPO, "build", "default", "bin",
                                                            "infer-run"))
    parser.add_argument("--plugin", action="append", default=[])
    parser.add_argument("--device", default="onednn,cpu")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--threads", type=int, default=2, help="threads in all, per runtime")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--cache", default=os.path.join(REPO, "build", "dynamic-models"))
    parser.add_argument("--venv", default=os.path.join(REPO, "build", "bench-venv"))
    parser.add_argument("--json-out")
    parser.add_argument("--worker", choices=["ort", "ov"], help=argparse.SUPPRESS)
    parser.add_argument("--worker-model", help=argparse.SUPPRESS)
    parser.add_argument("--worker-concurrency", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-input", action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    models = [m for m in args.models.split(",") if m]
    for m in models:
        if m not in MODELS:
            sys.exit(f"throughput: unknown model {m} (known: {', '.join(MODELS)})")
    levels = [int(c) for c in args.concurrency.split(",") if c]
    dynamic_shapes.ensure_models(args.cache, models)
    python = dynamic_shapes.ensure_venv(args.venv, openvino=True)
    load = os.getloadavg()[0]
    rows = []
    for m in models:
        model = os.path.join(args.cache, m, "static.onnx")
        inputs = dynamic_shapes.case_inputs(args.cache, m, 0)
        for n in levels:
            log(f"{m}, {n} in flight")
            row = {"model": m, "concurrency": n,
                   "loom": run_loom(args, model, inputs, n),
                   "ov": run_worker(args, python, "ov", model, inputs, n),
                   "ort": run_worker(args, python, "ort", model, inputs, n)}
            rows.append(row)
    print(f"\nLoom {args.device} (infer-run --concurrency) vs OpenVINO (THROUGHPUT hint) vs ONNX "
          f"Runtime (concurrent run calls), f32, {args.threads} threads in all, {args.seconds:g} s "
          f"per point, load average {load:.2f} at start\n")
    print("| model | in flight | loom inf/s | ov inf/s | ort inf/s | loom/ov | loom/ort | "
          "loom p50/p99 ms | ov p50/p99 ms (streams) | ort p50/p99 ms | RSS MiB loom/ov/ort |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        lo, ov, ort = r["loom"], r["ov"], r["ort"]
        print(f"| {r['model']} | {r['concurrency']} | {lo['throughput']:.1f} | "
              f"{ov['throughput']:.1f} | {ort['throughput']:.1f} | "
              f"{lo['throughput'] / ov['throughput']:.3f} | "
              f"{lo['throughput'] / ort['throughput']:.3f} | {lo['p50']:.2f}/{lo['p99']:.2f} | "
              f"{ov['p50']:.2f}/{ov['p99']:.2f} ({ov['streams']}) | "
              f"{ort['p50']:.2f}/{ort['p99']:.2f} | {lo['rss']:.0f}/{ov['rss']:.0f}/"
              f"{ort['rss']:.0f} |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"rows": rows, "threads": args.threads, "seconds": args.seconds,
                       "load": load}, f, indent=2)


if __name__ == "__main__":
    main()
