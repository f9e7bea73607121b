"""Evidence units (table rows with their headers, sentences), in-document deepening, coverage-aware
selection and quoted evidence, on small hand-made documents."""

from __future__ import annotations

import re
import zlib
from dataclasses import replace

import numpy as np
import pytest

from index_build.chunking import ChunkingOptions, chunk_pieces
from index_build.document import Block, ParsedDocument
from index_build.evidence import analyse_table, document_units
from pipeline.answering.quotes import answering_quotes
from pipeline.retrieval.context import ContextConfig, ContextPiece, Passage, build_context
from pipeline.retrieval.documents import DocumentScope
from pipeline.retrieval.evidence import (
    EvidenceSearch,
    ScoredUnit,
    dense_hops,
    find_evidence,
    label_cost,
    select_evidence,
)
from pipeline.retrieval.evidence_config import EvidenceConfig
from pipeline.retrieval.unit_lifts import pull_mentioned_rows, pull_table_rows, states_figures
from pipeline.text import analyze
from pipeline.types import Chunk, EvidenceUnit, SearchHit, model_text, unit_spans
from programs.agent import quotes_of
from tests.fakes import WhitespaceTokenizer

INCOME = """| Three Months Ended | Nine Months Ended |
| --- | --- | --- | --- | --- |
| July 1, | June 25, | July 1, | June 25, |
| 2023 | 2022 | 2023 | 2022 |
| Net sales: |
| Products | $60,584 | $63,355 | $230,901 | $245,241 |
| Services | 21,213 | 19,604 | 62,886 | 58,941 |
| Total net sales | 81,797 | 82,959 | 293,787 | 304,182 |
| Cost of sales: |
| Products | 39,136 | 41,485 | 146,696 | 155,084 |"""


def test_a_table_row_carries_its_column_headers_group_and_caption():
    table = analyse_table(INCOME, caption="(In millions)")
    header_row = table.header.split("\n")[-1]
    assert table.header.startswith("(In millions)")
    assert "| Three Months Ended July 1, 2023 | Three Months Ended June 25, 2022 |" in header_row
    assert "Nine Months Ended June 25, 2022" in header_row
    total = table.rows["| Total net sales | 81,797 | 82,959 | 293,787 | 304,182 |"]
    assert total.group == "Net sales:" and total.label == "Total net sales"
    cost = table.rows["| Products | 39,136 | 41,485 | 146,696 | 155,084 |"]
    assert cost.group == "Cost of sales:", "the same label under another group keeps its own group"


def test_a_header_cell_naming_the_period_spreads_over_the_value_columns():
    table = analyse_table(
        "| Three Months Ended September 30, | 2023 | 2022 |\n| --- | --- | --- |\n"
        "| Revenue | 56,517 | 50,122 |"
    )
    assert (
        table.header == "|  | Three Months Ended September 30, 2023 | Three Months Ended September 30, 2022 |"
    )


def test_a_table_without_figures_takes_its_markdown_header():
    table = analyse_table("| Setting | Default |\n| --- | --- |\n| index_dir | .docfinder/index |")
    assert table.header == "| Setting | Default |" and "| index_dir | .docfinder/index |" in table.rows


def _report(title: str, revenue: str) -> ParsedDocument:
    return ParsedDocument(
        title,
        (
            Block("heading", "Statements of Operations", 1, 1),
            Block("text", "(In millions)", 1),
            Block("table", INCOME.replace("81,797", revenue), 1),
            Block("heading", "Discussion", 2, 1),
            Block(
                "text",
                f"Total net sales were {revenue} million. Services grew. The quarter was strong overall.",
                2,
            ),
        ),
        page_count=2,
    )


