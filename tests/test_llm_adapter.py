"""Replies are constrained to each signature's schema, in the form the LLM server understands."""

from programs.signatures import Supported, Understand
from server.models.llm import make_adapter
from server.settings import load_settings


def test_the_embedded_llama_cpp_server_gets_json_object_with_a_schema():
    kwargs: dict = {}
    make_adapter(load_settings())._prepare_response_format(None, kwargs, Supported)
    assert kwargs["response_format"]["type"] == "json_object"
    schema = kwargs["response_format"]["schema"]
    assert schema["required"] == ["supported"]
    assert schema["properties"]["supported"]["enum"] == ["yes", "no"]


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
