"""Runs the infer-run CLI and reads back what it wrote; shared by the model and demo checks."""

import json
import os
import shlex
import subprocess
import tempfile

import numpy as np


class CheckError(Exception):
    """A failed check; main() prints it on one line and exits non-zero."""


class UnclaimedNodes(CheckError):
    """infer-run --no-fallback refused the model: no listed device supports one of its nodes."""


# ctest's SKIP_RETURN_CODE for a check skipped with --skip-unclaimed.
SKIP_EXIT_CODE = 77


def add_matrix_arguments(parser):
    """The options the plugin-combination matrix (tests/matrix) passes to every check."""
    parser.add_argument("--infer-run-arg", action="append", default=[], metavar="ARG",
                        help="extra infer-run argument, e.g. --no-default-plugins (repeatable)")
    parser.add_argument("--skip-unclaimed", action="store_true",
                        help=f"exit {SKIP_EXIT_CODE} (skipped) when infer-run --no-fallback finds "
                             "a node no listed device supports")


def run_infer_run(infer_run, model, inputs, plugins=(), device="cpu", threads=None, warmup=None,
                  repeat=None, timeout=None, extra_args=()):
    """Runs infer-run on model with inputs {name: .npy path}.

    Returns (outputs {name: ndarray}, report) where report is the --json object it printed.
    """
    with tempfile.TemporaryDirectory(prefix="loom-infer-") as out_dir:
        # A cross-built infer-run runs under an emulator, e.g. the aarch64 test preset sets
        # LOOM_INFER_RUN_LAUNCHER="qemu-aarch64 -L <sysroot>".
        launcher = shlex.split(os.environ.get("LOOM_INFER_RUN_LAUNCHER", ""))
        command = launcher + [infer_run, "--model", model, "--output", out_dir, "--device", device,
                              "--json"]
        for plugin in plugins:
            command += ["--plugin", plugin]
        for name, path in inputs.items():
            command += ["--input", f"{name}={path}"]
        for flag, value in (("--threads", threads), ("--warmup", warmup), ("--repeat", repeat)):
            if value is not None:
                command += [flag, str(value)]
        command += list(extra_args)
        print("+ " + " ".join(command), flush=True)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as error:
            raise CheckError(f"infer-run did not finish within {timeout}s") from error
        if done.stderr:
            print(done.stderr.rstrip(), flush=True)
        # Exit code 4 with the core's placement error: the devices do not claim every node.
        if done.returncode == 4 and "nodes are supported by none of the devices" in done.stderr:
            raise UnclaimedNodes(done.stderr.strip().splitlines()[-1])
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
