"""Builds the loom wheel (`pip wheel ./apps/python`) for the wheel tests.

ctest runs this as the fixture python.wheel_build, before python.pip_install and python.wheel;
those tests, run alone with pytest, call build_wheel() themselves. The wheel is built with the
interpreter running this (--no-build-isolation: scikit-build-core and nanobind come from its
environment, no network), in $LOOM_TEST_PIP_BUILD_DIR (kept between runs: a rerun rebuilds only
what changed; as deep in the checkout as a preset's build directory, so that ccache keyed like
.ci/test's builds reuses the presets' objects, docs/python.md).

    python3 tests/python/wheel_build.py DIST_DIR [BUILD_DIR]
"""

import glob
import os
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_env():
    env = dict(os.environ, LOOM_PLUGIN_PATH="", CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get(
        "CMAKE_BUILD_PARALLEL_LEVEL", str(min(os.cpu_count() or 2, 2))))
    env.pop("PYTHONPATH", None)
    # The compilers CMake picks for the presets (scikit-build-core would take Python's
    # sysconfig CC/CXX, x86_64-linux-gnu-g++, whose objects ccache keys apart).
    for var, name in (("CC", "cc"), ("CXX", "c++")):
        if var not in env and shutil.which(name):
            env[var] = shutil.which(name)
    if shutil.which("ccache") and not os.environ.get("LOOM_NO_CCACHE"):
        env.update(CMAKE_C_COMPILER_LAUNCHER="ccache", CMAKE_CXX_COMPILER_LAUNCHER="ccache",
                   CCACHE_BASEDIR=REPO, CCACHE_NOHASHDIR="true")
    return env


def debug_info_settings():
    """LOOM_DEBUG_INFO of the build running the tests ($LOOM_TEST_WHEEL_DEBUG_INFO), if any."""
    level = os.environ.get("LOOM_TEST_WHEEL_DEBUG_INFO")
    return [f"--config-settings=cmake.define.LOOM_DEBUG_INFO={level}"] if level else []


def build_wheel(dist_dir, build_dir):
    """Returns the path of the one wheel `pip wheel` wrote into dist_dir."""
    os.makedirs(dist_dir, exist_ok=True)
    for old in glob.glob(os.path.join(dist_dir, "loom-*.whl")):
        os.remove(old)
    start = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
         "-w", dist_dir, os.path.join(REPO, "apps", "python"), f"--config-settings=build-dir={build_dir}"]
        + debug_info_settings(),
        env=build_env(), capture_output=True, text=True, timeout=3600,
    )
    print(f"pip wheel took {time.monotonic() - start:.0f} s")
    if p.returncode != 0:
        raise RuntimeError("pip wheel failed:\n" + p.stdout[-6000:] + p.stderr[-6000:])
    wheels = glob.glob(os.path.join(dist_dir, "loom-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"pip wheel left {wheels} in {dist_dir}")
    return wheels[0]


def wheel_for_tests(tmp_path):
    """The wheel the ctest fixture built ($LOOM_TEST_WHEEL_DIR), else one built now."""
    dist = os.environ.get("LOOM_TEST_WHEEL_DIR")
    if dist:
        wheels = glob.glob(os.path.join(dist, "loom-*.whl"))
        if len(wheels) == 1:
            return wheels[0]
    build_dir = os.environ.get("LOOM_TEST_PIP_BUILD_DIR", str(tmp_path / "pip-build"))
    return build_wheel(dist or str(tmp_path / "dist"), build_dir)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    build = sys.argv[2] if len(sys.argv) == 3 else os.path.join(sys.argv[1], "build")
    try:
        print(build_wheel(sys.argv[1], build))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        sys.exit(str(e))
