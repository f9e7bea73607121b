"""The agent's control flow, branch by branch, with DSPy's DummyLM and a hand-written retriever."""

from __future__ import annotations

import asyncio

import dspy
import pytest
from dspy.utils import DummyLM

from pipeline.context import Retrieved, whole_passages
from pipeline.domains import DomainChoice
from pipeline.extractive import DOCUMENTS_SAY, says_documents_do_not_answer
from pipeline.steps import Step
from pipeline.types import Chunk, SearchHit
from pipeline.wording import STEP_TEXT, status_text
from programs.agent import LLM_UNAVAILABLE, NO_DOCUMENTS, NOT_CLEARLY_SAID, NOT_VERIFIED, AnswerAgent
from programs.agent_settings import AgentSettings
from programs.signatures import Supported

DOMAINS = {"alma": "the ALMA telescope", "general": "anything else"}


def chunk(n: int, text: str) -> Chunk:
    return Chunk(
        f"doc-{n:04d}", "doc", "manuals", f"/docs/m{n}.pdf", f"Manual {n}", ("Setup",), (n, n), text, "h"
    )


class ScriptedRetriever:
    """Returns the next scripted hit list per call and records what was asked."""

    def __init__(self, *responses: list[SearchHit]) -> None:
        self.responses = list(responses)
        self.calls: list[tuple[list[str], str | None, str]] = []

    async def __call__(self, queries, domain, mode):
        self.calls.append((list(queries), domain, mode))
        return Retrieved(whole_passages(self.responses.pop(0) if self.responses else []))


HITS = [SearchHit(chunk(1, "The cryostat is warmed up every six months."), 0.9)]
SPARSE = [SearchHit(chunk(7, "The cold head was replaced in 2019."), 0.6)]


def run(agent, lm, retriever, message="How often is the cryostat warmed up?", **kwargs):
    events = []

    async def on_status(event):
        events.append(event["step"])

    async def go():
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            return await agent.acall(message, retriever, on_status=on_status, **kwargs)

    return asyncio.run(go()), events


def understood(rephrased: str, domain: str = "alma") -> dict:
    """The understanding call's reply for the test question: it stands alone, in ``domain``."""
    return {
        "standalone_question": "How often is the cryostat warmed up?",
        "domain": domain,
        "rephrased": rephrased,
    }


def lm(*answers):
    return DummyLM(list(answers), adapter=dspy.JSONAdapter())


def test_happy_path_answers_with_citations_and_streams_every_step():
    agent = AnswerAgent(DOMAINS)
    model = lm(
        {
            "standalone_question": "A question the model made up",  # no history: the message stands
            "domain": "alma",
            "rephrased": "cryostat warm-up interval",
        },
        {"answer": "Every six months, as scheduled [1].", "sources": [1]},
        {"supported": "yes"},
    )
    retriever = ScriptedRetriever(HITS)
    result, events = run(agent, model, retriever)
    assert len(model.history) == 3, "understand, generate, supported: three LLM calls (usefulness by code)"
    assert result.question == "How often is the cryostat warmed up?"
    assert result.outcome == "answered"
    assert (
        result.answer
        == "Every six months, as scheduled [1].\n\n“The cryostat is warmed up every six months.” [1]"
    ), "the model's checked sentence, then the document's own words, placed by code"
    assert [c.passage_id for c in result.citations] == ["doc-0001"] and result.citations[0].pages == (1, 1)
    assert result.verdicts == {"supported": "yes", "useful": "code"} and result.domain == "alma"
    assert retriever.calls == [
        (["How often is the cryostat warmed up?", "cryostat warm-up interval"], "alma", "hybrid")
    ]
    assert events == [
        "classify_query",
        "review_query",
        "retrieve",
        "grade_documents",
        "evidence",
        "generate",
        "compose",
        "supported",
        "useful",
    ]
    shown = result.trace[events.index("evidence")]["quotes"]
    assert shown[0]["text"] == "The cryostat is warmed up every six months." and shown[0]["n"] == 1
    assert "llm_call" not in result.trace[events.index("evidence")], "the evidence is shown before any answer"
    assert [e["step"] for e in result.trace] == events
    assert all(isinstance(e["step"], Step) for e in result.trace), "one enum names every step"
    assert {status_text(e) for e in events} <= {*STEP_TEXT.values(), None}


