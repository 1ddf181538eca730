#!/usr/bin/python3
"""What a run costs from Python (`loom.InferenceSession.run`) beyond the same run in infer-run's
timed loop, on the digits demo (issue #23: at most 10 us more) and on ResNet-50 (within 2%).

Both sides run the same model, inputs, devices and thread count. The measurement alternates
ROUNDS rounds of infer-run (`--warmup W --repeat N --json`: its median latency, each run timed
around loom_session_run_values) and of Python (N runs of session.run timed one by one with
perf_counter_ns after W warm-up runs, on one session; the median). The result is the median over
rounds of each side's median, and the median over rounds of the paired difference Python minus
infer-run (digits, in us) or ratio Python / infer-run (ResNet-50): pairing each Python round with
the infer-run round just before it cancels most of the load that other work puts on the machine. Medians of many runs, alternated, because the machines these run on are shared: a
mean would carry whatever else ran meanwhile.

The Python side needs the package `loom` importable: the build tree's (<build>/python, the
default) or an installed one (--python-path ''). ResNet-50 is generated with torchvision's random
weights into build/dynamic-models by tests/bench/dynamic_shapes.py (minutes, once) unless it
is there already. Not part of ctest: run it by hand, e.g.

  build/python-venv/bin/python3 tests/bench/python_overhead.py --build build/default
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(REPO, "apps", "infer-run", "demo")


def log(message):
    print(message, file=sys.stderr, flush=True)


def infer_run_median_ms(args, model, inputs, device, threads, warmup, repeat):
    cmd = [args.infer_run, "--model", model, "--device", device, "--threads", str(threads),
           "--warmup", str(warmup), "--repeat", str(repeat), "--json", "--json-max-values", "0"]
    for name, path in inputs.items():
        cmd += ["-i", f"{name}={path}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        sys.exit(f"python_overhead: infer-run failed: {p.stderr.strip()}")
    report = json.loads(p.stdout)
    return report["latency_ms"]["median"]


def python_median_ms(session, feed, warmup, repeat):
    for _ in range(warmup):
        session.run(None, feed)
    times = []
    clock = time.perf_counter_ns
    for _ in range(repeat):
        start = clock()
        session.run(None, feed)
        times.append(clock() - start)
    return statistics.median(times) / 1e6


def measure(args, label, model, inputs, device, threads, warmup, repeat):
    import loom
    import numpy as np

    feed = {name: np.load(path) for name, path in inputs.items()}
    session = loom.InferenceSession(model, devices=device.split(","), threads=threads)
    ours, theirs = [], []
    for r in range(args.rounds):
        theirs.append(infer_run_median_ms(args, model, inputs, device, threads, warmup, repeat))
        ours.append(python_median_ms(session, feed, warmup, repeat))
        log(f"  {label} round {r + 1}/{args.rounds}: infer-run {theirs[-1] * 1e3:.1f} us, "
            f"python {ours[-1] * 1e3:.1f} us")
    return statistics.median(theirs), statistics.median(ours), theirs, ours


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(REPO, "build", "default"))
    parser.add_argument("--infer-run", help="default: <build>/bin/infer-run")
    parser.add_argument("--python-path", help="where `loom` is imported from (default <build>/python; '' = installed)")
    parser.add_argument("--device", default="cpu", help="devices for both sides, e.g. onednn,cpu")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--digits-threads", type=int, default=1)
    parser.add_argument("--digits-repeat", type=int, default=2000)
    parser.add_argument("--resnet-threads", type=int, default=0, help="0 = every core, as both default")
    parser.add_argument("--resnet-repeat", type=int, default=10)
    parser.add_argument("--resnet-device", default="onednn,cpu")
    parser.add_argument("--skip-resnet", action="store_true")
    parser.add_argument("--cache", default=os.path.join(REPO, "build", "dynamic-models"))
    args = parser.parse_args()
    args.infer_run = args.infer_run or os.path.join(args.build, "bin", "infer-run")
    path = os.path.join(args.build, "python") if args.python_path is None else args.python_path
    if path:
        sys.path.insert(0, path)
    import loom

    log(f"loom {loom.__version__} from {os.path.dirname(loom.__file__)}; infer-run {args.infer_run}; "
        f"load average {os.getloadavg()[0]:.2f}")
    rows = []
    digits = os.path.join(DEMO, "digits.onnx")
    theirs, ours, rt, ro = measure(args, "digits", digits, {"image": os.path.join(DEMO, "samples.npy")},
                                   args.device, args.digits_threads, 200, args.digits_repeat)
    rows.append(("digits (8x1x8x8)", args.device, args.digits_threads, args.digits_repeat, theirs, ours,
                 f"{statistics.median(o - t for o, t in zip(ro, rt)) * 1e3:+.1f} us"))

    if not args.skip_resnet:
        sys.path.insert(0, os.path.join(REPO, "tests", "bench"))
        import dynamic_shapes

        dynamic_shapes.ensure_models(args.cache, ["resnet50"])
        model = os.path.join(args.cache, "resnet50", "static.onnx")
        inputs = dynamic_shapes.case_inputs(args.cache, "resnet50", 0)
        theirs, ours, rt, ro = measure(args, "resnet50", model, inputs, args.resnet_device, args.resnet_threads, 3,
                                     args.resnet_repeat)
        rows.append(("ResNet-50 (static.onnx)", args.resnet_device, args.resnet_threads, args.resnet_repeat,
                     theirs, ours, f"{(statistics.median(o / t for o, t in zip(ro, rt)) - 1) * 100:+.2f} %"))

    print(f"\nPython session.run vs infer-run's loop: medians over {args.rounds} alternating rounds of each "
          f"side's median; load average {os.getloadavg()[0]:.2f} at the end\n")
    print("| model | devices | threads | runs/round | infer-run ms | Python ms | Python extra (paired) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for model, device, threads, repeat, theirs, ours, extra in rows:
        print(f"| {model} | {device} | {threads} | {repeat} | {theirs:.4f} | {ours:.4f} | {extra} |")


if __name__ == "__main__":
    main()
