"""Settings: environment prefix, TOML file, and invalid values named at start."""

import pytest

from pipeline.errors import ConfigurationError
from server.settings import load_settings


def test_defaults_are_valid():
    settings = load_settings()
    assert settings.chunk_tokens == 256 and settings.keep_versions == 3


def test_environment_overrides_toml_and_cli_overrides_environment(tmp_path, monkeypatch):
    config = tmp_path / "docfinder.toml"
    config.write_text(
        'index_dir = "/srv/index"\nchunk_tokens = 512\n\n[collections.manuals]\npaths = ["/srv/manuals"]\n'
    )
    monkeypatch.setenv("DOCFINDER_CHUNK_TOKENS", "384")
    settings = load_settings(config)
    assert settings.chunk_tokens == 384
    assert str(settings.index_dir) == "/srv/index"
    assert [str(p) for p in settings.collections["manuals"].paths] == ["/srv/manuals"]
    assert str(load_settings(config, index_dir="/tmp/other").index_dir) == "/tmp/other"


def test_docfinder_toml_in_the_working_directory_is_read(tmp_path):
    (tmp_path / "docfinder.toml").write_text("keep_versions = 7\n")
    assert load_settings().keep_versions == 7


def test_invalid_value_names_the_field_and_its_variable(monkeypatch):
    monkeypatch.setenv("DOCFINDER_CHUNK_TOKENS", "ten")
    with pytest.raises(ConfigurationError, match=r"chunk_tokens \(DOCFINDER_CHUNK_TOKENS\)"):
        load_settings()


def test_unknown_keys_are_rejected(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("chunk_size = 100\n")
    with pytest.raises(ConfigurationError, match="chunk_size"):
        load_settings(config)


def test_overlap_must_be_smaller_than_the_chunk(monkeypatch):
    monkeypatch.setenv("DOCFINDER_CHUNK_OVERLAP_TOKENS", "300")
    with pytest.raises(ConfigurationError, match="chunk_overlap_tokens"):
        load_settings()


def test_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")


def test_the_configuration_reference_lists_every_setting_as_it_is():
    from server.settings import reference_table
    from tests.conftest import REPO

    reference = (REPO / "docs" / "configuration.md").read_text()
    assert reference_table() in reference, (
        "regenerate the table in docs/configuration.md from reference_table()"
    )


def test_every_toml_example_in_the_configuration_reference_loads(tmp_path):
    """The examples people copy (collections, an observatory's domains) are valid settings."""
    from tests.conftest import REPO

    reference = (REPO / "docs" / "configuration.md").read_text()
    examples = [block.split("```")[0] for block in reference.split("```toml\n")[1:]]
    assert len(examples) >= 2
    for number, example in enumerate(examples):
        (tmp_path / f"{number}.toml").write_text(example)
        settings = load_settings(tmp_path / f"{number}.toml")
        assert settings.domains or settings.collections
    observatory = load_settings(tmp_path / "1.toml")
    assert "general" in observatory.domains and observatory.domains["instrument_configuration"].collections


def test_secrets_are_redacted(monkeypatch):
    monkeypatch.setenv("DOCFINDER_LLM_API_KEY", "sk-very-secret")
    settings = load_settings()
    assert "sk-very-secret" not in repr(settings) and "sk-very-secret" not in str(settings.model_dump())
    assert settings.llm_api_key.get_secret_value() == "sk-very-secret"