def test_a_first_question_skips_understanding_when_no_domain_weighs_collections():
    agent = AnswerAgent(DOMAINS, understand_first_turn=False)
    model = lm(
        {"answer": "Every six months, as scheduled [1].", "sources": [1]},
        {"supported": "yes"},
    )
    retriever = ScriptedRetriever(HITS)
    result, events = run(agent, model, retriever)
    assert len(model.history) == 2, "generate, supported: two LLM calls"
    assert result.outcome == "answered" and result.domain is None
    assert retriever.calls == [(["How often is the cryostat warmed up?"], None, "hybrid")]
    assert events[0] == "understand_skipped" and "classify_query" not in events


class NearestDomain:
    """A hand-written classifier: the domain named by a word of the question, and what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, question: str) -> DomainChoice:
        self.asked.append(question)
        domain = "alma" if "ALMA" in question else "general"
        return DomainChoice(domain, {"alma": 0.8 if domain == "alma" else 0.1, "general": 0.3})


def test_a_classifier_places_the_question_in_a_domain_without_an_llm_call():
    classify = NearestDomain()
    agent = AnswerAgent(DOMAINS, understand_first_turn=False, classify=classify)
    model = lm(
        {"answer": "Every six months, as scheduled [1].", "sources": [1]},
        {"supported": "yes"},
    )
    retriever = ScriptedRetriever(HITS)
    result, events = run(agent, model, retriever, message="How often is the ALMA cryostat warmed up?")
    assert len(model.history) == 2, "generate, supported: classification costs no LLM call"
    assert events[:3] == ["understand_skipped", "classify_query", "retrieve"]
    classified = result.trace[1]
    assert classified["domain"] == "alma" and classified["method"] == "embedding"
    assert classified["similarities"]["alma"] == 0.8
    assert retriever.calls[0][1] == "alma", "the search weighs the collections of the chosen domain"
    assert result.domain == "alma"


def test_a_follow_up_is_classified_by_its_condensed_question_and_the_llm_is_not_asked_the_domain():
    classify = NearestDomain()
    agent = AnswerAgent(DOMAINS, understand_first_turn=False, classify=classify)
    model = lm(*FOLLOW_UP)
    result, events = run(
        agent, model, ScriptedRetriever(HITS), history=[("user", "Tell me about ALMA.")], message="And it?"
    )
    assert classify.asked == ["How often is the ALMA cryostat warmed up?"]
    assert events[:3] == ["condense", "review_query", "classify_query"] and result.domain == "alma"
    understand_prompt = str(model.history[0]["messages"])
    assert "the ALMA telescope" not in understand_prompt, "the domains are not listed for the LLM"


# A follow-up in a conversation: understood (condensed) first, then answered and checked.
FOLLOW_UP = (
    {
        "standalone_question": "How often is the ALMA cryostat warmed up?",
        "domain": "alma",
        "rephrased": "cryostat maintenance",
    },
    {"answer": "Every six months, as scheduled [1].", "sources": [1]},
    {"supported": "yes"},
)


def test_a_follow_up_is_condensed_even_when_first_questions_skip_understanding():
    agent = AnswerAgent(DOMAINS, understand_first_turn=False)
    model = lm(*FOLLOW_UP)
    result, events = run(agent, model, ScriptedRetriever(HITS), history=[("user", "Tell me about ALMA.")])
    assert result.question == "How often is the ALMA cryostat warmed up?"
    assert events[:2] == ["condense", "classify_query"] and len(model.history) == 3


def test_history_is_condensed_first():
    agent = AnswerAgent(DOMAINS)
    model = lm(*FOLLOW_UP)
    result, events = run(agent, model, ScriptedRetriever(HITS), history=[("user", "Tell me about ALMA.")])
    assert events[0] == "condense" and result.question == "How often is the ALMA cryostat warmed up?"


def test_no_passages_rewrites_then_answers_no_documents_without_generating():
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=2))
    model = lm(
        understood("cryostat", domain="general"),
        {"rewritten": "cryostat warm-up schedule"},
        {"rewritten": "cryostat maintenance interval"},
    )
    retriever = ScriptedRetriever([], [], [])
    result, events = run(agent, model, retriever)
    assert result.outcome == "no_documents" and result.answer == NO_DOCUMENTS and result.citations == []
    assert events.count("transform_query") == 2 and "generate" not in events
    assert len(retriever.calls) == 3
    assert len(model.history) == 3  # understand and two rewrites: no generate, no checks


def test_low_scores_are_graded_away():
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=0, grade_threshold=0.95))
    result, _ = run(
        agent,
        lm(understood("x")),
        ScriptedRetriever(HITS),
    )
    assert result.outcome == "no_documents"
    assert result.trace[-1] == {**result.trace[-1], "step": "grade_documents", "kept": [], "threshold": 0.95}


def test_unsupported_answer_tries_the_sparse_set_then_succeeds():
    agent = AnswerAgent(DOMAINS)
    model = lm(
        understood("cryostat"),
        {"answer": "Every six months, as scheduled [1].", "sources": [1]},
        {"supported": "no"},
        {
            "answer": "Every six months [1]; the cold head was replaced in 2019, as scheduled [2].",
            "sources": [2],
        },
        {"supported": "yes"},
    )
    retriever = ScriptedRetriever(HITS, SPARSE)
    result, events = run(agent, model, retriever)
    assert result.outcome == "answered"
    assert retriever.calls[1] == (["How often is the cryostat warmed up?"], "alma", "sparse")
    assert "sparse_fallback" in events and events.count("generate") == 2
    assert events.count("useful") == 1, "useful is not reported once supported has failed"
    assert [e["llm_call"] for e in result.trace if "llm_call" in e] == [
        "understand",
        "generate",
        "supported",
        "generate",
        "supported",
    ], "the sparse fallback retrieves without the LLM"
    assert [c.passage_id for c in result.citations] == ["doc-0001", "doc-0007"]


def test_the_grounding_check_continues_the_generate_conversation_and_names_the_cited_passages():
    agent = AnswerAgent(DOMAINS)
    hits = [*HITS, SearchHit(chunk(2, "The compressor is serviced yearly."), 0.8)]
    model = lm(
        understood("compressor"),
        {"answer": "The compressor is serviced yearly, as scheduled [2].", "sources": [2]},
        {"supported": "yes"},
    )
    result, _ = run(agent, model, ScriptedRetriever(hits))
    generate, check = model.history[1]["messages"], model.history[2]["messages"]
    assert check[: len(generate)] == generate, "the check's prompt begins with the generate call's, unchanged"
    written, turn = check[len(generate) :]
    assert written["role"] == "assistant" and "serviced yearly, as scheduled [2]." in written["content"]
    assert turn["role"] == "user" and turn["content"].startswith("Check the answer you have just written")
    assert "[[ ## cited ## ]]\n[2]\n" in turn["content"], "asked about the passage the answer cites"
    assert "cryostat is warmed" not in turn["content"], "the evidence is not sent again"
    assert all(m["role"] != "system" for m in check[len(generate) :])
    assert result.trace[-2] == {
        **result.trace[-2],
        "step": "supported",
        "passages": 1,
        "llm_call": "supported",
    }


def test_a_sentence_whose_figure_its_cited_passage_does_not_state_is_dropped_without_an_llm_check():
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=0))
    model = lm(
        understood("cryostat"),
        {"answer": "Every 18 months [1].", "sources": [1]},  # the passage says every six months
        {"answer": "Every six months, as scheduled [1].", "sources": [1]},
        {"supported": "yes"},
    )
    result, _ = run(agent, model, ScriptedRetriever(HITS, SPARSE))
    first = next(e for e in result.trace if e["step"] == "compose")
    assert first["kind"] == "quotes" and first["kept"] == ""
    assert first["dropped"] == [{"sentence": "Every 18 months [1].", "reason": "figure", "detail": ["18"]}]
    assert "llm_call" not in first or first["llm_call"] == "generate", "no LLM check for an unstated figure"
    assert result.outcome == "answered" and result.answer.startswith("Every six months, as scheduled [1].\n")
    assert "18" not in result.answer
    assert len(model.history) == 4, "understand, generate, generate again, supported"


def test_a_figure_taken_from_an_uncited_passage_gets_its_citation_and_passes_in_three_calls():
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=0))
    hits = [*HITS, SearchHit(chunk(2, "The cold head is replaced every 18 months."), 0.8)]
    model = lm(
        understood("cold head"),
        {"answer": "The cold head is replaced every 18 months, as scheduled [1].", "sources": [1]},
        {"supported": "yes"},
    )
    result, events = run(agent, model, ScriptedRetriever(hits))
    assert result.answer.startswith("The cold head is replaced every 18 months, as scheduled [1][2].\n")
    assert [c.n for c in result.citations] == [1, 2]
    assert "“The cold head is replaced every 18 months.” [2]" in result.answer, (
        "the unit that states it is quoted"
    )
    cited = next(e for e in result.trace if e["step"] == "cite_figures")
    assert cited["added"] == [{"figure": "18", "passage": 2}]
    assert events.index("cite_figures") < events.index("supported")
    assert "[[ ## cited ## ]]\n[1], [2]\n" in model.history[2]["messages"][-1]["content"]
    assert result.outcome == "answered" and len(model.history) == 3, "understand, generate, supported"


def test_without_the_figure_check_the_llm_alone_judges_an_unstated_figure():
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=0, figure_check=False))
    model = lm(
        understood("cryostat"),
        {"answer": "Every 18 months [1].", "sources": [1]},
        {"supported": "yes"},
    )
    result, _ = run(agent, model, ScriptedRetriever(HITS))
    check = next(e for e in result.trace if e["step"] == "supported")
    assert check["llm_call"] == "supported"
    assert result.outcome == "answered" and result.answer.startswith("Every 18 months [1].\n")


def test_a_continued_call_never_falls_back_to_an_adapter_that_drops_the_earlier_turns():
    from programs.continuation import Conversation, continuing

    earlier = Conversation(
        ({"role": "user", "content": "evidence"}, {"role": "assistant", "content": "draft"})
    )
    chat = dspy.ChatAdapter()
    continued = continuing(chat, earlier)
    assert chat.use_json_adapter_fallback and not continued.use_json_adapter_fallback
    messages = continued.format(Supported, [], {"cited": "[1]"})
    assert messages[:2] == list(earlier.messages) and "[[ ## cited ## ]]\n[1]" in messages[2]["content"]


def test_answers_that_say_nothing_twice_give_the_best_evidence_quoted_without_an_llm_check():
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=1))
    model = lm(
        understood("cryostat"),
        {"answer": "Yes, the cryostat is warmed up [1].", "sources": [1]},  # nothing the question did not say
        {"rewritten": "cryostat warm-up frequency"},
        {"answer": "It is warmed [1].", "sources": [1]},
    )
    retriever = ScriptedRetriever(HITS, [SearchHit(chunk(3, "The cryostat is warmed before service."), 0.7)])
    result, events = run(agent, model, retriever, sparse_available=False)
    assert result.outcome == "unverified"
    # Vague drafts say nothing of the documents: the lead does not claim they lack the answer.
    assert result.answer == f"{NOT_VERIFIED}\n“The cryostat is warmed up every six months.” [1]"
    assert not says_documents_do_not_answer(result.answer)
    assert [c.passage_id for c in result.citations] == ["doc-0001"]
    reasons = [d["reason"] for e in result.trace if e["step"] == "compose" for d in e["dropped"]]
    assert reasons == ["says_nothing", "says_nothing"] and "supported" not in events
    assert len(model.history) == 4, (
        "understand, generate, transform, generate: no LLM check of a vague answer"
    )


def test_drafts_that_each_put_forward_what_no_cited_passage_states_end_in_the_documents_do_not_say():
    """Asked for what the documents lack, a small model fills the gap: a figure no passage
    states, or a name taken from a passage it does not cite. When every failed draft did so,
    the lead says the documents do not say it; the same question answered vaguely does not."""
    hits = [
        SearchHit(chunk(1, "The cryostat is warmed up every six months."), 0.9),
        SearchHit(chunk(2, "Interviews take place in a quiet room in the QENSIU."), 0.8),
    ]
    question = "Which vacuum pump model does the cryostat use?"
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=1), understand_first_turn=False)
    model = lm(
        {"answer": "The cryostat uses the Edwards pump [1].", "sources": [1]},  # a name no passage has
        {"rewritten": "cryostat vacuum pump"},
        # a name from a passage it does not cite
        {"answer": "The vacuum pump model the cryostat uses is the QENSIU [1].", "sources": [1]},
    )
    retried = [SearchHit(chunk(3, "The cryostat is warmed before service."), 0.7), hits[1]]
    retriever = ScriptedRetriever(hits, retried)
    result, _ = run(agent, model, retriever, question, sparse_available=False)
    assert result.outcome == "unverified" and result.answer.startswith(NOT_CLEARLY_SAID)
    assert says_documents_do_not_answer(result.answer)

    vague = lm(
        {"answer": "The cryostat uses a vacuum pump [1].", "sources": [1]},
        {"rewritten": "cryostat vacuum pump"},
        {"answer": "The vacuum pump model the cryostat uses is the QENSIU [1].", "sources": [1]},
    )
    retriever = ScriptedRetriever(hits, retried)
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=1), understand_first_turn=False)
    result, _ = run(agent, vague, retriever, question, sparse_available=False)
    assert result.outcome == "unverified" and result.answer.startswith(NOT_VERIFIED)


def test_the_same_passages_are_not_generated_from_twice():
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=1), understand_first_turn=False)
    model = lm(
        {"answer": "Every six months, as scheduled [1].", "sources": [1]},
        {"supported": "no"},
        {"rewritten": "cryostat warm-up interval"},
    )
    retriever = ScriptedRetriever(HITS, HITS)
    result, events = run(agent, model, retriever, sparse_available=False)
    assert result.outcome == "unverified"
    assert events.count("generate") == 1 and "generate_skipped" in events
    transform = next(e for e in result.trace if e["step"] == "transform_query")
    assert transform["query"] == "cryostat warm-up interval"
    tried_prompt = model.history[-1]["messages"][-1]["content"]
    assert "How often is the cryostat warmed up?" in tried_prompt


def test_a_retry_that_would_take_more_than_five_llm_calls_is_not_started():
    """understand, generate and a failed check are three calls; a rewrite and a second draft
    would make six: the best evidence is quoted instead."""
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(max_rewrites=2))
    model = lm(
        understood("cryostat"),
        {"answer": "Every six months, as scheduled [1].", "sources": [1]},
        {"supported": "no"},
    )
    result, events = run(agent, model, ScriptedRetriever(HITS), sparse_available=False)
    assert len(model.history) == 3 and "transform_query" not in events
    assert result.outcome == "unverified" and result.answer.startswith(NOT_VERIFIED)
    assert "“The cryostat is warmed up every six months.” [1]" in result.answer


def sparse_retry(agent, sparse_hits):
    """A first answer the check rejects, then the sparse fallback's answer citing passage [5]."""
    full = [SearchHit(chunk(n, f"Passage {n} about the cryostat."), 1.0 - n / 10) for n in range(1, 5)]
    model = lm(
        understood("cryostat"),
        {"answer": "Passage 1 is about the cryostat [1].", "sources": [1]},
        {"supported": "no"},
        {"answer": "The cold head was replaced in 2019 [5].", "sources": [5]},
        {"supported": "yes"},
    )
    result, _ = run(agent, model, ScriptedRetriever(full, sparse_hits))
    generate_prompts = [
        h["messages"][-1]["content"]
        for h in model.history
        if "[[ ## passages ## ]]" in h["messages"][-1]["content"]
    ]
    return result, [
        p.split("[[ ## passages ## ]]")[1].split("[[ ## glossary ## ]]")[0] for p in generate_prompts
    ]