def _units(document: ParsedDocument, doc_id: str) -> tuple[list[Chunk], list[EvidenceUnit]]:
    chunked = chunk_pieces(
        document,
        doc_id=doc_id,
        collection="reports",
        source=f"/docs/{doc_id}.pdf",
        tokenizer=WhitespaceTokenizer(),
        options=ChunkingOptions(max_tokens=200, overlap_tokens=5, min_body_tokens=10),
    )
    return [c for c, _ in chunked], document_units(document, chunked)


def test_a_running_footer_is_no_evidence_but_a_row_restated_on_a_few_pages_is():
    """Seen on SEC dev: "Apple Inc. | Q1 2023 Form 10-Q | 19" matched an Apple question by the
    company's name and "10-Q", and three such footers were quoted as the closest evidence."""
    blocks = []
    for page in range(1, 21):
        blocks.append(Block("text", f"Segment {page} revenue grew in the quarter as demand rose.", page))
        if page in (3, 9, 15):  # a row restated in the statements, a note and the discussion
            blocks.append(Block("text", "Total net sales were $81,797 million in the quarter.", page))
        blocks.append(Block("text", f"Apple Inc. | Q1 2023 Form 10-Q | {page}", page))
    chunks, units = _units(ParsedDocument("2023 Q1 AAPL", tuple(blocks), page_count=20), "aapl")
    texts = [u.text for u in units]
    assert not any("Form 10-Q" in t for t in texts), "the footer on every page is left out"
    assert texts.count("Total net sales were $81,797 million in the quarter.") == 3
    assert sum(t.startswith("Segment ") for t in texts) == 20, "sentences differing in a figure stay"
    assert any("Form 10-Q" in c.text for c in chunks), "the chunk's text stays verbatim"


def test_units_are_verbatim_substrings_of_their_chunks_with_their_own_page():
    chunks, units = _units(_report("2023 Q3 report", "81,797"), "q3")
    by_id = {c.chunk_id: c for c in chunks}
    assert all(u.text in by_id[u.chunk_id].text for u in units)
    rows = [u for u in units if u.kind == "row"]
    assert len(rows) == 4 and all("Three Months Ended July 1, 2023" in u.table_header for u in rows)
    assert all(u.page == 1 for u in rows)
    sentences = [u for u in units if u.kind == "sentence"]
    assert [s.text for s in sentences] == [
        "Total net sales were 81,797 million.",
        "The quarter was strong overall.",
    ]
    assert all(s.page == 2 for s in sentences), "'Services grew.' has too few words to be evidence"


def test_unit_spans_find_a_sentence_and_a_rows_words_but_not_its_figures_in_the_model_text():
    chunks, units = _units(_report("2023 Q3 report", "81,797"), "q3")
    for chunk in chunks:
        mine = [u for u in units if u.chunk_id == chunk.chunk_id]
        text = model_text(chunk)
        for unit, spans in zip(mine, unit_spans(chunk, mine), strict=True):
            words = [text[start:end] for start, end in spans]
            if unit.kind == "sentence":
                assert words == [unit.text]
            else:
                assert words and " ".join(words) == _plain_row_words(unit.text)
                assert not any(ch.isdigit() for w in words for ch in w), words


def test_a_unit_whose_words_are_not_in_its_chunk_has_no_spans():
    chunks, units = _units(_report("2023 Q3 report", "81,797"), "q3")
    sentence = next(u for u in units if u.kind == "sentence")
    chunk = next(c for c in chunks if c.chunk_id == sentence.chunk_id)
    reflowed = replace(sentence, text=sentence.text.replace(" ", "\n", 1))
    assert unit_spans(chunk, [reflowed, sentence]) == [(), (_found(chunk, sentence.text),)]


def _found(chunk: Chunk, text: str) -> tuple[int, int]:
    at = model_text(chunk).index(text)
    return at, at + len(text)


def _plain_row_words(row: str) -> str:
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    return " ".join(
        c for c in cells if c and not re.fullmatch(r"[\s$(]*[-+]?\$?\s*\d[\d,.]*\s*[%)]*\s*\$?", c)
    )


