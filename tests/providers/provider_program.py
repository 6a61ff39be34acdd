"""A two-tool agent on one provider's real client, run inside a cassette (fresh process each).

``python provider_program.py MODE DIRECTORY URL PROVIDER…``: for each provider, builds its
own chat model pointed at ``URL`` (the fake server, or a dead port on replay), runs a
LangGraph ``create_react_agent`` (LlamaIndex: ``FunctionAgent``) with two tools over three
model turns (the first with two parallel tool calls) inside ``DIRECTORY/PROVIDER.yaml``,
then streams one plain answer. Prints one JSON object: per provider, what the program saw
(messages and streamed chunks), or the error it raised. One process serves every provider
so that the matrix pays the imports once per run.
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from typing import Any

from chaincassette import use_cassette

warnings.filterwarnings("ignore")

QUESTION = "Weather and time in Paris, then the weather in Lyon?"
STREAM_PROMPT = "Say hello to the stream"
#: Providers whose client cannot stream from this fake: Responses API streaming and
#: Bedrock's binary event stream are not spoken by it.
NO_STREAM = frozenset({"openai_responses", "bedrock"})


def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"{city}: 12C and sunny"


def get_time(city: str) -> str:
    """The local time in a city."""
    return f"{city}: 12:00"


def langchain_model(provider: str, url: str) -> Any:
    if provider == "openai":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model="gpt-4o-mini",
            base_url=f"{url}/v1",
            api_key="sk-test",
            max_retries=0,
            temperature=0,
        )
    if provider == "openai_responses":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model="o4-mini",
            use_responses_api=True,
            reasoning={"effort": "low", "summary": "auto"},
            include=["reasoning.encrypted_content"],
            base_url=f"{url}/v1",
            api_key="sk-test",
            max_retries=0,
        )
    if provider == "azure":
        from langchain_openai import AzureChatOpenAI

        return AzureChatOpenAI(
            azure_deployment="gpt-4o-prod",
            api_version="2024-10-21",
            azure_endpoint=url,
            api_key="azure-test-key",
            max_retries=0,
            temperature=0,
        )
    if provider == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(
            model="claude-sonnet-4-5",
            base_url=url,
            api_key="sk-ant-test",
            max_tokens=2048,
            thinking={"type": "enabled", "budget_tokens": 1024},
            max_retries=0,
        )
    if provider == "gemini":
        from langchain_google_genai import ChatGoogleGenerativeAI

        return ChatGoogleGenerativeAI(
            model="gemini-2.5-flash", google_api_key="gemini-test-key", base_url=url, max_retries=0
        )
    if provider == "mistral":
        from langchain_mistralai import ChatMistralAI

        return ChatMistralAI(
            model="mistral-small-latest",
            endpoint=f"{url}/v1",
            api_key="mistral-test-key",
            max_retries=0,
            max_concurrent_requests=4,
        )
    if provider == "ollama":
        from langchain_ollama import ChatOllama

        return ChatOllama(model="llama3.2", base_url=url, temperature=0)
    if provider == "bedrock":
        from langchain_aws import ChatBedrockConverse

        return ChatBedrockConverse(
            model="anthropic.claude-3-haiku-20240307-v1:0",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="AKIATESTTESTTESTTEST",
            aws_secret_access_key="test-secret",
            temperature=0,
        )
    raise SystemExit(f"unknown provider {provider}")


def _text(content: Any) -> Any:
    if isinstance(content, list):
        return [b.get("text") or b.get("thinking") if isinstance(b, dict) else b for b in content]
    return content


def run_langchain(provider: str, url: str) -> list[Any]:
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    model = langchain_model(provider, url)
    agent = create_react_agent(model, [tool(get_weather), tool(get_time)])
    result = agent.invoke({"messages": [("user", QUESTION)]})
    out: list[Any] = []
    for message in result["messages"]:
        calls = [(c["name"], c["args"]) for c in getattr(message, "tool_calls", [])]
        out.append({"type": message.type, "content": _text(message.content), "calls": calls})
    if provider not in NO_STREAM:
        out += [{"chunk": _text(chunk.content)} for chunk in model.stream(STREAM_PROMPT)]
    return out


def llama_index_llm(provider: str, url: str) -> Any:
    if provider == "li_openai":
        from llama_index.llms.openai import OpenAI

        return OpenAI(model="gpt-4o-mini", api_base=f"{url}/v1", api_key="sk-test", max_retries=0)
    if provider == "li_anthropic":
        from llama_index.llms.anthropic import Anthropic

        return Anthropic(
            model="claude-sonnet-4-5",
            base_url=url,
            api_key="sk-ant-test",
            max_tokens=2048,
            max_retries=0,
            thinking_dict={"type": "enabled", "budget_tokens": 1024},
        )
    if provider == "li_gemini":
        from llama_index.llms.google_genai import GoogleGenAI

        # context_window and max_tokens given: else the constructor asks the server for the
        # model's metadata (GET models/…), a call no cassette records
        return GoogleGenAI(
            model="gemini-2.5-flash",
            api_key="gemini-test-key",
            http_options={"base_url": url},
            context_window=1_000_000,
            max_tokens=2048,
        )
    if provider == "li_ollama":
        from llama_index.llms.ollama import Ollama

        # context_window given: else the first call asks the server (POST /api/show) first
        return Ollama(model="llama3.2", base_url=url, request_timeout=10.0, context_window=8192)
    raise SystemExit(f"unknown provider {provider}")


async def run_llama_index(provider: str, url: str) -> list[Any]:
    from llama_index.core.agent.workflow import FunctionAgent, ToolCall
    from llama_index.core.base.llms.types import ChatMessage

    llm = llama_index_llm(provider, url)
    handler = FunctionAgent(tools=[get_weather, get_time], llm=llm).run(user_msg=QUESTION)
    out: list[Any] = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCall):
            out.append({"call": [event.tool_name, event.tool_kwargs]})
    out.append({"answer": str(await handler)})
    stream = await llm.astream_chat([ChatMessage(role="user", content=STREAM_PROMPT)])
    out += [{"chunk": chunk.delta} async for chunk in stream]
    return out


def main() -> None:
    mode, directory, url, *providers = sys.argv[1:]
    seen: dict[str, Any] = {}
    for provider in providers:
        try:
            with use_cassette(f"{directory}/{provider}.yaml", mode=mode):
                if provider.startswith("li_"):
                    seen[provider] = asyncio.run(run_llama_index(provider, url))
                else:
                    seen[provider] = run_langchain(provider, url)
        except Exception as exc:
            import traceback

            seen[provider] = {
                "error": f"{type(exc).__name__}: {exc}",
                "where": traceback.format_exc()[-3000:],
            }
    print(json.dumps(seen, sort_keys=True))


if __name__ == "__main__":
    main()