def test_sparse_passages_are_appended_so_the_new_prompt_starts_with_the_last():
    agent = AnswerAgent(DOMAINS, max_passages=4)
    result, (first, second) = sparse_retry(agent, SPARSE)
    assert result.outcome == "answered" and result.answer.startswith(
        "The cold head was replaced in 2019 [5]."
    )
    assert "“The cold head was replaced in 2019.” [5]" in result.answer
    assert "doc-0007" in [c.passage_id for c in result.citations]
    assert [e for e in result.trace if e["step"] == "generate"][1]["passages"] == 5
    assert second.startswith(first.rstrip()), "the LLM server resumes the second prompt from its cache"
    assert "[5] Manual 7 — Setup, p. 7\nThe cold head was replaced in 2019." in second


def test_sparse_passages_too_long_for_the_window_replace_the_lowest_ranked():
    agent = AnswerAgent(DOMAINS, settings=AgentSettings(sparse_tokens=30), max_passages=4)
    long_sparse = [SearchHit(chunk(7, "The cold head was replaced in 2019. " * 3), 0.6)]
    result, (first, second) = sparse_retry(agent, long_sparse)
    assert [e for e in result.trace if e["step"] == "generate"][1]["passages"] == 4
    assert "[4] Manual 7" in second and "Manual 4" in first and "Manual 4" not in second


