"""Evaluation questions and their gold measures, in the two formats of ``../shared/data``.

- SEC 10-Q style: columns ``Question``, ``Source Docs`` (a file-name glob), ``Answer`` and
  optionally ``Question Type``; an answer is scored by the gold answer's figures.
- manual-qa style (and techdocs): columns ``question``, ``type``, ``source_file`` (file names,
  or paths below the documents folder, separated by ``;``), ``gold_answer``, ``must_have``
  (phrases separated by ``|``) and ``answerable``, optionally ``id`` and ``follow_up_of`` (the
  id of the question a follow-up continues); an answer is scored by the must-have phrases it
  contains, and an unanswerable question by whether the answer says the documents do not
  answer it.

Every question knows its row (0 for the first data row of the file): the benchmarks tune on
the even rows and report on the odd ones (:attr:`Question.half`).

Phrase matching follows the manual-qa README: case-insensitive, whitespace collapsed, curly
quotes and dashes folded to ASCII, and a phrase that starts or ends with a letter or digit
is not found glued to another one ("17" is not in "2017").
"""

from __future__ import annotations

import csv
import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.answering.sentences import says_documents_do_not_answer
from pipeline.errors import ConfigurationError

_NOT_VERIFIED = re.compile(r"\b(?:I|we)\s+(?:could|can)\s*not\s+(?:verify|confirm)\b", re.IGNORECASE)

_FOLDED = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "‑": "-", "\u00a0": " "})
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Question:
    """One evaluation question: its gold documents, gold answer and what an answer must contain.

    ``gold_docs`` holds one file-name glob per gold document (all of them are needed).
    """

    text: str
    gold_docs: tuple[str, ...]
    answer: str
    kind: str = ""
    must_have: tuple[str, ...] = ()
    answerable: bool = True
    row: int = 0
    ident: str = ""
    follow_up_of: str = ""  # the ident of the question this one continues in a conversation

    @property
    def half(self) -> str:
        """``tune`` for the even rows of the file, ``report`` for the odd ones."""
        return "tune" if self.row % 2 == 0 else "report"

    def gold_found(self, sources: Iterable[str]) -> bool:
        """Whether every gold document is among ``sources`` (paths or file names)."""
        sources = list(sources)
        return all(any(_matches(s, glob) for s in sources) for glob in self.gold_docs)

    def is_gold(self, source: str) -> bool:
        """Whether ``source`` is one of the gold documents."""
        return any(_matches(source, glob) for glob in self.gold_docs)


def _matches(source: str, glob: str) -> bool:
    """Whether ``source`` (a path or a file name) is the file ``glob`` names: by its name, or by
    as many trailing path parts as the glob has ("postgresql/sql-merge.html")."""
    parts = Path(glob).parts
    tail = Path(source).parts[-len(parts) :]
    return len(tail) == len(parts) and fnmatch.fnmatch("/".join(tail), "/".join(parts))


def load_questions(path: Path) -> list[Question]:
    """The questions of a CSV in either format (see the module docstring)."""
    if not path.is_file():
        raise ConfigurationError(f"question file {path} does not exist")
    with open(path, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    columns = set(rows[0] if rows else {})
    if "must_have" in columns:
        _require(path, columns, {"question", "source_file", "gold_answer", "answerable"})
        return [
            Question(
                r["question"],
                tuple(name.strip() for name in r["source_file"].split(";") if name.strip()),
                r["gold_answer"],
                r.get("type", ""),
                tuple(p.strip() for p in r["must_have"].split("|") if p.strip()),
                r["answerable"].strip().lower() != "no",
                row,
                r.get("id", "").strip(),
                (r.get("follow_up_of") or "").strip(),
            )
            for row, r in enumerate(rows)
        ]
    _require(path, columns, {"Question", "Source Docs", "Answer"})
    return [
        Question(r["Question"], (r["Source Docs"],), r["Answer"], r.get("Question Type", ""), row=row)
        for row, r in enumerate(rows)
    ]


def _require(path: Path, columns: set[str], needed: set[str]) -> None:
    missing = needed - columns
    if missing:
        raise ConfigurationError(f"{path} lacks the column(s) {', '.join(sorted(missing))}")


def normalise(text: str) -> str:
    """Text as phrases are compared: quotes and dashes folded, whitespace collapsed, lower case."""
    return _SPACE.sub(" ", text.translate(_FOLDED)).strip().lower()


def phrase_found(phrase: str, text: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` under the manual-qa rules (module docstring)."""
    wanted = normalise(phrase)
    if not wanted:
        return False
    before = r"(?<![a-z0-9])" if wanted[0].isalnum() else ""
    after = r"(?![a-z0-9])" if wanted[-1].isalnum() else ""
    return re.search(before + re.escape(wanted) + after, normalise(text)) is not None


def phrases_found(phrases: Sequence[str], text: str) -> list[str]:
    """The phrases of ``phrases`` that ``text`` contains."""
    return [p for p in phrases if phrase_found(p, text)]


def dataset_docs(dataset_dir: Path, docs: Path | None = None) -> Path:
    """The documents folder of a dataset: ``docs`` when given, else its ``docs/`` folder, else
    the folder its README names as ``../<folder>/`` beside it (manual-qa reads ``../pdf-samples/``)."""
    if docs is None:
        docs = dataset_dir / "docs"
        readme = dataset_dir / "README.md"
        if not docs.is_dir() and readme.is_file():
            named = re.search(r"`\.\./([\w.-]+)/`", readme.read_text(encoding="utf-8"))
            if named:
                docs = dataset_dir.parent / named.group(1)
    if not docs.is_dir():
        raise ConfigurationError(f"{docs} is not a folder of documents (give the documents with --docs)")
    return docs


def corpus_name(docs: Path) -> str:
    """The name of a documents folder's collection and cached index: the dataset's name for its
    ``docs/`` folder (``sec10q``), else the folder's own (``pdf-samples``)."""
    return docs.parent.name if docs.name == "docs" else docs.name


def says_not_answered(answer: str) -> bool:
    """Whether an answer's text gives no answer: it says that the documents do not answer the
    question, or that no answer could be verified.

    One rule for every system compared (the agent and the plain baseline alike), read from the
    text the user sees, not from an outcome code only one of them has: the rule the agent
    itself uses to recognise its model's refusal
    (:func:`pipeline.answering.extractive.says_documents_do_not_answer`), and "I could not
    verify a short answer" (the agent's lead over the closest evidence when no draft passed its
    checks): it says nothing of the documents, but the user reads no answer either.
    """
    return says_documents_do_not_answer(answer) or bool(_NOT_VERIFIED.search(answer))
