"""The two pyproject.toml files (the repository root's and apps/python's) build the same package:
every setting equal but the paths, which each writes relative to its own folder."""

import os

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load(folder):
    with open(os.path.join(REPO, folder, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_root_and_apps_python_pyprojects_agree():
    root, app = load("."), load(os.path.join("apps", "python"))
    # Each path resolves to the same file or folder from its own pyproject's directory.
    pairs = [
        (root["project"].pop("readme"), app["project"].pop("readme")),
        (root["tool"]["scikit-build"]["cmake"].pop("source-dir"), app["tool"]["scikit-build"]["cmake"].pop("source-dir")),
        (root["tool"]["scikit-build"]["metadata"]["version"].pop("input"),
         app["tool"]["scikit-build"]["metadata"]["version"].pop("input")),
    ]
    for r, a in pairs:
        assert os.path.realpath(os.path.join(REPO, r)) == os.path.realpath(os.path.join(REPO, "apps", "python", a)), (r, a)
    assert root == app