def test_the_llm_token_estimate_counts_each_digit_and_stays_above_the_tokenizers_count():
    from programs.agent import estimated_llm_tokens

    assert estimated_llm_tokens("| Net sales | $4,821 |") == 4 + 10  # 4 digits, 18 other characters
    assert estimated_llm_tokens("") == 0
    # Qwen2.5's tokenizer reads the first as 11 tokens, this row as 34 and this sentence as 23.
    assert estimated_llm_tokens("| Total net sales | $81,797 | $82,959 | (1)% | $293,787 |") >= 34
    assert estimated_llm_tokens("Revenue was $3.8 billion, down $441 million from Q3 2022.") >= 23


def test_declared_sources_become_inline_markers_when_the_answer_has_none():
    from programs.agent import with_citation_markers

    texts = ["The cryostat is warmed up twice a year.", "Warm-ups take a day.", "Filters are cleaned."]
    assert with_citation_markers("Twice a year.", [2, 1, 9], texts) == "Twice a year. [1][2]"
    assert with_citation_markers("Twice a year [2].", [1], texts) == "Twice a year [2]."
    assert with_citation_markers("Twice a year.", [], texts) == "Twice a year."


def test_a_model_that_declares_every_source_gets_markers_for_those_its_answer_shares_words_with():
    from programs.agent import MAX_APPENDED_MARKERS, with_citation_markers

    texts = [f"Unrelated passage number {n} about parking rules." for n in range(1, 16)]
    texts[6] = "Run docfinder ingest on a folder to add documents to a collection."
    texts[11] = "Ingest again whenever documents change; unchanged files are skipped."
    answer = "Use docfinder ingest on the folder; ingest again when documents change."
    marked = with_citation_markers(answer, list(range(1, 16)), texts)
    assert marked == f"{answer} [7][12]", "only the passages the answer shares words with"
    texts[2] = "Documents in a collection are found by ingest; ingest a folder again after changes."
    assert with_citation_markers(answer, list(range(1, 16)), texts).count("[") == MAX_APPENDED_MARKERS


