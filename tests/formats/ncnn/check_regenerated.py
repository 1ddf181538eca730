#!/usr/bin/env python3
"""Regenerates the ncnn test models with the ncnn Python package and checks Loom on them.

Creates (on first use) a venv with Debian's python and system site packages (numpy), installs
`ncnn` into it from PyPI, runs generate_models.py into --work, and runs the model tests of
loom_ncnn_tests against the regenerated files (LOOM_NCNN_TEST_MODELS). This catches drift
between the committed models and what the generator and today's ncnn produce.
"""
import argparse
import os
import subprocess
import sys

NCNN_VERSION = "1.0.20261020"
HERE = os.path.dirname(os.path.abspath(__file__))


def log(message):
    print(message, file=sys.stderr, flush=True)


def ensure_venv(venv):
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        log(f"creating {venv} (system site packages visible)")
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], check=True)
    probe = subprocess.run([python, "-c", "import ncnn; print(ncnn.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != NCNN_VERSION:
        log(f"installing ncnn=={NCNN_VERSION} into {venv}")
        subprocess.run([python, "-m", "pip", "install", "-q", f"ncnn=={NCNN_VERSION}"], check=True)
    return python


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--venv", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--tests", required=True, help="the loom_ncnn_tests executable")
    args = parser.parse_args()
    python = ensure_venv(args.venv)
    subprocess.run([python, os.path.join(HERE, "generate_models.py"), args.work], check=True)
    env = dict(os.environ, LOOM_NCNN_TEST_MODELS=args.work)
    result = subprocess.run([args.tests, "--gtest_filter=Models/NcnnModelTest.CpuMatchesNcnn/*"], env=env)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
