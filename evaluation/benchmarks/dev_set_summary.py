"""The figures of a dev-sets run: per set and half, the macro over the sets, and the bar of issue 56
(each system's own measures beside the other's), from the rows a run wrote."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from evaluation.retrieval import percentile

SYSTEMS = ("agent", "plain")
HALVES = ("tune", "report")


def summarise(rows: Sequence[dict[str, Any]], probes: dict[str, bool] | None = None) -> dict[str, Any]:
    """Per set, half and system; the macro over the non-probe sets; the targets (which
    :mod:`evaluation.benchmarks.dev_sets` names)."""
    probes = probes if probes is not None else {}
    sets = list(dict.fromkeys(r["set"] for r in rows))
    halves = [h for h in HALVES if any(r["half"] == h for r in rows)]
    systems = [s for s in SYSTEMS if any(r["system"] == s for r in rows)]
    per_set = {
        name: {
            half: {
                system: _measures(
                    [r for r in rows if (r["set"], r["half"], r["system"]) == (name, half, system)]
                )
                for system in systems
            }
            for half in halves
        }
        for name in sets
    }
    dev = [name for name in sets if not probes.get(name, name == "probe")]
    macro = {
        half: {system: _macro([per_set[name][half][system] for name in dev]) for system in systems}
        for half in halves
    }
    return {"per_set": per_set, "macro": macro, "targets": _targets(per_set, dev)}


def _measures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {}
    scored = [r for r in rows if r["answerable"] and r["wanted"]]
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    first = [r["first_evidence_s"] for r in rows if r["first_evidence_s"] is not None]

    def measured(key: str) -> bool:  # rows of a run made before a measure existed lack it
        return bool(scored) and all(key in r for r in scored)

    def macro(key: str) -> float | None:
        return round(statistics.fmean(r[key] / r["wanted"] for r in scored), 4) if measured(key) else None

    def micro(key: str) -> float | None:
        total = sum(r["wanted"] for r in scored)
        return round(sum(r[key] for r in scored) / total, 4) if measured(key) else None

    cited = [r["gold_cited"] for r in answerable if r["gold_cited"] is not None]
    return {
        "questions": len(rows),
        "own": macro("own"),
        "own_micro": micro("own"),
        "draft": macro("draft"),
        "whole": macro("whole"),
        "whole_micro": micro("whole"),
        "context": macro("context"),
        "context_micro": micro("context"),
        "gold_cited": round(sum(cited) / len(cited), 4) if cited else None,
        "unanswerable_refused": [sum(r["refused"] for r in unanswerable), len(unanswerable)],
        "answerable_refused": [sum(r["refused"] for r in answerable), len(answerable)],
        "verified_with_unstated_figure": sum(bool(r.get("unstated_figures")) for r in rows),
        "outcomes": {o: sum(r["outcome"] == o for r in rows) for o in sorted({r["outcome"] for r in rows})},
        "reply_chars_p50": statistics.median(r["reply_chars"] for r in rows),
        "context_chars_p50": statistics.median(r["context_chars"] for r in rows),
        "latency_s": {
            "p50": round(statistics.median(r["seconds"] for r in rows), 2),
            "p95": round(percentile([r["seconds"] for r in rows], 0.95), 2),
        },
        "first_evidence_s": {"p50": round(statistics.median(first), 3), "max": round(max(first), 3)}
        if first
        else None,
        "llm_calls": {
            "p50": statistics.median(r["llm_calls"] for r in rows),
            "max": max(r["llm_calls"] for r in rows),
        },
    }


_MACRO_KEYS = ("own", "draft", "whole", "context", "gold_cited")


def _macro(measures: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The mean of each headline measure over the sets that have it."""
    measures = [m for m in measures if m]
    result: dict[str, Any] = {}
    for key in _MACRO_KEYS:
        values = [m[key] for m in measures if m.get(key) is not None]
        result[key] = round(statistics.fmean(values), 4) if values else None
    refused = [m["unanswerable_refused"] for m in measures if m["unanswerable_refused"][1]]
    result["unanswerable_refused"] = [sum(r[0] for r in refused), sum(r[1] for r in refused)]
    result["answerable_refused"] = [
        sum(m["answerable_refused"][0] for m in measures),
        sum(m["answerable_refused"][1] for m in measures),
    ]
    return result


def _targets(per_set: dict[str, dict[str, dict[str, Any]]], dev: Sequence[str]) -> dict[str, Any]:
    """Each set and half against issue 56's bar, where both systems ran (module docstring)."""
    checks: dict[str, Any] = {}
    for name, halves in per_set.items():
        for half, systems in halves.items():
            agent, plain = systems.get("agent"), systems.get("plain")
            if not agent:
                continue
            found: dict[str, Any] = {}
            refused, asked = agent["unanswerable_refused"]
            if asked:
                found["unanswerable_refused_80"] = refused >= 0.8 * asked
            if name == "techdocs":
                found["context_085"] = (agent["context"] or 0) >= 0.85
                found["whole_055"] = (agent["whole"] or 0) >= 0.55
                found["gold_cited_090"] = (agent["gold_cited"] or 0) >= 0.90
            if plain:
                if agent["own"] is not None and plain["own"] is not None:
                    found["own_at_least_plain"] = agent["own"] >= plain["own"]
                    found["whole_plain_plus_010"] = agent["whole"] >= plain["whole"] + 0.10
                found["answerable_refused_at_most_plain"] = (
                    agent["answerable_refused"][0] <= plain["answerable_refused"][0]
                )
                found["length_ratio"] = round(agent["reply_chars_p50"] / max(plain["reply_chars_p50"], 1), 2)
                found["length_at_most_1_5"] = found["length_ratio"] <= 1.5
                found["latency_ratio"] = round(
                    agent["latency_s"]["p50"] / max(plain["latency_s"]["p50"], 1e-9), 2
                )
                found["latency_at_most_1_1"] = found["latency_ratio"] <= 1.1
            checks[f"{name}/{half}"] = found
    return checks


def summarise_files(paths: Sequence[Path]) -> dict[str, Any]:
    """The summary of rows written by earlier runs (later files replace a set's earlier rows of
    the same system)."""
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows[(row["set"], row["system"], row["row"])] = row
    return summarise(list(rows.values()))
