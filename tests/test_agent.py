"""The agent's control flow, branch by branch, with DSPy's DummyLM and a hand-written retriever."""

from __future__ import annotations

import asyncio

import dspy
import pytest
from dspy.utils import DummyLM

from pipeline.answering.extractive import DOCUMENTS_SAY, NOT_IN_DOCUMENTS
from pipeline.answering.quotes import QUOTE_LIMIT
from pipeline.answering.rule_packs.reporting_periods import ReportingPeriods
from pipeline.answering.sentences import says_documents_do_not_answer
from pipeline.retrieval.context import Retrieved, whole_passages
from pipeline.retrieval.domains import DomainChoice
from pipeline.steps import Step
from pipeline.types import Chunk, SearchHit
from pipeline.wording import STEP_TEXT, status_text
from programs.agent import LLM_UNAVAILABLE, NO_DOCUMENTS, NOT_CLEARLY_SAID, NOT_VERIFIED, AnswerAgent
from programs.agent_settings import AgentSettings
from programs.signatures import Supported

DOMAINS = {"alma": "the ALMA telescope", "general": "anything else"}
QUESTION = "How often is the cryostat warmed up?"


def agent(settings: AgentSettings = AgentSettings(), **kwargs) -> AnswerAgent:
    return AnswerAgent(DOMAINS, settings=settings, **{"max_passages": 8, "llm_timeout_s": 30.0, **kwargs})


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


def run(agent, lm, retriever, message=QUESTION, **kwargs):
    events = []

    async def on_status(event):
        events.append(event["step"])

    async def go():
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            return await agent.acall(message, retriever, on_status=on_status, **kwargs)

    return asyncio.run(go()), events


def lm(*answers):
    return DummyLM(list(answers), adapter=dspy.JSONAdapter())