class SlowLM(dspy.BaseLM):
    """An LM that never answers within the agent's timeout."""

    def __init__(self) -> None:
        super().__init__("slow")

    async def aforward(self, prompt=None, messages=None, **kwargs):
        await asyncio.sleep(5)
        raise AssertionError("the agent should have timed out")


def test_llm_timeout_gives_a_sources_only_answer():
    agent = AnswerAgent(DOMAINS, llm_timeout_s=0.05)
    retriever = ScriptedRetriever(HITS)
    result, events = run(agent, SlowLM(), retriever)
    assert result.outcome == "llm_unavailable" and result.answer == LLM_UNAVAILABLE
    assert [c.passage_id for c in result.citations] == ["doc-0001"]
    assert events == ["llm_unavailable"]
    assert "0.05 s" in result.trace[0]["error"]


@pytest.fixture(autouse=True)
def _reset_dspy():
    yield
    dspy.configure(lm=None)


def test_an_answer_without_citation_markers_still_lists_its_sources():
    from programs.agent import citations_for

    passages = whole_passages([SearchHit(chunk(1, "a"), 1.0), SearchHit(chunk(2, "b"), 0.5)])
    assert [c.n for c in citations_for(passages, "Twice a year [2].")] == [2]
    assert [c.n for c in citations_for(passages, "Twice a year.")] == [1, 2]
    assert [c.n for c in citations_for(passages, "See [9].")] == [1, 2]


