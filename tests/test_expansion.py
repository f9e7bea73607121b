"""Glossary query expansion: matching, weights, trace, file loading and validation."""

import json

import pytest

from pipeline.errors import ConfigurationError
from pipeline.retrieval.expansion import Concept, Glossary, expand, load_glossary, parse_glossary
from pipeline.text import analyze

GLOSSARY = Glossary.of(
    [
        Concept(
            "Atacama Large Millimeter Array",
            alt_labels=("ALMA array",),
            acronyms=("ALMA",),
            broader=("interferometer",),
            narrower=("Atacama Compact Array",),
        ),
        Concept("water vapour radiometer", acronyms=("WVR",)),
    ]
)


def weights(expansion):
    return dict(expansion.terms)


def test_an_acronym_adds_its_labels_at_lower_weight():
    result = expand("ALMA proposal deadline", GLOSSARY, synonym_weight=0.5, related_weight=0.25)
    w = weights(result)
    for term in analyze("ALMA proposal deadline"):
        assert w[term] == 1.0
    for term in analyze("Atacama Large Millimeter"):
        assert w[term] == 0.5
    assert w[analyze("interferometer")[0]] == 0.25
    assert w[analyze("compact")[0]] == 0.25
    assert result.added[0]["concept"] == "Atacama Large Millimeter Array"
    assert result.added[0]["matched"] == "alma"


def test_multi_word_labels_match_as_whole_runs_after_stemming():
    assert (
        weights(expand("Is the water vapour radiometer calibrated?", GLOSSARY, 0.5, 0.25))[analyze("WVR")[0]]
        == 0.5
    )
    assert expand("vapour and water radiometers", GLOSSARY, 0.5, 0.25).added == ()


def test_no_glossary_or_no_match_leaves_the_query_alone():
    assert weights(expand("cryostat warm-up", None, 0.5, 0.25)) == {
        t: 1.0 for t in analyze("cryostat warm-up")
    }
    assert expand("cryostat warm-up", GLOSSARY, 0.5, 0.25).added == ()


def test_yaml_and_json_files_load(tmp_path):
    (tmp_path / "g.yaml").write_text(
        "concepts:\n  - pref_label: Water Vapour Radiometer\n    acronyms: WVR\n"
    )
    (tmp_path / "g.json").write_text(json.dumps([{"pref_label": "Band 3", "alt_labels": ["3 mm band"]}]))
    assert load_glossary(tmp_path / "g.yaml").concepts[0].acronyms == ("WVR",)
    assert load_glossary(tmp_path / "g.json").concepts[0].alt_labels == ("3 mm band",)


def test_invalid_glossaries_are_rejected_with_the_reason(tmp_path):
    with pytest.raises(ConfigurationError, match="pref_label"):
        parse_glossary({"concepts": [{"acronyms": ["X"]}]})
    with pytest.raises(ConfigurationError, match="unknown keys: altLabel"):
        parse_glossary([{"pref_label": "X", "altLabel": ["Y"]}])
    (tmp_path / "bad.yaml").write_text("concepts: [unclosed")
    with pytest.raises(ConfigurationError, match="not valid YAML"):
        load_glossary(tmp_path / "bad.yaml")
