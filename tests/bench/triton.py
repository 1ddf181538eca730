#!/usr/bin/python3
"""MobileNetV2 served by tritonserver with Loom's backend against infer-run's throughput mode.

The model is the dynamic-batch MobileNetV2 export of tests/bench/dynamic_shapes.py
(build/dynamic-models/mobilenetv2/dynamic.onnx, random weights, generated on first use), its
input case 0 ([1,3,224,224] f32). One tritonserver (nvidia-pytriton's, the venv of
.ci/triton-venv; 127.0.0.1 only, HTTP on a free port, gRPC and metrics off) serves it from a
repository written into a scratch directory as two models:

  batched   max_batch_size = the largest concurrency, dynamic_batching (queue delay
            --queue-delay-us, default 0: whatever is queued when the instance frees up)
  single    the same without dynamic_batching: every request runs alone

both with `devices` = --device (default onednn,cpu), `threads` = --threads (all instances
together, default 2) and --instances instances (default 1).

For each concurrency N (default 1, 2, 4), N client threads (stdlib only: threading and
http.client, one keep-alive connection per thread, KServe v2 binary tensor payloads) send
requests back to back for --seconds after a short warm-up; reported are the completed
inferences/s and the p50 and p99 of the request latencies, next to
`infer-run --device D --threads T --concurrency N --time S --json` on the same model and input,
and the ratios served/direct. The served outputs are checked once against infer-run's.

    tests/bench/triton.py                          # N = 1, 2, 4, 10 s per point
    tests/bench/triton.py --concurrency 1,4 --seconds 5 --instances 2

The server is bounded (it dies with this script, is stopped with SIGINT and killed if still up).
Run it on a quiet machine: the client threads share the CPUs with the server.
"""

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "triton"))
from bench_vs_onnxruntime import log  # noqa: E402
import dynamic_shapes  # noqa: E402
from throughput import percentile, run_loom  # noqa: E402
from test_triton import die_with_parent, find_server, free_port  # noqa: E402

REPO = Path(dynamic_shapes.REPO)
MODEL = "mobilenetv2"

CONFIG = """backend: "loom"
max_batch_size: {max_batch}
input [ {{ name: "input" data_type: TYPE_FP32 dims: [ 3, -1, -1 ] }} ]
output [ {{ name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] }} ]
{scheduler}instance_group [ {{ count: {instances} kind: KIND_CPU }} ]
parameters {{ key: "devices" value {{ string_value: "{device}" }} }}
parameters {{ key: "threads" value {{ string_value: "{threads}" }} }}
"""


def write_repository(repo, model, args, max_batch):
    for name, scheduler in (
            ("batched", f"dynamic_batching {{ max_queue_delay_microseconds: "
                        f"{args.queue_delay_us} }}\n"),
            ("single", "")):
        (repo / name / "1").mkdir(parents=True)
        os.symlink(model, repo / name / "1" / "model.onnx")
        (repo / name / "config.pbtxt").write_text(CONFIG.format(
            max_batch=max_batch, scheduler=scheduler, instances=args.instances,
            device=args.device, threads=args.threads))