def test_an_unreadable_llm_reply_gives_a_sources_only_answer():
    agent = AnswerAgent(DOMAINS)
    model = lm({"not_the_field": "x"})
    result, _ = run(agent, model, ScriptedRetriever(HITS))
    assert result.outcome == "llm_unavailable" and [c.passage_id for c in result.citations] == ["doc-0001"]
    assert "could not be read" in result.trace[-1]["error"]


class RawReplyLM(DummyLM):
    """DummyLM that writes a reply given as ``{"raw": text}`` exactly as given (a reply cut off at
    the token limit is no valid JSON), and any other reply as the adapter formats it."""

    def _format_answer_fields(self, field_names_and_values):
        if "raw" in field_names_and_values:
            return field_names_and_values["raw"]
        return super()._format_answer_fields(field_names_and_values)


def test_a_reply_cut_off_at_the_token_limit_keeps_its_whole_sentences():
    """Seen on SEC dev: a reply listing figures ran to the token limit, its JSON never closed, and
    the user was told the language model was not available."""
    cut = '{"answer": "The cryostat is warmed up every six months [1]. Before that, it was warmed up ev'
    model = RawReplyLM([understood("cryostat warm-up interval"), {"raw": cut}], adapter=dspy.JSONAdapter())
    result, _ = run(AnswerAgent(DOMAINS), model, ScriptedRetriever(HITS))
    assert result.outcome == "answered"
    assert result.answer.startswith("The cryostat is warmed up every six months [1].\n")
    generate = next(e for e in result.trace if e["step"] == "generate")
    assert (
        generate["cut_off"] is True
        and generate["answer"] == "The cryostat is warmed up every six months [1]."
    )
    nothing_whole = RawReplyLM(
        [{"raw": '{"answer": "The cryostat is warmed up ev'}], adapter=dspy.JSONAdapter()
    )
    result, _ = run(AnswerAgent(DOMAINS), nothing_whole, ScriptedRetriever(HITS))
    assert result.outcome == "llm_unavailable" and "could not be read" in result.trace[-1]["error"]


