"""`make bench`: run every benchmark whose data is present and print one JSON document."""

from __future__ import annotations

import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.ingest_search import bench_ingest_and_search

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def main() -> int:
    results: dict = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
    }
    if not (DATA / "sec10q").is_dir():
        results["skipped"] = {"ingest_search": f"{DATA / 'sec10q'} is absent"}
    else:
        results["ingest_search"] = bench_ingest_and_search(DATA)
    out = Path("bench-results")
    out.mkdir(exist_ok=True)
    text = json.dumps(results, indent=2)
    (out / "latest.json").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
