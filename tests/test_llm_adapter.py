"""Replies are constrained to each signature's schema, in the form the LLM server understands;
the embedded model writes a reply of one free-text field unconstrained."""

from programs.signatures import Generate, Supported, Transform, Understand
from server.models.llm import make_adapter
from server.settings import load_settings


def test_the_embedded_llama_cpp_server_gets_json_object_with_a_schema():
    kwargs: dict = {}
    make_adapter(load_settings())._prepare_response_format(None, kwargs, Supported)
    assert kwargs["response_format"]["type"] == "json_object"
    schema = kwargs["response_format"]["schema"]
    assert schema["required"] == ["supported"]
    assert schema["properties"]["supported"]["enum"] == ["yes", "no"]


def test_the_embedded_model_writes_one_free_text_field_unconstrained():
    """Its grammar is checked against the whole vocabulary at each token: for an answer, slow and
    no help. Several fields, or one that is not plain text, keep their schema."""
    adapter = make_adapter(load_settings())
    for free_text in (Generate, Transform):
        kwargs: dict = {}
        adapter._prepare_response_format(None, kwargs, free_text)
        assert "response_format" not in kwargs, free_text.__name__
    for structured in (Supported, Understand):
        kwargs = {}
        adapter._prepare_response_format(None, kwargs, structured)
        assert kwargs["response_format"]["type"] == "json_object", structured.__name__


def test_an_openai_compatible_server_constrains_an_answer_too():
    kwargs: dict = {}
    make_adapter(load_settings(llm__api_base="http://vllm:8000/v1"))._prepare_response_format(
        None, kwargs, Generate
    )
    assert kwargs["response_format"]["json_schema"]["schema"]["required"] == ["answer"]


def test_an_openai_compatible_server_gets_a_standard_json_schema():
    kwargs: dict = {}
    adapter = make_adapter(load_settings(llm__api_base="http://vllm:8000/v1"))
    adapter._prepare_response_format(None, kwargs, Understand)
    assert kwargs["response_format"]["type"] == "json_schema"
    assert kwargs["response_format"]["json_schema"]["name"] == "Understand"
    assert kwargs["response_format"]["json_schema"]["schema"]["required"] == [
        "standalone_question",
        "domain",
        "rephrased",
    ]


def test_a_fields_constraints_reach_the_schema():
    from typing import Annotated

    import dspy
    from annotated_types import Len

    class Pick(dspy.Signature):
        """Pick two."""

        options: str = dspy.InputField()
        picked: Annotated[list[str], Len(2, 2)] = dspy.OutputField()

    kwargs: dict = {}
    make_adapter(load_settings())._prepare_response_format(None, kwargs, Pick)
    picked = kwargs["response_format"]["schema"]["properties"]["picked"]
    assert picked["minItems"] == picked["maxItems"] == 2


async def test_a_streamed_reply_without_usage_counts_its_tokens_as_they_came():
    """llama-cpp-python streams a token a chunk and reports no usage in a stream: the chunks that
    carried text are the reply's tokens, so a reply cut at its token limit is still told apart."""
    import dspy

    from evaluation.doubles.fake_llm import FakeLLMServer
    from programs.llm_calls import LLMCalls
    from server.models.llm import make_lm

    inputs = {"passages": "[1] Port — The default port is 5432.", "glossary": "", "conversation": ""}
    for reports_usage in (True, False):
        with FakeLLMServer(stream_usage=reports_usage) as server:
            settings = load_settings(llm__api_base=server.url)
            with dspy.context(lm=make_lm(settings), adapter=make_adapter(settings)):
                _, tokens = await LLMCalls(10).ask(
                    dspy.Predict(Generate), {**inputs, "question": "Default port?"}
                )
            sent = server.replies[-1]
        if reports_usage:
            assert tokens == {"prompt": len(server.prompts[-1]) // 4, "completion": len(sent) // 4}
        else:  # the fake streams five characters a chunk
            assert tokens == {"prompt": 0, "completion": -(-len(sent) // 5)}
