#!/usr/bin/python3
"""The SDK as a stranger uses it: install Loom, build the examples against the installed tree
only, install them into its plugin directory and run models through the installed infer-run.

    out_of_tree_test.py --build BUILD_DIR --source SOURCE_DIR --work WORK_DIR

Checks, each failing the test with a message naming what broke:
  1. `cmake --install` lays out headers, the CMake package, loom.pc and the plugin directory;
  2. pkg-config: an application builds with `pkg-config --cflags --libs loom` and runs;
     `plugindir` names the installed plugin directory; the same application builds with
     find_package(Loom) and Loom::loom;
  3. both examples configure (find_package(Loom)), build and install as separate projects;
  4. loom_add_plugin's entry-symbol check fails a plugin without an extern "C" entry;
  5. the custom op (com.example::SwishBeta) model matches numpy on the cpu device, and with a
     wrong-typed attribute fails naming the node once;
  6. `--device minimal,cpu` matches numpy and --explain puts nodes on minimal, with the
     reason for the nodes it refused.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

PYTHON = "/usr/bin/python3"  # Debian's, with onnx and numpy


class Failure(Exception):
    pass


def run(cmd, env=None, cwd=None, timeout=600, expect_ok=True):
    result = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if expect_ok and result.returncode != 0:
        raise Failure("command failed (exit %d): %s\n%s\n%s" % (
            result.returncode, " ".join(cmd), result.stdout[-4000:], result.stderr[-4000:]))
    return result


def cache_value(build, key, default):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split("=", 1)[1].strip()
    return default


LIBDIR = "lib"  # CMAKE_INSTALL_LIBDIR of the build, set in main()


def clean_env(prefix):
    """An environment where only the installed tree is visible."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOOM_PLUGIN_PATH", "PKG_CONFIG_PATH", "CMAKE_PREFIX_PATH", "LD_LIBRARY_PATH")}
    # `cmake --install` drops the build tree's RPATH; a prefix outside the loader's default
    # paths needs LD_LIBRARY_PATH, exactly as for any library installed there.
    env["LD_LIBRARY_PATH"] = os.path.join(prefix, LIBDIR)
    return env


def check_layout(prefix):
    libdir = os.path.join(prefix, LIBDIR)
    expected = [
        "include/loom/loom.h", "include/loom/loom.hpp", "include/loom/plugin.h", "include/loom/plugin.hpp",
        "bin/infer-run", "share/doc/libloom-dev/sdk-guide.md",
        "share/doc/libloom-dev/examples/minimal_device/CMakeLists.txt",
        "share/doc/libloom-dev/examples/custom_op_kernel/swish_beta.cpp",
    ] + [LIBDIR + "/" + p for p in (
        "libloom.so", "libloom.so.0", "cmake/Loom/LoomConfig.cmake", "cmake/Loom/LoomConfigVersion.cmake",
        "cmake/Loom/LoomTargets.cmake", "cmake/Loom/LoomPlugin.cmake", "cmake/Loom/loom_plugin.map",
        "pkgconfig/loom.pc", "loom/plugins/loom_onnx.so", "loom/plugins/loom_cpu.so")]
    missing = [p for p in expected if not os.path.exists(os.path.join(prefix, p))]
    if missing:
        raise Failure("cmake --install did not install: " + ", ".join(missing))
    soname = run(["readelf", "-d", os.path.join(libdir, "libloom.so.0")]).stdout
    if "Library soname: [libloom.so.0]" not in soname:
        raise Failure("installed libloom.so.0 lacks SONAME libloom.so.0:\n" + soname)


def check_apps_find_libloom(prefix, env):
    """The installed command-line tools run without LD_LIBRARY_PATH: RUNPATH $ORIGIN/../<libdir>."""
    bare = {k: v for k, v in env.items() if k != "LD_LIBRARY_PATH"}
    for app in ("infer-run", "infer-convert"):
        path = os.path.join(prefix, "bin", app)
        dynamic = run(["readelf", "-d", path]).stdout
        if "$ORIGIN/../" + LIBDIR not in dynamic:
            raise Failure("installed %s has no RUNPATH $ORIGIN/../%s:\n%s" % (app, LIBDIR, dynamic))
    listing = run([os.path.join(prefix, "bin", "infer-run"), "--list-plugins"], env=bare).stdout
    if "onnx" not in listing or "cpu" not in listing:
        raise Failure("the installed infer-run, without LD_LIBRARY_PATH, lists no onnx and cpu plugins:\n"
                      + listing)


