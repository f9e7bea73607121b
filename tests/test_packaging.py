"""Packaging: the editable install that `make install` performs prints no warning that comes from
this project, and the built wheel holds the serving packages only."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ["server", "bots", "pipeline", "index_build", "programs"]


def project_copy(tmp_path: Path) -> Path:
    """The project's packaging inputs in a scratch folder, so building leaves the checkout untouched."""
    copy = tmp_path / "project"
    copy.mkdir()
    for name in ["pyproject.toml", "README.md", "LICENSE"]:
        shutil.copy(REPO / name, copy / name)
    for name in [*PACKAGES, "tests"]:
        shutil.copytree(REPO / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def build(tmp_path: Path, hook: str) -> tuple[subprocess.CompletedProcess, Path]:
    """Calls the build backend's hook as pip does (PEP 517/660), with this venv's setuptools; any
    warning the backend raises (pip shows them as BuildBackendWarning) fails the build."""
    pytest.importorskip("setuptools")
    copy, out = project_copy(tmp_path), tmp_path / "dist"
    out.mkdir()
    script = (
        "import warnings, setuptools.build_meta as backend\n"
        "warnings.simplefilter('error')\n"
        f"print(backend.{hook}({str(out)!r}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=copy, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result, out / result.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_the_editable_install_prints_no_warning(tmp_path):
    result, wheel = build(tmp_path, "build_editable")
    assert wheel.suffix == ".whl"


@pytest.mark.slow
def test_the_wheel_holds_the_serving_packages_only(tmp_path):
    _, wheel = build(tmp_path, "build_wheel")
    top_level = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert top_level == {*PACKAGES, "docfinder-0.1.0.dist-info"}