class Connection:
    """One keep-alive HTTP connection sending KServe v2 binary-tensor inference requests."""

    def __init__(self, port, model, array):
        import numpy as np
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.path = f"/v2/models/{model}/infer"
        raw = np.ascontiguousarray(array, np.float32).tobytes()
        header = json.dumps({
            "inputs": [{"name": "input", "shape": list(array.shape), "datatype": "FP32",
                        "parameters": {"binary_data_size": len(raw)}}],
            "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]}).encode()
        self.body = header + raw
        self.headers = {"Content-Type": "application/octet-stream",
                        "Inference-Header-Content-Length": str(len(header))}

    def infer(self):
        """The logits' bytes; raises on an error answer."""
        self.conn.request("POST", self.path, self.body, self.headers)
        reply = self.conn.getresponse()
        data = reply.read()
        if reply.status != 200:
            raise RuntimeError(f"HTTP {reply.status}: {data[:300]!r}")
        length = int(reply.getheader("Inference-Header-Content-Length", len(data)))
        return data[length:]

    def close(self):
        self.conn.close()


def get_json(port, method, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, b"{}" if method == "POST" else None)
        reply = conn.getresponse()
        text = reply.read().decode()
        return reply.status, (json.loads(text) if text else None)
    finally:
        conn.close()


def served_point(port, model, array, n, seconds, warmup_seconds):
    """N threads sending back to back: warm-up, then --seconds measured."""
    latencies = []
    errors = []
    lock = threading.Lock()
    phase = {"measuring": False}
    start_barrier = threading.Barrier(n + 1)
    stop = {"at": None}

    def client():
        connection = Connection(port, model, array)
        try:
            start_barrier.wait()
            while True:
                t = time.perf_counter()
                if stop["at"] is not None and t >= stop["at"]:
                    return
                connection.infer()
                elapsed = time.perf_counter() - t
                if phase["measuring"] and t >= phase["since"]:
                    with lock:
                        latencies.append(elapsed * 1000.0)
        except Exception as e:  # noqa: BLE001 -- reported after the point
            errors.append(repr(e))
        finally:
            connection.close()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    start_barrier.wait()
    time.sleep(warmup_seconds)
    before = stats(port, model)
    phase["since"] = time.perf_counter()
    phase["measuring"] = True
    stop["at"] = phase["since"] + seconds
    for t in threads:
        t.join(seconds + 120)
    wall = seconds  # requests started in the window; the last ones finish just after it
    after = stats(port, model)
    if errors:
        raise RuntimeError(f"{model}, {n} in flight: {errors[0]}")
    executions = int(after["execution_count"]) - int(before["execution_count"])
    rows = int(after["inference_count"]) - int(before["inference_count"])
    return {"throughput": len(latencies) / wall, "p50": percentile(latencies, 0.5),
            "p99": percentile(latencies, 0.99), "runs": len(latencies),
            "mean_batch": rows / executions if executions else 0.0}


def stats(port, model):
    status, body = get_json(port, "GET", f"/v2/models/{model}/stats")
    if status != 200:
        raise RuntimeError(f"stats of {model}: {status} {body}")
    return body["model_stats"][0]


def start_server(args, repo, work):
    server, libs = find_server(Path(args.triton_venv).resolve())
    port = free_port()
    command = [str(server), f"--model-repository={repo}",
               f"--backend-directory={Path(args.backend_dir).resolve()}",
               "--http-address=127.0.0.1", f"--http-port={port}",
               "--allow-grpc=false", "--allow-metrics=false", "--allow-sagemaker=false",
               "--allow-vertex-ai=false", "--exit-timeout-secs=5", "--log-verbose=0"]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = str(libs) + (":" + env["LD_LIBRARY_PATH"]
                                          if env.get("LD_LIBRARY_PATH") else "")
    env["LOOM_PLUGIN_PATH"] = ""  # the build tree's plugins, next to libloom
    log_path = work / "tritonserver.log"
    log("$ " + " ".join(command))
    with open(log_path, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                preexec_fn=die_with_parent)
    deadline = time.monotonic() + args.startup_timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"tritonserver exited with {proc.returncode} at startup:\n"
                               + log_path.read_text(errors="replace")[-3000:])
        if time.monotonic() > deadline:
            raise RuntimeError("tritonserver was not ready in time:\n"
                               + log_path.read_text(errors="replace")[-3000:])
        try:
            if all(get_json(port, "GET", f"/v2/models/{m}/ready")[0] == 200
                   for m in ("batched", "single")):
                return proc, port, log_path
        except OSError:
            pass
        time.sleep(0.3)


def stop_server(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def check_outputs(args, port, model_path, inputs, array, work):
    """The served logits against infer-run's on the same input."""
    import numpy as np
    out = work / "infer-run-out"
    command = [args.infer_run, str(model_path), "--device", args.device, "--threads",
               str(args.threads), "--output", str(out)]
    for name, path in inputs.items():
        command += ["--input", f"{name}={path}"]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    expected = np.load(out / "logits.npy")
    for model in ("batched", "single"):
        got = np.frombuffer(Connection(port, model, array).infer(), np.float32)
        got = got.reshape(expected.shape)
        if not np.allclose(got, expected, rtol=1e-4, atol=1e-4):
            raise RuntimeError(f"{model}: served logits differ from infer-run's by up to "
                               f"{float(np.max(np.abs(got - expected)))}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--infer-run", default=str(REPO / "build" / "default" / "bin" / "infer-run"))
    parser.add_argument("--backend-dir", default=str(REPO / "build" / "default" / "triton"),
                        help="directory holding loom/libtriton_loom.so")
    parser.add_argument("--triton-venv", default=os.environ.get(
        "LOOM_TRITON_VENV", str(REPO / "build" / "triton-venv")))
    parser.add_argument("--device", default="onednn,cpu")
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads in all: infer-run's --threads, the model's `threads`")
    parser.add_argument("--instances", type=int, default=1, help="instance_group count")
    parser.add_argument("--queue-delay-us", type=int, default=0,
                        help="dynamic_batching's max_queue_delay_microseconds")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--warmup", type=int, default=3, help="infer-run's warm-up runs")
    parser.add_argument("--warmup-seconds", type=float, default=2,
                        help="served requests before each measured point")
    parser.add_argument("--startup-timeout", type=float, default=120)
    parser.add_argument("--cache", default=str(REPO / "build" / "dynamic-models"))
    parser.add_argument("--json-out")
    args = parser.parse_args()
    args.plugin = []  # throughput.run_loom's
    levels = [int(c) for c in args.concurrency.split(",") if c]
    backend = Path(args.backend_dir) / "loom" / "libtriton_loom.so"
    if not backend.exists():
        sys.exit(f"triton: no backend at {backend} (build the triton_loom target)")

    dynamic_shapes.ensure_models(args.cache, [MODEL])
    import numpy as np
    model_path = Path(args.cache, MODEL, "dynamic.onnx").resolve()
    inputs = dynamic_shapes.case_inputs(args.cache, MODEL, 0)
    array = np.load(inputs["input"])
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="loom-triton-bench-") as tmp:
        work = Path(tmp)
        repo = work / "repository"
        write_repository(repo, model_path, args, max(levels))
        proc, port, log_path = start_server(args, repo, work)
        try:
            check_outputs(args, port, model_path, inputs, array, work)
            for n in levels:
                log(f"{n} in flight: infer-run")
                direct = run_loom(args, str(model_path), inputs, n)
                row = {"concurrency": n, "infer_run": direct}
                for model in ("batched", "single"):
                    log(f"{n} in flight: triton {model}")
                    row[model] = served_point(port, model, array, n, args.seconds,
                                              args.warmup_seconds)
                rows.append(row)
        finally:
            stop_server(proc)
            for line in log_path.read_text(errors="replace").splitlines():
                if "TRITONBACKEND API" in line:
                    log("server: " + line.strip()[:200])
    end_load = os.getloadavg()[0]

    print(f"\nMobileNetV2 (dynamic batch, [1,3,224,224] f32 per request) served by tritonserver "
          f"with libtriton_loom ({args.instances} instance(s), devices {args.device}, "
          f"{args.threads} threads) over loopback HTTP (binary tensors, keep-alive), against "
          f"infer-run --concurrency N --threads {args.threads}; {args.seconds:g} s per point, "
          f"load average {load:.2f} at start, {end_load:.2f} at end\n")
    print("| in flight | infer-run inf/s | p50/p99 ms | triton dyn-batch inf/s | ratio | "
          "p50/p99 ms | mean batch | triton no-batch inf/s | ratio | p50/p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        d, b, s = r["infer_run"], r["batched"], r["single"]
        print(f"| {r['concurrency']} | {d['throughput']:.1f} | {d['p50']:.2f}/{d['p99']:.2f} | "
              f"{b['throughput']:.1f} | {b['throughput'] / d['throughput']:.3f} | "
              f"{b['p50']:.2f}/{b['p99']:.2f} | {b['mean_batch']:.2f} | "
              f"{s['throughput']:.1f} | {s['throughput'] / d['throughput']:.3f} | "
              f"{s['p50']:.2f}/{s['p99']:.2f} |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"rows": rows, "threads": args.threads, "instances": args.instances,
                       "device": args.device, "seconds": args.seconds, "load": [load, end_load]},
                      f, indent=2)


if __name__ == "__main__":
    main()
