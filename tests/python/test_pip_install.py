"""`pip install ./apps/python` into a fresh venv, then the digits demo from the installed package.

The venv is made from the interpreter ctest runs this with (--system-site-packages: Debian's
numpy); the build dependencies (scikit-build-core, nanobind) come from that interpreter's
environment through a .pth file, so the install needs no network (--no-build-isolation). The
CMake build goes to $LOOM_TEST_PIP_BUILD_DIR (kept between runs: a rerun rebuilds only what
changed) and uses ccache keyed like .ci/test's builds, so objects the presets compiled are reused.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_pip_install_into_a_fresh_venv(tmp_path):
    build_dir = os.environ.get("LOOM_TEST_PIP_BUILD_DIR", str(tmp_path / "pip-build"))
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    # scikit-build-core and nanobind from this interpreter's environment (the CI venv).
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "loom-build-deps.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")

    env = dict(os.environ, LOOM_PLUGIN_PATH="", CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))
    env.pop("PYTHONPATH", None)
    # The compilers CMake picks for the presets (scikit-build-core would take Python's
    # sysconfig CC/CXX, x86_64-linux-gnu-g++, whose objects ccache keys apart).
    for var, name in (("CC", "cc"), ("CXX", "c++")):
        if var not in env and shutil.which(name):
            env[var] = shutil.which(name)
    if shutil.which("ccache") and not os.environ.get("LOOM_NO_CCACHE"):
        env.update(CMAKE_C_COMPILER_LAUNCHER="ccache", CMAKE_CXX_COMPILER_LAUNCHER="ccache",
                   CCACHE_BASEDIR=REPO, CCACHE_NOHASHDIR="true")
    start = time.monotonic()
    p = subprocess.run(
        [py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", "-q",
         os.path.join(REPO, "apps", "python"), f"--config-settings=build-dir={build_dir}"],
        env=env, capture_output=True, text=True, timeout=3600,
    )
    print(f"pip install took {time.monotonic() - start:.0f} s")
    assert p.returncode == 0, p.stdout[-5000:] + p.stderr[-5000:]

    # From another directory, without PYTHONPATH: the installed package and its own plugins.
    script = textwrap.dedent(
        """
        import os, loom, numpy as np
        pkg = os.path.dirname(loom.__file__)
        assert pkg.startswith(os.environ["VENV"]), pkg
        plugins = {p["name"]: p["path"] for p in loom.list_plugins() if p["loaded"]}
        for name in ("onnx", "cpu", "onednn"):
            assert plugins[name].startswith(os.path.join(pkg, "lib", "loom", "plugins")), plugins
        demo = os.path.join(os.environ["REPO"], "apps", "infer-run", "demo")
        s = loom.InferenceSession(os.path.join(demo, "digits.onnx"), devices=["onednn", "cpu"])
        probabilities, digit = s.run(None, {"image": np.load(os.path.join(demo, "samples.npy"))})
        labels = open(os.path.join(demo, "samples_labels.txt")).read().split()
        print(loom.__version__, digit.tolist(), labels[: len(digit)])
        assert (digit == np.array(labels[: len(digit)], np.int64)).mean() >= 0.75
        """
    )
    p = subprocess.run([py, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env=dict(env, VENV=str(venv), REPO=REPO))
    assert p.returncode == 0, p.stdout + p.stderr
    print(p.stdout)

    # The extension finds libloom beside it ($ORIGIN/lib), not in the build tree.
    pkg = subprocess.run([py, "-c", "import loom, os; print(os.path.dirname(loom.__file__))"], cwd=tmp_path,
                         capture_output=True, text=True, env=dict(env), check=True).stdout.strip()
    ext = [f for f in os.listdir(pkg) if f.startswith("_loom") and f.endswith(".so")]
    assert len(ext) == 1, os.listdir(pkg)
    if shutil.which("readelf"):
        dyn = subprocess.run(["readelf", "-d", os.path.join(pkg, ext[0])], capture_output=True, text=True).stdout
        assert "$ORIGIN/lib" in dyn and build_dir not in dyn, dyn
    assert os.path.exists(os.path.join(pkg, "lib", "libloom.so.0"))