def check_pkg_config(source, prefix, work, env):
    env = dict(env, PKG_CONFIG_PATH=os.path.join(prefix, LIBDIR, "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "loom"], env=env).stdout.split()
    plugindir = run(["pkg-config", "--variable=plugindir", "loom"], env=env).stdout.strip()
    # Normalized: the absolute path itself, no "lib/pkgconfig/../.." on the way.
    expected = os.path.realpath(os.path.join(prefix, LIBDIR, "loom", "plugins"))
    if plugindir != expected:
        raise Failure("loom.pc plugindir is %s, expected exactly %s" % (plugindir, expected))
    app = os.path.join(work, "pkgconfig_app")
    run(["cc", "-std=c99", "-Wall", "-Werror", os.path.join(source, "tests", "sdk", "pkgconfig_app.c"),
         "-o", app] + flags, env=env)
    out = run([app], env=env).stdout
    if not out.startswith("loom ") or "0 plugins" in out:
        raise Failure("the pkg-config app printed %r; expected libloom's version and its plugins" % out)


def check_cmake_app(source, prefix, work, env):
    build_dir = os.path.join(work, "cmake_app")
    run(["cmake", "-S", os.path.join(source, "tests", "sdk", "cmake_app"), "-B", build_dir, "-G", "Ninja",
         "-DCMAKE_PREFIX_PATH=" + prefix], env=env)
    run(["cmake", "--build", build_dir], env=env)
    out = run([os.path.join(build_dir, "loom_cmake_app")], env=env).stdout
    if not out.startswith("loom ") or "0 plugins" in out:
        raise Failure("the Loom::loom app printed %r; expected libloom's version and its plugins" % out)


def build_example(source_dir, build_dir, prefix, env):
    run(["cmake", "-S", source_dir, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         "-DCMAKE_PREFIX_PATH=" + prefix], env=env)
    run(["cmake", "--build", build_dir, "-j2"], env=env)
    # No --prefix: loom_add_plugin installs into the installed Loom's plugin directory.
    run(["cmake", "--install", build_dir], env=env)


def check_plugin_install_and_flags(examples, work, prefix, env):
    """`cmake --install --prefix X` puts a plugin under X, not into the installed Loom; a project
    with no build type still compiles its plugin optimized."""
    build_dir = os.path.join(work, "minimal_own_prefix")
    run(["cmake", "-S", os.path.join(examples, "minimal_device"), "-B", build_dir, "-G", "Ninja",
         "-DCMAKE_PREFIX_PATH=" + prefix], env=env)
    commands = run(["ninja", "-C", build_dir, "-t", "commands"], env=env).stdout
    compiles = [c for c in commands.splitlines() if " -c " in c]
    if not compiles or not all(" -O2" in c for c in compiles):
        raise Failure("a plugin configured without a build type is not compiled with -O2:\n"
                      + "\n".join(compiles[:3]))
    run(["cmake", "--build", build_dir, "-j2"], env=env)
    own = os.path.join(work, "own_prefix")
    run(["cmake", "--install", build_dir, "--prefix", own], env=env)
    installed = [os.path.relpath(os.path.join(d, f), own)
                 for d, _, files in os.walk(own) for f in files]
    expected = os.path.join(LIBDIR, "loom", "plugins", "loom_minimal.so")
    if installed != [expected]:
        raise Failure("cmake --install --prefix %s installed %s; expected only %s" % (own, installed, expected))


def check_bad_entry(source, work, prefix, env):
    build_dir = os.path.join(work, "bad_entry")
    run(["cmake", "-S", os.path.join(source, "tests", "sdk", "bad_entry"), "-B", build_dir, "-G", "Ninja",
         "-DCMAKE_PREFIX_PATH=" + prefix], env=env)
    result = run(["cmake", "--build", build_dir], env=env, expect_ok=False)
    text = result.stdout + result.stderr
    if result.returncode == 0:
        raise Failure("a plugin without an extern \"C\" loom_plugin_entry built without error")
    if "does not export the function loom_plugin_entry" not in " ".join(text.split()):  # cmake wraps lines
        raise Failure("the entry-symbol check failed without its message:\n" + text[-3000:])


def compare(path, expected_path, what, rtol=1e-5, atol=1e-6):
    got = np.load(path)
    want = np.load(expected_path)
    if got.dtype != want.dtype or got.shape != want.shape:
        raise Failure("%s: got %s %s, expected %s %s" % (what, got.dtype, got.shape, want.dtype, want.shape))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        raise Failure("%s: max abs difference %g\ngot %s\nexpected %s" % (
            what, float(np.max(np.abs(got - want))), got.ravel()[:8], want.ravel()[:8]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    global LIBDIR
    LIBDIR = cache_value(args.build, "CMAKE_INSTALL_LIBDIR", "lib")
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prefix = os.path.join(work, "prefix")
    env = clean_env(prefix)
    examples = os.path.join(args.source, "sdk", "examples")
    infer_run = os.path.join(prefix, "bin", "infer-run")
    plugin_dir = os.path.join(prefix, LIBDIR, "loom", "plugins")
    try:
        run(["cmake", "--install", args.build, "--prefix", prefix])
        check_layout(prefix)
        print("ok: installed tree")
        check_apps_find_libloom(prefix, env)
        print("ok: installed infer-run and infer-convert find libloom without LD_LIBRARY_PATH")
        check_pkg_config(args.source, prefix, work, env)
        print("ok: pkg-config application")
        check_cmake_app(args.source, prefix, work, env)
        print("ok: find_package(Loom) application linking Loom::loom")

        build_example(os.path.join(examples, "custom_op_kernel"), os.path.join(work, "custom_op_kernel"), prefix, env)
        build_example(os.path.join(examples, "minimal_device"), os.path.join(work, "minimal_device"), prefix, env)
        for name in ("loom_example_swish.so", "loom_minimal.so"):
            if not os.path.isfile(os.path.join(plugin_dir, name)):
                raise Failure("%s was not installed into %s" % (name, plugin_dir))
        print("ok: examples built and installed against the installed SDK")
        check_plugin_install_and_flags(examples, work, prefix, env)
        print("ok: a plugin installs under --prefix and builds optimized without a build type")
        check_bad_entry(args.source, work, prefix, env)
        print("ok: the entry-symbol check refuses a mangled entry point")

        listing = run([infer_run, "--list-plugins"], env=env).stdout
        loaded = {line.split()[0]: line for line in listing.splitlines() if line.split()}
        for name in ("example_swish", "minimal", "onnx", "cpu"):
            if name not in loaded or plugin_dir not in loaded[name]:
                raise Failure("infer-run --list-plugins does not list %s from %s:\n%s" % (name, plugin_dir, listing))
        if "skipped" in listing:
            raise Failure("infer-run --list-plugins skipped a plugin:\n" + listing)

        models = os.path.join(work, "models_swish")
        run([PYTHON, os.path.join(examples, "custom_op_kernel", "make_model.py"), models])

        out = os.path.join(work, "out_swish")
        run([infer_run, os.path.join(models, "swish_beta.onnx"), "-i", "x=" + os.path.join(models, "x.npy"),
             "-o", out], env=env)
        compare(os.path.join(out, "z.npy"), os.path.join(models, "z_expected.npy"), "SwishBeta model output z")
        print("ok: com.example::SwishBeta matches numpy")

        # The same model with a string where beta is a float: SDK's Attributes names the node in
        # its error, and the core must not name it a second time.
        bad = os.path.join(models, "swish_beta_string.onnx")
        run([PYTHON, "-c", "import onnx, sys; from onnx import helper; m = onnx.load(sys.argv[1]); "
             "n = [n for n in m.graph.node if n.op_type == 'SwishBeta'][0]; "
             "[n.attribute.remove(a) for a in list(n.attribute) if a.name == 'beta']; "
             "n.attribute.append(helper.make_attribute('beta', 'wide')); onnx.save(m, sys.argv[2])",
             os.path.join(models, "swish_beta.onnx"), bad])
        result = run([infer_run, bad, "-i", "x=" + os.path.join(models, "x.npy")], env=env,
                     expect_ok=False)
        if result.returncode == 0 or result.stderr.count("SwishBeta node 'swish'") != 1:
            raise Failure("a wrong-typed attribute should fail naming the node once, got exit %d:\n%s"
                          % (result.returncode, result.stderr))
        print("ok: a wrong-typed attribute is one error naming the node once")

        models = os.path.join(work, "models_minimal")
        run([PYTHON, os.path.join(examples, "minimal_device", "make_model.py"), models])
        out = os.path.join(work, "out_minimal")
        result = run([infer_run, os.path.join(models, "relu_add.onnx"), "-i", "x=" + os.path.join(models, "x.npy"),
                      "-i", "y=" + os.path.join(models, "y.npy"), "-o", out, "--device", "minimal,cpu",
                      "--explain"], env=env)
        compare(os.path.join(out, "r.npy"), os.path.join(models, "r_expected.npy"), "minimal device output r")
        compare(os.path.join(out, "z.npy"), os.path.join(models, "z_expected.npy"), "minimal device output z")
        explain = result.stdout + result.stderr
        for needle in ("on minimal: 2 nodes", "on cpu", "runs only Relu and Add", "needs broadcasting"):
            if needle not in explain:
                raise Failure("--explain lacks %r:\n%s" % (needle, explain))
        print("ok: --device minimal,cpu matches numpy; --explain shows minimal's nodes and refusals")
    except Failure as e:
        print("FAIL:", e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
