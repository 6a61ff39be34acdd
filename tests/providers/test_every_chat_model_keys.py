"""Every chat model class of the installed provider packages keys its model and temperature.

Walks each ``BaseChatModel`` subclass that langchain-openai, -anthropic, -google-genai,
-mistralai, -ollama and -aws define (every module of them imported, so none hides), and each
LlamaIndex ``LLM`` subclass of the installed llama-index-llms packages, builds each one as a
program would (credentials from the environment, nothing called), and builds the canonical
request of one chat call exactly as the interception does (``model_params.model_request``,
LlamaIndex's ``boundary``). Asserted per class: the key changes with the model name and with
the temperature, and the model name is in what the key reads. A class that cannot be built
here is named with the reason, and no other is allowed to be skipped.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from chaincassette import canonical_json, key_of, keyrules, normalize

LANGCHAIN_PACKAGES = (
    "langchain_openai",
    "langchain_anthropic",
    "langchain_google_genai",
    "langchain_mistralai",
    "langchain_ollama",
    "langchain_aws",
)
LLAMA_INDEX_PACKAGES = (
    "llama_index.llms.openai",
    "llama_index.llms.anthropic",
    "llama_index.llms.google_genai",
    "llama_index.llms.ollama",
)
#: Classes this environment cannot build, and why (each must still exist).
CANNOT_BUILD = {
    "ChatBedrockNovaSonic": "needs aws_sdk_bedrock_runtime (langchain-aws[nova-sonic])",
}
#: Where a class takes its model's name, when not in ``model``/``model_name``/``model_id``.
MODEL_FIELD = {"ChatSagemakerEndpoint": "endpoint_name"}
ENVIRONMENT = {
    "OPENAI_API_KEY": "sk-test",
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "GOOGLE_API_KEY": "gemini-test-key",
    "MISTRAL_API_KEY": "mistral-test-key",
    "AWS_ACCESS_KEY_ID": "AKIATESTTESTTESTTEST",
    "AWS_SECRET_ACCESS_KEY": "test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AZURE_OPENAI_ENDPOINT": "http://127.0.0.1:9",
    "OPENAI_API_VERSION": "2024-10-21",
}


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def classes(base: type, packages: tuple[str, ...]) -> list[type]:
    """Every concrete subclass of ``base`` defined in ``packages`` (all modules imported)."""
    for name in packages:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    importlib.import_module(info.name)
            except ImportError:  # an optional extra (langchain-aws's browser tools)
                continue
    found = {
        cls
        for cls in _subclasses(base)
        if cls.__module__.startswith(packages) and not inspect.isabstract(cls)
    }
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def _content_handler() -> Any:
    from langchain_aws.chat_models.sagemaker_endpoint import ChatModelContentHandler

    class Handler(ChatModelContentHandler):
        def transform_input(self, prompt: Any, model_kwargs: dict[str, Any]) -> bytes:
            return b"{}"

        def transform_output(self, output: Any) -> Any:
            return None

    return Handler()


def model_field(cls: type) -> str:
    fields = cls.model_fields  # type: ignore[attr-defined]
    if cls.__name__ in MODEL_FIELD:
        return MODEL_FIELD[cls.__name__]
    return next(name for name in ("model", "model_name", "model_id") if name in fields)


def build(cls: type, model: str, temperature: float) -> Any:
    """``cls`` as a program builds it, pointed nowhere: what a call would send is all."""
    fields = cls.model_fields  # type: ignore[attr-defined]
    kwargs: dict[str, Any] = {model_field(cls): model}
    if "temperature" in fields:
        kwargs["temperature"] = temperature
    else:  # Sagemaker passes sampling parameters to the endpoint in model_kwargs
        kwargs["model_kwargs"] = {"temperature": temperature}
    if cls.__name__ == "ChatSagemakerEndpoint":
        kwargs.update(content_handler=_content_handler(), region_name="us-east-1")
    if cls.__name__ in ("GoogleGenAI",):  # else the constructor asks the server for metadata
        kwargs.update(api_key="gemini-test-key", context_window=1_000_000, max_tokens=256)
    if cls.__name__ == "Ollama":
        kwargs.update(context_window=8192)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(**kwargs)


def langchain_key(model: Any) -> tuple[str, str]:
    """(key, what the key reads as text) of one chat call, as the boundary builds it."""
    from langchain_core.messages import HumanMessage

    from chaincassette.integrations.langchain.model_params import model_request

    llm_string = model._get_llm_string(stop=None)  # what the boundary reads the model by
    request, _ = model_request(model, [HumanMessage("hi")], llm_string, None, stream=False)
    normalized = normalize(request)
    return key_of(normalized), canonical_json(keyrules.key_view(normalized))


def llama_index_key(llm: Any) -> tuple[str, str]:
    """The same for a LlamaIndex LLM, as ``CassetteLLM`` and the boundary build it."""
    from llama_index.core.base.llms.types import ChatMessage

    from chaincassette.integrations.llama_index.request import endpoint_request, key_facts

    messages = [ChatMessage(role="user", content="hi")]
    request = endpoint_request(lambda: key_facts(llm), "chat", (messages,), {})
    normalized = normalize(request)
    return key_of(normalized), canonical_json(keyrules.key_view(normalized))


def _langchain_classes() -> list[type]:
    from langchain_core.language_models.chat_models import BaseChatModel

    return classes(BaseChatModel, LANGCHAIN_PACKAGES)


def _llama_index_classes() -> list[type]:
    from llama_index.core.llms import LLM

    return classes(LLM, LLAMA_INDEX_PACKAGES)


LANGCHAIN_CLASSES = _langchain_classes()
LLAMA_INDEX_CLASSES = _llama_index_classes()


def test_the_walk_finds_the_provider_classes() -> None:
    names = {c.__name__ for c in LANGCHAIN_CLASSES}
    assert {
        "ChatOpenAI",
        "AzureChatOpenAI",
        "ChatAnthropic",
        "ChatGoogleGenerativeAI",
        "ChatMistralAI",
        "ChatOllama",
        "ChatBedrockConverse",
        "ChatBedrock",
    } <= names
    assert set(CANNOT_BUILD) <= names
    assert {c.__name__ for c in LLAMA_INDEX_CLASSES} >= {"OpenAI", "Anthropic", "Ollama"}


@pytest.mark.parametrize(
    "cls",
    [*LANGCHAIN_CLASSES, *LLAMA_INDEX_CLASSES],
    ids=lambda c: f"{c.__module__.split('.')[0]}.{c.__name__}",
)
def test_the_model_name_and_the_temperature_change_the_key(
    cls: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    keyed = llama_index_key if cls in LLAMA_INDEX_CLASSES else langchain_key
    if cls.__name__ in CANNOT_BUILD:
        with pytest.raises(ImportError):
            build(cls, "model-one", 0.2)
        return
    base, read = keyed(build(cls, "model-one", 0.2))
    assert "model-one" in read
    assert keyed(build(cls, "model-one", 0.2))[0] == base  # the same model: the same key
    assert keyed(build(cls, "model-two", 0.2))[0] != base
    assert keyed(build(cls, "model-one", 0.7))[0] != base


@pytest.mark.parametrize(
    "changed", [{"num_predict": 64}, {"top_k": 5}, {"seed": 7}, {"top_p": 0.5}, {"num_ctx": 4096}]
)
def test_chat_ollama_keys_every_sampling_parameter(changed: dict[str, Any]) -> None:
    """Issue 27 found a changed ``num_predict``, ``top_k`` or ``seed`` served the answer
    recorded without it; where the server is is no part of the key."""
    from langchain_ollama import ChatOllama

    base, _ = langchain_key(ChatOllama(model="llama3.1", temperature=0.0))
    elsewhere = ChatOllama(model="llama3.1", temperature=0.0, base_url="http://10.0.0.9:11434")
    assert langchain_key(elsewhere)[0] == base
    other, read = langchain_key(ChatOllama(model="llama3.1", temperature=0.0, **changed))
    assert other != base
    name, value = next(iter(changed.items()))
    assert f'"{name}":{value}' in read.replace(" ", "")