class FakeEvidenceIndex:
    """Units of several documents with bag-of-words vectors and term-overlap BM25 stand-ins."""

    def __init__(self, documents: dict[str, ParsedDocument]) -> None:
        self.chunks: dict[str, Chunk] = {}
        self.units: dict[str, list[EvidenceUnit]] = {}
        for doc_id, document in documents.items():
            chunks, units = _units(document, doc_id)
            self.chunks.update({c.chunk_id: c for c in chunks})
            self.units[doc_id] = units

    @staticmethod
    def vector(text: str) -> np.ndarray:
        v = np.zeros(64, dtype=np.float32)
        for word in re.findall(r"[a-z]+", text.lower()):
            v[zlib.crc32(word.encode()) % 64] += 1.0  # hash() differs between processes
        return v / (np.linalg.norm(v) or 1.0)

    def units_of(self, doc_id):
        units = self.units[doc_id]
        return units, np.vstack([self.vector(u.row_group + " " + u.text) for u in units])

    def unit_bm25(self, doc_id, terms):
        return np.array(
            [len(set(terms) & set(analyze(u.row_group + " " + u.text))) for u in self.units[doc_id]],
            dtype=np.float32,
        )

    def chunk(self, chunk_id):
        return self.chunks[chunk_id]

    def chunks_of(self, doc_id):
        chunks = [c for c in self.chunks.values() if c.doc_id == doc_id]
        return chunks, np.vstack([self.vector(c.text) for c in chunks])

    def chunk_bm25(self, doc_id, terms):
        chunks = [c for c in self.chunks.values() if c.doc_id == doc_id]
        return np.array([len(set(terms) & set(analyze(c.text))) for c in chunks], dtype=np.float32)


def _index() -> FakeEvidenceIndex:
    return FakeEvidenceIndex(
        {
            "q1": _report("2023 Q1 report", "94,836"),
            "q2": _report("2023 Q2 report", "82,000"),
            "q3": _report("2023 Q3 report", "81,797"),
        }
    )


def test_over_time_draws_one_unit_from_each_periods_document_before_any_second():
    index = _index()
    question = "How have total net sales changed over time?"
    scope = DocumentScope(documents=("q3", "q2", "q1"), spread=True, recency="all")
    search = find_evidence(index, index.vector, [question], [], scope)
    assert search.documents == ["q3", "q2", "q1"]
    tokenizer = WhitespaceTokenizer()
    best = search.units[0].unit
    one_each = 3 * sum(tokenizer.count(t) + 1 for t in (best.text, best.table_header, best.row_group))
    one_each += sum(label_cost(index.chunks[f"{d}-0000"], tokenizer) for d in ("q1", "q2", "q3"))
    chosen = select_evidence(search, budget=one_each + 5, tokenizer=tokenizer)
    assert [c.unit.doc_id for c in chosen[:3]] == ["q3", "q2", "q1"], "each period's document first"
    assert all(c.unit.text.startswith("| Total net sales |") for c in chosen[:3])


def test_without_a_spread_the_budget_goes_by_score():
    strong = [ScoredUnit(_unit("a", i), _chunk("a"), 1.0 - i / 100, 0) for i in range(5)]
    weak = [ScoredUnit(_unit("b", 0), _chunk("b"), 0.1, 1)]
    chosen = select_evidence(
        EvidenceSearch(strong + weak, ["a", "b"]),
        budget=4 * 6 + 2 * label_cost(_chunk("a"), WhitespaceTokenizer()),
        tokenizer=WhitespaceTokenizer(),
    )
    assert chosen[0].unit.doc_id == "a" and "b" in [c.unit.doc_id for c in chosen]
    assert len(chosen) == 4, (
        "coverage first: b's only unit takes the last place a fifth unit of a would have had"
    )


