#!/usr/bin/python3
"""Behaviour of loom-conformance itself: expected failures, unexpected passes and failures,
--write-failures, --skip-unclaimed, and the exit code. Uses node/test_add, which every device set must pass,
and a device that does not exist (with --no-fallback) to make it fail on purpose.

Usage: runner_test.py --runner PATH --plugin-dir DIR
"""
import argparse
import os
import subprocess
import tempfile

ROOT = "/usr/share/libonnx-testdata/data/node"


def run(args, *extra, allow_empty=False):
    cmd = [args.runner, "--plugin", args.plugin_dir, "--filter", "^node/test_add$", ROOT] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode >= 0, f"runner died by signal {-p.returncode}"
    lines = p.stdout.splitlines()
    assert lines or allow_empty, f"no output: {p.stderr}"
    return p.returncode, lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--plugin-dir", required=True)
    args = parser.parse_args()
    broken = ["--devices", "no_such_device", "--no-fallback"]
    with tempfile.TemporaryDirectory() as tmp:
        xfail = os.path.join(tmp, "xfail.txt")
        with open(xfail, "w") as f:
            f.write("# comment\nnode/test_add  # listed on purpose\n")
        empty = os.path.join(tmp, "empty.txt")
        open(empty, "w").close()

        code, lines = run(args)
        assert code == 0 and lines[-1] == "1 passed, 0 failed, 0 skipped", lines

        code, lines = run(args, *broken)
        assert code == 1 and lines[-1] == "0 passed, 1 failed, 0 skipped", lines
        assert lines[0].startswith("FAIL node/test_add: session: ") and "no_such_device" in lines[0]

        # --skip-unclaimed skips only a node no device takes; an unknown device stays a failure
        # (tests/matrix's self-test covers the skip itself with a real device), and it makes no
        # sense without --no-fallback.
        code, lines = run(args, *broken, "--skip-unclaimed")
        assert code == 1 and lines[-1] == "0 passed, 1 failed, 0 skipped", lines
        code, lines = run(args, "--skip-unclaimed", allow_empty=True)
        assert code == 2, (code, lines)

        code, lines = run(args, *broken, "--expected-failures", xfail)
        assert code == 0, lines
        assert not any(l.startswith("FAIL") for l in lines), lines

        code, lines = run(args, *broken, "--expected-failures", xfail, "--verbose")
        assert code == 0 and any(l.startswith("XFAIL node/test_add: ") for l in lines), lines

        code, lines = run(args, "--expected-failures", xfail)
        assert code == 1, lines
        assert f"XPASS node/test_add: remove it from {xfail}" in lines, lines

        code, lines = run(args, *broken, "--expected-failures", empty)
        assert code == 1, lines

        # A nondeterministic entry accepts a pass and a failure, and survives a rewrite.
        random = os.path.join(tmp, "random.txt")
        with open(random, "w") as f:
            f.write("node/test_add  # nondeterministic: draws random numbers\n")
        code, lines = run(args, "--expected-failures", random)
        assert code == 0 and not any(l.startswith("XPASS") for l in lines), lines
        code, lines = run(args, *broken, "--expected-failures", random)
        assert code == 0, lines
        rewritten = os.path.join(tmp, "rewritten.txt")
        run(args, "--expected-failures", random, "--write-failures", rewritten)
        with open(rewritten) as f:
            assert "node/test_add  # nondeterministic: draws random numbers" in f.read()

        written = os.path.join(tmp, "written.txt")
        code, lines = run(args, *broken, "--write-failures", written)
        with open(written) as f:
            entries = [l for l in f.read().splitlines() if l and not l.startswith("#")]
        assert len(entries) == 1 and entries[0].startswith("node/test_add  # session: "), entries
    print("runner behaviour: ok")


if __name__ == "__main__":
    main()
