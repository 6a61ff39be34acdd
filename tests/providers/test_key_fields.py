"""A changed model or temperature is a miss that names the field, on each real client class.

Issue 27: ChatOllama's key held neither (``model: chat-ollama``), so a recording made with
one model at one temperature answered every other. Each client below is recorded answering
one question against the fake server (``tests/fakes/wire.py``); replayed with its clients
pointed at a port that counts connection attempts, the same call is a hit, and the call
with another model name, or another temperature, is a ``CassetteMiss`` whose report names
``model`` or ``params.temperature``. Without a connection: nothing is called live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes.nowhere import DeadPort
from fakes.scripts import weather_tour
from fakes.wire import FakeServer

from chaincassette import CassetteMiss, use_cassette

Factory = Callable[[str, str, float], Any]


def chat_ollama(url: str, model: str, temperature: float) -> Any:
    from langchain_ollama import ChatOllama

    return ChatOllama(model=model, base_url=url, temperature=temperature)


def chat_openai(url: str, model: str, temperature: float) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model, base_url=f"{url}/v1", api_key="sk-test", max_retries=0, temperature=temperature
    )


def chat_anthropic(url: str, model: str, temperature: float) -> Any:
    from langchain_anthropic import ChatAnthropic

    return ChatAnthropic(
        model=model,
        base_url=url,
        api_key="sk-ant-test",
        max_tokens=256,
        max_retries=0,
        temperature=temperature,
    )


def chat_gemini(url: str, model: str, temperature: float) -> Any:
    from langchain_google_genai import ChatGoogleGenerativeAI

    return ChatGoogleGenerativeAI(
        model=model,
        google_api_key="gemini-test-key",
        base_url=url,
        max_retries=0,
        temperature=temperature,
    )


def chat_mistral(url: str, model: str, temperature: float) -> Any:
    from langchain_mistralai import ChatMistralAI

    return ChatMistralAI(
        model=model,
        endpoint=f"{url}/v1",
        api_key="mistral-test-key",
        max_retries=0,
        temperature=temperature,
    )


def chat_bedrock(url: str, model: str, temperature: float) -> Any:
    from langchain_aws import ChatBedrockConverse

    return ChatBedrockConverse(
        model=model,
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="AKIATESTTESTTESTTEST",
        aws_secret_access_key="test-secret",
        temperature=temperature,
    )


def li_openai(url: str, model: str, temperature: float) -> Any:
    from llama_index.llms.openai import OpenAI

    return OpenAI(
        model=model,
        api_base=f"{url}/v1",
        api_key="sk-test",
        max_retries=0,
        temperature=temperature,
    )


def li_anthropic(url: str, model: str, temperature: float) -> Any:
    from llama_index.llms.anthropic import Anthropic

    return Anthropic(
        model=model,
        base_url=url,
        api_key="sk-ant-test",
        max_tokens=256,
        max_retries=0,
        temperature=temperature,
    )


def li_ollama(url: str, model: str, temperature: float) -> Any:
    from llama_index.llms.ollama import Ollama

    # context_window given: else the first call asks the server (POST /api/show) first
    return Ollama(
        model=model,
        base_url=url,
        request_timeout=10.0,
        context_window=8192,
        temperature=temperature,
    )


#: (client, two model names it may be asked for, the temperature recorded)
CLIENTS: dict[str, tuple[Factory, str, str]] = {
    "ChatOllama": (chat_ollama, "llama3.1", "qwen3:0.6b"),
    "ChatOpenAI": (chat_openai, "gpt-4o-mini", "gpt-4o"),
    "ChatAnthropic": (chat_anthropic, "claude-sonnet-4-5", "claude-haiku-4-5"),
    "ChatGoogleGenerativeAI": (chat_gemini, "gemini-2.5-flash", "gemini-2.5-pro"),
    "ChatMistralAI": (chat_mistral, "mistral-small-latest", "mistral-large-latest"),
    "ChatBedrockConverse": (
        chat_bedrock,
        "anthropic.claude-3-haiku-20240307-v1:0",
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
    ),
    "llama_index OpenAI": (li_openai, "gpt-4o-mini", "gpt-4o"),
    "llama_index Anthropic": (li_anthropic, "claude-sonnet-4-5", "claude-haiku-4-5"),
    "llama_index Ollama": (li_ollama, "llama3.1", "qwen3:0.6b"),
}
QUESTION = "Say hello to the cassette"


def ask(client: Any) -> str:
    """One call through the client's own public API."""
    if type(client).__module__.startswith("llama_index"):
        from llama_index.core.base.llms.types import ChatMessage

        async def chat() -> str:
            answer = await client.achat([ChatMessage(role="user", content=QUESTION)])
            return str(answer.message.content)

        return asyncio.run(chat())
    return str(client.invoke(QUESTION).content)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Per client: its cassette (one call, model A at temperature 0.2) and the answer."""
    folder = tmp_path_factory.mktemp("key-fields")
    out = {}
    with FakeServer(weather_tour) as fake:
        for name, (factory, model, _) in CLIENTS.items():
            path = folder / f"{name.replace(' ', '_')}.yaml"
            with use_cassette(path, mode="record"):
                out[name] = (path, ask(factory(fake.base, model, 0.2)))
    return out


@pytest.mark.parametrize("name", list(CLIENTS))
def test_a_changed_model_or_temperature_is_a_miss_that_names_it(
    name: str, recorded: dict[str, tuple[Path, str]]
) -> None:
    factory, model, other_model = CLIENTS[name]
    path, answer = recorded[name]
    assert answer  # the live call worked
    with DeadPort() as dead:
        with use_cassette(path, mode="replay"):
            assert ask(factory(dead.url, model, 0.2)) == answer
        for changed, field in (
            (factory(dead.url, other_model, 0.2), "model"),
            (
                factory(dead.url, model, 0.9),
                "params.temperature",
            ),
        ):
            with use_cassette(path, mode="replay"), pytest.raises(CassetteMiss) as info:
                ask(changed)
            text = str(info.value)
            differs = text.split("what differs (recorded → requested):", 1)[-1]
            assert f"- {field}: " in differs, text
            assert info.value.cause in ("changed", "parameter"), text
            if field == "model":
                assert other_model in differs
            else:
                assert "0.9" in differs and info.value.cause == "parameter"
        assert dead.accepted == 0