def test_a_sentence_repeated_in_another_filing_is_chosen_once():
    repeated = EvidenceUnit("b-0000/000", "b-0000", "b", "sentence", "Sentence 0 of  a here.", 1)
    candidates = [
        ScoredUnit(_unit("a", 0), _chunk("a"), 1.0, 0),
        ScoredUnit(repeated, _chunk("b"), 0.9, 1),  # the same words, spaced otherwise
        ScoredUnit(_unit("b", 1), _chunk("b"), 0.5, 1),
    ]
    chosen = select_evidence(
        EvidenceSearch(candidates, ["a", "b"]), budget=100, tokenizer=WhitespaceTokenizer()
    )
    assert [c.unit.unit_id for c in chosen] == ["a-0000/000", "b-0000/001"]


def test_a_row_whose_figures_its_document_already_stated_leaves_room_for_new_evidence():
    def row(doc: str, i: int, text: str) -> EvidenceUnit:
        return EvidenceUnit(f"{doc}-0000/{i:03d}", f"{doc}-0000", doc, "row", text, 1, "| | Q |")

    candidates = [
        ScoredUnit(row("a", 0, "| Inventories | 4,779 | 5,159 |"), _chunk("a"), 1.0, 0),
        ScoredUnit(row("b", 0, "| Inventories | $4,779 | $5,159 |"), _chunk("b"), 0.95, 1),
        ScoredUnit(row("a", 1, "| Total inventories | $4,779 | $5,159 |"), _chunk("a"), 0.9, 0),  # the notes
        ScoredUnit(row("a", 2, "| Finished goods | 1,520 | 1,334 |"), _chunk("a"), 0.5, 0),
    ]
    chosen = select_evidence(
        EvidenceSearch(candidates, ["a", "b"]), budget=60, tokenizer=WhitespaceTokenizer()
    )
    assert [c.unit.unit_id for c in chosen] == ["a-0000/000", "b-0000/000", "a-0000/002"], (
        "the restated row is skipped within its document, kept in another"
    )


def _unit(doc: str, i: int) -> EvidenceUnit:
    return EvidenceUnit(
        f"{doc}-0000/{i:03d}", f"{doc}-0000", doc, "sentence", f"Sentence {i} of {doc} here.", 1
    )


def _chunk(doc: str) -> Chunk:
    return Chunk(f"{doc}-0000", doc, "c", f"/{doc}.md", doc, (), (1, 1), "text", "h")


def test_a_tables_rows_move_up_towards_its_best_row_and_sentences_do_not():
    def unit(i: int, kind: str, chunk: str, header: str = "") -> EvidenceUnit:
        return EvidenceUnit(f"u{i}", chunk, "d", kind, f"text {i}", table_header=header)  # type: ignore[arg-type]

    units = [
        unit(0, "row", "c1", "| Q1 |"),  # the row the question named
        unit(1, "row", "c1", "| Q1 |"),  # its neighbour in the same table
        unit(2, "row", "c2", "| Q1 |"),  # a row of another table (another chunk)
        unit(3, "sentence", "c1"),
    ]
    pulled = pull_table_rows(units, np.array([1.0, 0.2, 0.4, 0.3]), 0.5)
    assert pulled.tolist() == pytest.approx([1.0, 0.6, 0.4, 0.3])


def test_a_row_named_by_a_best_sentence_moves_up_towards_it():
    def unit(i: int, kind: str, text: str) -> EvidenceUnit:
        return EvidenceUnit(f"u{i}", "c1", "d", kind, text)  # type: ignore[arg-type]

    units = [
        unit(0, "sentence", "The increase in technology and infrastructure costs is due to payroll."),
        unit(1, "row", "| Technology and infrastructure | 19,485 | 21,203 |"),  # named by sentence 0
        unit(2, "row", "| Sales and marketing | 10,551 | 10,551 |"),  # named by no sentence
        unit(3, "row", "| Total | 34,000 | 36,000 |"),  # one term: "total" names nothing in particular
        unit(4, "sentence", "Total costs rose."),
        unit(5, "sentence", "Sales and marketing costs fell, a minor point."),  # not among the best sentences
    ]
    scores = np.array([0.9, 0.1, 0.2, 0.1, 0.8, 0.05])
    pulled = pull_mentioned_rows(units, scores, weight=0.5, sentences=2)
    assert pulled.tolist() == pytest.approx([0.9, 0.5, 0.2, 0.1, 0.8, 0.05])


