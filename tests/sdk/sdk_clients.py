"""The real SDK clients pointed at the fake wire server, with test keys that look real."""

from __future__ import annotations

from typing import Any

import anthropic
import openai

#: Keys in the providers' real formats: the redactor must find and keep them off disk.
OPENAI_KEY = "sk-proj-" + "Zq3" * 12
ANTHROPIC_KEY = "sk-ant-api03-" + "Kx7" * 12


def openai_client(url: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key=OPENAI_KEY, **options)


def async_openai(url: str, **options: Any) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url, api_key=OPENAI_KEY, **options)


def anthropic_client(base: str, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base, api_key=ANTHROPIC_KEY, **options)


def async_anthropic(base: str, **options: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=base, api_key=ANTHROPIC_KEY, **options)


DEAD = "http://127.0.0.1:9"
"""Where replays point: nothing listens, so a call that escaped the cassette fails."""
