"""The wheel (`pip wheel ./apps/python`, tests/python/wheel_build.py) installed into a venv over
the interpreter ctest runs this with (--system-site-packages: Debian's numpy, no network), then
the digits demo from the installed package, from another directory. test_wheel.py installs it
into a venv without the system's packages.
"""

import os
import shutil
import subprocess
import sys
import textwrap

from wheel_build import wheel_for_tests

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_pip_install_into_a_venv(tmp_path):
    wheel = wheel_for_tests(tmp_path)
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = dict(os.environ, LOOM_PLUGIN_PATH="")
    env.pop("PYTHONPATH", None)
    p = subprocess.run([py, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel],
                       env=env, capture_output=True, text=True, timeout=600)
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
        assert "$ORIGIN/lib" in dyn and "/build/" not in dyn, dyn
    assert os.path.exists(os.path.join(pkg, "lib", "libloom.so.0"))
