"""Ingest on a real local Ray cluster (``-m ray`` selects these): the index it builds equals the
local engine's, a worker killed mid-ingest loses no document, and incremental ingest works.

Equal vectors are compared on the float32 ONNX backend, where a text's vector does not depend
on the batch it is embedded in. On the default int8 backend it does, on either engine: dynamic
quantisation scales a batch's activations together, so the same text embedded beside other
texts moves (cosine 0.993 for the docs' pages, 0.987 for a short text file, measured); there
vectors are compared by cosine."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from index_build.builder import ingest
from index_build.options import RayOptions
from index_build.ray_engine import RayEngine
from index_build.snapshot import IndexSnapshot, open_live
from server.models.factories import make_embedder
from server.settings import load_settings
from tests.samples import write_sample_corpus, write_text_pdf

ray = pytest.importorskip("ray", reason="Ray is not installed (it comes with `make install`: docfinder[ray])")

pytestmark = [pytest.mark.ray, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
WORKERS = 2


@pytest.fixture(scope="module")
def cluster():
    """One local Ray cluster for the module, on loopback: two workers (four one-CPU actors)."""
    ray.init(num_cpus=2 * WORKERS, include_dashboard=False, object_store_memory=256 * 1024 * 1024)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> Path:
    """The bundled docs, the sample handbook in every format, two PDFs and a corrupt one."""
    root = tmp_path_factory.mktemp("documents")
    shutil.copytree(REPO / "docs", root / "manuals", ignore=shutil.ignore_patterns("*.toml"))
    write_sample_corpus(root / "manuals" / "handbook")
    write_text_pdf(
        root / "manuals" / "transporter.pdf", "Transporter", ["The transporter is serviced yearly."]
    )
    write_text_pdf(
        root / "manuals" / "cryostat.pdf", "Cryostat", ["The cryostat is warmed up every six months."]
    )
    (root / "manuals" / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is no PDF at all")
    return root / "manuals"


@pytest.fixture(scope="module")
def local_index(tmp_path_factory, documents, float_embedder) -> IndexSnapshot:
    index = tmp_path_factory.mktemp("local") / "index"
    ingest(index, [documents], embedder=float_embedder)
    return open_live(index, memory_map=True)


def embedder_on(backend: str, exports: Path, threads: int | None = None):
    """What a worker builds: the default model on ``backend``, from the session's export
    (module level, so Ray can pickle it)."""
    return make_embedder(load_settings(embedder__cache_dir=exports, embedder__backend=backend), threads)


def ray_engine(exports: Path, backend: str = "onnx") -> RayEngine:
    return RayEngine(RayOptions(workers=WORKERS), partial(embedder_on, backend, exports))


@pytest.fixture(scope="module")
def float_embedder(embedder_exports):
    return embedder_on("onnx", embedder_exports)


def assert_same_index(
    built: IndexSnapshot, reference: IndexSnapshot, min_cosine: float | None = None
) -> None:
    """Same files, chunks, units and ids; vectors equal within float tolerance (or, with
    ``min_cosine``, at least this similar)."""
    assert sorted(built.files, key=lambda r: r.path) == sorted(reference.files, key=lambda r: r.path)
    assert built.collections.keys() == reference.collections.keys()
    for name, expected in reference.collections.items():
        got = built.collections[name]
        assert list(got.chunks) == list(expected.chunks)
        assert list(got.units) == list(expected.units)
        for vectors, expected_vectors in (
            (got.embeddings, expected.embeddings),
            (got.unit_embeddings, expected.unit_embeddings),
        ):
            if min_cosine is None:
                np.testing.assert_allclose(rows(vectors), rows(expected_vectors), atol=1e-5)
            else:
                assert (rows(vectors) * rows(expected_vectors)).sum(axis=1).min() >= min_cosine


def rows(vectors) -> np.ndarray:
    return np.asarray(vectors[0 : len(vectors)])


def test_ray_builds_the_same_index_as_the_local_engine(
    cluster, embedder_exports, documents, local_index, float_embedder, tmp_path
):
    engine = ray_engine(embedder_exports)
    report = ingest(tmp_path / "index", [documents], embedder=float_embedder, engine=engine)
    assert [Path(f.path).name for f in report.failures] == ["broken.pdf"]
    assert report.converted == len(local_index.files) and report.published
    assert report.embedded_chunks == sum(len(c.chunks) for c in local_index.collections.values())
    assert_same_index(open_live(tmp_path / "index", memory_map=True), local_index)


class WorkerKiller(threading.Thread):
    """Kills one converting and one embedding actor while each is working on a batch (SIGKILL,
    as the OOM killer would), found by the process title Ray gives a busy actor."""

    STAGES = ("_Converting", "_Embedding")

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.killed: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.02) and len(self.killed) < len(self.STAGES):
            for pid, title in ray_processes():
                stage = next(
                    (s for s in self.STAGES if title.startswith(f"ray::MapWorker(MapBatches({s})).submit")),
                    None,
                )
                if stage and all(stage not in k for k in self.killed):
                    os.kill(pid, signal.SIGKILL)
                    self.killed.append(title)


def ray_processes():
    """Ray's processes and their titles."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().rstrip(b"\0").replace(b"\0", b" ").decode()
            except OSError:
                continue
            if title.startswith("ray::"):
                yield int(entry.name), title


def test_a_worker_killed_during_ingest_loses_no_document(
    cluster, embedder_exports, documents, local_index, float_embedder, tmp_path
):
    killer = WorkerKiller()
    killer.start()
    try:
        report = ingest(
            tmp_path / "index", [documents], embedder=float_embedder, engine=ray_engine(embedder_exports)
        )
    finally:
        killer.stop.set()
        killer.join()
    assert len(killer.killed) == 2, killer.killed
    assert report.converted == len(local_index.files)
    assert_same_index(open_live(tmp_path / "index", memory_map=True), local_index)


def test_incremental_ingest_on_ray_converts_only_the_changed_file(
    cluster, embedder_exports, documents, embedder, tmp_path
):
    """On the default (int8) backend, which is also what a plain `ingest --engine ray` runs."""
    folder = shutil.copytree(documents / "handbook", tmp_path / "handbook")
    engine = ray_engine(embedder_exports, backend="onnx-int8")
    ingest(tmp_path / "index", [folder], embedder=embedder, engine=engine)
    (folder / "helpdesk.txt").write_text("Helpdesk hours\n\nThe helpdesk now answers around the clock.\n")
    (folder / "observing.md").unlink()
    report = ingest(tmp_path / "index", [folder], embedder=embedder, engine=engine)
    assert (report.converted, report.reused, report.removed) == (1, 2, 1)
    ingest(tmp_path / "local", [folder], embedder=embedder)
    assert_same_index(
        open_live(tmp_path / "index", memory_map=True),
        open_live(tmp_path / "local", memory_map=True),
        min_cosine=0.98,
    )


def test_the_scale_out_benchmark_prints_its_table(cluster, documents, tmp_path):
    from evaluation.benchmarks.scale_out import bench_scale_out

    data = tmp_path / "data"
    shutil.copytree(documents / "handbook", data / "sec10q" / "docs")
    result = bench_scale_out(data, workers=(1,))
    assert [(row["engine"], row["workers"]) for row in result["rows"]] == [("local", None), ("ray", 1)]
    assert result["same_index_size"] and result["rows"][1]["chunks"] > 0
    assert result["table"][0].startswith("| engine | workers |") and len(result["table"]) == 4
