"""Settings: sections, environment prefix, TOML file, the flat names of the release before,
invalid values named at start, and each knob declared once."""

import ast

import pytest
from pydantic import BaseModel

from pipeline.errors import ConfigurationError
from server.settings import Settings, env_name, knobs, load_settings
from tests.conftest import REPO


def test_defaults_are_valid():
    settings = load_settings()
    assert settings.ingest.chunking.max_tokens == 256 and settings.ingest.keep_versions == 3


def test_environment_overrides_toml_and_cli_overrides_environment(tmp_path, monkeypatch):
    config = tmp_path / "docfinder.toml"
    config.write_text(
        '[index]\ndir = "/srv/index"\n\n[ingest.chunking]\nmax_tokens = 512\n\n'
        '[collections.manuals]\npaths = ["/srv/manuals"]\n'
    )
    monkeypatch.setenv("DOCFINDER_INGEST__CHUNKING__MAX_TOKENS", "384")
    settings = load_settings(config)
    assert settings.ingest.chunking.max_tokens == 384
    assert str(settings.index.dir) == "/srv/index"
    assert [str(p) for p in settings.collections["manuals"].paths] == ["/srv/manuals"]
    assert str(load_settings(config, index__dir="/tmp/other").index.dir) == "/tmp/other"


def test_a_section_set_in_pieces_keeps_its_other_knobs(tmp_path, monkeypatch):
    config = tmp_path / "docfinder.toml"
    config.write_text("[retrieval]\nalpha = 0.6\n")
    monkeypatch.setenv("DOCFINDER_RETRIEVAL__DENSE_WEIGHT", "0.4")
    retrieval = load_settings(config, retrieval__k=5).retrieval
    assert (retrieval.alpha, retrieval.dense_weight, retrieval.k, retrieval.candidates) == (0.6, 0.4, 5, 16)


def test_docfinder_toml_in_the_working_directory_is_read(tmp_path):
    (tmp_path / "docfinder.toml").write_text("[ingest]\nkeep_versions = 7\n")
    assert load_settings().ingest.keep_versions == 7


def test_a_flat_name_of_the_layout_before_the_sections_fails_naming_its_place(tmp_path, monkeypatch):
    """The flat names (``DOCFINDER_LLM_API_BASE``, ``keep_versions``) are gone: each is an error
    at start, never a setting silently left at its default."""
    monkeypatch.setenv("DOCFINDER_LLM_API_BASE", "http://vllm:8000/v1")
    with pytest.raises(
        ConfigurationError, match=r"DOCFINDER_LLM_API_BASE \(did you mean DOCFINDER_LLM__API_BASE\?\)"
    ):
        load_settings()
    monkeypatch.delenv("DOCFINDER_LLM_API_BASE")
    monkeypatch.setenv("DOCFINDER_COLLECTIONS__DOCS__DESCRIPTION", "manuals")  # a map's entry is a setting
    assert load_settings().collections["docs"].description == "manuals"
    (tmp_path / "docfinder.toml").write_text("keep_versions = 7\n")
    with pytest.raises(ConfigurationError, match="keep_versions"):
        load_settings()


def test_invalid_value_names_the_field_and_its_variable(monkeypatch):
    monkeypatch.setenv("DOCFINDER_INGEST__CHUNKING__MAX_TOKENS", "ten")
    with pytest.raises(
        ConfigurationError, match=r"ingest\.chunking\.max_tokens \(DOCFINDER_INGEST__CHUNKING__MAX_TOKENS\)"
    ):
        load_settings()