class WindowTooSmallLM(dspy.BaseLM):
    """An LM whose context window the prompt does not fit (as llama.cpp's server answers then)."""

    def __init__(self) -> None:
        super().__init__("small-window")

    async def aforward(self, prompt=None, messages=None, **kwargs):
        from dspy.utils.exceptions import ContextWindowExceededError

        raise ContextWindowExceededError(
            model="small", message="maximum context length is 4096 tokens, requested 5008"
        )

    def forward(self, prompt=None, messages=None, **kwargs):
        raise AssertionError("the agent calls the LM asynchronously")


def test_a_prompt_longer_than_the_models_window_gives_a_sources_only_answer():
    result, _ = run(AnswerAgent(DOMAINS), WindowTooSmallLM(), ScriptedRetriever(HITS))
    assert result.outcome == "llm_unavailable" and [c.passage_id for c in result.citations] == ["doc-0001"]
    assert "longer than the language model's window" in result.trace[-1]["error"]


def test_an_answer_in_the_cited_passages_own_words_is_grounded_by_code_without_an_llm_check():
    """The 1.5B judge said "no" to an NTSB report's findings listed word for word; an answer
    whose new words are runs copied from the passages it cites needs no judge."""
    agent = AnswerAgent(DOMAINS, understand_first_turn=False)
    model = lm({"answer": "The cryostat is warmed up every six months [1].", "sources": [1]})
    result, events = run(agent, model, ScriptedRetriever(HITS))
    assert result.outcome == "answered" and len(model.history) == 1, "generate only"
    assert result.verdicts == {"supported": "code", "useful": "code"}
    check = next(e for e in result.trace if e["step"] == "supported")
    assert check["verdict"] == "code" and "llm_call" not in check
    assert events[-2:] == ["supported", "useful"]