def test_a_unit_stating_a_figure_outranks_an_equal_one_without():
    assert states_figures("Commercial paper outstanding was $1.7 billion.")
    assert states_figures("Sales increased 11% in Q3.")
    assert not states_figures("On June 30, 2023 the notes were issued in 2023."), "dates, years: no figures"
    document = ParsedDocument(
        "Debt",
        (
            Block("heading", "Debt", 1, 1),
            Block(
                "text",
                "The company had commercial paper outstanding during the whole quarter. "
                "The company had commercial paper outstanding of $1.7 billion. "
                "Weather across the regions stayed mild for most of the season.",
                1,
            ),
        ),
        page_count=1,
    )
    index = FakeEvidenceIndex({"d": document})
    question = "How much commercial paper did the company have outstanding?"
    scope = DocumentScope(documents=("d",))
    with_bonus = find_evidence(index, index.vector, [question], [], scope)
    assert "$1.7 billion" in with_bonus.units[0].unit.text
    without = find_evidence(index, index.vector, [question], [], scope, EvidenceConfig(figure_weight=0.0))
    assert "$1.7 billion" not in without.units[0].unit.text, "the test must not pass by word overlap alone"


def test_the_evidence_strategy_renders_each_table_header_once_per_passage():
    index = _index()
    question = "total net sales"
    scope = DocumentScope(documents=("q3",))
    search = find_evidence(index, index.vector, [question], [], scope)
    context = build_context(
        [],
        ContextConfig(selection="evidence", order="document", budget_tokens=400),
        tokenizer=WhitespaceTokenizer(),
        chunk_vector=lambda c: np.zeros(64),
        query_vector=index.vector(question),
        evidence=search,
    )
    text = context.text
    assert text.count("Three Months Ended July 1, 2023") == 1
    assert "| Total net sales | 81,797 |" in text and "Net sales:" in text
    assert context.trace[-2]["strategy"] == "evidence"


def test_a_quoted_figure_is_byte_identical_to_the_document_text():
    chunks, units = _units(_report("2023 Q3 report", "81,797"), "q3")
    by_chunk: dict[str, list[ContextPiece]] = {}
    for u in units:
        chunk = next(c for c in chunks if c.chunk_id == u.chunk_id)
        by_chunk.setdefault(u.chunk_id, []).append(ContextPiece(chunk, u.text, 0.5, 0, u))
    passages = [Passage(pieces[0].chunk, tuple(pieces)) for pieces in by_chunk.values()]
    answer = "Total net sales were $81.8 billion, or 81,797 million [1]."
    quotes = quotes_of(answering_quotes("What were net sales?", answer, passages, cited={1}), passages)
    first = next((q for q in quotes if "81,797" in q.text), None)
    assert first is not None, "the figure the answer states is quoted"
    assert first.text in chunks[0].text
    assert "Three Months Ended July 1, 2023" in first.context and first.pages == (1, 1)
    unverified = quotes_of(answering_quotes("What were net sales?", "", passages), passages)
    assert 1 <= len(unverified) <= 3 and all(any(q.text in c.text for c in chunks) for q in unverified)


def test_hits_outside_the_needed_documents_do_not_add_documents():
    index = _index()
    hits = [SearchHit(index.chunks["q1-0000"], 0.9), SearchHit(index.chunks["q2-0000"], 0.5)]
    search = find_evidence(index, index.vector, ["sales"], hits, DocumentScope())
    assert search.documents == ["q1", "q2"] and not search.spread


