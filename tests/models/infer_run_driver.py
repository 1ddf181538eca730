"""Runs the infer-run CLI and reads back what it wrote; shared by the model and demo checks."""

import json
import os
import subprocess
import tempfile

import numpy as np


class CheckError(Exception):
    """A failed check; main() prints it on one line and exits non-zero."""


def run_infer_run(infer_run, model, inputs, plugins=(), device="cpu", threads=None, warmup=None,
                  repeat=None, timeout=None):
    """Runs infer-run on model with inputs {name: .npy path}.

    Returns (outputs {name: ndarray}, report) where report is the --json object it printed.
    """
    with tempfile.TemporaryDirectory(prefix="loom-infer-") as out_dir:
        command = [infer_run, "--model", model, "--output", out_dir, "--device", device, "--json"]
        for plugin in plugins:
            command += ["--plugin", plugin]
        for name, path in inputs.items():
            command += ["--input", f"{name}={path}"]
        for flag, value in (("--threads", threads), ("--warmup", warmup), ("--repeat", repeat)):
            if value is not None:
                command += [flag, str(value)]
        print("+ " + " ".join(command), flush=True)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as error:
            raise CheckError(f"infer-run did not finish within {timeout}s") from error
        if done.stderr:
            print(done.stderr.rstrip(), flush=True)
        if done.returncode != 0:
            raise CheckError(f"infer-run exited with {done.returncode}: "
                             f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
        report = parse_report(done.stdout)
        outputs = {}
        for entry in sorted(os.listdir(out_dir)):
            if entry.endswith(".npy"):
                outputs[entry[:-4]] = np.load(os.path.join(out_dir, entry))
        return outputs, report


def parse_report(stdout):
    """The --json object: the whole stdout, or else its last line that parses as an object."""
    text = stdout.strip()
    candidates = [text] + [line for line in reversed(text.splitlines()) if line.startswith("{")]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise CheckError(f"infer-run --json printed no JSON object; stdout was: {text[:300]!r}")


def latency_text(report):
    """latency_ms as printed by infer-run: a number, or an object of statistics."""
    latency = report.get("latency_ms")
    if isinstance(latency, dict):
        return ", ".join(f"{k} {v:.3f} ms" if isinstance(v, float) else f"{k} {v}"
                         for k, v in latency.items())
    if isinstance(latency, (int, float)):
        return f"{latency:.3f} ms"
    return f"{latency!r} (latency_ms missing or unexpected)"
