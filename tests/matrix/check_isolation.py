#!/usr/bin/python3
"""Checks that a plugin combination of the matrix sees exactly its own plugins.

Runs `infer-run --no-default-plugins --plugin DIR --list-plugins` with LOOM_PLUGIN_PATH
pointing at the build tree's plugin directory (which must be ignored) and asserts that every
plugin loaded comes from DIR, that none was skipped, and that the loaded plugin names are
exactly the expected ones.

Usage: check_isolation.py --infer-run PATH --plugin-dir DIR --decoy-dir DIR --expect NAME...
"""
import argparse
import os
import shlex
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--infer-run", required=True)
    parser.add_argument("--plugin-dir", required=True, help="the combination's plugin directory")
    parser.add_argument("--decoy-dir", required=True,
                        help="a directory with other plugins, put on LOOM_PLUGIN_PATH")
    parser.add_argument("--expect", nargs="+", required=True, help="plugin names to be loaded")
    args = parser.parse_args()

    env = dict(os.environ, LOOM_PLUGIN_PATH=args.decoy_dir)
    # The aarch64 build runs its binaries under an emulator:
    # LOOM_INFER_RUN_LAUNCHER="qemu-aarch64 -L <sysroot>".
    launcher = shlex.split(os.environ.get("LOOM_INFER_RUN_LAUNCHER", ""))
    command = launcher + [args.infer_run, "--no-default-plugins", "--plugin", args.plugin_dir,
                          "--list-plugins"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    if done.returncode != 0:
        print(f"FAIL: {' '.join(command)} exited with {done.returncode}: {done.stderr.strip()}")
        return 1
    plugin_dir = os.path.realpath(args.plugin_dir)
    loaded = {}
    problems = []
    for line in done.stdout.splitlines():
        if line.startswith("skipped"):
            problems.append(f"a plugin was skipped: {line}")
            continue
        fields = line.split()
        path = next((f for f in fields if f.endswith(".so")), None)
        if not fields or path is None:
            continue
        loaded[fields[0]] = path
        if os.path.dirname(os.path.realpath(path)) != plugin_dir:
            problems.append(f"plugin {fields[0]} was loaded from {path}, outside {plugin_dir}")
    if sorted(loaded) != sorted(args.expect):
        problems.append(f"loaded plugins {sorted(loaded)}, expected {sorted(args.expect)}")
    if problems:
        print("FAIL: " + "; ".join(problems))
        print(done.stdout)
        return 1
    print(f"PASS: {plugin_dir} holds exactly {', '.join(sorted(loaded))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