def test_an_inline_numbered_list_gives_one_unit_per_item_however_short():
    """An accident report's "Findings 1. OBJECT - TREE(S) 2. (C) ..." was cut after "1." and its
    two-word item dropped as too short; a statute cited as "49 U.S.C." ended a sentence."""
    document = ParsedDocument(
        "Accident report",
        (
            Block("heading", "Findings", 1, 1),
            Block("text", "Findings 1. OBJECT - TREE(S) 2. (C) ALTITUDE/CLEARANCE - MISJUDGED - PILOT", 1),
            Block(
                "text",
                "The Act, as codified at 49 U.S.C. Section 1154(b), precludes its use. It is final.",
                1,
            ),
        ),
        page_count=1,
    )
    _, units = _units(document, "ntsb")
    assert [u.text for u in units] == [
        "1. OBJECT - TREE(S)",
        "2. (C) ALTITUDE/CLEARANCE - MISJUDGED - PILOT",
        "The Act, as codified at 49 U.S.C. Section 1154(b), precludes its use.",
        "It is final.",
    ]


def test_a_question_naming_no_document_goes_deep_in_the_best_one_before_a_weaker_one():
    """Depth before breadth: a document whose best evidence is far weaker than the best
    document's is left out, so the room goes to the best document's further units."""
    index = FakeEvidenceIndex(
        {
            "manual": ParsedDocument(
                "Cryostat manual",
                (
                    Block("heading", "Cooling the cryostat", 1, 1),
                    Block(
                        "text",
                        "Cooling the cryostat takes four hours. Close the cryostat valve before cooling. "
                        "Check the cryostat pressure after cooling.",
                        1,
                    ),
                ),
                page_count=1,
            ),
            "report": ParsedDocument(
                "Annual report",
                (
                    Block("heading", "Budget", 1, 1),
                    Block("text", "The budget grew. Staff cooling costs rose.", 1),
                ),
                page_count=1,
            ),
        }
    )
    hits = [SearchHit(index.chunks["manual-0000"], 1.0), SearchHit(index.chunks["report-0000"], 0.5)]
    open_question = DocumentScope()
    search = find_evidence(
        index, index.vector, ["How long does cooling the cryostat take?"], hits, open_question
    )
    assert {s.unit.doc_id for s in search.units} == {"manual"}
    assert search.trace["weaker_documents_left_out"] == ["report"]
    both = find_evidence(
        index,
        index.vector,
        ["How long does cooling the cryostat take?"],
        hits,
        open_question,
        EvidenceConfig(document_floor=0.0),
    )
    assert {s.unit.doc_id for s in both.units} == {"manual", "report"}


def test_the_evidence_selection_places_its_passages_ping_pong_when_asked():
    """The strongest passage first, the second strongest last, each passage's units in reading order."""
    index = _index()
    question = "total net sales"
    search = find_evidence(index, index.vector, [question], [], DocumentScope(documents=("q3", "q2", "q1")))

    def passages(order: str) -> list[Passage]:
        return build_context(
            [],
            ContextConfig(selection="evidence", order=order, budget_tokens=400),
            tokenizer=WhitespaceTokenizer(),
            chunk_vector=lambda c: np.zeros(64),
            query_vector=index.vector(question),
            evidence=search,
        ).passages()

    placed = passages("pingpong")
    assert len(placed) >= 3
    scores = sorted((p.score for p in placed), reverse=True)
    assert placed[0].score == scores[0] and placed[-1].score == scores[1]
    assert [p.score for p in placed] != scores, "the test must not pass on score order"
    assert [p.chunk.chunk_id for p in placed] != [p.chunk.chunk_id for p in passages("document")]
    for passage in placed:
        ids = [piece.unit.unit_id for piece in passage.pieces]
        assert ids == sorted(ids)


