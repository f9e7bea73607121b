"""Glossary / ontology query expansion (SKOS-like concepts), for the BM25 branch.

A glossary file (YAML or JSON) lists concepts::

    concepts:
      - pref_label: Atacama Large Millimeter/submillimeter Array
        alt_labels: [ALMA array]
        acronyms: [ALMA]
        broader: [radio interferometer]
        narrower: [Atacama Compact Array]
        definition: The interferometer on the Chajnantor plateau.

When any label of a concept occurs in a query (compared after stemming, as whole-word
sequences), the concept's other labels are added to the BM25 query with a lower weight
(``synonym_weight``), and its broader and narrower terms with a lower one still
(``related_weight``). The original words keep weight 1. The expansion is returned so that
callers can show it in their trace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigurationError
from pipeline.text import analyze


@dataclass(frozen=True, slots=True)
class Concept:
    """One glossary entry."""

    pref_label: str
    alt_labels: tuple[str, ...] = ()
    acronyms: tuple[str, ...] = ()
    broader: tuple[str, ...] = ()
    narrower: tuple[str, ...] = ()
    definition: str = ""

    @property
    def labels(self) -> tuple[str, ...]:
        """Every name of the concept itself (preferred, alternative, acronyms)."""
        return (self.pref_label, *self.alt_labels, *self.acronyms)


@dataclass(frozen=True, slots=True)
class Glossary:
    """A set of concepts, with each label's stemmed form precomputed for matching."""

    concepts: tuple[Concept, ...]
    _label_terms: tuple[tuple[tuple[str, ...], int], ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, concepts: list[Concept]) -> Glossary:
        label_terms = tuple(
            (tuple(analyze(label)), i) for i, c in enumerate(concepts) for label in c.labels if analyze(label)
        )
        return cls(tuple(concepts), label_terms)

    def as_prompt(self, limit: int = 40) -> str:
        """The first ``limit`` concepts as 'label (acronyms): definition' lines, for the LLM."""
        lines = []
        for concept in self.concepts[:limit]:
            names = ", ".join(concept.acronyms + concept.alt_labels)
            line = f"{concept.pref_label} ({names})" if names else concept.pref_label
            lines.append(f"{line}: {concept.definition}" if concept.definition else line)
        return "\n".join(lines)

    def matches(self, terms: list[str]) -> list[tuple[Concept, str]]:
        """Concepts with a label that occurs in ``terms`` as a contiguous run, with that label."""
        found: dict[int, str] = {}
        for label, index in self._label_terms:
            if index not in found and _contains(terms, label):
                found[index] = " ".join(label)
        return [(self.concepts[i], label) for i, label in sorted(found.items())]


@dataclass(frozen=True, slots=True)
class Expansion:
    """Weighted BM25 query terms, and which concepts contributed which labels."""

    terms: tuple[tuple[str, float], ...]
    added: tuple[dict[str, Any], ...] = ()


def _contains(terms: list[str], run: tuple[str, ...]) -> bool:
    n = len(run)
    return any(tuple(terms[i : i + n]) == run for i in range(len(terms) - n + 1))


def expand(query: str, glossary: Glossary | None, synonym_weight: float, related_weight: float) -> Expansion:
    """The BM25 terms for ``query``: its own at weight 1, plus glossary alternatives."""
    own = analyze(query)
    weights: dict[str, float] = {}
    for term in own:
        weights[term] = weights.get(term, 0.0) + 1.0
    added = []
    for concept, matched in glossary.matches(own) if glossary else []:
        synonyms = [label for label in concept.labels if " ".join(analyze(label)) != matched]
        related = [*concept.broader, *concept.narrower]
        for labels, weight in ((synonyms, synonym_weight), (related, related_weight)):
            for label in labels:
                for term in analyze(label):
                    if term not in own:
                        weights[term] = max(weights.get(term, 0.0), weight)
        added.append(
            {"concept": concept.pref_label, "matched": matched, "synonyms": synonyms, "related": related}
        )
    return Expansion(tuple(weights.items()), tuple(added))


def parse_glossary(data: Any) -> Glossary:
    """Build a glossary from parsed YAML/JSON (a ``concepts`` list, or a bare list)."""
    entries = data.get("concepts") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ConfigurationError("glossary must be a list of concepts or have a 'concepts' list")
    concepts = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not str(entry.get("pref_label", "")).strip():
            raise ConfigurationError(f"glossary concept {number} needs a non-empty pref_label")
        unknown = set(entry) - {"pref_label", "alt_labels", "acronyms", "broader", "narrower", "definition"}
        if unknown:
            raise ConfigurationError(
                f"glossary concept {number} has unknown keys: {', '.join(sorted(unknown))}"
            )

        concepts.append(
            Concept(
                pref_label=str(entry["pref_label"]).strip(),
                alt_labels=_strings(entry, "alt_labels"),
                acronyms=_strings(entry, "acronyms"),
                broader=_strings(entry, "broader"),
                narrower=_strings(entry, "narrower"),
                definition=str(entry.get("definition", "")),
            )
        )
    return Glossary.of(concepts)


def _strings(entry: dict[str, Any], key: str) -> tuple[str, ...]:
    value = entry.get(key) or []
    if isinstance(value, str):
        value = [value]
    return tuple(str(v) for v in value)


def load_glossary(path: Path) -> Glossary:
    """Read a YAML (``.yaml``/``.yml``) or JSON glossary file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read glossary {path}: {exc.strerror}") from exc
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigurationError(f"glossary {path} is not valid YAML: {exc}") from exc
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"glossary {path} is not valid JSON: {exc}") from exc
    return parse_glossary(data)
