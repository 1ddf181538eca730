#!/usr/bin/python3
"""Builds the Debian packages and proves them on this machine.

    packaging_test.py --build BUILD_DIR --work WORK_DIR

1. cpack (DEB) from the build tree; every package has the Depends it needs (plugins and
   infer-run on the runtime library of exactly the same version);
2. lintian on every .deb: no errors (warnings are printed);
3. dpkg -i of the runtime, infer-run, the onnx format and the cpu device -- not the dev package,
   not any other plugin;
4. /usr/bin/infer-run lists the two plugins from /usr, runs an ONNX backend test model and
   matches its expected output, and reports an absent device (onednn) as not installed;
5. dpkg --purge of what it installed, also when a step failed.

Exit code 77 (ctest SKIP_RETURN_CODE) when not root or when dpkg, dpkg-shlibdeps or lintian
are missing: the test installs packages into the machine.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
TEST_MODEL = "/usr/share/libonnx-testdata/data/node/test_relu"


class Failure(Exception):
    pass


def run(cmd, expect_ok=True, timeout=300, env=None):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if expect_ok and result.returncode != 0:
        raise Failure("command failed (exit %d): %s\n%s\n%s" % (
            result.returncode, " ".join(cmd), result.stdout[-4000:], result.stderr[-4000:]))
    return result


def field(deb, name):
    return run(["dpkg-deb", "-f", deb, name]).stdout.strip()


def installed_version(package):
    result = run(["dpkg-query", "-W", "-f=${Status} ${Version}", package], expect_ok=False)
    if result.returncode != 0 or not result.stdout.startswith("install ok installed"):
        return None
    return result.stdout.split()[-1]


def build_packages(build, work):
    out = os.path.join(work, "packages")
    run(["cpack", "--config", os.path.join(build, "CPackConfig.cmake"), "-B", out], timeout=600)
    debs = sorted(glob.glob(os.path.join(out, "*.deb")))
    if not debs:
        raise Failure("cpack produced no .deb in " + out)
    packages = {field(d, "Package"): d for d in debs}
    print("packages:")
    for name, deb in packages.items():
        print("  %-22s %8d bytes  Depends: %s" % (os.path.basename(deb), os.path.getsize(deb), field(deb, "Depends")))
    return packages


def check_depends(packages):
    runtime = [p for p in packages if p.startswith("libloom") and p != "libloom-dev"]
    if len(runtime) != 1:
        raise Failure("expected one runtime library package, found: %s" % ", ".join(sorted(packages)))
    runtime = runtime[0]
    version = field(packages[runtime], "Version")
    exact = "%s (= %s)" % (runtime, version)
    for name, deb in packages.items():
        if name == runtime:
            continue
        depends = field(deb, "Depends")
        if exact not in depends:
            raise Failure("%s does not depend on %s: Depends: %s" % (name, exact, depends))
        if name.startswith("loom-") and "libc6" not in depends:
            raise Failure("%s lacks the library dependencies dpkg-shlibdeps finds: %s" % (name, depends))
    return runtime, version


def run_lintian(packages):
    result = run(["lintian", "--tag-display-limit", "0"] + list(packages.values()), expect_ok=False, timeout=600)
    output = (result.stdout + result.stderr).strip()
    print("lintian:\n" + (output or "  (no tags)"))
    errors = [line for line in output.splitlines() if line.startswith("E:")]
    if errors:
        raise Failure("lintian reports errors:\n" + "\n".join(errors))


def check_installed(work):
    env = {k: v for k, v in os.environ.items() if k not in ("LOOM_PLUGIN_PATH", "LD_LIBRARY_PATH")}
    listing = run(["/usr/bin/infer-run", "--list-plugins"], env=env).stdout
    for plugin in ("onnx", "cpu"):
        if not any(line.split() and line.split()[0] == plugin or ("/loom_%s.so" % plugin) in line
                   for line in listing.splitlines()):
            raise Failure("/usr/bin/infer-run --list-plugins lacks %s:\n%s" % (plugin, listing))
    if "/usr/lib" not in listing:
        raise Failure("the plugins were not found under /usr/lib:\n" + listing)
    print("ok: --list-plugins\n" + listing)

    out = os.path.join(work, "out")
    model = os.path.join(TEST_MODEL, "model.onnx")
    data = os.path.join(TEST_MODEL, "test_data_set_0")
    run(["/usr/bin/infer-run", model, "-i", "x=" + os.path.join(data, "input_0.pb"), "-o", out], env=env)
    check = run(["/usr/bin/python3", "-c", """
import sys, numpy as np, onnx
from onnx import numpy_helper
t = onnx.TensorProto()
t.ParseFromString(open(sys.argv[1], 'rb').read())
want = numpy_helper.to_array(t)
got = np.load(sys.argv[2])
assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
assert np.allclose(got, want, rtol=1e-6, atol=1e-7), np.max(np.abs(got - want))
print('ok: test_relu matches its expected output', got.shape)
""", os.path.join(data, "output_0.pb"), os.path.join(out, "y.npy")], expect_ok=False)
    if check.returncode != 0:
        raise Failure("test_relu output differs: " + check.stdout + check.stderr)
    print(check.stdout.strip())

    absent = run(["/usr/bin/infer-run", model, "--device", "onednn"], expect_ok=False, env=env)
    message = absent.stderr.strip()
    if (absent.returncode != 4 or "device 'onednn' is not installed" not in message
            or "loom-device-onednn" not in message):
        raise Failure("--device onednn: expected exit code 4, \"device 'onednn' is not installed\" and "
                      "the package to install (loom-device-onednn), got %d: %s" % (absent.returncode, message))
    print("ok: --device onednn ->", message)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("SKIP: the packaging test installs packages with dpkg and must run as root")
        return SKIP
    missing = [tool for tool in ("dpkg", "dpkg-deb", "dpkg-shlibdeps", "lintian", "cpack") if not shutil.which(tool)]
    if missing:
        print("SKIP: missing tools: %s (Debian packages dpkg-dev, lintian, cmake)" % ", ".join(missing))
        return SKIP
    if not os.path.isdir(TEST_MODEL):
        print("SKIP: %s is missing (Debian package libonnx-testdata)" % TEST_MODEL)
        return SKIP

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    to_install = []
    try:
        packages = build_packages(args.build, work)
        runtime, version = check_depends(packages)
        run_lintian(packages)
        to_install = [runtime, "loom-infer-run", "loom-format-onnx", "loom-device-cpu"]
        for name in to_install:
            if name not in packages:
                raise Failure("cpack did not build %s (built: %s)" % (name, ", ".join(sorted(packages))))
            other = installed_version(name)
            if other is not None and other != version:
                to_install = []  # not ours: leave it alone
                raise Failure("%s %s is already installed on this machine; remove it first" % (name, other))
        run(["dpkg", "-i"] + [packages[name] for name in to_install])
        with tempfile.TemporaryDirectory(dir=work) as scratch:
            check_installed(scratch)
    except Failure as e:
        print("FAIL:", e)
        return 1
    finally:
        if to_install:
            purge = run(["dpkg", "--purge"] + list(reversed(to_install)), expect_ok=False)
            if purge.returncode != 0:
                print("FAIL: dpkg --purge:", purge.stdout, purge.stderr)
                return 1
            left = [name for name in to_install if installed_version(name)]
            if left or os.path.exists("/usr/bin/infer-run"):
                print("FAIL: still installed after purge:", left or "/usr/bin/infer-run")
                return 1
            print("ok: purged", " ".join(reversed(to_install)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