def test_unknown_keys_are_rejected(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[ingest.chunking]\nchunk_size = 100\n")
    with pytest.raises(ConfigurationError, match="chunk_size"):
        load_settings(config)


def test_overlap_must_be_smaller_than_the_chunk(monkeypatch):
    monkeypatch.setenv("DOCFINDER_INGEST__CHUNKING__OVERLAP_TOKENS", "300")
    with pytest.raises(ConfigurationError, match="overlap_tokens"):
        load_settings()


def test_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")


def test_changed_replaces_knobs_by_path_and_refuses_unknown_ones():
    settings = load_settings()
    changed = settings.changed({"llm.api_base": "http://x:1/v1", "ingest.limits.max_pages": 9})
    assert changed.llm.api_base == "http://x:1/v1" and changed.ingest.limits.max_pages == 9
    assert changed.llm.model == settings.llm.model and settings.llm.api_base is None
    with pytest.raises(ConfigurationError, match="no setting 'api_bsae'"):
        settings.changed({"llm.api_bsae": "x"})


def test_the_configuration_reference_lists_every_setting_as_it_is():
    from server.settings import reference_table

    reference = (REPO / "docs" / "configuration.md").read_text()
    assert reference_table() in reference, (
        "regenerate the table in docs/configuration.md from reference_table()"
    )


def test_every_knob_has_a_meaning_and_a_default():
    for path, field in knobs().items():
        assert field.description, f"{path} needs a description (docs/configuration.md shows it)"
        assert not field.is_required(), f"{path} needs a default"
        assert env_name(path).startswith("DOCFINDER_")


def declared_fields(package_paths) -> dict[str, set[str]]:
    """Every class of ours with annotated fields (a dataclass or a pydantic model): its fields."""
    found = {}
    for path in package_paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = {
                    item.target.id
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                }
                if names:
                    found[f"{path.stem}:{node.name}"] = names
    return found


def sections(model: type[BaseModel] = Settings) -> set[type[BaseModel]]:
    found = set()
    for field in model.model_fields.values():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            found |= {field.annotation, *sections(field.annotation)}
    return found


def second_declarations(section: type[BaseModel], declared: dict[str, set[str]]) -> list[str]:
    """Classes other than ``section`` and its bases that declare most of its knobs again (the
    shadow configuration a hand mapping would copy the settings into)."""
    own = {name for cls in section.__mro__ for name in getattr(cls, "__annotations__", {})}
    related = {cls.__name__ for cls in section.__mro__}
    return [
        name
        for name, fields in declared.items()
        if name.split(":")[1] not in related and len(own & fields) >= max(3, len(own) // 2 + 1)
    ]


def test_each_knob_is_declared_once():
    """Each settings section is the model its code takes: no second class declares its knobs."""
    packages = ["server", "bots", "pipeline", "index_build", "programs"]
    declared = declared_fields(p for package in packages for p in (REPO / package).rglob("*.py"))
    assert {
        s.__name__: second_declarations(s, declared) for s in sections() if second_declarations(s, declared)
    } == {}


def test_the_declared_once_rule_catches_a_shadow_configuration(tmp_path):
    shadow = tmp_path / "shadow.py"
    shadow.write_text(
        "from dataclasses import dataclass\n\n@dataclass\nclass LLMConfig:\n"
        "    api_base: str\n    model: str\n    max_tokens: int\n    timeout_s: float\n    threads: int\n"
    )
    from server.settings import LLMSettings

    copied = declared_fields([shadow]) | {"settings:LLMSettings": set(LLMSettings.model_fields)}
    assert [name.split(":")[1] for name in second_declarations(LLMSettings, copied)] == ["LLMConfig"]


def test_every_toml_example_in_the_configuration_reference_loads(tmp_path):
    """The examples people copy (collections, an observatory's domains) are valid settings."""
    reference = (REPO / "docs" / "configuration.md").read_text()
    examples = [block.split("```")[0] for block in reference.split("```toml\n")[1:]]
    assert len(examples) >= 2
    for number, example in enumerate(examples):
        (tmp_path / f"{number}.toml").write_text(example)
        settings = load_settings(tmp_path / f"{number}.toml")
        assert settings.domains or settings.collections
    excerpt = load_settings(tmp_path / "1.toml")
    assert "general" in excerpt.domains and excerpt.domains["data_reduction"].collections


def test_the_shipped_observatory_example_has_esofinders_seven_domains_over_its_collections():
    observatory = load_settings(REPO / "docs" / "examples" / "esofinder.toml")
    assert sorted(observatory.domains) == [
        "alma",
        "archive",
        "data_reduction",
        "general",
        "instruments",
        "observation_preparation",
        "proposal_preparation",
    ]
    assert len(observatory.collections) == 7
    for name, domain in observatory.domains.items():
        assert domain.description and domain.collections, name
        assert set(domain.collections) <= set(observatory.collections), f"{name} weighs an unknown collection"
        assert all(weight > 1 for weight in domain.collections.values())
    assert observatory.domains["alma"].collections == {"alma": 2.5}


def test_secrets_are_redacted(monkeypatch):
    monkeypatch.setenv("DOCFINDER_LLM__API_KEY", "sk-very-secret")
    settings = load_settings()
    assert "sk-very-secret" not in repr(settings) and "sk-very-secret" not in str(settings.model_dump())
    assert settings.llm.api_key.get_secret_value() == "sk-very-secret"


@pytest.mark.parametrize(
    "address",
    ["ray://head:10001", "http://head:6379", "head:6379; rm -rf /", "head", "-head:6379", "head:123456"],
)
def test_a_ray_address_is_a_cluster_node_and_nothing_else(address):
    with pytest.raises(ConfigurationError, match=r"ingest\.ray\.address"):
        load_settings(ingest__engine="ray", ingest__ray__address=address)
    for good in ("auto", "ray-head:6379", "10.0.0.7:6379"):
        assert load_settings(ingest__ray__address=good).ingest.ray.address == good


def test_what_a_ray_worker_is_sent_to_build_the_embedder_holds_no_secret():
    import pickle

    from server.models.factories import embedder_factory

    secret = "s3cr3t-" + "k" * 40
    settings = load_settings(access__api_keys={"team": {"key": secret}}, llm__api_key=secret)
    sent = pickle.dumps(embedder_factory(settings))
    assert secret.encode() not in sent
    assert pickle.loads(sent).args == (settings.embedder, settings.index.dir)
