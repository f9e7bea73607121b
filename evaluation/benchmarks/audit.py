"""`make bench ONLY=audit`: the documentation audit measured on planted problems, on the real
OPM case, and on the whole techdocs corpus (time on this machine, findings per kind, the first
ten for reading by hand). No LLM is used."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.answers import collection_folders, indexed_dataset
from evaluation.audit_plants import KINDS, Plant, plant_corpus
from evaluation.questions import dataset_docs
from pipeline.answers import LOCAL_CALLER
from pipeline.audit.findings import Finding
from server.core.ingest import run_ingest
from server.service import open_service
from server.settings import Settings, load_settings

PAGES = 80  # real techdocs pages in the planted corpus
# 20 contradictions: 14 figures or negations, 3 defaults, 3 dates
PLANTS = {
    "contradiction": 14,
    "contradiction:default": 3,
    "contradiction:date": 3,
    "near_duplicate": 12,
    "stale": 10,
}
OPM_REPORT = "2013-annual-performance-report.pdf"


def bench_audit(data: Path) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if (data / "techdocs" / "docs").is_dir():
        result["planted"] = bench_planted(data / "techdocs" / "docs")
        techdocs = indexed_dataset(
            load_settings(),
            dataset_docs(data / "techdocs", data / "techdocs" / "docs"),
            Path(".docfinder/eval"),
            "audit",
        )
        result["techdocs"], _ = audit_summary(techdocs)
    if (data / "pdf-samples").is_dir():
        samples = indexed_dataset(load_settings(), data / "pdf-samples", Path(".docfinder/eval"), "audit")
        summary, findings = audit_summary(samples)
        result["pdf_samples"] = {**summary, "opm_95_90_rank": _opm_rank(findings)}
    return result


def bench_planted(source: Path) -> dict[str, Any]:
    """Plant :data:`PLANTS` into copies of :data:`PAGES` real pages, ingest, audit, score per kind."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        plants = plant_corpus(source, corpus, PAGES, PLANTS)
        settings = load_settings().changed(
            {
                "index.dir": Path(tmp) / "index",
                "stores.conversations_path": Path(tmp) / "conversations.sqlite3",
                "stores.feedback_path": Path(tmp) / "feedback.sqlite3",
            }
        )
        started = time.perf_counter()
        run_ingest(settings, collection_folders(corpus) or [corpus])
        ingest_s = time.perf_counter() - started
        findings, about = _audit(settings)
        return {
            "pages": PAGES,
            "ingest_s": round(ingest_s, 1),
            "audit_s": about["seconds"],
            **score(plants, findings),
        }


def score(plants: Sequence[Plant], findings: Sequence[Finding]) -> dict[str, Any]:
    """Recall and precision per kind: a plant is found when a finding of its kind quotes the
    copy's passage holding the changed words; a finding is right when it finds a plant."""
    scores: dict[str, Any] = {}
    for kind in KINDS:
        mine = [p for p in plants if p.kind == kind]
        flagged = [f for f in findings if f.kind == kind]
        found = [p for p in mine if any(_finds(f, p) for f in flagged)]
        right = [f for f in flagged if any(_finds(f, p) for p in mine)]
        scores[kind] = {
            "planted": len(mine),
            "found": len(found),
            "recall": round(len(found) / len(mine), 3) if mine else None,
            "findings": len(flagged),
            "precision": round(len(right) / len(flagged), 3) if flagged else None,
            "missed": [
                {"copy": p.copy.name, "planted": p.planted, "original": p.original}
                for p in mine
                if p not in found
            ],
            "wrong": [f.diff or f.why for f in flagged if f not in right][:10],
        }
    return scores


def _finds(finding: Finding, plant: Plant) -> bool:
    planted = " ".join(plant.planted.split())  # the page's line breaks are spaces in a unit
    return any(Path(s.source) == plant.copy and planted in " ".join(s.text.split()) for s in finding.passages)


def audit_summary(settings: Settings) -> tuple[dict[str, Any], list[Finding]]:
    """Time, counts per kind and the first ten findings of an audit of an indexed corpus, and
    the findings themselves."""
    findings, about = _audit(settings)
    kinds: dict[str, int] = {}
    for finding in findings:
        kinds[finding.kind] = kinds.get(finding.kind, 0) + 1
    return {
        "statements": about["statements"],
        "seconds": about["seconds"],
        "findings": kinds,
        "first_ten": [
            {
                "kind": f.kind,
                "why": f.why,
                "diff": f.diff,
                "where": [f"{s.title} p.{s.page}" for s in f.passages],
            }
            for f in findings[:10]
        ],
    }, findings


def _audit(settings: Settings) -> tuple[list[Finding], dict[str, Any]]:
    async def run() -> tuple[list[Finding], dict[str, Any]]:
        async with open_service(settings) as service:
            report = await service.audit(LOCAL_CALLER)
            return report.findings, report.about

    return asyncio.run(run())


def _opm_rank(findings: Sequence[Finding]) -> int | None:
    """Where the OPM report's "approximately 95 / 90 percent of all Federal background
    investigations" contradiction stands in the report (1 = first), None when it is missing."""
    for rank, finding in enumerate(findings, start=1):
        texts = " ".join(s.text for s in finding.passages)
        if (
            finding.kind == "contradiction"
            and all(s.source.endswith(OPM_REPORT) for s in finding.passages)
            and "95 percent" in texts
            and "90 percent" in texts
            and "background investigations" in texts
        ):
            return rank
    return None