def test_one_llm_call_answers_with_its_own_sentences_citations_and_quotes_and_streams_every_step():
    model = lm({"answer": "Every six months, as scheduled [1]."})
    retriever = ScriptedRetriever(HITS)
    result, events = run(agent(), model, retriever)
    assert len(model.history) == 1, "generate only: the checks are code"
    assert result.outcome == "answered" and result.question == QUESTION
    assert result.answer == "Every six months, as scheduled [1].", (
        "the model's checked sentence, no quote in it"
    )
    assert [q.text for q in result.evidence] == ["The cryostat is warmed up every six months."]
    assert [c.passage_id for c in result.citations] == ["doc-0001"] and result.citations[0].pages == (1, 1)
    assert result.verdicts == {"supported": "code", "useful": "code"}
    assert retriever.calls == [([QUESTION], None, "hybrid")]
    assert events == [
        "understand_skipped",
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
    assert all(isinstance(e["step"], Step) for e in result.trace), "one enum names every step"
    assert {status_text(e) for e in events} <= {*STEP_TEXT.values(), None}


def test_a_classifier_places_the_question_in_a_domain_without_an_llm_call():
    async def classify(question):
        return DomainChoice("alma", {"alma": 0.7, "general": 0.2})

    model = lm({"answer": "Every six months, as scheduled [1]."})
    retriever = ScriptedRetriever(HITS)
    result, _ = run(agent(classify=classify), model, retriever)
    assert result.domain == "alma" and retriever.calls[0][1] == "alma" and len(model.history) == 1
    step = next(e for e in result.trace if e["step"] == "classify_query")
    assert step["method"] == "embedding" and step["similarities"] == {"alma": 0.7, "general": 0.2}


def test_a_follow_up_is_searched_with_the_previous_question_and_answered_in_one_call():
    """No condensing call: the search reads the previous question too, the model the earlier
    questions (never the earlier answers, whose wording a small model copies)."""
    history = [("user", "Tell me about the ALMA cryostat."), ("assistant", "The documents do not say.")]
    model = lm({"answer": "Every six months [1]."})
    retriever = ScriptedRetriever(HITS)
    result, events = run(agent(), model, retriever, "And how often is it warmed up?", history=history)
    assert retriever.calls[0][0] == ["Tell me about the ALMA cryostat. And how often is it warmed up?"]
    assert events[0] == "condense" and result.trace[0]["method"] == "code" and len(model.history) == 1
    prompt = model.history[0]["messages"][-1]["content"]
    conversation = prompt.split("[[ ## conversation ## ]]")[1].split("[[ ## passages ## ]]")[0]
    assert "Tell me about the ALMA cryostat." in conversation and "do not say" not in conversation
    assert result.outcome == "answered"


def test_a_path_the_user_gave_earlier_stands_in_a_follow_ups_answer_and_a_made_up_one_does_not():
    """The answer code reads the conversation as the user's words: a follow-up's answer may repeat
    the path the first question gave; a path no passage and no turn gives is the model's."""
    history = [("user", "Which package installed /usr/bin/lsof?"), ("assistant", "The lsof package [1].")]
    hits = [SearchHit(chunk(1, "apt-file search looks for a file in every package, installed or not."), 0.9)]
    question = "And if that package is not installed?"
    model = lm({"answer": "Run apt-file search /usr/bin/lsof [1]."})
    result, _ = run(agent(), model, ScriptedRetriever(hits), question, history=history)
    assert result.outcome == "answered" and result.answer.startswith("Run apt-file search /usr/bin/lsof [1].")
    invented = lm({"answer": "Run apt-file search /usr/sbin/lsof [1]."})
    result, _ = run(agent(), invented, ScriptedRetriever(hits), question, history=history)
    compose = next(e for e in result.trace if e["step"] == "compose")
    assert compose["dropped"][0]["reason"] == "term" and compose["dropped"][0]["detail"] == ["/usr/sbin/lsof"]
    assert result.outcome != "answered"


def test_understanding_by_the_llm_condenses_classifies_and_rephrases_in_one_call():
    model = lm(
        {
            "standalone_question": "How often is the ALMA cryostat warmed up?",
            "domain": "alma",
            "rephrased": "warm-up",
        },
        {"answer": "Every six months [1]."},
    )
    retriever = ScriptedRetriever(HITS)
    history = [("user", "Tell me about ALMA.")]
    result, events = run(
        agent(AgentSettings(understand="llm")), model, retriever, "How often?", history=history
    )
    assert result.question == "How often is the ALMA cryostat warmed up?" and result.domain == "alma"
    assert retriever.calls[0] == (["How often is the ALMA cryostat warmed up?", "warm-up"], "alma", "hybrid")
    assert events[:3] == ["condense", "classify_query", "review_query"] and len(model.history) == 2


def test_no_passages_rewrites_then_answers_no_documents_without_generating():
    model = lm({"rewritten": "cryostat warm-up schedule"}, {"rewritten": "cryostat maintenance interval"})
    retriever = ScriptedRetriever([], [], [])
    result, events = run(agent(AgentSettings(max_rewrites=2)), model, retriever)
    assert result.outcome == "no_documents" and result.answer == NO_DOCUMENTS and result.citations == []
    assert events.count("transform_query") == 2 and "generate" not in events
    assert len(retriever.calls) == 3 and len(model.history) == 2


def test_low_scores_are_graded_away():
    result, _ = run(agent(AgentSettings(max_rewrites=0, grade_threshold=0.95)), lm(), ScriptedRetriever(HITS))
    assert result.outcome == "no_documents"
    assert result.trace[-1] == {**result.trace[-1], "step": "grade_documents", "kept": [], "threshold": 0.95}


def test_a_sentence_whose_figure_no_cited_passage_states_is_dropped_and_the_sparse_set_gives_a_second_draft():
    model = lm(
        {"answer": "Every 18 months [1]."},  # the passage says every six months
        {"answer": "The cold head was replaced in 2019 [2]."},
    )
    retriever = ScriptedRetriever(HITS, SPARSE)
    result, events = run(agent(), model, retriever)
    first = next(e for e in result.trace if e["step"] == "compose")
    assert first["kind"] == "quotes" and first["dropped"] == [
        {"sentence": "Every 18 months [1].", "reason": "figure", "detail": ["18"]}
    ]
    assert retriever.calls[1] == ([QUESTION], None, "sparse") and "sparse_fallback" in events
    assert result.outcome == "answered" and result.answer == "The cold head was replaced in 2019 [2]."
    assert "18" not in result.answer and len(model.history) == 2
    assert [c.passage_id for c in result.citations][-1] == "doc-0007"


def test_a_figure_taken_from_an_uncited_passage_gets_its_citation_and_its_unit_is_quoted():
    hits = [*HITS, SearchHit(chunk(2, "The cold head is replaced every 18 months."), 0.8)]
    model = lm({"answer": "The cold head is swapped every 18 months, as scheduled [1]."})
    result, _ = run(agent(), model, ScriptedRetriever(hits), "How often is the cold head replaced?")
    assert result.answer == "The cold head is swapped every 18 months, as scheduled [1][2]."
    assert "The cold head is replaced every 18 months." in [q.text for q in result.evidence]
    cited = next(e for e in result.trace if e["step"] == "cite_figures")
    assert cited["added"] == [{"figure": "18", "passage": 2}]
    assert result.outcome == "answered" and len(model.history) == 1


def test_a_unit_the_answer_says_word_for_word_is_cited_but_not_quoted_again():
    hits = [*HITS, SearchHit(chunk(2, "The cold head is replaced every 18 months."), 0.8)]
    model = lm({"answer": "The cold head is replaced every 18 months, as scheduled."})
    result, _ = run(agent(), model, ScriptedRetriever(hits), "How often is the cold head replaced?")
    assert "The cold head is replaced every 18 months." not in [q.text for q in result.evidence]
    assert "doc-0002" in [c.passage_id for c in result.citations]
    composed = next(e for e in result.trace if e["step"] == "compose")
    assert composed["stated"] == [2] and result.outcome == "answered"


def test_an_answer_citing_nothing_is_cited_to_the_passage_its_words_come_from():
    """The embedded model seldom writes [n]: the passage a sentence copies is cited for it, so
    the reader can open that page and the quote comes from it."""
    hits = [
        SearchHit(chunk(1, "The helium compressor is serviced by the site engineers."), 0.9),
        SearchHit(chunk(2, "The cryostat is warmed up every six months by the cryogenics group."), 0.8),
    ]
    model = lm({"answer": "The cryogenics group warms it up every six months."})
    result, events = run(agent(), model, ScriptedRetriever(hits))
    assert result.answer == "The cryogenics group warms it up every six months [2]."
    assert [c.passage_id for c in result.citations] == ["doc-0002"] and "cite_sentences" in events
    assert [q.text for q in result.evidence] == [hits[1].chunk.text]


def test_an_answer_written_under_a_passage_label_is_the_passages_words_cited_and_answered_in_one_call():
    """The draft copies its prompt's layout, "[1] <label>: <the answer in the passage's words>":
    the label goes and the words stand as the answer (they were shown as "I could not verify")."""
    hits = [
        SearchHit(chunk(1, "The helium compressor is serviced by the site engineers."), 0.9),
        SearchHit(chunk(2, "The cryostat is warmed up every six months by the cryogenics group."), 0.8),
    ]
    label = whole_passages(hits[1:])[0].evidence_label()
    model = lm(
        {"answer": f"[1] {label}: The cryostat is warmed up every six months by the cryogenics group."}
    )
    result, _ = run(agent(), model, ScriptedRetriever(hits))
    assert result.outcome == "answered" and len(model.history) == 1
    assert result.answer == "The cryostat is warmed up every six months by the cryogenics group [2]."
    assert [c.passage_id for c in result.citations] == ["doc-0002"]
    cited = next(e for e in result.trace if e["step"] == Step.CITE_SENTENCES)
    assert cited["labels_removed"] is True
    # Copying on under the label up to the token limit is the prompt echoed: no answer.
    echoed = f"[1] {label}: The cryostat is warmed up every six months by the cryogenics group. It is"
    model = lm({"answer": echoed}, {"rewritten": "cryostat warm-up interval"}, {"answer": echoed})
    retriever = ScriptedRetriever(hits, hits[1:])
    result, _ = run(agent(AgentSettings(max_rewrites=1)), model, retriever, sparse_available=False)
    assert result.outcome == "unverified" and result.answer.startswith(NOT_VERIFIED)


def test_a_yes_that_its_own_quote_contradicts_is_dropped():
    """Seen on a kept-aside manual-qa question: "Yes, an NTSB accident report like this one can be
    used as evidence in a lawsuit" printed above the quote that precludes it."""
    hits = [
        SearchHit(chunk(1, "The report may not be used as evidence in a lawsuit about the accident."), 0.9),
        SearchHit(chunk(2, "Reports are published on the agency's website for the public."), 0.8),
    ]
    model = lm({"answer": "Yes, the report can be used as evidence in a lawsuit [2]."})
    asked = "Can the report be used as evidence in a lawsuit?"
    result, _ = run(
        agent(AgentSettings(max_rewrites=0)), model, ScriptedRetriever(hits), asked, sparse_available=False
    )
    dropped = [d["reason"] for e in result.trace if e["step"] == "compose" for d in e["dropped"]]
    assert dropped == ["negation"] and result.outcome == "unverified"
    assert "The report may not be used as evidence" in result.evidence[0].text


def test_a_yes_denied_by_the_quote_under_it_ends_the_question_with_that_quote_and_no_retry():
    """techdocs report #3: the unit that best matches the question says nothing either way, the
    quote chosen under the answer says the opposite; the quote is the reply, and no second draft
    is paid for (the same passages give the same "yes")."""
    hits = [
        SearchHit(chunk(1, "In earlier versions, it was sometimes necessary to stop the postmaster."), 0.9),
        SearchHit(
            chunk(2, "It is not necessary or desirable to stop the postmaster or enter single-user mode."),
            0.8,
        ),
    ]
    model = lm({"answer": "Yes, stop the postmaster and enter single-user mode to vacuum."})
    asked = "The hint says stop the postmaster and vacuum. Is that what we should do?"
    result, events = run(agent(), model, ScriptedRetriever(hits), asked)
    assert result.outcome == "unverified" and len(model.history) == 1 and "sparse_fallback" not in events
    assert result.evidence[0].text.startswith("It is not necessary or desirable")


def test_the_model_saying_the_documents_do_not_say_is_the_answer_with_the_nearest_quotes():
    model = lm({"answer": "The documents do not say which pump the cryostat uses."})
    result, events = run(agent(), model, ScriptedRetriever(HITS), "Which vacuum pump does the cryostat use?")
    assert result.outcome == "not_in_documents" and result.answer.startswith(NOT_IN_DOCUMENTS)
    assert says_documents_do_not_answer(result.answer) and len(result.evidence) <= 2
    assert len(model.history) == 1 and "supported" not in events


def test_answers_that_say_nothing_twice_give_the_best_evidence_quoted_without_an_llm_check():
    model = lm(
        {"answer": "Yes, the cryostat is warmed up [1]."},  # nothing the question did not say
        {"rewritten": "cryostat warm-up frequency"},
        {"answer": "It is warmed [1]."},
    )
    retriever = ScriptedRetriever(HITS, [SearchHit(chunk(3, "The cryostat is warmed before service."), 0.7)])
    result, _ = run(agent(AgentSettings(max_rewrites=1)), model, retriever, sparse_available=False)
    assert result.outcome == "unverified" and result.answer == NOT_VERIFIED
    assert not says_documents_do_not_answer(result.answer), "vague drafts say nothing of the documents"
    assert [q.text for q in result.evidence] == ["The cryostat is warmed up every six months."]
    reasons = [d["reason"] for e in result.trace if e["step"] == "compose" for d in e["dropped"]]
    assert reasons == ["says_nothing", "says_nothing"] and len(model.history) == 3


def test_drafts_that_each_put_forward_what_no_cited_passage_states_end_in_the_documents_do_not_say():
    """Asked for what the documents lack, a small model fills the gap: a name no passage has, or
    one taken from a passage it does not cite. When every failed draft did so, the lead says the
    documents do not say it; the same question answered vaguely does not."""
    hits = [
        SearchHit(chunk(1, "The cryostat is warmed up every six months."), 0.9),
        SearchHit(chunk(2, "Interviews take place in a quiet room in the QENSIU."), 0.8),
    ]
    retried = [SearchHit(chunk(3, "The cryostat is warmed before service."), 0.7), hits[1]]
    asked = "Which vacuum pump model does the cryostat use?"
    model = lm(
        {"answer": "The cryostat uses the Edwards pump [1]."},
        {"rewritten": "cryostat vacuum pump"},
        {"answer": "The vacuum pump model the cryostat uses is the QENSIU [1]."},
    )
    run_agent = agent(AgentSettings(max_rewrites=1))
    result, _ = run(run_agent, model, ScriptedRetriever(hits, retried), asked, sparse_available=False)
    assert result.outcome == "unverified" and result.answer == NOT_CLEARLY_SAID
    assert says_documents_do_not_answer(result.answer)
    vague = lm(
        {"answer": "The cryostat uses a vacuum pump [1]."},
        {"rewritten": "cryostat vacuum pump"},
        {"answer": "The vacuum pump model the cryostat uses is the QENSIU [1]."},
    )
    result, _ = run(run_agent, vague, ScriptedRetriever(hits, retried), asked, sparse_available=False)
    assert result.outcome == "unverified" and result.answer == NOT_VERIFIED


def test_the_same_passages_are_not_generated_from_twice():
    model = lm({"answer": "It is warmed [1]."}, {"rewritten": "cryostat warm-up interval"})
    retriever = ScriptedRetriever(HITS, HITS)
    result, events = run(agent(AgentSettings(max_rewrites=1)), model, retriever, sparse_available=False)
    assert result.outcome == "unverified"
    assert events.count("generate") == 1 and "generate_skipped" in events
    assert QUESTION in model.history[-1]["messages"][-1]["content"], "the rewrite sees the queries tried"


def test_quotes_are_at_most_three_and_each_matches_the_question_or_the_answer():
    texts = [f"Filter {n} of the compressor is cleaned monthly." for n in range(1, 7)]
    texts += ["The parking lot closes at ten.", "The cryostat is warmed up every six months by the staff."]
    hits = [SearchHit(chunk(n, t), 1.0 - n / 20) for n, t in enumerate(texts, start=1)]
    model = lm({"answer": "The cryostat is warmed up every six months [8]."})
    result, _ = run(agent(), model, ScriptedRetriever(hits))
    assert 1 <= len(result.evidence) <= QUOTE_LIMIT
    assert all("parking" not in q.text for q in result.evidence)
    assert "“" not in result.answer, "the quotes stand under the answer, not in its text"


def test_llm_checks_ask_supported_and_useful_at_once_the_first_continuing_the_generate_call():
    hits = [*HITS, SearchHit(chunk(2, "The compressor is serviced yearly."), 0.8)]
    model = lm(
        {"answer": "The compressor is serviced yearly, as scheduled [2]."},
        {"supported": "yes"},
        {"useful": "yes"},
    )
    result, _ = run(
        agent(AgentSettings(llm_checks=True)),
        model,
        ScriptedRetriever(hits),
        "How often is the compressor serviced?",
    )
    generate = model.history[0]["messages"]
    checks = [h["messages"] for h in model.history[1:]]
    check = next(m for m in checks if "cited" in m[-1]["content"])
    assert check[: len(generate)] == generate, "the check's prompt begins with the generate call's, unchanged"
    assert (
        "[[ ## cited ## ]]\n[2]\n" in check[-1]["content"]
        and "cryostat is warmed" not in check[-1]["content"]
    )
    assert result.verdicts == {"supported": "yes", "useful": "yes"} and result.outcome == "answered"


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


def sparse_retry(agent, sparse_hits):
    """A first answer code drops (a figure no passage states), then the sparse fallback's answer
    citing passage [5]."""
    full = [SearchHit(chunk(n, f"Passage {n} about the cryostat."), 1.0 - n / 10) for n in range(1, 5)]
    model = lm(
        {"answer": "Passage 1 names 18 cryostats [1]."},
        {"answer": "The cold head was replaced in 2019 [5]."},
    )
    result, _ = run(agent, model, ScriptedRetriever(full, sparse_hits))
    prompts = [h["messages"][-1]["content"] for h in model.history]
    return result, [p.split("[[ ## passages ## ]]")[1].split("[[ ## glossary ## ]]")[0] for p in prompts]


def test_sparse_passages_are_appended_so_the_new_prompt_starts_with_the_last():
    result, (first, second) = sparse_retry(agent(max_passages=4), SPARSE)
    assert result.outcome == "answered" and result.answer == "The cold head was replaced in 2019 [5]."
    assert "doc-0007" in [c.passage_id for c in result.citations]
    assert [e for e in result.trace if e["step"] == "generate"][1]["passages"] == 5
    assert second.startswith(first.rstrip()), "the LLM server resumes the second prompt from its cache"


def test_sparse_passages_too_long_for_the_window_replace_the_lowest_ranked():
    long_sparse = [SearchHit(chunk(7, "The cold head was replaced in 2019. " * 3), 0.6)]
    result, (first, second) = sparse_retry(
        agent(AgentSettings(sparse_tokens=30), max_passages=4), long_sparse
    )
    assert [e for e in result.trace if e["step"] == "generate"][1]["passages"] == 4
    assert "[4] Manual 7" in second and "Manual 4" in first and "Manual 4" not in second


def test_the_llm_token_estimate_counts_each_digit_and_stays_above_the_tokenizers_count():
    from programs.agent import estimated_llm_tokens

    assert estimated_llm_tokens("| Net sales | $4,821 |") == 4 + 10  # 4 digits, 18 other characters
    assert estimated_llm_tokens("") == 0
    # Qwen2.5's tokenizer reads the first as 11 tokens, this row as 34 and this sentence as 23.
    assert estimated_llm_tokens("| Total net sales | $81,797 | $82,959 | (1)% | $293,787 |") >= 34
    assert estimated_llm_tokens("Revenue was $3.8 billion, down $441 million from Q3 2022.") >= 23


class SlowLM(dspy.BaseLM):
    """An LM that never answers within the agent's timeout."""

    def __init__(self) -> None:
        super().__init__("slow")

    async def aforward(self, prompt=None, messages=None, **kwargs):
        await asyncio.sleep(5)
        raise AssertionError("the agent should have timed out")


def test_llm_timeout_gives_a_sources_only_answer():
    result, events = run(agent(llm_timeout_s=0.05), SlowLM(), ScriptedRetriever(HITS))
    assert result.outcome == "llm_unavailable" and result.answer == LLM_UNAVAILABLE
    assert [c.passage_id for c in result.citations] == ["doc-0001"]
    assert events[-1] == "llm_unavailable" and "0.05 s" in result.trace[-1]["error"]


@pytest.fixture(autouse=True)
def _reset_dspy():
    yield
    dspy.configure(lm=None)


def test_an_answer_cites_what_its_text_cites_and_its_quotes_come_from():
    from programs.agent import citations_for

    passages = whole_passages([SearchHit(chunk(1, "a"), 1.0), SearchHit(chunk(2, "b"), 0.5)])
    assert [c.n for c in citations_for(passages, {2})] == [2]
    assert [c.n for c in citations_for(passages, set())] == [1, 2]


def test_an_unreadable_llm_reply_gives_a_sources_only_answer():
    result, _ = run(agent(), lm({"not_the_field": "x"}), ScriptedRetriever(HITS))
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
    cut = '{"answer": "The cryostat is warmed up every six months [1]. Before that, it was warmed up ev'
    model = RawReplyLM([{"raw": cut}], adapter=dspy.JSONAdapter())
    result, _ = run(agent(), model, ScriptedRetriever(HITS))
    assert result.outcome == "answered" and result.answer == "The cryostat is warmed up every six months [1]."
    generate = next(e for e in result.trace if e["step"] == "generate")
    assert generate["cut_off"] is True
    nothing_whole = RawReplyLM(
        [{"raw": '{"answer": "The cryostat is warmed up ev'}], adapter=dspy.JSONAdapter()
    )
    result, _ = run(agent(), nothing_whole, ScriptedRetriever(HITS))
    assert result.outcome == "llm_unavailable" and "could not be read" in result.trace[-1]["error"]


class WindowTooSmallLM(dspy.BaseLM):
    """An LM whose context window the prompt does not fit (as llama.cpp's server answers then)."""

    def __init__(self) -> None:
        super().__init__("small-window")

    async def aforward(self, prompt=None, messages=None, **kwargs):
        from dspy.utils.exceptions import ContextWindowExceededError

        raise ContextWindowExceededError(model="small", message="maximum context length is 4096 tokens")

    def forward(self, prompt=None, messages=None, **kwargs):
        raise AssertionError("the agent calls the LM asynchronously")


def test_a_prompt_longer_than_the_models_window_gives_a_sources_only_answer():
    result, _ = run(agent(), WindowTooSmallLM(), ScriptedRetriever(HITS))
    assert result.outcome == "llm_unavailable" and [c.passage_id for c in result.citations] == ["doc-0001"]
    assert "longer than the language model's window" in result.trace[-1]["error"]


def test_with_the_reporting_periods_pack_a_model_denying_a_named_row_gets_that_row_quoted():
    from tests.test_named_rows import research_table

    class TableRetriever:
        async def __call__(self, queries, domain, mode):
            return Retrieved(research_table())

    settings = AgentSettings(max_rewrites=1, rule_packs=["reporting-periods"])
    model = lm({"answer": "The documents do not say."}, {"rewritten": "research spending"})
    asked = "How much went to R&D in Q2 2023?"
    with_pack = agent(settings, rules=[ReportingPeriods()])
    result, _ = run(with_pack, model, TableRetriever(), asked, sparse_available=False)
    assert result.outcome == "unverified", "the model's denial is a failed draft, not the answer"
    assert result.answer == DOCUMENTS_SAY
    assert any(q.text.startswith("| Research and development") for q in result.evidence)
    without = lm({"answer": "The documents do not say."})
    result, _ = run(agent(), without, TableRetriever(), asked, sparse_available=False)
    assert result.outcome == "not_in_documents", "without the pack the model's word stands"


def test_a_question_on_a_name_the_documents_never_mention_is_answered_so():
    """Asked how to schedule a job with pg_cron, which the manual never mentions, the model
    invented a pg_cron command from the passages on VACUUM; a sentence on the absent name goes,
    and the answer says the documents do not mention it, quoting the nearest they come."""

    class Retriever(ScriptedRetriever):
        async def __call__(self, queries, domain, mode):
            retrieved = await super().__call__(queries, domain, mode)
            return Retrieved(retrieved.passages, {"absent": ["pg_cron"]})

    hits = [SearchHit(chunk(1, "VACUUM ANALYZE reclaims storage and updates the planner's statistics."), 0.9)]
    model = lm({"answer": "Run pg_cron.schedule('0 2 * * *', 'VACUUM ANALYZE') [1]."})
    asked = "how do I schedule a nightly VACUUM ANALYZE with pg_cron?"
    result, _ = run(agent(), model, Retriever(hits), asked)
    assert result.outcome == "not_in_documents" and result.answer.startswith(
        "The documents do not mention pg_cron."
    )
    assert says_documents_do_not_answer(result.answer) and result.evidence
    went_on = lm(
        {"answer": "Run pg_cron.schedule('0 2 * * *', 'VACUUM ANALYZE') [1]. Make sure to replace mydb."}
    )
    result, _ = run(agent(), went_on, Retriever(hits), asked)
    assert result.outcome == "not_in_documents" and "mydb" not in result.answer, (
        "the rest was about pg_cron too"
    )
    beside = lm({"answer": "VACUUM ANALYZE updates the planner's statistics [1]."})
    result, _ = run(agent(), beside, Retriever(hits), asked)
    assert result.outcome == "answered" and result.answer == (
        "The documents do not mention pg_cron. VACUUM ANALYZE updates the planner's statistics [1]."
    ), "what the documents do say stands, after what they never mention"


def test_a_program_the_searched_collections_name_stands_and_one_they_never_name_does_not():
    """The search tells which words its collections name; the answer code reads it for the program
    a line of code runs: ``networkctl``, which the passage read does not show but the manuals
    name elsewhere, stands; ``netcfg-tool``, which no document names, does not."""
    hits = [SearchHit(chunk(1, "The ifconfig command is replaced by ip from the iproute2 package."), 0.9)]
    asked = "ifconfig isn't installed. what do I use instead?"

    class Retriever(ScriptedRetriever):
        async def __call__(self, queries, domain, mode):
            retrieved = await super().__call__(queries, domain, mode)
            return Retrieved(retrieved.passages, {}, {"networkctl"}.__contains__)

    def answered(draft: str):
        result, _ = run(agent(), lm({"answer": draft}), Retriever(hits), asked, sparse_available=False)
        return result

    shown = answered("Use ip from the iproute2 package instead [1]:\n```\nnetworkctl status\n```")
    assert shown.outcome == "answered" and "networkctl status" in shown.answer
    made_up = answered("Use `netcfg-tool --list` instead [1].")
    assert made_up.outcome != "answered" and "netcfg-tool" not in made_up.answer


def test_the_searchs_word_rarity_chooses_the_quotes_and_stays_out_of_the_steps():
    """The search reports how rare each searched word is in the collections (``rarity``): the
    quotes weigh shared words by it, so the row naming the rare "ifconfig" is quoted, not only
    the sentence sharing "use" and "instead"; the weights are no step a door shows."""
    hosts = "For a permanent IP address, that permanent IP address should be used here instead of loopback."
    hits = [
        SearchHit(chunk(1, hosts), 0.9),
        SearchHit(chunk(2, "The ifconfig command is replaced by ip addr from the iproute2 package."), 0.8),
    ]
    asked = "ifconfig and arp aren't installed. what do I use instead?"
    weights = {"ifconfig": 7.0, "arp": 6.0, "aren": 2.0, "instal": 2.0, "use": 0.5, "instead": 1.5}

    class Retriever(ScriptedRetriever):
        async def __call__(self, queries, domain, mode):
            retrieved = await super().__call__(queries, domain, mode)
            return Retrieved(retrieved.passages, {"rarity": weights} if self.weighed else {})

    def quoted(weighed: bool) -> list[str]:
        retriever = Retriever(hits)
        retriever.weighed = weighed
        model = lm({"answer": "The documents do not say."})
        result, _ = run(agent(), model, retriever, asked, sparse_available=False)
        assert result.outcome == "not_in_documents"
        assert all("rarity" not in step for step in result.trace)
        return [q.text for q in result.evidence]

    assert not any("ifconfig" in text for text in quoted(weighed=False))
    assert any("ifconfig" in text for text in quoted(weighed=True))
