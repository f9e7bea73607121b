"""`make bench`: run every benchmark whose data is present and print one JSON document."""

from __future__ import annotations

import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.agent_sec import bench_agent
from benchmarks.ingest_search import bench_ingest_and_search
from benchmarks.load_fault import bench_load_and_faults
from server.eval_context import evaluate_context
from server.eval_retrieval import evaluate_retrieval
from server.settings import load_settings

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def bench_retrieval(dataset: Path) -> dict:
    """SciFact test split, tuned on train: every fusion, with and without expansion."""
    return evaluate_retrieval(dataset, "test", load_settings(), cache_dir=Path(".docfinder/eval"))


def main() -> int:
    results: dict = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
    }
    skipped = {}
    if (DATA / "sec10q").is_dir():
        results["ingest_search"] = bench_ingest_and_search(DATA)
    else:
        skipped["ingest_search"] = f"{DATA / 'sec10q'} is absent"
    if (DATA / "sec10q").is_dir():
        results["context_sec10q"] = evaluate_context(DATA / "sec10q", load_settings())
    else:
        skipped["context_sec10q"] = f"{DATA / 'sec10q'} is absent"
    # Loopback only, on docfinder's own docs: needs no shared data.
    results["load_and_faults"] = bench_load_and_faults(load_settings())
    if (DATA / "sec10q").is_dir():
        results["agent_sec10q"] = bench_agent(DATA / "sec10q", load_settings())
    else:
        skipped["agent_sec10q"] = f"{DATA / 'sec10q'} is absent"
    if (DATA / "scifact").is_dir():
        results["retrieval_scifact"] = bench_retrieval(DATA / "scifact")
    else:
        skipped["retrieval_scifact"] = f"{DATA / 'scifact'} is absent"
    if skipped:
        results["skipped"] = skipped
    out = Path("bench-results")
    out.mkdir(exist_ok=True)
    text = json.dumps(results, indent=2)
    (out / "latest.json").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
