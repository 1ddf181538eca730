"""The wheel installs anywhere: into a fresh venv WITHOUT the system's site packages (NumPy from
the package index, as a user's pip gets it), it runs models on `cpu` and `onednn` with
LD_LIBRARY_PATH unset, no LOOM_PLUGIN_PATH and the build tree out of sight (another directory),
and every ELF file in it resolves its dependencies inside the wheel except the base system
(glibc, libstdc++, libgcc_s: BASE_SYSTEM below, kept in step with apps/python/cmake/
bundle_libs.cmake)."""

import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

from conftest import TensorProto, helper, numpy_helper, save
from wheel_build import wheel_for_tests

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE_SYSTEM = re.compile(
    r"^(ld-linux.*\.so.*|linux-vdso\.so.*|lib(c|m|mvec|pthread|dl|rt|util|resolv|nsl|anl)\.so\.\d+"
    r"|libstdc\+\+\.so\.\d+|libgcc_s\.so\.\d+)$"
)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "LOOM_TEST_INFER_RUN")}
    env.update(LOOM_PLUGIN_PATH="", PYTHONNOUSERSITE="1", **extra)
    return env


def mlp(path):
    """probs = Softmax(Relu(x @ W1 + b1) @ W2 + b2): ops every CPU device runs."""
    rng = np.random.default_rng(11)
    w1, b1 = rng.standard_normal((20, 32)).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    w2, b2 = rng.standard_normal((32, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    save(path,
         [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
          helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"]),
          helper.make_node("Softmax", ["logits"], ["probs"], axis=1)],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 20])],
         [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [4, 5])],
         initializers=[numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    x = rng.standard_normal((4, 20)).astype(np.float32)
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return x, e / e.sum(axis=1, keepdims=True)


def elf_dynamic(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[(.+?)\]", out)
    return needed, runpath


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, installed package directory, the wheel) for a fresh venv."""
    tmp = tmp_path_factory.mktemp("wheel")
    wheel = wheel_for_tests(tmp)
    venv = tmp / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)  # no system site packages
    py = str(venv / "bin" / "python")
    # NumPy comes from the index, as a user's does; the wheel's own dependency list says so.
    p = subprocess.run([py, "-m", "pip", "install", "-q", wheel], env=clean_env(), capture_output=True,
                       text=True, timeout=900, cwd=tmp)
    if p.returncode != 0 and "numpy" in (p.stdout + p.stderr).lower() and "no matching distribution" in (
            p.stdout + p.stderr).lower():
        pytest.skip("no package index with NumPy reachable (the fresh venv takes NumPy from PyPI): " + p.stderr[-500:])
    assert p.returncode == 0, p.stdout[-5000:] + p.stderr[-5000:]
    pkg = subprocess.run([py, "-c", "import loom, os; print(os.path.dirname(loom.__file__))"], cwd=tmp,
                         env=clean_env(), capture_output=True, text=True, timeout=120)
    assert pkg.returncode == 0, pkg.stdout + pkg.stderr
    return py, pkg.stdout.strip(), wheel, tmp


def test_the_venv_has_no_system_packages(installed):
    py, pkg, _, tmp = installed
    assert pkg.startswith(str(tmp)), pkg
    p = subprocess.run([py, "-c", "import sys, numpy; print(sys.flags.no_site, numpy.__file__)"], cwd=tmp,
                       env=clean_env(), capture_output=True, text=True, check=True)
    assert str(tmp) in p.stdout, p.stdout  # NumPy from the venv, not /usr/lib/python3/dist-packages


def test_runs_on_cpu_and_onednn_from_the_wheel(installed):
    py, pkg, _, tmp = installed
    x, expected = mlp(str(tmp / "mlp.onnx"))
    np.save(tmp / "x.npy", x)
    np.save(tmp / "expected.npy", expected)
    extra = str(tmp / "extra_plugins")
    os.makedirs(extra, exist_ok=True)
    script = textwrap.dedent(
        """
        import os, sys, numpy as np, loom
        pkg = os.path.dirname(loom.__file__)
        own = os.path.join(pkg, "lib", "loom", "plugins")
        loaded = {p["name"]: p["path"] for p in loom.list_plugins() if p["loaded"]}
        for name in ("onnx", "loom", "tflite", "ncnn", "cpu", "onednn"):
            assert loaded.get(name, "").startswith(own), (name, loaded)
        devices = {d["name"]: d["available"] for d in loom.list_devices()}
        assert devices.get("cpu") and devices.get("onednn"), devices
        x, expected = np.load("x.npy"), np.load("expected.npy")
        for device in ("cpu", "onednn"):
            s = loom.InferenceSession("mlp.onnx", devices=[device], no_fallback=True)
            (probs,) = s.run(None, {"x": x})
            np.testing.assert_allclose(probs, expected, rtol=1e-4, atol=1e-6)
            assert device in s.explain(), s.explain()
            print(device, "ok", float(abs(probs - expected).max()))
        # Extra plugin paths still work alongside the package's own (an empty directory here).
        s = loom.InferenceSession("mlp.onnx", devices=["onednn", "cpu"], plugins=[sys.argv[1]])
        np.testing.assert_allclose(s.run(None, {"x": x})[0], expected, rtol=1e-4, atol=1e-6)
        demo = os.path.join(sys.argv[2], "apps", "infer-run", "demo")
        s = loom.InferenceSession(open(os.path.join(demo, "digits.onnx"), "rb").read(), devices=["onednn", "cpu"])
        _, digit = s.run(None, {"image": np.load(os.path.join(demo, "samples.npy"))})
        labels = np.array(open(os.path.join(demo, "samples_labels.txt")).read().split(), np.int64)
        assert (digit == labels[: len(digit)]).mean() >= 0.75, digit
        print("digits", digit.tolist())
        """
    )
    p = subprocess.run([py, "-c", script, extra, REPO], cwd=tmp, env=clean_env(), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "cpu ok" in p.stdout and "onednn ok" in p.stdout, p.stdout


def test_every_library_resolves_inside_the_wheel(installed):
    if not shutil.which("readelf"):
        pytest.skip("no readelf (binutils)")
    _, pkg, wheel, _ = installed
    libdir = os.path.join(pkg, "lib")
    elves = [f for f in glob.glob(os.path.join(pkg, "**", "*.so*"), recursive=True) if os.path.isfile(f)]
    plugins = glob.glob(os.path.join(libdir, "loom", "plugins", "*.so"))
    assert {"loom_onnx.so", "loom_cpu.so", "loom_onednn.so"} <= {os.path.basename(p) for p in plugins}, plugins
    bundled = {os.path.basename(f) for f in glob.glob(os.path.join(libdir, "*.so*"))}
    # What the plugins need from outside Loom is in the wheel (Debian 12's sonames).
    for lib in ("libdnnl.so", "libprotobuf.so", "libfmt.so", "libboost_filesystem.so", "libgomp.so"):
        assert any(b.startswith(lib) for b in bundled), (lib, sorted(bundled))
    for f in elves:
        assert not os.path.islink(f), f
        needed, runpath = elf_dynamic(f)
        dirs = [r.replace("$ORIGIN", os.path.dirname(f)) for rp in runpath for r in rp.split(":")]
        assert all(os.path.realpath(d).startswith(os.path.realpath(pkg)) for d in dirs), (f, runpath)
        for name in needed:
            if BASE_SYSTEM.match(name):
                continue
            assert any(os.path.isfile(os.path.join(d, name)) for d in dirs), (f, name, runpath)
    # And the dynamic loader agrees: ldd resolves every non-base library inside the package.
    for f in plugins + [os.path.join(libdir, "libloom.so.0")]:
        out = subprocess.run(["ldd", f], env=clean_env(), capture_output=True, text=True, check=True).stdout
        assert "not found" not in out, (f, out)
        for name, path in re.findall(r"^\s*(\S+) => (\S+)", out, re.M):
            if not BASE_SYSTEM.match(name):
                assert os.path.realpath(path).startswith(os.path.realpath(pkg)), (f, name, path)
    # The wheel itself holds no symlinks and no path of the build machine's build tree.
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            assert (info.external_attr >> 16) & 0o170000 != 0o120000, info.filename


def test_stubs_are_installed(installed):
    py, pkg, _, tmp = installed
    assert os.path.isfile(os.path.join(pkg, "py.typed"))
    with open(os.path.join(pkg, "_loom.pyi")) as f:
        stub = f.read()
    assert "class Session" in stub and "def run(self" in stub and "def dlpack_tensor(" in stub
    p = subprocess.run([py, "-c", "import typing, loom; print(sorted(typing.get_type_hints(loom.InferenceSession.run)))"],
                       cwd=tmp, env=clean_env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "input_feed" in p.stdout, p.stdout + p.stderr