@pytest.mark.parametrize(
    ("settings", "refused_for"),
    [
        ({"selection": "evidence", "order": "cluster"}, "not applied to the evidence selection"),
        ({"selection": "evidence", "top_sentences": 5}, "would ignore it"),
        ({"selection": "mmr", "top_sentences": 5}, "would ignore it"),
    ],
)
def test_a_context_setting_that_would_be_ignored_is_refused(settings, refused_for):
    with pytest.raises(ValueError, match=refused_for):
        ContextConfig(**settings)


def test_dense_hops_follow_a_chain_of_up_to_three_anchors():
    """Science Checker's multihop: each anchor's neighbours gain, and the next anchor is the best
    unit not hopped from yet, so the chain reaches a unit the question alone ranked last."""
    e = np.eye(3)
    vectors = np.vstack([e[0], (e[0] + e[1]) / np.sqrt(2), e[1], e[2]])
    scores = np.array([1.0, 0.5, 0.1, 0.3])
    one, chain_of_one = dense_hops(vectors, scores, weight=0.5, hops=1)
    assert chain_of_one == [0] and one[3] == pytest.approx(0.3)
    three, chain = dense_hops(vectors, scores, weight=0.5, hops=3)
    assert chain == [0, 1, 2], "the second anchor's neighbour (unit 2) became the third"
    assert three[2] > three[3], "unit 2 was last but one; the hops lift it over unit 3"


def test_the_hop_chain_of_each_document_is_in_the_trace():
    index = _index()
    question = "total net sales"
    scope = DocumentScope(documents=("q3",))
    search = find_evidence(index, index.vector, [question], [], scope, EvidenceConfig(hop_weight=0.2))
    assert len(search.trace["hops"]["q3"]) == 3
    assert "hops" not in find_evidence(index, index.vector, [question], [], scope).trace, "off by default"


def _blend_context(hits: list[SearchHit], search: EvidenceSearch, units_for: str) -> list[ContextPiece]:
    return build_context(
        hits,
        ContextConfig(selection="blend", order="document", budget_tokens=64, units_for=units_for),
        tokenizer=WhitespaceTokenizer(),
        chunk_vector=lambda c: np.zeros(64),
        query_vector=np.zeros(64),
        evidence=search,
    ).pieces


def _hit(doc: str, i: int, score: float) -> SearchHit:
    text = " ".join(f"{doc}{i}w{j}" for j in range(10))
    return SearchHit(Chunk(f"{doc}-hit{i}", doc, "c", f"/{doc}.md", doc, (), (1, 1), text, "h"), score)


@pytest.mark.parametrize(
    ("hit_documents", "named", "units_for", "units_shown"),
    [
        (("a", "b", "c", "a", "b"), False, "focused", False),  # nothing named, no document dominates
        (("a", "b", "c", "a", "b"), False, "every", True),
        (("a", "b", "c", "a", "b"), True, "focused", True),  # the question names its documents
        (("a", "a", "a", "a", "a"), False, "focused", True),  # the best passages all come from one document
    ],
)
def test_the_blend_gives_units_room_only_when_the_question_is_about_a_document(
    hit_documents, named, units_for, units_shown
):
    """A question about no document in particular reads the passages ranked best, whole, in the
    whole budget (the fifth passage, not units of the first ones); one about a document gets its units."""
    hits = [_hit(doc, i, 1.0 - i / 10) for i, doc in enumerate(hit_documents)]
    units = [ScoredUnit(_unit("a", i), _chunk("a"), 0.9 - i / 100, 0) for i in range(3)]
    search = EvidenceSearch(units, ["a", "b", "c"], named=named)
    pieces = _blend_context(hits, search, units_for)
    shown_units = [p for p in pieces if p.unit is not None]
    assert bool(shown_units) is units_shown
    whole = {p.chunk.chunk_id for p in pieces if p.unit is None}
    if units_shown:
        assert len(whole) < len(hits), "the units took the room of the passages ranked last"
    else:
        assert whole == {h.chunk.chunk_id for h in hits}, "every passage that fits, whole"
