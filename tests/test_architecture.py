"""The layering the architecture promises, checked on the source: who may import whom."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OURS = {"pipeline", "index_build", "programs", "server", "bots", "evaluation", "tests"}
SERVING = {"pipeline", "index_build", "programs", "server", "bots"}
ALLOWED = {
    "pipeline": {"pipeline"},  # pure stages and shared types: nothing else of ours
    "index_build": {"index_build", "pipeline"},
    "programs": {"programs", "pipeline"},
    "bots": {"bots", "pipeline"},  # handed the service through pipeline.answers.AnsweringService
    "server": SERVING,  # the composition root: every serving package, never the evaluation wing
    "evaluation": SERVING | {"evaluation"},  # measures the serving code; never reaches into tests/
}


def imported_modules(path: Path) -> set[str]:
    """The dotted names of every module ``path`` imports (absolute imports)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def imported_packages(path: Path) -> set[str]:
    return {name.split(".")[0] for name in imported_modules(path)} & OURS


def layer_offenders(package: str, paths: list[Path]) -> dict[str, list[str]]:
    """For each of ``paths`` (files of ``package``), the packages of ours it may not import."""
    return {
        path.name: sorted(imported_packages(path) - ALLOWED[package])
        for path in paths
        if imported_packages(path) - ALLOWED[package]
    }


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_what_its_layer_allows(package):
    assert not layer_offenders(package, sorted((REPO / package).rglob("*.py")))


def test_the_layer_rule_catches_serving_code_importing_the_evaluation_wing(tmp_path):
    """Also a lazy import inside a function: the serving install does not contain the wing's packages."""
    rogue = tmp_path / "service.py"
    rogue.write_text("def judge():\n    from evaluation.judge import AnswerJudge\n    return AnswerJudge\n")
    assert layer_offenders("server", [rogue]) == {"service.py": ["evaluation"]}
    bench = tmp_path / "bench.py"
    bench.write_text("from tests.samples import write_sample_corpus\n")
    assert layer_offenders("evaluation", [bench]) == {"bench.py": ["tests"]}


def server_modules(path: Path) -> set[str]:
    """The modules of ``server`` that ``path`` imports (``server.doors.cli``, …)."""
    return {name for name in imported_modules(path) if name.startswith("server.")}


SERVER = REPO / "server"
ROOMS = {"doors", "core", "stores", "models", "runtime"}
# Which rooms of server/ each room may import ("top" is the service and the settings).
ROOM_ALLOWED = {
    "runtime": {"runtime"},  # knows no door, store or model
    "stores": {"stores", "top"},  # stores know no doors
    "models": {"models", "stores", "runtime", "top"},
    "core": {"core", "models", "stores", "runtime", "top"},  # the service's parts; no door
    "doors": ROOMS | {"top"},
    "top": ROOMS - {"doors"} | {"top"},  # the service serves the doors, never the reverse
}
DOORS = {"cli", "http_api", "mcp_server", "chat_bots"}  # each reachable on its own
COMPOSERS = {"launch": DOORS - {"cli"}, "cli": {"launch"}}  # the only door modules that start others


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in ROOMS else "top"


def test_server_root_holds_only_the_service_the_settings_and_the_package_face():
    loose = {p.name for p in SERVER.glob("*.py")} - {"__init__.py", "service.py"}
    assert not loose, f"put these in a room of server/: {sorted(loose)}"
    folders = {p.name for p in SERVER.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == ROOMS | {"settings"}
    for room in ROOMS:
        face = ast.get_docstring(ast.parse((SERVER / room / "__init__.py").read_text()))
        assert face and len(face) > 80, f"server/{room}/__init__.py needs a docstring saying what lives there"


def test_no_file_of_server_is_long():
    """A newcomer reads one job per file: none of server/ is over 400 lines."""
    lengths = {str(p.relative_to(REPO)): len(p.read_text().splitlines()) for p in SERVER.rglob("*.py")}
    assert {path: n for path, n in lengths.items() if n > 400} == {}


@pytest.mark.parametrize("room", sorted(ROOM_ALLOWED))
def test_each_room_of_server_imports_only_what_it_may(room):
    paths = sorted(SERVER.glob("*.py")) if room == "top" else sorted((SERVER / room).glob("*.py"))
    offenders = {}
    for path in paths:
        rooms = {room_of(m) for m in server_modules(path)} - ROOM_ALLOWED[room]
        if rooms:
            offenders[str(path.relative_to(REPO))] = sorted(rooms)
    assert not offenders, offenders


def doors_reached_wrongly(paths: list[Path]) -> dict[str, list[str]]:
    """For each door module among ``paths``, the other doors it imports without being their composer."""
    offenders = {}
    for path in paths:
        door = path.stem
        reached = {m.split(".")[2] for m in server_modules(path) if room_of(m) == "doors"}
        wrong = (reached & (DOORS | set(COMPOSERS))) - COMPOSERS.get(door, set()) - {door}
        if wrong:
            offenders[door] = sorted(wrong)
    return offenders


def test_doors_never_import_each_other():
    assert not doors_reached_wrongly(sorted((SERVER / "doors").glob("*.py")))


def test_the_door_rule_catches_a_door_importing_another(tmp_path):
    rogue = tmp_path / "http_api.py"
    rogue.write_text(
        "from server.doors.mcp_server import mount_mcp\nfrom server.doors.auth import Authenticator\n"
    )
    assert doors_reached_wrongly([rogue]) == {"http_api": ["mcp_server"]}


CITATION_SYNTAX = re.compile(r"\\\[\(?\\d\+\)?\\\]")  # a regex literal for "[n]": \[\d+\] or \[(\d+)\]


def modules_spelling_the_citation_syntax(paths) -> list[str]:
    return sorted(f"{p.parent.name}/{p.name}" for p in paths if CITATION_SYNTAX.search(p.read_text()))


def test_the_citation_syntax_lives_in_one_module():
    """Every reader and writer of [n] markers goes through pipeline/citations.py."""
    paths = [p for package in ALLOWED for p in (REPO / package).rglob("*.py")]
    assert modules_spelling_the_citation_syntax(paths) == ["pipeline/citations.py"]


def test_the_citation_rule_catches_a_second_parser(tmp_path):
    (tmp_path / "rogue.py").write_text('import re\n_CITED = re.compile(r"\\[(\\d+)\\]")\n')
    (tmp_path / "fine.py").write_text("from pipeline.citations import cited_numbers\n")
    assert modules_spelling_the_citation_syntax(sorted(tmp_path.glob("*.py"))) == [
        f"{tmp_path.name}/rogue.py"
    ]
