"""Compiled answering programs on disk: the agent's learnt demos and instructions with their history.

``docfinder optimize`` writes one JSON file per program: what it learnt (DSPy's state of
each predictor: demos, instructions) and where it came from (date, optimiser, the hash of
the feedback it learnt from, validation scores before and after). The service loads the
file the ``agent.program_path`` setting names, and ``/healthz`` and ``index info`` show which
program is live.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import ConfigurationError

if TYPE_CHECKING:  # DSPy is imported by whoever builds a program; loading a file needs none of it
    import dspy

FORMAT = "docfinder-program/1"
BUILT_IN = "built-in"


@dataclass(frozen=True, slots=True)
class ProgramInfo:
    """Which program answers: its name (the file's stem, or ``built-in``) and its metadata."""

    name: str = BUILT_IN
    metadata: dict[str, Any] | None = None

    def summary(self) -> dict[str, Any]:
        """The name, date, optimiser and scores: what health and index info show."""
        meta = self.metadata or {}
        keys = ("created_at", "optimizer", "score_before", "score_after", "demos")
        return {"name": self.name, **{k: meta[k] for k in keys if k in meta}}


def save_program(program: dspy.Module, path: Path, metadata: dict[str, Any]) -> None:
    """Write ``program``'s learnt state and ``metadata`` to ``path`` (atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"format": FORMAT, "metadata": metadata, "state": program.dump_state()}
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(json.dumps(document, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    partial.replace(path)


def load_program(program: dspy.Module, path: Path) -> ProgramInfo:
    """Load the learnt state at ``path`` into ``program``; a file that is not one is a ConfigurationError.

    Every predictor of ``program`` must be in the file and nothing else: a file written for
    another version of the agent is refused rather than half applied.
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"agent.program_path: cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"agent.program_path: {path} is not JSON ({exc.msg})") from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ConfigurationError(f"agent.program_path: {path} is not a docfinder program ({FORMAT})")
    state = document.get("state")
    expected = {name for name, _ in program.named_predictors()}
    if not isinstance(state, dict) or set(state) != expected:
        found = sorted(state) if isinstance(state, dict) else []
        raise ConfigurationError(
            f"agent.program_path: {path} holds predictors {found}, this agent has {sorted(expected)}"
        )
    program.load_state(state)
    return ProgramInfo(path.stem, document.get("metadata") or {})
