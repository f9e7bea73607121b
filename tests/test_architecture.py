"""The layering the architecture promises, checked on the source: who may import whom."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Collection
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


MAX_LINES = 400


def long_files(paths: list[Path]) -> dict[str, int]:
    """The files among ``paths`` over ``MAX_LINES`` lines, with their length."""
    lengths = {str(p.relative_to(REPO)): len(p.read_text().splitlines()) for p in paths}
    return {path: n for path, n in lengths.items() if n > MAX_LINES}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_file_is_long(package):
    """A newcomer reads one job per file: no module of any room is over 400 lines."""
    assert long_files(sorted((REPO / package).rglob("*.py"))) == {}


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


PIPELINE = REPO / "pipeline"
PIPELINE_ROOMS = {"retrieval", "answering"}
# Which rooms of pipeline/ each may import ("floor" is the shared modules at its top).
PIPELINE_ALLOWED = {
    "floor": {"floor"},  # the shared types, errors and text tools stand under both rooms
    "retrieval": {"floor", "retrieval"},  # finding evidence knows nothing of reading a reply
    "answering": {"floor", "retrieval", "answering"},
}


def pipeline_room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in PIPELINE_ROOMS else "floor"


def pipeline_room_offenders(room: str, paths: list[Path]) -> dict[str, list[str]]:
    """For each of ``paths`` (files of ``room``), the rooms of pipeline/ it may not import."""
    offenders = {}
    for path in paths:
        rooms = {pipeline_room_of(m) for m in imported_modules(path) if m.startswith("pipeline.")}
        if wrong := rooms - PIPELINE_ALLOWED[room]:
            offenders[path.name] = sorted(wrong)
    return offenders


def pipeline_files(room: str) -> list[Path]:
    if room == "floor":
        return sorted(PIPELINE.glob("*.py"))
    return sorted((PIPELINE / room).rglob("*.py"))


@pytest.mark.parametrize("room", sorted(PIPELINE_ALLOWED))
def test_each_room_of_pipeline_imports_only_what_it_may(room):
    assert pipeline_room_offenders(room, pipeline_files(room)) == {}


def test_the_pipeline_room_rule_catches_retrieval_reading_a_reply(tmp_path):
    rogue = tmp_path / "search.py"
    rogue.write_text(
        "from pipeline.answering.quotes import answering_quotes\nfrom pipeline.types import Chunk\n"
    )
    assert pipeline_room_offenders("retrieval", [rogue]) == {"search.py": ["answering"]}
    floor = tmp_path / "types.py"
    floor.write_text("from pipeline.retrieval.context import Passage\n")
    assert pipeline_room_offenders("floor", [floor]) == {"types.py": ["retrieval"]}


def unnamed_modules(folder: Path) -> list[str]:
    """The modules and subpackages of ``folder`` its README.md does not name."""
    readme = (folder / "README.md").read_text()
    names = [p.name for p in folder.glob("*.py") if p.name != "__init__.py"]
    names += [f"{p.name}/" for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    return sorted(name for name in names if f"`{name}`" not in readme and f"[{name}]" not in readme)


@pytest.mark.parametrize("folder", ["pipeline", "pipeline/retrieval", "pipeline/answering"])
def test_each_room_has_a_readme_naming_every_module(folder):
    assert unnamed_modules(REPO / folder) == []


def test_the_readme_rule_catches_a_module_nobody_named(tmp_path):
    (tmp_path / "README.md").write_text("| `search.py` | ranks passages |\n")
    (tmp_path / "search.py").write_text("")
    (tmp_path / "rerank.py").write_text("")
    assert unnamed_modules(tmp_path) == ["rerank.py"]


def setting_defaults() -> tuple[dict[str, list[str]], set[Path]]:
    """Each knob's leaf name → the settings that declare it with a literal default, and the files
    that declare settings sections (a section's own declaration is the one default)."""
    from pydantic import BaseModel

    from server.settings import Settings

    knobs: dict[str, list[str]] = {}
    files: set[Path] = set()

    def walk(model: type[BaseModel], prefix: str) -> None:
        for base in model.__mro__:
            if (
                isinstance(base, type)
                and issubclass(base, BaseModel)
                and base.__module__.split(".")[0] in OURS
            ):
                files.add(Path(sys.modules[base.__module__].__file__).resolve())
        for name, field in model.model_fields.items():
            section = field.annotation
            if isinstance(section, type) and issubclass(section, BaseModel):
                walk(section, f"{prefix}{name}.")
            elif isinstance(field.default, int | float | str):  # bool is an int
                knobs.setdefault(name, []).append(f"{prefix}{name}")

    walk(Settings, "")
    return knobs, files


def _literal(node: ast.expr | None) -> bool:
    """A default a user could want to change: a number, a string or a flag written in place."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Field" and node.args:
        node = node.args[0]
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float | str)


def shadow_defaults(path: Path, knobs: Collection[str]) -> list[str]:
    """The parameters, class fields and module constants of ``path`` named like a knob of the
    settings and given a default of their own in place (``fuse(dense_weight=0.5)``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = [
                *zip(positional[len(positional) - len(args.defaults) :], args.defaults),
                *zip(args.kwonlyargs, args.kw_defaults),
            ]
            found += [f"{node.name}({a.arg}=…)" for a, d in pairs if a.arg in knobs and _literal(d)]
        elif isinstance(node, ast.ClassDef):
            fields = [f for f in node.body if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)]
            shadows = [f.target.id for f in fields if f.target.id in knobs and _literal(f.value)]
            found += [f"{node.name}.{name}" for name in shadows]
    for statement in tree.body:
        targets = (
            statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        )
        for target in targets:
            named_like_a_knob = (
                isinstance(target, ast.Name) and target.id.isupper() and target.id.lower() in knobs
            )
            if named_like_a_knob and _literal(statement.value):
                found.append(target.id)
    return found


# The same word, another thing: a default here is not a second declaration of the setting.
NOT_THE_SETTING = {
    "index_build/document.py": {"Block.level"},  # a heading's depth, not log.level
    "programs/saved.py": {"FORMAT"},
    "index_build/ingest_report.py": {
        "IngestReport.documents"
    },  # how many an ingest wrote  # the saved program file's format tag, not log.format
    "server/core/status.py": {"index_info(documents=…)"},  # list the documents or not
    "server/service.py": {"index_info(documents=…)"},  # the same flag at the facade
}


def test_each_setting_has_its_default_in_one_place():
    """No module outside the settings sections declares its own default for a knob the settings
    declare: the code takes the setting's value, so a changed default reaches every path."""
    knobs, section_files = setting_defaults()
    offenders = {}
    for package in sorted(SERVING | {"evaluation"}):
        for path in sorted((REPO / package).rglob("*.py")):
            if path.resolve() in section_files:
                continue
            name = str(path.relative_to(REPO))
            if shadows := set(shadow_defaults(path, knobs)) - NOT_THE_SETTING.get(name, set()):
                offenders[name] = sorted(shadows)
    assert offenders == {}


def test_the_default_rule_catches_a_fusion_weight_declared_twice(tmp_path):
    rogue = tmp_path / "fusion.py"
    rogue.write_text(
        "RRF_K = 60\n"
        "class FusionParams:\n    dense_weight: float = 0.5\n    name: str\n"
        "def fuse(method, *, alpha: float = 0.7, boosts=None):\n    pass\n"
    )
    knobs = {"rrf_k", "dense_weight", "alpha", "fusion"}
    assert sorted(shadow_defaults(rogue, knobs)) == ["FusionParams.dense_weight", "RRF_K", "fuse(alpha=…)"]


def hand_written_markers(path: Path) -> list[int]:
    """The lines of ``path`` that write a ``[n]`` marker by hand: an f-string ``[{...}]``, or a
    ``"[%d]"`` / ``"[{}]"`` template."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for before, value, after in zip(parts, parts[1:], parts[2:], strict=False):
                if (
                    isinstance(before, ast.Constant)
                    and str(before.value).endswith("[")
                    and isinstance(value, ast.FormattedValue)
                    and isinstance(after, ast.Constant)
                    and str(after.value).startswith("]")
                    and not str(after.value).startswith("](")  # a Markdown link's label
                ):
                    lines.append(node.lineno)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and ("[%d]" in node.value or "[{}]" in node.value)
        ):
            lines.append(node.lineno)
    return lines


def test_every_writer_of_a_citation_marker_calls_pipeline_citations():
    paths = [p for package in ALLOWED if package != "tests" for p in (REPO / package).rglob("*.py")]
    writers = {str(p.relative_to(REPO)): hand_written_markers(p) for p in paths}
    assert {path: lines for path, lines in writers.items() if lines} == {"pipeline/citations.py": [22]}


def test_the_marker_rule_catches_a_hand_written_marker(tmp_path):
    rogue = tmp_path / "reply.py"
    rogue.write_text('def cite(n):\n    return f"see [{n}]"\n\n\nOLD = "[%d]"\n')
    assert sorted(hand_written_markers(rogue)) == [2, 5]


def step_literals(path: Path) -> list[int]:
    """The lines of ``path`` that name a trace step by a bare string: ``{"step": "dense"}``,
    ``tracer.record("fuse", ...)`` or ``e["step"] == "compose"``, instead of a ``Step`` member."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "step" and isinstance(value, ast.Constant):
                    lines.append(node.lineno)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "record" and node.args:
            if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                lines.append(node.lineno)
        elif isinstance(node, ast.Compare) and isinstance(node.comparators[0], ast.Constant):
            left = ast.unparse(node.left)
            if left.endswith(("['step']", "get('step')")) and isinstance(node.comparators[0].value, str):
                lines.append(node.lineno)
    return lines


def test_every_trace_step_is_a_member_of_step():
    """Traces, status events and the bench name steps by ``pipeline.steps.Step``: one closed set."""
    paths = [p for package in ALLOWED if package != "tests" for p in (REPO / package).rglob("*.py")]
    literals = {str(p.relative_to(REPO)): step_literals(p) for p in paths}
    assert {path: lines for path, lines in literals.items() if lines} == {}


def test_the_step_rule_catches_a_free_string(tmp_path):
    rogue = tmp_path / "search.py"
    rogue.write_text(
        'def run(tracer, trace):\n    tracer.record("fuse", 0.0)\n    trace.append({"step": "dense"})\n'
        '    return [e for e in trace if e["step"] == "compose"]\n'
    )
    assert sorted(step_literals(rogue)) == [2, 3, 4]
