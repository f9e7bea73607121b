"""The layering the architecture promises, checked on the source: who may import whom."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OURS = {"pipeline", "index_build", "programs", "server", "bots"}
ALLOWED = {
    "pipeline": {"pipeline"},  # pure stages and shared types: nothing else of ours
    "index_build": {"index_build", "pipeline"},
    "programs": {"programs", "pipeline"},
    "bots": {"bots", "pipeline"},  # handed the service through pipeline.answers.AnsweringService
    "server": OURS,  # the composition root
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names & OURS


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_what_its_layer_allows(package):
    offenders = {
        str(path.relative_to(REPO)): sorted(imported_packages(path) - ALLOWED[package])
        for path in sorted((REPO / package).rglob("*.py"))
        if imported_packages(path) - ALLOWED[package]
    }
    assert not offenders, offenders