def test_a_polar_answer_or_one_in_its_own_words_still_goes_to_the_grounding_check():
    agent = AnswerAgent(DOMAINS, understand_first_turn=False, settings=AgentSettings(max_rewrites=0))
    for answer in (
        "No, the cryostat is warmed up every six months [1].",
        "Every six months, as scheduled [1].",
    ):
        model = lm({"answer": answer, "sources": [1]}, {"supported": "yes"})
        result, _ = run(agent, model, ScriptedRetriever(HITS))
        assert len(model.history) == 2 and result.verdicts["supported"] == "yes", answer


def test_own_words_count_the_passage_title_and_headings_the_model_read():
    """ "The National Transportation Safety Board (NTSB) listed ..." takes the report's title."""
    titled = Chunk(
        "doc-0001", "doc", "manuals", "/docs/m1.pdf", "Cryostat Maintenance Manual", ("Setup",), (1, 1),
        "The cryostat is warmed up every six months.", "h",
    )  # fmt: skip
    agent = AnswerAgent(DOMAINS, understand_first_turn=False)
    answer = "The Cryostat Maintenance Manual: the cryostat is warmed up every six months [1]."
    model = lm({"answer": answer, "sources": [1]})
    result, _ = run(agent, model, ScriptedRetriever([SearchHit(titled, 0.9)]))
    assert len(model.history) == 1 and result.verdicts["supported"] == "code"


def test_the_answer_quotes_the_same_rows_of_evidence_the_model_did_not_read():
    from tests.test_same_rows import QUARTERS

    class WiderRetriever:
        async def __call__(self, queries, domain, mode):
            async def widen():
                return list(QUARTERS)

            return Retrieved([QUARTERS[0]], widen=widen)

    agent = AnswerAgent(DOMAINS, understand_first_turn=False)
    model = lm({"answer": "AWS net sales rose to $23,059 million [1].", "sources": [1]}, {"supported": "yes"})
    result, _ = run(agent, model, WiderRetriever(), "How has AWS revenue changed over the quarters?")
    assert result.outcome == "answered"
    prompt = str(model.history[0]["messages"])
    assert "23,059" in prompt and "22,140" not in prompt, "the model reads only its own budget"
    assert "22,140" in result.answer and "21,354" in result.answer
    assert {c.passage_id for c in result.citations} == {p.chunk.chunk_id for p in QUARTERS}


def test_a_model_denying_what_a_named_row_states_gets_that_row_quoted_as_what_the_documents_say():
    from tests.test_named_rows import research_table

    class TableRetriever:
        async def __call__(self, queries, domain, mode):
            return Retrieved(research_table())

    agent = AnswerAgent(DOMAINS, understand_first_turn=False, settings=AgentSettings(max_rewrites=1))
    model = lm({"answer": "The documents do not say.", "sources": []}, {"rewritten": "research spending"})
    asked = "How much went to R&D in Q2 2023?"
    result, events = run(agent, model, TableRetriever(), asked, sparse_available=False)
    assert result.outcome == "unverified", "the model's denial is a failed draft, not the answer"
    lines = result.answer.split("\n")
    assert lines[0] == DOCUMENTS_SAY and not result.answer.startswith(NOT_CLEARLY_SAID)
    row = "“Research and development — Three Months Ended June 30, 2022: 4,109"
    assert any(line.startswith(row) for line in lines)
    assert len(model.history) == 2 and "supported" not in events, "generate, transform; not the same again"
